//! [`MemoryRetriever`]: scored retrieval.
//!
//! score = w_r·recency + w_i·importance + w_v·relevance (seed defaults 0.2 / 0.3 / 0.5):
//! - **relevance**: FTS5 BM25 over the CJK-segmented text, normalised per query by the best
//!   match; with an embedder, `lexical_share·minmax(bm25) + (1 − lexical_share)·minmax(cos)`.
//!   If the embedder fails, the query runs lexical-only without an error (the seed's rule).
//! - **recency**: exp(−days·ln 2 / half-life) on the time the content was last updated.
//!   Reading a memory does not refresh it (ref-memory §11.4 #21: retrieval fed its own recency).
//! - **importance**: importance / 10.
//!
//! Relevance floor: only memories with a lexical match or a cosine ≥ `min_cosine` are
//! candidates, so nothing is returned for being recent or important alone.
//!
//! Ranking ([`Ranking::Banded`], the default): on LoCoMo a global recency weight costs 1–11
//! points of hit@10 (anchors-memory §5), because evidence is spread over months. So the
//! three-part score orders memories only among candidates whose relevance is within one band
//! (`rerank_band`, 0.05 of the normalised scale) of each other; between bands relevance
//! decides. [`Ranking::Weighted`] is the seed's global formula, kept for comparison.

use std::collections::HashMap;

use rusqlite::{TransactionBehavior, named_params};
use serde::Serialize;

use crate::clock::DAY_MS;
use crate::config::{Ranking, RetrievalConfig};
use crate::error::MemoryError;
use crate::model::{Memory, MemoryType, Scope};
use crate::rows::{self, ACTIVE};
use crate::store::PersistentMemory;
use crate::text::fts_query;

/// Per-call options of [`MemoryRetriever::retrieve`].
#[derive(Debug, Clone, PartialEq)]
pub struct RetrieveOptions {
    pub limit: usize,
    pub scope: Option<Scope>,
    pub kind: Option<MemoryType>,
    /// Overrides the configured ranking for this call.
    pub ranking: Option<Ranking>,
    /// Count this retrieval as an access (access_count + 1, last_accessed = now).
    pub touch: bool,
}

impl Default for RetrieveOptions {
    fn default() -> Self {
        RetrieveOptions {
            limit: 10,
            scope: None,
            kind: None,
            ranking: None,
            touch: true,
        }
    }
}

/// The three score parts (each 0..1) and the channels behind relevance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScoreParts {
    pub recency: f64,
    pub importance: f64,
    pub relevance: f64,
    /// Normalised BM25, when the memory matched lexically.
    pub lexical: Option<f64>,
    /// Raw cosine with the query, when a vector was compared.
    pub semantic: Option<f64>,
}

/// A retrieved memory with its score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoredMemory {
    #[serde(flatten)]
    pub memory: Memory,
    pub score: f64,
    pub parts: ScoreParts,
}

/// Scored retrieval over a [`PersistentMemory`].
#[derive(Debug, Clone, Default)]
pub struct MemoryRetriever {
    config: RetrievalConfig,
}

#[derive(Debug, Clone, Copy, Default)]
struct Channels {
    bm25: Option<f64>,
    cosine: Option<f64>,
    updated: i64,
    importance: f64,
}

/// A candidate before its row is loaded: ranking needs only these fields, so full rows are
/// read for the returned memories alone. `seq` is the backend's row key.
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    pub seq: i64,
    pub score: f64,
    pub parts: ScoreParts,
}

/// One row of a channel query: row key (seq), channel score (positive BM25 or cosine),
/// updated, importance.
pub type ChannelRow = (i64, f64, i64, f64);

impl MemoryRetriever {
    pub fn new(config: RetrievalConfig) -> MemoryRetriever {
        MemoryRetriever { config }
    }

    /// Memories relevant to `query`, best first, at most `options.limit`.
    pub fn retrieve(
        &self,
        pm: &mut PersistentMemory,
        query: &str,
        options: &RetrieveOptions,
    ) -> Result<Vec<ScoredMemory>, MemoryError> {
        let now = pm.now_ms();
        let lexical = self.lexical(pm, query, options, now)?;
        let semantic = self.semantic(pm, query, options, now)?;
        let candidates = self.rank_channels(lexical, semantic, now, options);
        let mut scored = Vec::with_capacity(candidates.len());
        for c in candidates {
            if let Some(memory) = load_by_seq(pm, c.seq)? {
                scored.push(ScoredMemory {
                    memory,
                    score: c.score,
                    parts: c.parts,
                });
            }
        }
        if options.touch && !scored.is_empty() {
            touch(pm, &scored, now)?;
        }
        Ok(scored)
    }

