//! `semantic_search_code` over the project's own code: chunks are types, methods and
//! functions (their source text), ranked by BM25 over identifier words and, when an
//! embedder is configured, blended with cosine similarity of embeddings.

use std::collections::HashMap;

use alembic_safety::PathGuard;
use serde::Serialize;

use crate::summary::FileSummary;

mod rank;

use rank::by_score;
pub(crate) use rank::{QueryVector, Scores, dot, embed_batches};

/// Lines of a method body that go into its chunk.
const MAX_CHUNK_LINES: usize = 60;
/// Chunks embedded at most (the rest stay lexical-only).
pub const MAX_EMBEDDED_CHUNKS: usize = 20_000;
/// BM25 as FTS5's `bm25()` computes it (k1 1.2, b 0.75, idf `ln((N - n + 0.5) / (n + 0.5))`,
/// at least 1e-6), so the stored index ([`crate::index::CodeIndex::search_chunks`]) and
/// this in-memory one rank alike.
const BM25_K1: f64 = 1.2;
const BM25_B: f64 = 0.75;

/// Turns texts into vectors. `alembic-runtime` adapts the memory crate's `Embedder` to this
/// trait (this crate does not depend on the memory crate).
pub trait CodeEmbedder: Send + Sync {
    fn model_id(&self) -> &str;
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String>;
}

/// One searchable piece of code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeChunk {
    /// `Type`, `Type.method` or `path::function`.
    pub symbol: String,
    /// `class`, `struct`, `protocol`, …, `method`, `function`.
    pub kind: &'static str,
    pub language: &'static str,
    pub file: String,
    pub line: usize,
    pub end_line: usize,
    /// Last line of `text` (a type's text is its first lines, a body's at most
    /// `MAX_CHUNK_LINES`), so the text can be cut again from the file.
    #[serde(skip)]
    pub text_end: usize,
    #[serde(skip)]
    pub text: String,
}

/// A ranked chunk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SemanticHit {
    #[serde(flatten)]
    pub chunk: CodeChunk,
    pub score: f32,
    pub lexical: f32,
    pub semantic: Option<f32>,
    /// First lines of the chunk.
    pub preview: String,
}

/// Chunks with their lexical statistics and (optionally) vectors.
pub struct SemanticIndex {
    chunks: Vec<CodeChunk>,
    terms: Vec<HashMap<String, u32>>,
    lengths: Vec<usize>,
    document_frequency: HashMap<String, usize>,
    average_length: f64,
    /// Present when at least one chunk was embedded.
    vectors: Option<Vec<Option<Vec<f32>>>>,
    /// Model of the configured embedder, even when embedding failed.
    model: Option<String>,
    /// Why chunks were not embedded (the first failing batch), if they were not.
    embed_error: Option<String>,
}

/// Which ranking a search used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// BM25 blended with cosine similarity of embeddings.
    Hybrid,
    /// BM25 only: no embedder configured, or the embedder failed.
    Lexical,
}

impl SearchMode {
    pub fn name(self) -> &'static str {
        match self {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Lexical => "lexical",
        }
    }
}

/// Ranked chunks and how they were ranked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SemanticSearch {
    pub hits: Vec<SemanticHit>,
    pub mode: SearchMode,
    /// Model id of the configured embedder, if any.
    pub embedder: Option<String>,
    /// Why a configured embedder was not used (it failed); the search fell back to lexical.
    pub fallback: Option<String>,
}

impl std::fmt::Debug for SemanticIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticIndex")
            .field("chunks", &self.chunks.len())
            .field("model", &self.model)
            .finish()
    }
}

/// Words of an identifier-rich text: `scaledBy:` → `scaled`, `by`; `list_push` → `list`,
/// `push`; lower case; one-letter words dropped ([`alembic_tokens::text::Tokenizer::CODE`]).
pub fn words(text: &str) -> Vec<String> {
    alembic_tokens::text::Tokenizer::CODE.tokens(text)
}

