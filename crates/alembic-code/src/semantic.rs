//! `semantic_search_code` over the project's own code: chunks are types, methods and
//! functions (their source text), ranked by BM25 over identifier words and, when an
//! embedder is configured, blended with cosine similarity of embeddings.

use std::collections::HashMap;

use alembic_safety::PathGuard;
use serde::Serialize;

use crate::summary::FileSummary;

/// Lines of a method body that go into its chunk.
const MAX_CHUNK_LINES: usize = 60;
/// Chunks embedded at most (the rest stay lexical-only).
pub const MAX_EMBEDDED_CHUNKS: usize = 20_000;
const EMBED_BATCH: usize = 64;
const BM25_K1: f32 = 1.2;
const BM25_B: f32 = 0.75;

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
    average_length: f32,
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
        let average_length = lengths.iter().sum::<usize>() as f32 / lengths.len().max(1) as f32;
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
        for batch in missing.chunks(EMBED_BATCH) {
            let refs: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
            // A failing batch leaves those chunks lexical-only rather than failing search.
            let out = match embedder.embed(&refs) {
                Ok(out) => out,
                Err(e) => {
                    tracing::warn!(error = %e, "code chunk embedding failed; those chunks stay lexical");
                    self.embed_error.get_or_insert(e);
                    continue;
                }
            };
            for ((i, _), v) in batch.iter().zip(out) {
                vectors[*i] = Some(normalize(v));
            }
        }
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
        let (query_vector, query_error) = match (&self.vectors, embedder) {
            (Some(_), Some(e)) => match e.embed(&[query]) {
                Ok(mut v) => (v.pop().map(normalize), None),
                Err(err) => (None, Some(err)),
            },
            _ => (None, None),
        };
        let fallback = match (&query_vector, embedder) {
            (Some(_), _) | (None, None) => None,
            (None, Some(e)) => Some(
                query_error
                    .or_else(|| self.embed_error.clone())
                    .map_or_else(
                        || format!("embedder {} returned no vector", e.model_id()),
                        |err| format!("embedder {} failed: {err}", e.model_id()),
                    ),
            ),
        };
        SemanticSearch {
            hits: self.rank(query, top_k, language, query_vector.as_deref()),
            mode: if query_vector.is_some() {
                SearchMode::Hybrid
            } else {
                SearchMode::Lexical
            },
            embedder: embedder.map(|e| e.model_id().to_string()),
            fallback,
        }
    }

    fn rank(
        &self,
        query: &str,
        top_k: usize,
        language: Option<&str>,
        query_vector: Option<&[f32]>,
    ) -> Vec<SemanticHit> {
        let query_words = words(query);
        let lexical: Vec<f32> = (0..self.chunks.len())
            .map(|i| self.bm25(i, &query_words))
            .collect();
        let max_lexical = lexical
            .iter()
            .copied()
            .fold(0.0f32, f32::max)
            .max(f32::EPSILON);
        let mut hits: Vec<SemanticHit> = self
            .chunks
            .iter()
            .enumerate()
            .filter(|(_, c)| language.is_none_or(|l| c.language.eq_ignore_ascii_case(l)))
            .map(|(i, c)| {
                let lex = lexical[i] / max_lexical;
                let sem = query_vector
                    .zip(self.vectors.as_ref().and_then(|v| v[i].as_ref()))
                    .map(|(q, v)| dot(q, v).max(0.0));
                let score = match sem {
                    Some(s) => 0.5 * lex + 0.5 * s,
                    None => lex,
                };
                SemanticHit {
                    chunk: c.clone(),
                    score: round3(score),
                    lexical: round3(lex),
                    semantic: sem.map(round3),
                    preview: preview(&c.text),
                }
            })
            .filter(|h| h.score > 0.0)
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.chunk.symbol.cmp(&b.chunk.symbol))
        });
        hits.truncate(top_k);
        hits
    }

    fn bm25(&self, i: usize, query: &[String]) -> f32 {
        let n = self.chunks.len() as f32;
        let len = self.lengths[i] as f32;
        query
            .iter()
            .map(|w| {
                let tf = *self.terms[i].get(w).unwrap_or(&0) as f32;
                if tf == 0.0 {
                    return 0.0;
                }
                let df = *self.document_frequency.get(w).unwrap_or(&0) as f32;
                let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                idf * tf * (BM25_K1 + 1.0)
                    / (tf + BM25_K1 * (1.0 - BM25_B + BM25_B * len / self.average_length.max(1.0)))
            })
            .sum()
    }
}

fn chunks_of(summary: &FileSummary, lines: &[&str], out: &mut Vec<CodeChunk>) {
    let body = |start: usize, end: usize| -> String {
        let end = end.min(start + MAX_CHUNK_LINES - 1);
        lines
            .get(start.saturating_sub(1)..end.min(lines.len()))
            .map(|l| l.join("\n"))
            .unwrap_or_default()
    };
    let lang = summary.language.name();
    for t in &summary.types {
        out.push(CodeChunk {
            symbol: t.name.clone(),
            kind: t.kind.name(),
            language: lang,
            file: summary.path.clone(),
            line: t.line,
            end_line: t.end_line,
            text: body(t.line, t.line + 5),
        });
        for m in &t.methods {
            out.push(CodeChunk {
                symbol: format!("{}.{}", t.name, m.name),
                kind: "method",
                language: lang,
                file: summary.path.clone(),
                line: m.line,
                end_line: m.end_line,
                text: body(m.line, m.end_line),
            });
        }
    }
    for f in &summary.functions {
        out.push(CodeChunk {
            symbol: crate::graph::function_key(&summary.path, &f.name),
            kind: "function",
            language: lang,
            file: summary.path.clone(),
            line: f.line,
            end_line: f.end_line,
            text: body(f.line, f.end_line),
        });
    }
}

/// What is embedded for a chunk: its symbol and source text.
fn embedding_text(c: &CodeChunk) -> String {
    format!("{}\n{}", c.symbol, c.text)
}

fn preview(text: &str) -> String {
    text.lines().take(4).collect::<Vec<_>>().join("\n")
}

fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn round3(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
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
