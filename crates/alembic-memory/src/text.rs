//! Text processing shared by the FTS index, the query builder and consolidation.
//!
//! SQLite's `unicode61` tokenizer keeps a run of Chinese characters as one token, so an
//! unpunctuated Chinese sentence would be a single "word" (ref-memory §11.4 #20). Before text
//! reaches FTS5 we rewrite every CJK run into its single characters and its character
//! bigrams; queries use the bigrams (or the single character for a one-character run), which
//! gives word-like matching for Chinese and Japanese without a dictionary. Latin text is left
//! to FTS5's `porter unicode61` tokenizer.

use std::collections::HashSet;

/// Characters that we segment into unigrams and bigrams (one definition for every index).
pub use alembic_tokens::is_cjk_letter as is_cjk;
/// The text stored in the FTS column: the original text with every CJK run replaced by its
/// characters followed by its bigrams, each separated by spaces.
pub use alembic_tokens::text::split_cjk_runs as index_text;
use alembic_tokens::text::{Tokenizer, fts5_match_any};

/// English question words and function words that carry no topic. Dropping them from
/// queries matters: an OR query on "what", "did", "the" matches nearly every memory.
const EN_STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "both", "but", "by", "can", "could", "did", "do", "does", "doing",
    "during", "each", "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers",
    "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "might", "more",
    "most", "my", "of", "on", "or", "other", "our", "ours", "out", "over", "own", "s", "same",
    "she", "should", "so", "some", "such", "t", "than", "that", "the", "their", "theirs", "them",
    "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until",
    "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom",
    "why", "will", "with", "would", "you", "your", "yours", "kind", "likely", "ever",
];

/// Chinese function words; a query bigram that is one of these is dropped.
const ZH_STOPWORDS: &[&str] = &[
    "我们",
    "使用",
    "项目",
    "需要",
    "可以",
    "应该",
    "建议",
    "目前",
    "已经",
    "这个",
    "那个",
    "一个",
    "进行",
    "通过",
    "对于",
    "什么",
    "怎么",
    "如何",
    "为什么",
    "哪些",
    "是否",
    "的是",
    "了吗",
];

pub fn is_stopword(word: &str) -> bool {
    EN_STOPWORDS.contains(&word) || ZH_STOPWORDS.contains(&word)
}

/// Lower-cased Latin words of length ≥ 2 (letters, digits, `_`) and CJK bigrams (or single
/// characters for one-character runs) of `text`, in order, duplicates kept
/// ([`Tokenizer::MEMORY`]).
pub fn terms(text: &str) -> Vec<String> {
    Tokenizer::MEMORY.tokens(text)
}

/// Query terms without stopwords and duplicates, in first-seen order.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    terms(query)
        .into_iter()
        .filter(|t| !is_stopword(t))
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

/// An FTS5 MATCH expression: the OR of the quoted query terms, or `None` when the query has
/// no usable term. Quoting makes every term a literal, so user text can never inject FTS5
/// syntax (`NEAR`, `*`, column filters).
pub fn fts_query(query: &str) -> Option<String> {
    fts5_match_any(query_terms(query))
}

/// How many tokens FTS5's `unicode61` tokenizer finds in `text`: the row length its BM25
/// normalises by. Token characters are letters, numbers, private-use characters and
/// combining marks (which `remove_diacritics` folds into the letter before them); every
/// other character separates. A team store computes BM25 itself and needs the same length
/// to give the same scores (`alembic-team`'s postings).
pub fn fts5_token_count(text: &str) -> usize {
    let token_char = |c: char| {
        c.is_alphanumeric()
            || matches!(c as u32,
                0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF
                | 0xFE20..=0xFE2F | 0xE000..=0xF8FF | 0xF0000..=0x10FFFD)
    };
    text.split(|c: char| !token_char(c))
        .filter(|t| !t.is_empty())
        .count()
}

/// The length FTS5 gives a memory's row: the tokens of its indexed content and context.
pub fn index_len(content: &str, context: Option<&str>) -> usize {
    fts5_token_count(&index_text(content)) + fts5_token_count(&index_text(context.unwrap_or("")))
}

/// Similarity tokens: lower-case words of length ≥ 2 plus every character bigram of every
/// word (the reference's `tokenizeForSimilarity`, ref-memory §3.4).
fn similarity_tokens(text: &str) -> HashSet<String> {
    let lower = text.to_lowercase();
    let mut out = HashSet::new();
    for word in lower.split(|c: char| !(c.is_alphanumeric())) {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() >= 2 {
            out.insert(word.to_string());
        }
        for w in chars.windows(2) {
            out.insert(w.iter().collect());
        }
    }
    out
}

/// Lexical similarity in 0..=1: bigram Jaccard plus 0.3 when one text contains the other.
/// Consolidation's UPDATE (≥ 0.85) and MERGE (≥ 0.60) thresholds are defined on this scale.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (ta, tb) = (similarity_tokens(a), similarity_tokens(b));
    if ta.is_empty() && tb.is_empty() {
        return 1.0;
    }
    if ta.is_empty() || tb.is_empty() {
        return 0.0;
    }
    let inter = ta.intersection(&tb).count() as f64;
    let union = ta.union(&tb).count() as f64;
    let (la, lb) = (a.trim().to_lowercase(), b.trim().to_lowercase());
    let bonus = if la.contains(&lb) || lb.contains(&la) {
        0.3
    } else {
        0.0
    };
    (inter / union + bonus).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The count is FTS5's own: each text is indexed alone and its tokens counted by
    /// `fts5vocab`.
    #[test]
    fn token_counts_are_fts5s() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "create virtual table f using fts5(a, tokenize = 'porter unicode61 remove_diacritics 2');
             create virtual table v using fts5vocab(f, 'instance');",
        )
        .unwrap();
        for text in [
            "The payment service retries failed charges three times",
            "snake_case and kebab-case, it's 3.14",
            "caf\u{e9} a\u{301}b \u{2460}\u{2461} \u{394}x \u{1c5}",
            "  ",
            &index_text("用SQLite存储, 支付模块"),
        ] {
            conn.execute("delete from f", []).unwrap();
            conn.execute("insert into f values (?1)", [text]).unwrap();
            let fts5: i64 = conn
                .query_row("select count(*) from v", [], |r| r.get(0))
                .unwrap();
            assert_eq!(fts5_token_count(text) as i64, fts5, "{text:?}");
        }
        assert_eq!(index_len("用SQLite", Some("the cache")), 2 + 2);
    }

    #[test]
    fn cjk_runs_become_unigrams_and_bigrams() {
        assert_eq!(index_text("用SQLite存储"), " 用 SQLite 存 储 存储 ");
        assert_eq!(
            terms("支付模块 uses Redis"),
            vec!["支付", "付模", "模块", "uses", "redis"]
        );
    }

    #[test]
    fn queries_drop_stopwords_and_quote_terms() {
        assert_eq!(
            fts_query("What did Caroline research?").as_deref(),
            Some("\"caroline\" OR \"research\"")
        );
        assert_eq!(fts_query("what is the"), None);
        assert_eq!(
            fts_query("NEAR(x* \"quoted\") col:term").as_deref(),
            Some("\"near\" OR \"quoted\" OR \"col\" OR \"term\"")
        );
    }

    #[test]
    fn similarity_scale() {
        assert_eq!(similarity("same text here", "same text here"), 1.0);
        assert!(similarity("use tabs for indentation", "completely unrelated words") < 0.2);
        let s = similarity(
            "the payment module uses the repository pattern",
            "the payment module uses the repository pattern and a coordinator",
        );
        assert!(s >= 0.85, "{s}");
    }
}
