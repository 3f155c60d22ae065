use super::*;

/// Masks `src` as `lang`; asserts the shape is kept (length, newlines), every `hidden`
/// text is gone and every `kept` text is still there. Returns the masked text.
fn check(lang: Option<Lang>, src: &str, hidden: &[&str], kept: &[&str]) -> String {
    let out = code_only(lang, src);
    assert_eq!(out.len(), src.len(), "byte length kept");
    let newlines = |s: &str| {
        s.bytes()
            .enumerate()
            .filter(|(_, b)| *b == b'\n')
            .map(|(i, _)| i)
            .collect::<Vec<_>>()
    };
    assert_eq!(newlines(&out), newlines(src), "newlines kept in place");
    for h in hidden {
        assert!(!out.contains(h), "{h:?} should be masked in:\n{out}");
    }
    for k in kept {
        assert!(out.contains(k), "{k:?} should stay in:\n{out}");
    }
    out
}

#[test]
fn every_kind_named_exists_in_its_grammar() {
    for lang in Lang::ALL {
        let g = lang.grammar();
        for kind in literals(lang) {
            assert_ne!(g.id_for_node_kind(kind, true), 0, "{lang:?} has {kind}");
        }
        let comments = COMMENTS
            .iter()
            .filter(|k| g.id_for_node_kind(k, true) != 0)
            .count();
        assert!(comments > 0, "{lang:?} has a comment kind");
    }
}

#[test]
fn javascript_jsdoc_example_without_stars_and_strings() {
    let src = "/**\n Example:\n   console.log(api.get('/x', { headers: { Authorization: 'Bearer t' } }))\n */\nexport function get(url) {\n  const re = /console\\.log\\(/;\n  const msg = `Bearer ${token()} console.log(`;\n  // console.log(\"debug\")\n  console.log(url);\n}\n";
    let out = check(
        Some(Lang::JavaScript),
        src,
        &["Example", "Authorization", "Bearer", "debug", "\\.log"],
        &[
            "export function get(url)",
            "console.log(url);",
            "${token()}",
        ],
    );
    assert_eq!(out.matches("console.log(").count(), 1, "only the real call");
}

#[test]
fn typescript_and_tsx() {
    let src = "/* block\n   console.log(x) without stars */\nconst t: string = \"describe(\";\nexport const A = () => <div>console.log( text</div>;\n";
    check(
        Some(Lang::Tsx),
        src,
        &["block", "describe(", "console.log"],
        &["const t: string =", "export const A"],
    );
    check(
        Some(Lang::TypeScript),
        "type X = 'Authorization: Bearer';\ndescribe('x', () => {});\n",
        &["Authorization"],
        &["type X =", "describe("],
    );
}

#[test]
fn rust_comments_doc_comments_and_raw_strings() {
    let src = "//! Module doc: Keychain\n/// Uses `SecItemAdd`\n/* block\n   SecItemAdd */\nconst P: &str = r\"\\bSecItemAdd\\(\";\nfn f() { let c = 'x'; let s = \"Keychain\"; println!(\"{}\", \"AsyncStream\"); real_call(); }\n";
    check(
        Some(Lang::Rust),
        src,
        &["Keychain", "SecItemAdd", "AsyncStream", "'x'"],
        &["const P: &str =", "real_call();", "println!("],
    );
}

#[test]
fn python_docstrings_comments_and_f_strings() {
    let src = "\"\"\"Module docstring: print(x)\"\"\"\ndef f(x):\n    '''Docstring\n    logging.info(x)\n    '''\n    # logging.debug(y)\n    s = f\"value {compute(x)} logging.warn(\"\n    logging.error(x)\n";
    let out = check(
        Some(Lang::Python),
        src,
        &[
            "docstring",
            "Docstring",
            "logging.info",
            "logging.debug",
            "logging.warn",
        ],
        &["def f(x):", "logging.error(x)", "compute(x)"],
    );
    assert!(out.contains("s = "), "the assignment stays");
}

#[test]
fn docstrings_are_comments_and_values_are_literals() {
    let src = "def f():\n    \"\"\"password = 'abcdefghij'\"\"\"\n    password = 'abcdefghij'\n";
    let out = without_comments(Some(Lang::Python), src);
    assert_eq!(
        out.matches("abcdefghij").count(),
        1,
        "value kept, docstring gone"
    );
}

