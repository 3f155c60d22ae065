//! Fixed caps on what a record (and an error) keeps of a caller's input.
//!
//! A refused or invalid call costs the caller nothing, so its arguments are the cheapest way to
//! fill the disk: twenty calls with a 4 MiB `filePath` once added 88 MB to the audit log. A
//! string past [`MAX_STRING_BYTES`] keeps its start and gains a note with its size and the
//! SHA-256 of the whole (redacted) string, so a holder of the original can still prove it; a
//! record whose arguments stay past [`MAX_ARGS_BYTES`] (many keys, long arrays) keeps a prefix
//! of their JSON with the same note. Names (tool, caller, call ids) are cut at
//! [`MAX_NAME_BYTES`].

use serde_json::{Map, Value};

use crate::canonical::{canonical_json, sha256_hex};

/// Longest string (a value or a key) an audit record keeps whole.
pub const MAX_STRING_BYTES: usize = 4 * 1024;
/// Longest canonical JSON of a record's arguments.
pub const MAX_ARGS_BYTES: usize = 64 * 1024;
/// Longest name (tool, caller, call id, rule) a record or an error keeps whole.
pub const MAX_NAME_BYTES: usize = 256;

/// `s` itself when it fits in `max` bytes; otherwise its first bytes (at a character
/// boundary) and `…[cut: N bytes, sha256 H]`.
pub fn bound_str(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}…[cut: {} bytes, sha256 {}]",
        &s[..end],
        s.len(),
        sha256_hex(s.as_bytes())
    )
}

/// Every string and key of `v` cut at [`MAX_STRING_BYTES`].
fn bound_strings(v: Value) -> Value {
    match v {
        Value::String(s) if s.len() > MAX_STRING_BYTES => {
            Value::String(bound_str(&s, MAX_STRING_BYTES))
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, val)| {
                    let k = if k.len() > MAX_STRING_BYTES {
                        bound_str(&k, MAX_STRING_BYTES)
                    } else {
                        k
                    };
                    (k, bound_strings(val))
                })
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(bound_strings).collect()),
        other => other,
    }
}

/// The arguments as a record stores them: strings cut, and the whole replaced by a prefix of
/// its JSON when it is still past [`MAX_ARGS_BYTES`].
pub fn bound_args(v: Value) -> Value {
    let v = bound_strings(v);
    let json = canonical_json(&v);
    if json.len() <= MAX_ARGS_BYTES {
        return v;
    }
    serde_json::json!({
        "_cut": {
            "bytes": json.len(),
            "sha256": sha256_hex(json.as_bytes()),
            "prefix": bound_str(&json, MAX_STRING_BYTES),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_strings_are_kept_and_long_ones_keep_a_prefix_size_and_hash() {
        assert_eq!(bound_str("abc", 3), "abc");
        let long = "é".repeat(3); // 6 bytes; a cut at 3 falls inside the second é
        assert_eq!(
            bound_str(&long, 3),
            format!("é…[cut: 6 bytes, sha256 {}]", sha256_hex(long.as_bytes()))
        );
    }

    #[test]
    fn a_record_with_many_small_strings_is_cut_as_a_whole() {
        let many: Vec<String> = (0..20_000).map(|i| format!("item-{i}")).collect();
        let v = bound_args(json!({ "paths": many }));
        let cut = &v["_cut"];
        assert!(cut["bytes"].as_u64().unwrap() > MAX_ARGS_BYTES as u64);
        assert_eq!(cut["sha256"].as_str().unwrap().len(), 64);
        // the prefix is JSON text, so its quotes are escaped once more when stored
        assert!(canonical_json(&v).len() < 2 * MAX_STRING_BYTES + 300);
    }

    #[test]
    fn huge_keys_are_cut_too() {
        let key = "k".repeat(1 << 20);
        let v = bound_args(json!({ key: 1 }));
        assert!(canonical_json(&v).len() < MAX_STRING_BYTES + 300);
    }
}
