//! Text helpers: the indexed search text (CJK runs split into unigrams and bigrams, because
//! FTS5's unicode61 tokenizer treats a run of CJK characters as one word), query building and
//! the token-set similarity used for duplicate detection.

use std::collections::BTreeSet;

use alembic_tokens::is_cjk_letter as is_cjk;

/// Words of `text`: lower-cased alphanumeric runs, with CJK runs split into unigrams and
/// bigrams. Identifiers are also split at camelCase and snake_case boundaries.
pub fn tokens(text: &str) -> Vec<String> {
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
    let parts = camel_parts(word);
    if parts.len() > 1 {
        out.extend(parts);
    }
    out.push(word.to_lowercase());
    word.clear();
}

/// `URLSession` → [url, session]; `fetchUser2` → [fetch, user2].
fn camel_parts(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let lower_to_upper = chars[i - 1].is_lowercase() && chars[i].is_uppercase();
        let acronym_end = chars[i - 1].is_uppercase()
            && chars[i].is_uppercase()
            && chars.get(i + 1).is_some_and(|c| c.is_lowercase());
        if lower_to_upper || acronym_end {
            parts.push(chars[start..i].iter().collect::<String>().to_lowercase());
            start = i;
        }
    }
    parts.push(chars[start..].iter().collect::<String>().to_lowercase());
    parts
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

/// The text FTS5 indexes for an entry.
pub fn search_text(parts: &[&str]) -> String {
    parts
        .iter()
        .flat_map(|p| tokens(p))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An FTS5 MATCH expression: every distinct query token, quoted, joined with OR (ranking
/// by bm25 then prefers entries that match more of them). `None` when there is no word.
pub fn fts_query(query: &str) -> Option<String> {
    let set: BTreeSet<String> = tokens(query).into_iter().collect();
    if set.is_empty() {
        return None;
    }
    let quoted: Vec<String> = set
        .iter()
        .map(|t| format!("\"{}\"", t.replace('"', "")))
        .collect();
    Some(quoted.join(" OR "))
}

/// Share of the distinct query tokens that occur in `text` (0..=1): an interpretable
/// relevance for "how much of what you asked for is here".
pub fn coverage(query: &str, text: &str) -> f64 {
    let wanted: BTreeSet<String> = tokens(query).into_iter().collect();
    if wanted.is_empty() {
        return 0.0;
    }
    let have: BTreeSet<String> = tokens(text).into_iter().collect();
    wanted.intersection(&have).count() as f64 / wanted.len() as f64
}

/// Jaccard similarity of the token sets of two texts (0 when both are empty).
pub fn jaccard(a: &str, b: &str) -> f64 {
    let a: BTreeSet<String> = tokens(a).into_iter().collect();
    let b: BTreeSet<String> = tokens(b).into_iter().collect();
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn tokens_split_identifiers_and_cjk() {
        assert_eq!(
            tokens("URLSession 重试"),
            vec!["url", "session", "urlsession", "重", "重试", "试"]
        );
    }

    #[test]
    fn rare_ideographs_are_split_like_common_ones() {
        // CJK extension B (U+20000…) was once missing here: such a run stayed one word.
        assert_eq!(tokens("𠀀𠀁"), vec!["𠀀", "𠀀𠀁", "𠀁"]);
    }

    #[test]
    fn fts_query_quotes_and_dedups() {
        assert_eq!(
            fts_query("retry retry \"x"),
            Some("\"retry\" OR \"x\"".into())
        );
        assert_eq!(fts_query("  ,, "), None);
    }

    #[test]
    fn similarity_measures() {
        assert_eq!(jaccard("a b", "a b"), 1.0);
        assert_eq!(jaccard("a b", "c d"), 0.0);
        assert_eq!(coverage("retry backoff", "use retry"), 0.5);
    }
}
