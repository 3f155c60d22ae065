//! Secret redaction for audit records and observations.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

pub const REDACTED: &str = "[REDACTED]";

/// Parts of a JSON key that mark its value as a secret, compared lower-case.
const SECRET_KEY_PARTS: [&str; 14] = [
    "apikey",
    "api_key",
    "api-key",
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "authorization",
    "cookie",
    "credential",
    "private_key",
    "privatekey",
    "private-key",
];

/// Whole JSON keys that are secrets but too short to match as a part (`pwd` is inside `cwd`'s
/// neighbours like `pwdHash`; only the exact names count).
const SECRET_KEYS: [&str; 3] = ["pwd", "pass", "auth"];

/// Secrets recognised by their shape alone.
static SECRET_VALUE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(sk-[A-Za-z0-9_\-]{16,}",
        r"|gh[pousr]_[A-Za-z0-9]{20,}",
        r"|github_pat_[A-Za-z0-9_]{20,}",
        r"|AKIA[0-9A-Z]{16}",
        r"|xox[abprs]-[A-Za-z0-9\-]{10,}",
        r"|AIza[0-9A-Za-z_\-]{30,}",
        r"|(?i:bearer)\s+[A-Za-z0-9._~+/=\-]{10,}",
        r"|-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|$))",
    ))
    .ok()
});

/// `Authorization: <scheme> <credentials>` in a header line, whatever the scheme (Bearer,
/// Basic, Digest, a bare token): the name stays, everything after it goes.
static AUTHORIZATION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*)(?:(?:bearer|basic|digest|token|negotiate)\s+)?[^\s'",;]+"#)
        .ok()
});

/// `name=value` and `name: value` (also `"name": "value"` inside JSON text) where the name
/// ends in a secret word: `password=`, `DB_PASSWORD=`, `pwd=`, `api_key:`, `token=`... The name
/// stays; the value (quoted, or up to a separator) goes. `max_tokens=5` is not a match: the
/// secret word must end the name.
static NAMED_VALUE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?i)((?:^|[^A-Za-z0-9])[A-Za-z0-9_.\-]*?"#,
        r#"(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key)"#,
        r#"["']?\s*[:=]\s*)"#,
        r#"("[^"]*"|'[^']*'|[^\s"'&;,)}\]]+)"#,
    ))
    .ok()
});

/// Credentials in a URL: `scheme://user:pass@host`, up to the last `@` before the path.
static URL_CREDENTIALS: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s@]+(?:@[^/\s@]+)*@").ok());

fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    SECRET_KEYS.contains(&k.as_str()) || SECRET_KEY_PARTS.iter().any(|p| k.contains(p))
}

/// Replaces secrets inside a string: known token shapes, private keys, authorization headers,
/// `name=value` pairs with a secret name, and credentials in URLs.
pub fn redact_text(s: &str) -> String {
    let mut out = s.to_string();
    if let Some(re) = SECRET_VALUE.as_ref() {
        out = re.replace_all(&out, REDACTED).into_owned();
    }
    if let Some(re) = AUTHORIZATION.as_ref() {
        out = re
            .replace_all(&out, format!("${{1}}{REDACTED}").as_str())
            .into_owned();
    }
    if let Some(re) = NAMED_VALUE.as_ref() {
        // A quoted value keeps its quotes, so JSON text stays JSON.
        out = re
            .replace_all(&out, |c: &regex::Captures<'_>| {
                let quote = match c[2].chars().next() {
                    Some(q @ ('"' | '\'')) => q.to_string(),
                    _ => String::new(),
                };
                format!("{}{quote}{REDACTED}{quote}", &c[1])
            })
            .into_owned();
    }
    if let Some(re) = URL_CREDENTIALS.as_ref() {
        out = re
            .replace_all(&out, format!("${{1}}{REDACTED}@").as_str())
            .into_owned();
    }
    out
}

