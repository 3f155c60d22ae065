//! [`MemoryConsolidator`]: folds new candidate memories into the store.
//!
//! Phase 1, conflict pre-resolution: a candidate that denies a claim of an existing memory
//! of the same type and scope (same subject and predicate, opposite polarity; see
//! [`claim`]) **replaces** it. Sharing words is not enough.
//! Phase 2, similarity (bigram Jaccard + containment, [`crate::text::similarity`]) against
//! the best existing match: ≥ 0.85 UPDATE (metadata only), ≥ 0.60 MERGE, else ADD; a
//! candidate shorter than 5 characters is skipped.
//!
//! Both phases run in one immediate transaction, and the comparison pool is the best
//! *lexical* matches in the scope, not the 50 most recently updated rows (ref-memory §11.4
//! #18, §11.5 #27). REPLACE and MERGE never overwrite: they insert a new memory and close
//! the old one with `valid_to` and `superseded_by`, so `history` still shows it while default
//! retrieval does not.

use rusqlite::{Transaction, TransactionBehavior, named_params};
use serde::{Deserialize, Serialize};

use crate::config::ConsolidationConfig;
use crate::error::MemoryError;
use crate::model::{Memory, NewMemory};
use crate::rows;
use crate::store::PersistentMemory;
use crate::text::{fts_query, similarity};

pub mod claim;

use claim::contradicts;

/// What consolidation did with one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Added,
    Updated,
    Merged,
    Replaced,
    Skipped,
}

/// One candidate's outcome: the memory that now holds it and the one it superseded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub action: Action,
    pub id: Option<String>,
    pub previous: Option<String>,
    pub similarity: Option<f64>,
}

impl Outcome {
    /// A candidate left out before any comparison (empty after preparation).
    pub fn skipped() -> Self {
        Self {
            action: Action::Skipped,
            id: None,
            previous: None,
            similarity: None,
        }
    }
}

/// Counts per action, plus the outcome of every candidate in input order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConsolidateStats {
    pub added: usize,
    pub updated: usize,
    pub merged: usize,
    pub skipped: usize,
    pub replaced: usize,
    pub outcomes: Vec<Outcome>,
}

impl ConsolidateStats {
    fn record(&mut self, outcome: Outcome) {
        match outcome.action {
            Action::Added => self.added += 1,
            Action::Updated => self.updated += 1,
            Action::Merged => self.merged += 1,
            Action::Replaced => self.replaced += 1,
            Action::Skipped => self.skipped += 1,
        }
        self.outcomes.push(outcome);
    }
}

/// The counts of the given outcomes (say, the one outcome `memory_remember` reports).
impl FromIterator<Outcome> for ConsolidateStats {
    fn from_iter<I: IntoIterator<Item = Outcome>>(outcomes: I) -> Self {
        let mut stats = ConsolidateStats::default();
        outcomes.into_iter().for_each(|o| stats.record(o));
        stats
    }
}

/// What consolidation does with one candidate, decided from the comparison pool alone
/// ([`MemoryConsolidator::decide`]); each storage backend applies it in its transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// REPLACE or MERGE: insert `new` and close `old` (valid_to, superseded_by). A replacing
    /// memory takes the candidate's vector; a merged one is embedded after the commit.
    Supersede {
        new: Memory,
        old: String,
        action: Action,
        similarity: Option<f64>,
    },
    /// UPDATE: write the existing memory back with its new metadata.
    Update { memory: Memory, similarity: f64 },
    /// ADD: insert the candidate after making room in its scope.
    Add {
        memory: Memory,
        similarity: Option<f64>,
    },
}

impl Decision {
    /// The outcome this decision reports.
    pub fn outcome(&self) -> Outcome {
        match self {
            Decision::Supersede {
                new,
                old,
                action,
                similarity,
            } => Outcome {
                action: *action,
                id: Some(new.id.clone()),
                previous: Some(old.clone()),
                similarity: *similarity,
            },
            Decision::Update { memory, similarity } => Outcome {
                action: Action::Updated,
                id: Some(memory.id.clone()),
                previous: None,
                similarity: Some(*similarity),
            },
            Decision::Add { memory, similarity } => Outcome {
                action: Action::Added,
                id: Some(memory.id.clone()),
                previous: None,
                similarity: *similarity,
            },
        }
    }
}

