use super::*;
use pretty_assertions::assert_eq;

/// Texts that exercise every branch: case changes, acronyms, digits, `_`, CJK of every
/// range, CJK punctuation, kana symbols, accents, letters whose lower case grows, quotes.
const CORPUS: &[&str] = &[
    "",
    "  ,, ",
    "URLSession 重试",
    "scaledBy: list_push HTTPClient x",
    "fetchUser2Name getHTTPClass user2Name aB A",
    "search_recipes NetworkKit 搜索 Network 分类的 Recipe",
    "用SQLite存储，支付模块 uses Redis。",
    "𠀀𠀁 中 a中b 한국어 カタカナ・ひらがな゛",
    "İstanbul ÉCOLE café naïve Straße ǅemal",
    "NEAR(x* \"quoted\") col:term -neg a AND b OR c",
    "7 42 x_1 __init__ ５ ⅷ",
    "What did Caroline research?",
];

#[test]
fn presets_reproduce_the_tokenizers_they_replaced() {
    for text in CORPUS {
        assert_eq!(
            Tokenizer::MEMORY.tokens(text),
            old::memory_terms(text),
            "{text:?}"
        );
        assert_eq!(
            Tokenizer::KNOWLEDGE.tokens(text),
            old::knowledge_tokens(text),
            "{text:?}"
        );
        assert_eq!(
            Tokenizer::CODE.tokens(text),
            old::code_words(text),
            "{text:?}"
        );
        assert_eq!(
            Tokenizer::FORGE.tokens(text),
            old::forge_words(text),
            "{text:?}"
        );
        assert_eq!(
            split_cjk_runs(text),
            old::memory_index_text(text),
            "{text:?}"
        );
    }
}

#[test]
fn presets_split_as_documented() {
    assert_eq!(
        Tokenizer::KNOWLEDGE.tokens("URLSession 重试 fetchUser2"),
        [
            "url",
            "session",
            "urlsession",
            "重",
            "重试",
            "试",
            "fetch",
            "user2",
            "fetchuser2"
        ]
    );
    assert_eq!(Tokenizer::KNOWLEDGE.tokens("𠀀𠀁"), ["𠀀", "𠀀𠀁", "𠀁"]);
    assert_eq!(
        Tokenizer::MEMORY.tokens("支付模块 uses Redis 中 list_push a 7"),
        [
            "支付",
            "付模",
            "模块",
            "uses",
            "redis",
            "中",
            "list_push",
            "7"
        ]
    );
    assert_eq!(
        Tokenizer::CODE.tokens("scaledBy: list_push HTTPClient x"),
        ["scaled", "by", "list", "push", "httpclient"]
    );
    assert_eq!(
        Tokenizer::FORGE.tokens("getHTTPClass 搜索 Network 分类的 Recipe"),
        ["get", "httpclass", "network", "recipe"]
    );
    assert_eq!(split_cjk_runs("用SQLite存储"), " 用 SQLite 存 储 存储 ");
}