    /// The scoring half of [`Self::retrieve`], shared by every storage backend: applies the
    /// relevance floor to the lexical and semantic channel rows (`None`: no semantic channel),
    /// fuses them, scores, ranks and keeps `options.limit`, best first.
    pub fn rank_channels(
        &self,
        lexical: Vec<ChannelRow>,
        semantic: Option<Vec<ChannelRow>>,
        now: i64,
        options: &RetrieveOptions,
    ) -> Vec<Candidate> {
        let mut channels: HashMap<i64, Channels> = HashMap::new();
        for (seq, s, updated, importance) in lexical {
            let c = channels.entry(seq).or_default();
            (c.bm25, c.updated, c.importance) = (Some(s), updated, importance);
        }
        let has_semantic = semantic.is_some();
        for (seq, cos, updated, importance) in semantic.unwrap_or_default() {
            let c = channels.entry(seq).or_default();
            (c.cosine, c.updated, c.importance) = (Some(cos), updated, importance);
        }
        // relevance floor: a lexical match, or a cosine at or above min_cosine
        channels.retain(|_, c| {
            c.bm25.is_some() || c.cosine.is_some_and(|v| v >= self.config.min_cosine)
        });
        let relevance = self.fuse(&channels, has_semantic);
        let mut candidates: Vec<Candidate> = relevance
            .into_iter()
            .map(|(seq, (rel, lex))| {
                let parts = self.parts(&channels[&seq], rel, lex, now);
                Candidate {
                    seq,
                    score: self.combine(&parts),
                    parts,
                }
            })
            .collect();
        self.rank(
            &mut candidates,
            options.ranking.unwrap_or(self.config.ranking),
        );
        candidates.truncate(options.limit);
        candidates
    }

    /// (seq, positive BM25) of the best lexical matches among active memories.
    ///
    /// FTS5 ranks its matches on its own first (`order by bm25 limit`), and only those rows
    /// are joined with the memory table and filtered: joining every match before ranking
    /// read ~20,000 rows per query at 100,000 memories. When the filter leaves fewer than
    /// the pool out of a full page (many archived or superseded matches, a scope filter),
    /// the query runs again over every match, so the result never depends on the shortcut.
    fn lexical(
        &self,
        pm: &PersistentMemory,
        query: &str,
        options: &RetrieveOptions,
        now: i64,
    ) -> Result<Vec<ChannelRow>, MemoryError> {
        let Some(q) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let pool = self.config.candidate_pool.max(1);
        let page = pool * 2;
        let rows = self.lexical_page(pm, &q, options, now, Some(page))?;
        if rows.len() >= pool || !self.page_was_full(pm, &q, page)? {
            return Ok(rows);
        }
        self.lexical_page(pm, &q, options, now, None)
    }