/// Rule-based consolidation (no LLM call); see the module docs.
#[derive(Debug, Clone, Default)]
pub struct MemoryConsolidator {
    config: ConsolidationConfig,
}

struct Ctx<'a> {
    tx: &'a Transaction<'a>,
    now: i64,
    max_per_scope: usize,
    model: Option<String>,
}

impl MemoryConsolidator {
    pub fn new(config: ConsolidationConfig) -> MemoryConsolidator {
        MemoryConsolidator { config }
    }

    /// Consolidates `candidates` in order; later candidates see the effect of earlier ones.
    pub fn consolidate(
        &self,
        pm: &mut PersistentMemory,
        candidates: &[NewMemory],
    ) -> Result<ConsolidateStats, MemoryError> {
        let now = pm.now_ms();
        let prepared: Vec<Option<Memory>> = candidates
            .iter()
            .map(|c| {
                let long_enough = c.content.trim().chars().count() >= self.config.min_chars;
                long_enough.then(|| pm.prepare(c, now)).transpose()
            })
            .collect::<Result<_, _>>()?;
        let texts: Vec<&str> = prepared
            .iter()
            .flatten()
            .map(|m| m.content.as_str())
            .collect();
        let mut vectors = pm.try_embed(&texts).unwrap_or_default().into_iter();
        let model = pm.embedder.as_ref().map(|e| e.model_id().to_string());
        let max_per_scope = pm.config.max_per_scope;
        let mut stats = ConsolidateStats::default();
        let mut unembedded = Vec::new();
        let tx = pm
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let ctx = Ctx {
            tx: &tx,
            now,
            max_per_scope,
            model,
        };
        for candidate in prepared {
            let Some(candidate) = candidate else {
                stats.record(Outcome::skipped());
                continue;
            };
            let vector = vectors.next();
            let outcome = self.one(&ctx, candidate, vector)?;
            if outcome.action == Action::Merged {
                unembedded.extend(outcome.id.clone());
            }
            stats.record(outcome);
        }
        drop(ctx);
        tx.commit()?;
        embed_merged(pm, &unembedded)?;
        Ok(stats)
    }

    fn one(
        &self,
        ctx: &Ctx<'_>,
        candidate: Memory,
        vector: Option<Vec<f32>>,
    ) -> Result<Outcome, MemoryError> {
        let pool = self.pool(ctx, &candidate)?;
        let decision = self.decide(&pool, candidate, ctx.now);
        let outcome = decision.outcome();
        match decision {
            Decision::Supersede {
                new, old, action, ..
            } => {
                let vector = (action == Action::Replaced).then_some(vector).flatten();
                insert_superseding(ctx, &new, &old, vector.as_deref())?;
            }
            Decision::Update { memory, .. } => rows::write_back(ctx.tx, &memory)?,
            Decision::Add { memory, .. } => {
                rows::evict_to(ctx.tx, memory.scope, ctx.max_per_scope.saturating_sub(1))?;
                let seq = rows::insert(ctx.tx, &memory)?;
                if let (Some(v), Some(model)) = (&vector, &ctx.model) {
                    rows::put_vector(ctx.tx, seq, model, v)?;
                }
            }
        }
        Ok(outcome)
    }

    /// What to do with `candidate` given the `pool` of existing memories it is compared
    /// with (see the module docs). Pure, so every storage backend applies the same rules in
    /// its own transaction.
    pub fn decide(&self, pool: &[Memory], candidate: Memory, now: i64) -> Decision {
        if let Some(old) = pool
            .iter()
            .find(|m| contradicts(&m.content, &candidate.content))
        {
            let mut new = candidate;
            new.importance = new.importance.max(old.importance);
            new.provenance = new
                .provenance
                .or_else(|| Some(format!("replaces:{}", old.id)));
            return Decision::Supersede {
                new,
                old: old.id.clone(),
                action: Action::Replaced,
                similarity: None,
            };
        }
        let best = pool
            .iter()
            .map(|m| (similarity(&m.content, &candidate.content), m))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        match best {
            Some((sim, old)) if sim >= self.config.update_threshold => {
                let mut m = old.clone();
                m.importance = m.importance.max(candidate.importance);
                m.access_count += 1;
                m.last_accessed = now;
                m.updated = now;
                Decision::Update {
                    memory: m,
                    similarity: sim,
                }
            }
            Some((sim, old)) if sim >= self.config.merge_threshold => {
                let mut new = candidate;
                new.content = merge_text(&old.content, &new.content);
                new.importance = new.importance.max(old.importance);
                new.access_count = old.access_count;
                new.valid_from = old.valid_from.min(new.valid_from);
                new.provenance = Some(format!("merge:{}", old.id));
                Decision::Supersede {
                    new,
                    old: old.id.clone(),
                    action: Action::Merged,
                    similarity: Some(sim),
                }
            }
            other => Decision::Add {
                memory: candidate,
                similarity: other.map(|o| o.0),
            },
        }
    }