impl SemanticIndex {
    /// Builds chunks from summaries, reading source text through the guard.
    /// Vectors of `previous` (same model) are reused for unchanged chunks, so after an
    /// edit only the edited code is embedded again.
    pub fn build<'a>(
        guard: &PathGuard,
        summaries: impl IntoIterator<Item = &'a FileSummary>,
        embedder: Option<&dyn CodeEmbedder>,
        previous: Option<&SemanticIndex>,
    ) -> SemanticIndex {
        let mut chunks = Vec::new();
        for summary in summaries {
            let Ok(bytes) = guard.read(&summary.path) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            chunks_of(summary, &lines, &mut chunks);
        }
        let mut index = SemanticIndex::lexical(chunks);
        if let Some(e) = embedder {
            index.embed_all(e, previous);
        }
        index
    }

    fn lexical(chunks: Vec<CodeChunk>) -> SemanticIndex {
        let mut terms = Vec::with_capacity(chunks.len());
        let mut lengths = Vec::with_capacity(chunks.len());
        let mut document_frequency: HashMap<String, usize> = HashMap::new();
        for c in &chunks {
            let mut tf: HashMap<String, u32> = HashMap::new();
            let ws = words(&format!("{} {} {}", c.symbol, c.file, c.text));
            lengths.push(ws.len());
            for w in ws {
                *tf.entry(w).or_default() += 1;
            }
            for w in tf.keys() {
                *document_frequency.entry(w.clone()).or_default() += 1;
            }
            terms.push(tf);
        }
        let average_length = lengths.iter().sum::<usize>() as f64 / lengths.len().max(1) as f64;
        SemanticIndex {
            chunks,
            terms,
            lengths,
            document_frequency,
            average_length,
            vectors: None,
            model: None,
            embed_error: None,
        }
    }

    fn embed_all(&mut self, embedder: &dyn CodeEmbedder, previous: Option<&SemanticIndex>) {
        self.model = Some(embedder.model_id().to_string());
        let known = previous
            .filter(|p| p.model.as_deref() == Some(embedder.model_id()))
            .map(SemanticIndex::vectors_by_text)
            .unwrap_or_default();
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; self.chunks.len()];
        let mut missing: Vec<(usize, String)> = Vec::new();
        for (i, c) in self.chunks.iter().take(MAX_EMBEDDED_CHUNKS).enumerate() {
            let text = embedding_text(c);
            match known.get(&text) {
                Some(v) => vectors[i] = Some((*v).clone()),
                None => missing.push((i, text)),
            }
        }
        let texts: Vec<&str> = missing.iter().map(|(_, t)| t.as_str()).collect();
        let Ok(()) = embed_batches(embedder, &texts, &mut self.embed_error, |at, out| {
            for ((i, _), v) in missing[at..].iter().zip(out) {
                vectors[*i] = Some(v);
            }
            Ok::<(), std::convert::Infallible>(())
        });
        if vectors.iter().any(Option::is_some) {
            self.vectors = Some(vectors);
        }
    }

    /// This index's vectors by the text they were computed from.
    fn vectors_by_text(&self) -> HashMap<String, &Vec<f32>> {
        let Some(vectors) = &self.vectors else {
            return HashMap::new();
        };
        self.chunks
            .iter()
            .zip(vectors)
            .filter_map(|(c, v)| Some((embedding_text(c), v.as_ref()?)))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// `hybrid` when chunk vectors exist, else `lexical` (a search may still fall back).
    pub fn mode(&self) -> &'static str {
        if self.vectors.is_some() {
            "hybrid"
        } else {
            "lexical"
        }
    }

    /// Best `top_k` chunks for `query`, optionally only of one language, with the mode
    /// that ranked them: hybrid when the chunks and the query were embedded, else lexical
    /// (with the embedder's error when one is configured but failed).
    pub fn search(
        &self,
        query: &str,
        top_k: usize,
        language: Option<&str>,
        embedder: Option<&dyn CodeEmbedder>,
    ) -> SemanticSearch {
        let query = QueryVector::new(query, self.vectors.is_some(), embedder, &self.embed_error);
        let hits = self.rank(query.text, top_k, language, query.vector.as_deref());
        query.search(hits)
    }

    fn rank(
        &self,
        query: &str,
        top_k: usize,
        language: Option<&str>,
        query_vector: Option<&[f32]>,
    ) -> Vec<SemanticHit> {
        let query_words = words(query);
        let lexical: Vec<f64> = (0..self.chunks.len())
            .map(|i| self.bm25(i, &query_words))
            .collect();
        let max_lexical = lexical.iter().copied().fold(0.0f64, f64::max);
        let mut hits: Vec<SemanticHit> = self
            .chunks
            .iter()
            .enumerate()
            .filter(|(_, c)| language.is_none_or(|l| c.language.eq_ignore_ascii_case(l)))
            .filter_map(|(i, c)| {
                let sem = query_vector
                    .zip(self.vectors.as_ref().and_then(|v| v[i].as_ref()))
                    .map(|(q, v)| dot(q, v));
                let scores = Scores::blend(lexical[i], max_lexical, sem)?;
                Some(scores.hit(c.clone(), preview(&c.text)))
            })
            .collect();
        // Stable: equal scores and symbols stay in chunk order (path, then place in file).
        hits.sort_by(by_score);
        hits.truncate(top_k);
        hits
    }

    /// FTS5's `bm25()` of chunk `i` for `query` (positive; FTS5 returns it negated).
    fn bm25(&self, i: usize, query: &[String]) -> f64 {
        let n = self.chunks.len() as f64;
        let len = self.lengths[i] as f64;
        let average = self.average_length;
        query
            .iter()
            .map(|w| {
                let tf = f64::from(*self.terms[i].get(w).unwrap_or(&0));
                if tf == 0.0 {
                    return 0.0;
                }
                let df = *self.document_frequency.get(w).unwrap_or(&0) as f64;
                let idf = ((n - df + 0.5) / (df + 0.5)).ln();
                let idf = if idf <= 0.0 { 1e-6 } else { idf };
                idf * ((tf * (BM25_K1 + 1.0))
                    / (tf + BM25_K1 * (1.0 - BM25_B + BM25_B * len / average)))
            })
            .sum()
    }
}

