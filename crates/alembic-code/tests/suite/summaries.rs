//! Details of single-file summaries: complexity, static/optional flags, header sniffing.

use std::path::Path;

use alembic_code::{Lang, summarize};
use pretty_assertions::assert_eq;

/// (language, source, expected complexity of the only function/method).
fn check_complexity(lang: Lang, src: &str, expected: u32) {
    let s = summarize("x", lang, src).unwrap();
    let got: Vec<u32> = s.all_methods().map(|(_, m)| m.complexity).collect();
    assert_eq!(got, vec![expected], "{lang:?}: {src}");
}

#[test]
fn complexity_counts_branches_and_boolean_operators() {
    check_complexity(
        Lang::Rust,
        "fn f(x: i32) -> i32 { if x > 0 && x < 9 { 1 } else { for _ in 0..x {} 2 } }",
        4,
    );
    check_complexity(
        Lang::Python,
        "def f(x):\n    if x and x > 1:\n        return 1\n    elif x:\n        return 2\n    while x:\n        x -= 1\n",
        5,
    );
    check_complexity(
        Lang::Swift,
        "func f(x: Int) -> Int { guard x > 0 else { return 0 }; if x > 1 || x < -1 { return 1 }; return 2 }",
        4,
    );
    check_complexity(
        Lang::Go,
        "package p\nfunc f(x int) int { switch x { case 1: return 1; case 2: return 2 }; return 0 }",
        3,
    );
    check_complexity(
        Lang::Java,
        "class A { int f(int x) { return x > 0 ? 1 : 0; } }",
        2,
    );
    check_complexity(
        Lang::TypeScript,
        "function f(x: number) { try { g() } catch (e) { } if (x) {} }",
        3,
    );
}

#[test]
fn static_and_optional_members_are_flagged() {
    let kotlin = summarize(
        "a.kt",
        Lang::Kotlin,
        "class A {\n fun a() {}\n companion object {\n  fun b() {}\n }\n}\n",
    )
    .unwrap();
    let flags: Vec<(String, bool)> = kotlin.types[0]
        .methods
        .iter()
        .map(|m| (m.name.clone(), m.is_static))
        .collect();
    assert_eq!(
        flags,
        vec![("a".to_string(), false), ("b".to_string(), true)]
    );

    let swift = "@objc protocol P {\n  func a()\n  @objc optional func b()\n}\nclass C {\n  class func make() {}\n  static func other() {}\n  func inst() {}\n}\n";
    let s = summarize("a.swift", Lang::Swift, swift).unwrap();
    let optional: Vec<(String, bool)> = s.types[0]
        .methods
        .iter()
        .map(|m| (m.name.clone(), m.is_optional))
        .collect();
    assert_eq!(
        optional,
        vec![("a".to_string(), false), ("b".to_string(), true)]
    );
    let statics: Vec<bool> = s.types[1].methods.iter().map(|m| m.is_static).collect();
    assert_eq!(statics, vec![true, true, false]);
}

#[test]
fn headers_are_sniffed_for_objc_cpp_or_c() {
    let cases = [
        ("@interface A : NSObject\n@end\n", Lang::ObjC),
        ("namespace n { class A {}; }\n", Lang::Cpp),
        ("struct s { int x; };\nint f(void);\n", Lang::C),
    ];
    let got: Vec<Option<Lang>> = cases
        .iter()
        .map(|(src, _)| Lang::detect(Path::new("a.h"), src))
        .collect();
    let want: Vec<Option<Lang>> = cases.iter().map(|(_, l)| Some(*l)).collect();
    assert_eq!(got, want);
    assert_eq!(
        Lang::detect(Path::new("a.rs"), "@interface"),
        Some(Lang::Rust)
    );
    assert_eq!(Lang::detect(Path::new("a.txt"), ""), None);
}

#[test]
fn broken_and_deeply_nested_code_still_summarises() {
    let broken = summarize(
        "a.py",
        Lang::Python,
        "class A(B:\n    def f(self):\n        return self.g(\n",
    )
    .unwrap();
    assert!(broken.line_count == 3);
    // 2000 nested parentheses: the walk stops descending at its depth cap instead of
    // overflowing the stack.
    let deep = format!(
        "fn f() {{ let x = {}1{}; g(); }}",
        "(".repeat(2000),
        ")".repeat(2000)
    );
    let s = summarize("a.rs", Lang::Rust, &deep).unwrap();
    assert_eq!(s.functions.len(), 1);
}