    /// The thresholds and pool size this consolidator applies.
    pub fn config(&self) -> &ConsolidationConfig {
        &self.config
    }

    /// Current, unexpired memories of the candidate's scope and type that share words with it.
    fn pool(&self, ctx: &Ctx<'_>, candidate: &Memory) -> Result<Vec<Memory>, MemoryError> {
        let Some(q) = fts_query(&candidate.content) else {
            return Ok(Vec::new());
        };
        let q = format!("search_text : ({q})");
        let sql = format!(
            "select {} from semantic_memories_fts f join semantic_memories m on m.seq = f.rowid
             where semantic_memories_fts match :q and m.scope = :scope and m.type = :kind
               and m.valid_to is null and (m.expires_at is null or m.expires_at > :now)
             order by bm25(semantic_memories_fts) limit :pool",
            rows::COLUMNS
                .split(", ")
                .map(|c| format!("m.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        rows::query_memories(
            ctx.tx,
            &sql,
            named_params! {
                ":q": q,
                ":scope": candidate.scope.as_str(),
                ":kind": candidate.kind.as_str(),
                ":now": ctx.now,
                ":pool": self.config.pool as i64,
            },
        )
    }
}

/// Inserts `new` and closes `old_id` (valid_to = now, superseded_by = new). The old memory
/// stops counting against the capacity, so no eviction is needed.
fn insert_superseding(
    ctx: &Ctx<'_>,
    new: &Memory,
    old_id: &str,
    vector: Option<&[f32]>,
) -> Result<(), MemoryError> {
    rows::supersede(ctx.tx, old_id, &new.id, ctx.now)?;
    let seq = rows::insert(ctx.tx, new)?;
    if let (Some(v), Some(model)) = (vector, &ctx.model) {
        rows::put_vector(ctx.tx, seq, model, v)?;
    }
    Ok(())
}

/// Merged content keeps the new statement whole: "old; new" when the old text is not
/// already part of the new one. The old version stays in history, so nothing is lost even
/// when the combination is long (the reference cut the new text off at 500 chars, §11.5 #26).
fn merge_text(old: &str, new: &str) -> String {
    let (lo, ln) = (old.to_lowercase(), new.to_lowercase());
    if ln.contains(&lo) {
        return new.to_string();
    }
    if lo.contains(&ln) {
        return old.to_string();
    }
    format!("{}; {}", old.trim_end_matches([';', '.', ' ']), new)
}

fn embed_merged(pm: &mut PersistentMemory, ids: &[String]) -> Result<(), MemoryError> {
    if ids.is_empty() || pm.embedder.is_none() {
        return Ok(());
    }
    let contents: Vec<(i64, String)> = ids
        .iter()
        .filter_map(|id| rows::get(&pm.conn, id).transpose().map(|m| (id, m)))
        .map(|(id, m)| Ok((rows::seq_of(&pm.conn, id)?.unwrap_or_default(), m?.content)))
        .collect::<Result<_, MemoryError>>()?;
    let texts: Vec<&str> = contents.iter().map(|(_, c)| c.as_str()).collect();
    let (Some(vectors), Some(e)) = (pm.try_embed(&texts), pm.embedder.clone()) else {
        return Ok(());
    };
    for ((seq, _), v) in contents.iter().zip(&vectors) {
        rows::put_vector(&pm.conn, *seq, e.model_id(), v)?;
    }
    Ok(())
}
