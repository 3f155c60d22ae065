//! Text helpers: the indexed search text (CJK runs split into unigrams and bigrams, because
//! FTS5's unicode61 tokenizer treats a run of CJK characters as one word), query building and
//! the token-set similarity used for duplicate detection.

use std::collections::BTreeSet;

use alembic_tokens::text::{Tokenizer, fts5_match_any};

/// Words of `text`: lower-cased alphanumeric runs, with CJK runs split into unigrams and
/// bigrams. Identifiers are also split at camelCase and snake_case boundaries
/// ([`Tokenizer::KNOWLEDGE`]).
pub fn tokens(text: &str) -> Vec<String> {
    Tokenizer::KNOWLEDGE.tokens(text)
}

/// The text FTS5 indexes for an entry.
pub fn search_text(parts: &[&str]) -> String {
    parts
        .iter()
        .flat_map(|p| tokens(p))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The index text of an entry with these fields: the one definition, for both backends'
/// writes and re-indexing.
pub fn entry_search_text(
    title: &str,
    description: &str,
    content: &str,
    pattern: &str,
    tags: &[String],
) -> String {
    search_text(&[title, description, content, pattern, &tags.join(" ")])
}

/// The distinct words of a query, sorted: what a backend's full-text query ORs together.
pub fn query_terms(query: &str) -> Vec<String> {
    let set: BTreeSet<String> = tokens(query).into_iter().collect();
    set.into_iter().collect()
}

/// An FTS5 MATCH expression: every distinct query token, quoted, joined with OR (ranking
/// by bm25 then prefers entries that match more of them). `None` when there is no word.
pub fn fts_query(query: &str) -> Option<String> {
    let set: BTreeSet<String> = tokens(query).into_iter().collect();
    fts5_match_any(set)
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