    /// True when the FTS5 match has at least `page` rows (so a page may have hidden some).
    fn page_was_full(
        &self,
        pm: &PersistentMemory,
        q: &str,
        page: usize,
    ) -> Result<bool, MemoryError> {
        let n: i64 = pm
            .conn
            .prepare_cached(
                "select count(*) from (select rowid from semantic_memories_fts
                 where semantic_memories_fts match ?1 limit ?2)",
            )?
            .query_row(rusqlite::params![q, page as i64], |r| r.get(0))?;
        Ok(n as usize >= page)
    }

    /// The best `pool` active matches among the FTS5 top `page` (all matches for `None`).
    fn lexical_page(
        &self,
        pm: &PersistentMemory,
        q: &str,
        options: &RetrieveOptions,
        now: i64,
        page: Option<usize>,
    ) -> Result<Vec<ChannelRow>, MemoryError> {
        let sql = format!(
            "select m.seq, f.score, m.updated, m.importance from (
                 select rowid, -bm25(semantic_memories_fts, 1.0, :ctx_weight) as score
                 from semantic_memories_fts where semantic_memories_fts match :q
                 order by bm25(semantic_memories_fts, 1.0, :ctx_weight) limit :page
             ) f
             join semantic_memories m on m.seq = f.rowid
             where (:scope is null or m.scope = :scope) and (:kind is null or m.type = :kind)
               and {ACTIVE}
             order by f.score desc, m.seq asc limit :pool"
        );
        let mut stmt = pm.conn.prepare_cached(&sql)?;
        let rows = stmt
            .query_map(
                named_params! {
                    ":q": q,
                    ":scope": options.scope.map(|s| s.as_str()),
                    ":kind": options.kind.map(|k| k.as_str()),
                    ":now": now,
                    ":cutoff": pm.archive_cutoff(now),
                    ":page": page.map_or(-1, |p| p as i64),
                    ":pool": self.config.candidate_pool as i64,
                    ":ctx_weight": self.config.context_weight,
                },
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// (seq, cosine) for every active memory with a vector from the configured model, or
    /// `None` when there is no embedder or it failed (lexical fallback, no error).
    fn semantic(
        &self,
        pm: &PersistentMemory,
        query: &str,
        options: &RetrieveOptions,
        now: i64,
    ) -> Result<Option<Vec<ChannelRow>>, MemoryError> {
        let Some(embedder) = pm.embedder.clone() else {
            return Ok(None);
        };
        let query_vec = match embedder.embed(&[query]) {
            Ok(mut v) if v.len() == 1 => v.remove(0),
            Ok(_) => return Ok(None),
            Err(e) => {
                tracing::debug!(error = %e, "query embedding failed; lexical retrieval only");
                return Ok(None);
            }
        };
        let sql = format!(
            "select v.seq, v.vector, m.updated, m.importance from memory_vectors v join semantic_memories m on m.seq = v.seq
             where v.model = :model and v.dim = :dim
               and (:scope is null or m.scope = :scope) and (:kind is null or m.type = :kind)
               and {ACTIVE}"
        );
        let mut stmt = pm.conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(named_params! {
            ":model": embedder.model_id(),
            ":dim": query_vec.len() as i64,
            ":scope": options.scope.map(|s| s.as_str()),
            ":kind": options.kind.map(|k| k.as_str()),
            ":now": now,
            ":cutoff": pm.archive_cutoff(now),
        })?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let blob: Vec<u8> = row.get(1)?;
            let cos = cosine(&query_vec, &rows::decode_vector(&blob));
            out.push((row.get(0)?, cos, row.get(2)?, row.get(3)?));
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out.truncate(self.config.candidate_pool.max(1) * 2);
        Ok(Some(out))
    }

    /// Per-query normalised relevance and normalised lexical part for each candidate.
    fn fuse(
        &self,
        channels: &HashMap<i64, Channels>,
        has_semantic: bool,
    ) -> Vec<(i64, (f64, Option<f64>))> {
        let max_bm25 = channels.values().filter_map(|c| c.bm25).fold(0.0, f64::max);
        let lex = |c: &Channels| {
            c.bm25
                .map(|b| if max_bm25 > 0.0 { b / max_bm25 } else { 0.0 })
        };
        if !has_semantic {
            return channels
                .iter()
                .map(|(s, c)| (*s, (lex(c).unwrap_or(0.0), lex(c))))
                .collect();
        }
        let cos: Vec<f64> = channels.values().filter_map(|c| c.cosine).collect();
        let (lo, hi) = cos
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
        let min_bm25 = channels
            .values()
            .filter_map(|c| c.bm25)
            .fold(f64::MAX, f64::min);
        let share = self.config.lexical_share;
        channels
            .iter()
            .map(|(seq, c)| {
                let l = c.bm25.map_or(0.0, |b| minmax(b, min_bm25, max_bm25));
                let v = c.cosine.map_or(0.0, |x| minmax(x, lo, hi));
                (*seq, (share * l + (1.0 - share) * v, lex(c)))
            })
            .collect()
    }

    fn parts(&self, c: &Channels, relevance: f64, lexical: Option<f64>, now: i64) -> ScoreParts {
        let age_days = ((now - c.updated).max(0) as f64) / DAY_MS as f64;
        let half_life = self.config.recency_half_life_days.max(f64::MIN_POSITIVE);
        ScoreParts {
            recency: (-age_days * std::f64::consts::LN_2 / half_life).exp(),
            importance: c.importance / 10.0,
            relevance,
            lexical,
            semantic: c.cosine,
        }
    }

    fn combine(&self, p: &ScoreParts) -> f64 {
        self.config.weight_recency * p.recency
            + self.config.weight_importance * p.importance
            + self.config.weight_relevance * p.relevance
    }

    /// Sorts best first; ties go to the older memory (lower seq) so rankings are stable.
    fn rank(&self, scored: &mut [Candidate], ranking: Ranking) {
        let band = self.config.rerank_band.max(1e-9);
        let id_order = |a: &Candidate, b: &Candidate| a.seq.cmp(&b.seq);
        match ranking {
            Ranking::Weighted => {
                scored.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| id_order(a, b)))
            }
            Ranking::RelevanceOnly => scored.sort_by(|a, b| {
                b.parts
                    .relevance
                    .total_cmp(&a.parts.relevance)
                    .then_with(|| id_order(a, b))
            }),
            Ranking::Banded => scored.sort_by(|a, b| {
                let bucket = |s: &Candidate| ((1.0 - s.parts.relevance) / band).floor() as i64;
                bucket(a)
                    .cmp(&bucket(b))
                    .then_with(|| b.score.total_cmp(&a.score))
                    .then_with(|| id_order(a, b))
            }),
        }
    }
}

fn minmax(v: f64, lo: f64, hi: f64) -> f64 {
    if hi > lo { (v - lo) / (hi - lo) } else { 1.0 }
}

/// Cosine similarity; 0 for empty or mismatched vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (*x as f64, *y as f64);
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

fn load_by_seq(pm: &PersistentMemory, seq: i64) -> Result<Option<Memory>, MemoryError> {
    let sql = format!(
        "select {} from semantic_memories where seq = ?1",
        rows::COLUMNS
    );
    Ok(rows::query_memories(&pm.conn, &sql, [seq])?
        .into_iter()
        .next())
}

fn touch(pm: &mut PersistentMemory, scored: &[ScoredMemory], now: i64) -> Result<(), MemoryError> {
    let tx = pm
        .conn
        .transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut stmt = tx.prepare_cached(
            "update semantic_memories set access_count = access_count + 1, last_accessed = ?2 where id = ?1",
        )?;
        for s in scored {
            stmt.execute(rusqlite::params![s.memory.id, now])?;
        }
    }
    tx.commit()?;
    Ok(())
}
