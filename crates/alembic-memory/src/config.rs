//! Tunable constants. Defaults are the seed's values; every one can be overridden.

use serde::{Deserialize, Serialize};

/// Limits and lifetimes of the persistent store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryConfig {
    /// MAX_MEMORIES: current (not superseded) memories per scope. Enforced in the insert's
    /// transaction by evicting the lowest access_count × importance, then the oldest.
    pub max_per_scope: usize,
    /// ARCHIVE_DAYS: a memory not accessed for this long leaves retrieval (recoverable).
    pub archive_after_days: f64,
    /// FORGET_DAYS: a memory not accessed for this long is deleted by gc.
    pub forget_after_days: f64,
    /// Longest accepted content, in characters. Longer input is refused, never cut.
    pub max_content_chars: usize,
    pub retrieval: RetrievalConfig,
    pub consolidation: ConsolidationConfig,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            max_per_scope: 500,
            archive_after_days: 30.0,
            forget_after_days: 90.0,
            max_content_chars: 2000,
            retrieval: RetrievalConfig::default(),
            consolidation: ConsolidationConfig::default(),
        }
    }
}

/// How retrieval ranks memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ranking {
    /// Relevance decides; recency and importance re-rank only candidates whose relevance
    /// lies within [`RetrievalConfig::rerank_band`] of each other (the default).
    Banded,
    /// The seed's formula applied to every candidate: w_r·recency + w_i·importance + w_v·relevance.
    Weighted,
    /// Relevance only (benchmark baseline).
    RelevanceOnly,
}

/// Weights and thresholds of [`crate::MemoryRetriever`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrievalConfig {
    pub weight_recency: f64,
    pub weight_importance: f64,
    pub weight_relevance: f64,
    pub recency_half_life_days: f64,
    pub ranking: Ranking,
    /// Width of a relevance band for [`Ranking::Banded`], on the normalised 0..1 scale.
    pub rerank_band: f64,
    /// BM25 weight of a memory's context relative to its content (1.0).
    pub context_weight: f64,
    /// Share of the lexical channel when an embedder is configured (the rest is cosine).
    pub lexical_share: f64,
    /// Cosine below which a memory without lexical match counts as irrelevant (relevance floor).
    pub min_cosine: f64,
    /// Candidates taken from each channel before fusion.
    pub candidate_pool: usize,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig {
            weight_recency: 0.2,
            weight_importance: 0.3,
            weight_relevance: 0.5,
            recency_half_life_days: 7.0,
            ranking: Ranking::Banded,
            rerank_band: 0.05,
            context_weight: 0.3,
            lexical_share: 0.5,
            min_cosine: 0.25,
            candidate_pool: 200,
        }
    }
}

/// Thresholds of [`crate::MemoryConsolidator`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsolidationConfig {
    pub update_threshold: f64,
    pub merge_threshold: f64,
    /// Candidates shorter than this (in characters, after trimming) are skipped.
    pub min_chars: usize,
    /// Existing memories compared with each candidate (taken by lexical match, not recency).
    pub pool: usize,
}

impl Default for ConsolidationConfig {
    fn default() -> Self {
        ConsolidationConfig {
            update_threshold: 0.85,
            merge_threshold: 0.60,
            min_chars: 5,
            pool: 20,
        }
    }
}
