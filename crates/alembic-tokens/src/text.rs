//! Search text: the one tokenizer, the CJK rewrite for FTS5 columns and the one FTS5 MATCH
//! query builder, shared by memory, knowledge, semantic code search and forge reuse.
//!
//! FTS5's `unicode61` tokenizer keeps a run of CJK characters as one word, so an unpunctuated
//! Chinese sentence would be a single token. Text is therefore rewritten before it reaches FTS5
//! ([`split_cjk_runs`], or indexing [`Tokenizer::tokens`] joined by spaces), and queries are
//! built from the same tokens with [`fts5_match_any`], which quotes every token so user text can
//! never inject FTS5 syntax.
//!
//! ```
//! use alembic_tokens::text::{Tokenizer, fts5_match_any};
//! let tokens = Tokenizer::KNOWLEDGE.tokens("URLSession 重试");
//! assert_eq!(tokens, ["url", "session", "urlsession", "重", "重试", "试"]);
//! assert_eq!(fts5_match_any(["say \"hi\"", "NEAR"]).as_deref(), Some(r#""say ""hi""" OR "NEAR""#));
//! ```

use std::collections::HashSet;

use crate::is_cjk_letter;

/// Where a word is split at letter-case changes (identifiers: `fetchUser`, `URLSession`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseSplit {
    /// No split; the whole text is lower-cased before it is split into words, so a letter whose
    /// lower case adds a combining mark (`İ`) splits there as it does in FTS5.
    None,
    /// Before an upper-case letter that follows a lower-case letter or an ASCII digit:
    /// `scaledBy` → `scaled`, `by`; `user2Name` → `user2`, `name`; `HTTPClient` stays whole.
    Camel,
    /// Before an upper-case letter that follows a lower-case letter, and before the last capital
    /// of an acronym that is followed by a lower-case letter: `URLSession` → `url`, `session`;
    /// `fetchUser2` → `fetch`, `user2`.
    CamelAndAcronyms,
}

/// What becomes of a run of CJK letters ([`is_cjk_letter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CjkSplit {
    /// Each character followed by its bigram with the next one: `重试` → `重`, `重试`, `试`.
    UnigramsAndBigrams,
    /// The character bigrams, or the single character of a one-character run.
    Bigrams,
    /// CJK letters are ordinary word characters (the run stays inside its word).
    AsWord,
    /// CJK letters separate words and yield no token.
    Drop,
}

/// Which one-character words are kept (CJK unigrams are never dropped by this).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShortWords {
    Keep,
    /// Drop one-character words except a single digit.
    KeepDigits,
    Drop,
}

/// The tokenizer: lower-cased words, identifiers split at case changes, CJK runs split into
/// unigrams and bigrams.
///
/// The options exist because the users genuinely need different token sets, not by accident:
/// - [`Tokenizer::MEMORY`] must keep giving exactly the query terms that memory has always used,
///   so the LoCoMo retrieval figures asserted in its tests and existing databases stay as they
///   are. Latin words are left whole (FTS5's porter stemmer handles them) and `snake_case` stays
///   one word, as FTS5's own tokenizer leaves it (`_` is a token character there).
/// - [`Tokenizer::KNOWLEDGE`] tokens are what the knowledge FTS column stores, so changing them
///   would require a reindex of existing databases; it keeps each identifier whole as well as its
///   parts, so `urlsession` and `session` both match.
/// - [`Tokenizer::CODE`] ranks code chunks by BM25 over words; one-letter words (`i`, `x`) are
///   noise there.
/// - [`Tokenizer::FORGE`] compares intents with tool names and schema words in ASCII; reuse does
///   not match Chinese intent text (that is the language model's job).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tokenizer {
    pub case_split: CaseSplit,
    /// Also emit the whole lower-cased word after its parts when it was split.
    pub keep_whole_word: bool,
    pub cjk: CjkSplit,
    /// `_` is a word character (otherwise it separates words, like any punctuation).
    pub underscore_in_words: bool,
    /// Only ASCII letters and digits make words; every other character separates.
    pub ascii_only: bool,
    pub short_words: ShortWords,
}

impl Tokenizer {
    /// Memory query terms: see the type's doc.
    pub const MEMORY: Tokenizer = Tokenizer {
        case_split: CaseSplit::None,
        keep_whole_word: false,
        cjk: CjkSplit::Bigrams,
        underscore_in_words: true,
        ascii_only: false,
        short_words: ShortWords::KeepDigits,
    };
    /// Knowledge index and query tokens: see the type's doc.
    pub const KNOWLEDGE: Tokenizer = Tokenizer {
        case_split: CaseSplit::CamelAndAcronyms,
        keep_whole_word: true,
        cjk: CjkSplit::UnigramsAndBigrams,
        underscore_in_words: false,
        ascii_only: false,
        short_words: ShortWords::Keep,
    };
    /// Semantic code search words: see the type's doc.
    pub const CODE: Tokenizer = Tokenizer {
        case_split: CaseSplit::Camel,
        keep_whole_word: false,
        cjk: CjkSplit::AsWord,
        underscore_in_words: false,
        ascii_only: false,
        short_words: ShortWords::Drop,
    };
    /// Forge reuse words: see the type's doc.
    pub const FORGE: Tokenizer = Tokenizer {
        case_split: CaseSplit::Camel,
        keep_whole_word: false,
        cjk: CjkSplit::Drop,
        underscore_in_words: false,
        ascii_only: true,
        short_words: ShortWords::Keep,
    };