/// Lines `start..=end` (1-based) of a file, as far as the file goes.
pub(crate) fn chunk_text(lines: &[&str], start: usize, end: usize) -> String {
    lines
        .get(start.saturating_sub(1)..end.min(lines.len()))
        .map(|l| l.join("\n"))
        .unwrap_or_default()
}

pub(crate) fn chunks_of(summary: &FileSummary, lines: &[&str], out: &mut Vec<CodeChunk>) {
    let lang = summary.language.name();
    let chunk = |symbol: String, kind: &'static str, line: usize, end_line: usize, end: usize| {
        let text_end = end.min(line + MAX_CHUNK_LINES - 1);
        CodeChunk {
            symbol,
            kind,
            language: lang,
            file: summary.path.clone(),
            line,
            end_line,
            text_end,
            text: chunk_text(lines, line, text_end),
        }
    };
    for t in &summary.types {
        out.push(chunk(
            t.name.clone(),
            t.kind.name(),
            t.line,
            t.end_line,
            t.line + 5,
        ));
        for m in &t.methods {
            let symbol = format!("{}.{}", t.name, m.name);
            out.push(chunk(symbol, "method", m.line, m.end_line, m.end_line));
        }
    }
    for f in &summary.functions {
        let symbol = crate::graph::function_key(&summary.path, &f.name);
        out.push(chunk(symbol, "function", f.line, f.end_line, f.end_line));
    }
}

/// What is embedded for a chunk: its symbol and source text.
pub(crate) fn embedding_text(c: &CodeChunk) -> String {
    format!("{}\n{}", c.symbol, c.text)
}

pub(crate) fn preview(text: &str) -> String {
    text.lines().take(4).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn identifier_words_split_case_and_separators() {
        assert_eq!(
            words("scaledBy: list_push HTTPClient x"),
            vec!["scaled", "by", "list", "push", "httpclient"]
        );
    }
}