/// Returns a copy of `v` with secret-named keys and secret-shaped strings replaced.
pub fn redact_value(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, val)| {
                    let val = if is_secret_key(k) && !val.is_null() {
                        Value::String(REDACTED.into())
                    } else {
                        redact_value(val)
                    };
                    (redact_text(k), val)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        Value::String(s) => Value::String(redact_text(s)),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_by_key_and_by_shape() {
        let v = json!({
            "apiKey": "abc",
            "nested": {"Authorization": "Bearer xyz"},
            "command": "curl -H 'Authorization: Bearer abcdefghijklmnop' https://u:p@example.com/x",
            "note": "key sk-abcdefghijklmnopqrstuvwx here",
            "plain": "nothing secret",
            "n": 3
        });
        let r = redact_value(&v);
        assert_eq!(r["apiKey"], "[REDACTED]");
        assert_eq!(r["nested"]["Authorization"], "[REDACTED]");
        assert_eq!(
            r["command"],
            "curl -H 'Authorization: [REDACTED]' https://[REDACTED]@example.com/x"
        );
        assert_eq!(r["note"], "key [REDACTED] here");
        assert_eq!(r["plain"], "nothing secret");
        assert_eq!(r["n"], 3);
    }

    /// One case per pattern: the text as given, and as it must be stored.
    const TEXT_CASES: &[(&str, &str)] = &[
        (
            "psql password=hunter2 host=db",
            "psql password=[REDACTED] host=db",
        ),
        (
            "export DB_PASSWORD='s3 cr3t'",
            "export DB_PASSWORD='[REDACTED]'",
        ),
        ("passwd: hunter2", "passwd: [REDACTED]"),
        (
            "mysql --user=u pwd=hunter2",
            "mysql --user=u pwd=[REDACTED]",
        ),
        ("client secret=abc123;x=1", "client secret=[REDACTED];x=1"),
        (
            "GET /x?token=abc.def&page=2",
            "GET /x?token=[REDACTED]&page=2",
        ),
        ("api_key=AAAA1111 next", "api_key=[REDACTED] next"),
        ("ApiKey: zzz", "ApiKey: [REDACTED]"),
        (
            "set OPENAI_API_KEY=whatever",
            "set OPENAI_API_KEY=[REDACTED]",
        ),
        (
            r#"body {"password": "hunter2", "user": "bo"}"#,
            r#"body {"password": "[REDACTED]", "user": "bo"}"#,
        ),
        (
            "-H 'Authorization: Bearer abc'",
            "-H 'Authorization: [REDACTED]'",
        ),
        (
            "Authorization: Bearer eyJhbGciOi.J9.xyz",
            "Authorization: [REDACTED]",
        ),
        (
            "Authorization: Basic dXNlcjpwYXNz",
            "Authorization: [REDACTED]",
        ),
        (
            "proxy-authorization: Digest abc",
            "proxy-authorization: [REDACTED]",
        ),
        (
            "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nafter",
            "key:\n[REDACTED]\nafter",
        ),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn", "[REDACTED]"),
        (
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nx\n-----END ENCRYPTED PRIVATE KEY-----",
            "[REDACTED]",
        ),
        (
            "postgres://app:s3cret@db:5432/x",
            "postgres://[REDACTED]@db:5432/x",
        ),
        (
            "https://user:pa@ss@example.com/repo",
            "https://[REDACTED]@example.com/repo",
        ),
        (
            "mysql://root@localhost/db",
            "mysql://[REDACTED]@localhost/db",
        ),
    ];

    /// Text that looks near a secret but is not one stays exactly as it is.
    const HARMLESS: &[&str] = &[
        "max_tokens=100 tokens: 5 tokenizer=bpe",
        "the password reset page; a secret of success",
        "cwd=/tmp/project and pwdx 12",
        "https://example.com/path?email=a@b.com",
        "see src/auth/token.rs line 4",
        "Basic usage: run it",
        "user@example.com wrote",
    ];

    #[test]
    fn each_secret_pattern_is_redacted_in_text() {
        for (input, expected) in TEXT_CASES {
            let input = input.replace("\\n", "\n");
            let expected = expected.replace("\\n", "\n");
            assert_eq!(redact_text(&input), expected, "input: {input}");
        }
    }

    #[test]
    fn harmless_text_is_untouched() {
        for text in HARMLESS {
            assert_eq!(redact_text(text), *text);
        }
        let v = json!({"maxTokens": 5, "path": "src/auth.rs", "query": "password reset"});
        assert_eq!(redact_value(&v)["path"], "src/auth.rs");
        assert_eq!(redact_value(&v)["query"], "password reset");
    }

    #[test]
    fn json_keys_named_like_secrets_are_redacted_at_any_depth() {
        let v = json!({
            "password": "a", "DB_PASSWD": "b", "pwd": "c", "clientSecret": "d",
            "access_token": "e", "privateKey": "f", "nested": [{"x-api-key": "g"}],
            "passphrase": 1, "empty": null
        });
        let r = redact_value(&v);
        for key in [
            "password",
            "DB_PASSWD",
            "pwd",
            "clientSecret",
            "access_token",
            "privateKey",
            "passphrase",
        ] {
            assert_eq!(r[key], REDACTED, "{key}");
        }
        assert_eq!(r["nested"][0]["x-api-key"], REDACTED);
        assert_eq!(r["empty"], Value::Null);
    }
}