#[test]
fn go_strings_raw_strings_and_runes() {
    let src = "package x\n// fmt.Println(\"c\")\nvar s = `fmt.Println(\nraw`\nvar r = 'p'\nfunc f() { fmt.Println(\"fmt.Printf(\") }\n";
    let out = check(
        Some(Lang::Go),
        src,
        &["raw", "'p'", "Printf"],
        &["package x", "func f()"],
    );
    assert_eq!(out.matches("fmt.Println(").count(), 1);
}

#[test]
fn java_text_blocks_and_javadoc() {
    let src = "/**\n Example: @Autowired Service s;\n */\nclass A {\n  String q = \"\"\"\n    @Autowired\n    \"\"\";\n  char c = '@';\n  @Autowired B b;\n}\n";
    let out = check(
        Some(Lang::Java),
        src,
        &["Example", "'@'"],
        &["class A", "@Autowired B b;"],
    );
    assert_eq!(out.matches("@Autowired").count(), 1);
}

#[test]
fn kotlin_strings_and_templates() {
    let src = "/* runBlocking { } */\nval a = \"\"\"runBlocking {\"\"\"\nval b = \"x ${launch()} runBlocking\"\nfun f() = runBlocking { }\n";
    let out = check(
        Some(Lang::Kotlin),
        src,
        &[],
        &["fun f() = runBlocking", "launch()"],
    );
    assert_eq!(out.matches("runBlocking").count(), 1);
}

#[test]
fn swift_multiline_raw_and_interpolated_strings() {
    let src = "/* Keychain\n   SecItemAdd */\nlet a = \"\"\"\nSecItemAdd(\n\"\"\"\nlet b = #\"SecItemAdd(\"#\nlet c = \"\\(SecItemAdd(q)) SecItemCopy\"\nSecItemAdd(query, nil)\n";
    let out = check(
        Some(Lang::Swift),
        src,
        &["Keychain", "SecItemCopy"],
        &["SecItemAdd(query, nil)", "SecItemAdd(q)"],
    );
    assert_eq!(
        out.matches("SecItemAdd(").count(),
        2,
        "the call and the interpolation"
    );
}

#[test]
fn c_family_strings_chars_and_comments() {
    let c = "/* printf(\"a\") */\n#include \"x.h\"\nint main() { char c = 'p'; printf(\"printf(\"); }\n";
    let out = check(Some(Lang::C), c, &["'p'", "x.h"], &["int main()"]);
    assert_eq!(out.matches("printf(").count(), 1);
    let cpp = "// std::cout\nauto s = R\"(std::cout << x)\";\nvoid f() { std::cout << 1; }\n";
    let out = check(Some(Lang::Cpp), cpp, &[], &["void f()"]);
    assert_eq!(out.matches("std::cout").count(), 1);
    let objc = "// NSLog(@\"x\")\n@implementation A\n- (void)f { NSLog(@\"NSLog(\"); }\n@end\n";
    let out = check(Some(Lang::ObjC), objc, &[], &["@implementation A"]);
    assert_eq!(out.matches("NSLog(").count(), 1);
}

#[test]
fn unknown_language_gets_the_lexical_fallback() {
    let src = "// Console.WriteLine(\"a\")\n/* Console.WriteLine(\n */ var s = \"Console.WriteLine(\\\"\";\nConsole.WriteLine(s);\nvar ch = 'don''t';\n";
    let out = check(
        None,
        src,
        &[],
        &["Console.WriteLine(s);", "var s =", "'don''t'"],
    );
    assert_eq!(out.matches("Console.WriteLine(").count(), 1);
}

#[test]
fn multibyte_text_keeps_offsets_and_stays_valid() {
    let src = "let s = \"héllo → wörld\"; // ünïcode ✓\nlet t = 1;\n";
    let out = check(
        Some(Lang::Rust),
        src,
        &["héllo", "ünïcode"],
        &["let t = 1;"],
    );
    assert!(out.is_char_boundary(out.len()));
}

#[test]
fn broken_syntax_still_masks_what_parses() {
    let src = "fn f( {\n  // secret_call()\n  let s = \"secret_call()\";\n";
    let out = check(Some(Lang::Rust), src, &["secret_call"], &["fn f("]);
    assert_eq!(out.lines().count(), 3);
}

#[test]
fn path_picks_the_grammar() {
    let out = code_only_at("src/a.py", "# print(x)\nprint(y)\n");
    assert!(!out.contains("print(x)") && out.contains("print(y)"));
    let out = code_only_at("src/A.cs", "// Log(x)\nLog(y);\n");
    assert!(!out.contains("Log(x)") && out.contains("Log(y)"));
}
