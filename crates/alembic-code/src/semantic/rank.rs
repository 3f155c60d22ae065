//! Ranking pieces shared by the in-memory [`super::SemanticIndex`] and the stored chunks
//! ([`crate::index::CodeIndex::search_chunks`]): the query's vector, embedding in batches,
//! and how lexical and cosine scores become the scores shown.

use super::{CodeChunk, CodeEmbedder, SearchMode, SemanticHit, SemanticSearch};

/// Texts sent to the embedder at once.
const EMBED_BATCH: usize = 64;

/// The query's embedding, or why there is none although an embedder is configured.
pub(crate) struct QueryVector<'a> {
    pub text: &'a str,
    pub vector: Option<Vec<f32>>,
    embedder: Option<&'a dyn CodeEmbedder>,
    fallback: Option<String>,
}

impl<'a> QueryVector<'a> {
    /// Embeds `text` when chunk vectors exist and an embedder is configured; otherwise, or
    /// when embedding fails, says why the search falls back to lexical (`embed_error`: why
    /// chunks were not embedded, if they were not).
    pub(crate) fn new(
        text: &'a str,
        chunks_embedded: bool,
        embedder: Option<&'a dyn CodeEmbedder>,
        embed_error: &Option<String>,
    ) -> QueryVector<'a> {
        let (vector, query_error) = match embedder {
            Some(e) if chunks_embedded => match e.embed(&[text]) {
                Ok(mut v) => (v.pop().map(normalize), None),
                Err(err) => (None, Some(err)),
            },
            _ => (None, None),
        };
        let fallback = match (&vector, embedder) {
            (Some(_), _) | (None, None) => None,
            (None, Some(e)) => Some(query_error.or_else(|| embed_error.clone()).map_or_else(
                || format!("embedder {} returned no vector", e.model_id()),
                |err| format!("embedder {} failed: {err}", e.model_id()),
            )),
        };
        QueryVector {
            text,
            vector,
            embedder,
            fallback,
        }
    }

    /// The search that ranked `hits` with this query.
    pub(crate) fn search(self, hits: Vec<SemanticHit>) -> SemanticSearch {
        SemanticSearch {
            hits,
            mode: if self.vector.is_some() {
                SearchMode::Hybrid
            } else {
                SearchMode::Lexical
            },
            embedder: self.embedder.map(|e| e.model_id().to_string()),
            fallback: self.fallback,
        }
    }
}

/// Embeds `texts` [`EMBED_BATCH`] at a time and hands each batch's normalised vectors to
/// `take` with the batch's offset in `texts`. A failing batch is logged and skipped (its
/// chunks stay lexical-only rather than failing search); the first error is kept in `error`.
pub(crate) fn embed_batches<E>(
    embedder: &dyn CodeEmbedder,
    texts: &[&str],
    error: &mut Option<String>,
    mut take: impl FnMut(usize, Vec<Vec<f32>>) -> Result<(), E>,
) -> Result<(), E> {
    for (n, batch) in texts.chunks(EMBED_BATCH).enumerate() {
        match embedder.embed(batch) {
            Ok(out) => take(n * EMBED_BATCH, out.into_iter().map(normalize).collect())?,
            Err(e) => {
                tracing::warn!(error = %e, "code chunk embedding failed; those chunks stay lexical");
                error.get_or_insert(e);
            }
        }
    }
    Ok(())
}

fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn round3(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
}

/// A chunk's scores as shown: lexical normalised by the best lexical score of the query over
/// every chunk, blended half and half with the cosine similarity when the chunk has a vector.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scores {
    score: f32,
    lexical: f32,
    semantic: Option<f32>,
}

impl Scores {
    /// The scores of a chunk with BM25 `raw` (best of the query: `max`) and cosine `cosine`;
    /// `None` when the shown score is 0.
    pub(crate) fn blend(raw: f64, max: f64, cosine: Option<f32>) -> Option<Scores> {
        let lex = (raw / max.max(f64::from(f32::EPSILON))) as f32;
        let sem = cosine.map(|c| c.max(0.0));
        let score = match sem {
            Some(s) => 0.5 * lex + 0.5 * s,
            None => lex,
        };
        let scores = Scores {
            score: round3(score),
            lexical: round3(lex),
            semantic: sem.map(round3),
        };
        (scores.score > 0.0).then_some(scores)
    }

    pub(crate) fn score(&self) -> f32 {
        self.score
    }

    pub(crate) fn hit(self, chunk: CodeChunk, preview: String) -> SemanticHit {
        SemanticHit {
            chunk,
            score: self.score,
            lexical: self.lexical,
            semantic: self.semantic,
            preview,
        }
    }
}

/// Best score first, then by symbol.
pub(super) fn by_score(a: &SemanticHit, b: &SemanticHit) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then(a.chunk.symbol.cmp(&b.chunk.symbol))
}
