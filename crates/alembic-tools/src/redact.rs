//! Secret redaction for audit records and observations.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

pub const REDACTED: &str = "[REDACTED]";

const SECRET_KEY_PARTS: [&str; 11] = [
    "apikey",
    "api_key",
    "api-key",
    "token",
    "secret",
    "password",
    "passwd",
    "authorization",
    "cookie",
    "credential",
    "private_key",
];

static SECRET_VALUE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(sk-[A-Za-z0-9_\-]{16,}",
        r"|gh[pousr]_[A-Za-z0-9]{20,}",
        r"|github_pat_[A-Za-z0-9_]{20,}",
        r"|AKIA[0-9A-Z]{16}",
        r"|xox[abprs]-[A-Za-z0-9\-]{10,}",
        r"|AIza[0-9A-Za-z_\-]{30,}",
        r"|(?i:bearer)\s+[A-Za-z0-9._\-]{10,}",
        r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$))",
    ))
    .ok()
});

static URL_CREDENTIALS: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s@]+@").ok());

fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    SECRET_KEY_PARTS.iter().any(|p| k.contains(p))
}

/// Replaces secrets inside a string: known token shapes and credentials in URLs.
pub fn redact_text(s: &str) -> String {
    let mut out = s.to_string();
    if let Some(re) = SECRET_VALUE.as_ref() {
        out = re.replace_all(&out, REDACTED).into_owned();
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
                    (k.clone(), val)
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
}