#[test]
fn match_any_quotes_dedups_and_skips_empty_terms() {
    let cases: &[(&[&str], Option<&str>)] = &[
        (&[], None),
        (&["", ""], None),
        (&["retry", "retry", "x"], Some(r#""retry" OR "x""#)),
        (&["say \"hi\""], Some(r#""say ""hi""""#)),
        (&["\""], Some(r#""""""#)),
        (
            &["AND", "OR", "NOT", "NEAR"],
            Some(r#""AND" OR "OR" OR "NOT" OR "NEAR""#),
        ),
        (
            &["NEAR(a b)", "x*", "-y", "col:term", "^z"],
            Some(r#""NEAR(a b)" OR "x*" OR "-y" OR "col:term" OR "^z""#),
        ),
        (&["重试", "中"], Some(r#""重试" OR "中""#)),
    ];
    for (terms, expected) in cases {
        assert_eq!(
            fts5_match_any(terms.iter()).as_deref(),
            *expected,
            "{terms:?}"
        );
    }
}

/// Every query the builder makes is valid FTS5 and matches its terms literally.
#[test]
fn match_any_queries_run_in_sqlite_and_match_literally() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "create virtual table t using fts5(body, tokenize = 'porter unicode61 remove_diacritics 2');
         insert into t (body) values ('near and or not');
         insert into t (body) values ('say \"hi\" to x');
         insert into t (body) values ('重 重试 试');
         insert into t (body) values ('col term neg');",
    )
    .unwrap();
    let count = |query: &str| -> i64 {
        conn.query_row("select count(*) from t where t match ?1", [query], |r| {
            r.get(0)
        })
        .unwrap_or_else(|e| panic!("{query}: {e}"))
    };
    let cases: &[(&[&str], i64)] = &[
        (&["say \"hi\""], 1),
        (&["\""], 0),
        (&["AND", "NEAR"], 1),
        (&["NEAR(a b)", "x*", "-y", "col:term", "(", ")"], 2),
        (&["重试"], 1),
        (&["missing"], 0),
    ];
    for (terms, expected) in cases {
        let query = fts5_match_any(terms.iter()).unwrap();
        assert_eq!(count(&query), *expected, "{query}");
    }
    for text in CORPUS {
        let tokens = Tokenizer::KNOWLEDGE.tokens(text);
        if let Some(query) = fts5_match_any(&tokens) {
            count(&query);
        }
    }
}

/// The four tokenizers as they were before they became presets of [`Tokenizer`].
mod old {
    use crate::is_cjk_letter as is_cjk;

    pub fn memory_index_text(text: &str) -> String {
        let mut out = String::new();
        for (cjk, run) in runs(text) {
            if cjk {
                out.push(' ');
                for c in run.chars() {
                    out.push(c);
                    out.push(' ');
                }
                for b in bigrams(&run) {
                    out.push_str(&b);
                    out.push(' ');
                }
            } else {
                out.push_str(&run);
            }
        }
        out
    }

    fn runs(text: &str) -> Vec<(bool, String)> {
        let mut out: Vec<(bool, String)> = Vec::new();
        for c in text.chars() {
            let cjk = is_cjk(c);
            match out.last_mut() {
                Some((kind, run)) if *kind == cjk => run.push(c),
                _ => out.push((cjk, c.to_string())),
            }
        }
        out
    }

    fn bigrams(run: &str) -> Vec<String> {
        let chars: Vec<char> = run.chars().collect();
        chars.windows(2).map(|w| w.iter().collect()).collect()
    }

    pub fn memory_terms(text: &str) -> Vec<String> {
        let lower = text.to_lowercase();
        let mut out = Vec::new();
        for (cjk, run) in runs(&lower) {
            if cjk {
                if run.chars().count() == 1 {
                    out.push(run);
                } else {
                    out.extend(bigrams(&run));
                }
                continue;
            }
            for word in run.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                if word.chars().count() >= 2
                    || word.chars().all(|c| c.is_ascii_digit()) && !word.is_empty()
                {
                    out.push(word.to_string());
                }
            }
        }
        out
    }

    pub fn knowledge_tokens(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut word = String::new();
        let mut cjk: Vec<char> = Vec::new();
        for c in text.chars() {
            if is_cjk(c) {
                flush_word(&mut word, &mut out);
                cjk.push(c);
            } else if c.is_alphanumeric() {
                flush_cjk(&mut cjk, &mut out);
                word.push(c);
            } else {
                flush_word(&mut word, &mut out);
                flush_cjk(&mut cjk, &mut out);
            }
        }
        flush_word(&mut word, &mut out);
        flush_cjk(&mut cjk, &mut out);
        out
    }

    fn flush_word(word: &mut String, out: &mut Vec<String>) {
        if word.is_empty() {
            return;
        }
        let parts = super::camel_and_acronym_parts(word);
        if parts.len() > 1 {
            out.extend(parts);
        }
        out.push(word.to_lowercase());
        word.clear();
    }

    fn flush_cjk(run: &mut Vec<char>, out: &mut Vec<String>) {
        for (i, c) in run.iter().enumerate() {
            out.push(c.to_string());
            if let Some(next) = run.get(i + 1) {
                out.push(format!("{c}{next}"));
            }
        }
        run.clear();
    }

    pub fn code_words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for token in text.split(|c: char| !c.is_alphanumeric()) {
            let mut current = String::new();
            let mut prev_lower = false;
            for c in token.chars() {
                if c.is_uppercase() && prev_lower && !current.is_empty() {
                    out.push(std::mem::take(&mut current).to_lowercase());
                }
                prev_lower = c.is_lowercase() || c.is_ascii_digit();
                current.push(c);
            }
            if !current.is_empty() {
                out.push(current.to_lowercase());
            }
        }
        out.retain(|w| w.chars().count() > 1);
        out
    }

    pub fn forge_words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut prev_lower = false;
        for c in text.chars() {
            if c.is_alphanumeric() && c.is_ascii() {
                if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
                cur.push(c.to_ascii_lowercase());
            } else {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                prev_lower = false;
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }
}