    /// The tokens of `text`, in order, duplicates kept.
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let lowered;
        let text = if self.case_split == CaseSplit::None {
            lowered = text.to_lowercase();
            &lowered
        } else {
            text
        };
        let mut out = Vec::new();
        let mut word = String::new();
        let mut cjk = Vec::new();
        for c in text.chars() {
            match self.class(c) {
                Class::Cjk => {
                    self.flush_word(&mut word, &mut out);
                    cjk.push(c);
                }
                Class::Word => {
                    self.flush_cjk(&mut cjk, &mut out);
                    word.push(c);
                }
                Class::Separator => {
                    self.flush_word(&mut word, &mut out);
                    self.flush_cjk(&mut cjk, &mut out);
                }
            }
        }
        self.flush_word(&mut word, &mut out);
        self.flush_cjk(&mut cjk, &mut out);
        out
    }

    fn class(&self, c: char) -> Class {
        if self.ascii_only && !c.is_ascii() {
            return Class::Separator;
        }
        if self.cjk != CjkSplit::AsWord && is_cjk_letter(c) {
            return match self.cjk {
                CjkSplit::Drop => Class::Separator,
                _ => Class::Cjk,
            };
        }
        if c.is_alphanumeric() || (self.underscore_in_words && c == '_') {
            Class::Word
        } else {
            Class::Separator
        }
    }

    fn flush_word(&self, word: &mut String, out: &mut Vec<String>) {
        if word.is_empty() {
            return;
        }
        let mut parts = match self.case_split {
            CaseSplit::None => vec![word.clone()],
            CaseSplit::Camel => camel_parts(word),
            CaseSplit::CamelAndAcronyms => camel_and_acronym_parts(word),
        };
        if self.keep_whole_word && parts.len() > 1 {
            parts.push(word.to_lowercase());
        }
        out.extend(parts.into_iter().filter(|p| self.keeps(p)));
        word.clear();
    }

    fn keeps(&self, word: &str) -> bool {
        let long = word.chars().count() > 1;
        match self.short_words {
            ShortWords::Keep => true,
            ShortWords::KeepDigits => {
                long || (!word.is_empty() && word.chars().all(|c| c.is_ascii_digit()))
            }
            ShortWords::Drop => long,
        }
    }

    fn flush_cjk(&self, run: &mut Vec<char>, out: &mut Vec<String>) {
        match self.cjk {
            CjkSplit::UnigramsAndBigrams => {
                for (i, c) in run.iter().enumerate() {
                    out.push(c.to_string());
                    if let Some(next) = run.get(i + 1) {
                        out.push(format!("{c}{next}"));
                    }
                }
            }
            CjkSplit::Bigrams if run.len() == 1 => out.push(run.iter().collect()),
            CjkSplit::Bigrams => out.extend(run.windows(2).map(|w| w.iter().collect())),
            CjkSplit::AsWord | CjkSplit::Drop => {}
        }
        run.clear();
    }
}

enum Class {
    Cjk,
    Word,
    Separator,
}

/// [`CaseSplit::Camel`] parts, lower-cased.
fn camel_parts(word: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in word.chars() {
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            parts.push(std::mem::take(&mut current).to_lowercase());
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.push(c);
    }
    parts.push(current.to_lowercase());
    parts
}

/// [`CaseSplit::CamelAndAcronyms`] parts, lower-cased.
fn camel_and_acronym_parts(word: &str) -> Vec<String> {
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

/// `text` with every CJK run replaced by its characters followed by its bigrams, each set off
/// by spaces; other text is left as it is for FTS5's own tokenizer. Memory stores this in its
/// FTS column, so the output must never change (existing databases are not reindexed).
pub fn split_cjk_runs(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut run: Vec<char> = Vec::new();
    for c in text.chars() {
        if is_cjk_letter(c) {
            run.push(c);
            continue;
        }
        push_cjk_run(&mut run, &mut out);
        out.push(c);
    }
    push_cjk_run(&mut run, &mut out);
    out
}

fn push_cjk_run(run: &mut Vec<char>, out: &mut String) {
    if run.is_empty() {
        return;
    }
    out.push(' ');
    for c in run.iter() {
        out.push(*c);
        out.push(' ');
    }
    for pair in run.windows(2) {
        out.extend(pair);
        out.push(' ');
    }
    run.clear();
}

/// `term` as an FTS5 string: in double quotes, with every `"` inside doubled, so it is matched
/// as literal text whatever it contains (`AND`, `NEAR(`, `*`, `-`, `col:`).
pub fn fts5_quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// An FTS5 MATCH expression matching a row that contains any of `terms`: each distinct
/// non-empty term quoted with [`fts5_quote`], in first-seen order, joined with `OR` (bm25 then
/// ranks rows matching more of them first). `None` when no term is left, because an empty
/// MATCH expression is an FTS5 syntax error.
pub fn fts5_match_any<I, S>(terms: I) -> Option<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut seen = HashSet::new();
    let quoted: Vec<String> = terms
        .into_iter()
        .filter(|t| !t.as_ref().is_empty() && seen.insert(t.as_ref().to_string()))
        .map(|t| fts5_quote(t.as_ref()))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

#[cfg(test)]
mod tests;
