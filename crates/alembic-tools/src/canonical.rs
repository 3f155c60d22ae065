//! Canonical JSON (sorted keys, no insignificant whitespace), so that hashes and cache keys do
//! not depend on key order or formatting. Hand-written because it is twenty lines and the
//! crates that offer RFC 8785 bring number formatting we do not need (values here are
//! produced by serde_json, whose number output is already deterministic).

use serde_json::Value;
use sha2::{Digest, Sha256};

pub fn canonical_json(v: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(v, &mut out);
    // serde_json writes only UTF-8; the lossy branch can never change the text.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Writes straight into one buffer: keys and scalars go through serde_json's own escaping
/// and number formatting without an intermediate string each (this runs for every audit
/// record and cache key).
fn write_canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, val)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(k, out);
                out.push(b':');
                write_canonical(val, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        other => write_scalar(other, out),
    }
}

fn write_scalar<T: serde::Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) {
    // Writing a string or scalar into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, v);
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": [1, 2], "x": "s"}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":"s","y":[1,2]},"b":1}"#).unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(canonical_json(&a), r#"{"a":{"x":"s","y":[1,2]},"b":1}"#);
        let escaped = json!({"k\"ey": "t\u{0}ab\n", "é": [1.5, -2, null, true]});
        assert_eq!(
            canonical_json(&escaped),
            r#"{"k\"ey":"t\u0000ab\n","é":[1.5,-2,null,true]}"#
        );
        assert_ne!(
            canonical_json(&a),
            canonical_json(&json!({"a": {"x": "s", "y": [1, 2]}, "b": 2}))
        );
    }
}
