//! Retrieval and consolidation of [`PgMemory`]: lexical candidates are ranked by BM25 from
//! the packed posting lists (`postings.rs`, as FTS5 ranks them); scoring, ranking and the
//! consolidation decisions are the memory crate's (`MemoryRetriever::rank_channels`,
//! `MemoryConsolidator::decide`).
//!
//! Vectors: pgvector is not available everywhere (Debian 12 does not ship it), so vectors are
//! `real[]` and the client re-ranks the lexical candidates with their cosine. Unlike SQLite,
//! a memory without any lexical match is not found by its vector alone.

use std::collections::HashMap;

use alembic_memory::text::query_terms;
use alembic_memory::{
    Action, ConsolidateStats, Decision, Memory, MemoryConsolidator, MemoryError, MemoryRetriever,
    NewMemory, Outcome, RetrieveOptions, ScoredMemory, cosine, prepare_memory, try_embed,
};
use sqlx::{PgConnection, Row};

use super::postings::{Postings, Weights, pages};
use super::rows::{self, columns};
use super::{PgMemory, Who};
use crate::error::TeamError;
use crate::tx::{begin_team, begin_team_unflushed};

/// A lexical candidate: seq, rank, updated, importance, vector model, vector.
type LexRow = (i64, f64, i64, f64, Option<String>, Option<Vec<f32>>);

/// What one retrieval asks of the server, moved to the connection thread.
struct Lookup {
    /// The query terms, space-separated (stemmed by the server as the stored text).
    text: String,
    scope: Option<&'static str>,
    kind: Option<&'static str>,
    now: i64,
    /// Rows last accessed before this are due for archiving and not retrieved.
    cutoff: i64,
    /// The candidate pool.
    want: usize,
    context_weight: f64,
    /// The query's embedding and its model, when an embedder gave one: candidates' vectors
    /// are read and compared only then.
    query_vector: Option<(String, Vec<f32>)>,
}

/// One transaction: the lexical candidates (postings, then the retrievable rows a page at a
/// time), their ranking (the memory crate's), then the winners loaded and, with `touch`,
/// their access counts bumped in the same statement. The touch is committed without waiting
/// for the WAL flush (`synchronous_commit = off` for this transaction only, set with the
/// begin, [`begin_team_unflushed`]): a server crash may lose the last few access counts, never
/// a memory or an edit, and the reader does not wait on the disk for a counter.
pub(super) fn retrieve(
    pm: &mut PgMemory,
    query: &str,
    options: &RetrieveOptions,
) -> Result<Vec<ScoredMemory>, MemoryError> {
    let now = pm.clock.now_ms();
    let terms = query_terms(query);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let query_vector = pm.embedder.as_ref().and_then(|e| {
        let v = try_embed(Some(e), &[query])?.into_iter().next()?;
        Some((e.model_id().to_string(), v))
    });
    let lookup = Lookup {
        text: terms.join(" "),
        scope: options.scope.map(|s| s.as_str()),
        kind: options.kind.map(|k| k.as_str()),
        now,
        cutoff: pm.archive_cutoff(now),
        want: pm.config.retrieval.candidate_pool.max(1),
        context_weight: pm.config.retrieval.context_weight,
        query_vector,
    };
    let retriever = MemoryRetriever::new(pm.config.retrieval.clone());
    let options = options.clone();
    pm.run(move |who, pool| async move {
        let mut tx = if options.touch {
            begin_team_unflushed(&pool, &who.team).await?
        } else {
            begin_team(&pool, &who.team).await?
        };
        let lexical = lexical(&mut tx, &who.team, &lookup).await?;
        let semantic = lookup
            .query_vector
            .as_ref()
            .map(|(model, q)| semantic(model, q, &lexical));
        let rows = lexical.iter().map(|r| (r.0, r.1, r.2, r.3)).collect();
        let candidates = retriever.rank_channels(rows, semantic, now, &options);
        let seqs: Vec<i64> = candidates.iter().map(|c| c.seq).collect();
        let mut loaded = load(&mut tx, &who.team, &seqs, options.touch.then_some(now)).await?;
        tx.commit().await?;
        Ok(candidates
            .into_iter()
            .filter_map(|c| {
                loaded.remove(&c.seq).map(|memory| ScoredMemory {
                    memory,
                    score: c.score,
                    parts: c.parts,
                })
            })
            .collect())
    })
}

/// The retrievable rows among `$2` (seqs), with what ranking needs: not superseded, not
/// archived, unexpired, accessed since the archive cut-off, of the asked scope and type.
/// Vectors are read only when `$7` (an embedder will compare them).
const ACTIVE_PAGE: &str = "select seq, updated, importance,
            case when $7 then vector_model end, case when $7 then vector end
     from team_memories
     where team = $1 and seq = any($2)
       and ($3::text is null or scope = $3) and ($4::text is null or type = $4)
       and valid_to is null and archived_at is null
       and (expires_at is null or expires_at > $5) and last_accessed >= $6";

/// The best `candidate_pool` retrievable matches by BM25 (as FTS5 ranks them), with their
/// vectors when the query has one to compare them with. Matches are ranked from their
/// postings, then read a page at a time in rank order until the pool is full, so the result
/// is the same as filtering every match.
async fn lexical(
    conn: &mut PgConnection,
    team: &str,
    lookup: &Lookup,
) -> Result<Vec<LexRow>, TeamError> {
    let postings = Postings::fetch(&mut *conn, team, &lookup.text).await?;
    let scored = postings.bm25(Weights::ContentAndContext(lookup.context_weight));
    let want = lookup.want;
    let mut kept = Vec::with_capacity(want);
    // a first page a quarter larger than the pool: most matches are retrievable, and each
    // row a page reads is a random heap read (400 of them were a quarter of a retrieval)
    for page in pages(scored, want + want / 4) {
        let seqs: Vec<i64> = page.iter().map(|r| r.0).collect();
        let rows = sqlx::query(ACTIVE_PAGE)
            .bind(team)
            .bind(&seqs)
            .bind(lookup.scope)
            .bind(lookup.kind)
            .bind(lookup.now)
            .bind(lookup.cutoff)
            .bind(lookup.query_vector.is_some())
            .fetch_all(&mut *conn)
            .await?;
        let mut found: HashMap<i64, ActiveRow> =
            rows.iter().map(active_row).collect::<Result<_, _>>()?;
        kept.extend(page.iter().filter_map(|&(seq, bm25)| {
            let (updated, importance, model, vector) = found.remove(&seq)?;
            Some((seq, bm25, updated, importance, model, vector))
        }));
        if kept.len() >= want {
            break;
        }
    }
    kept.truncate(want);
    Ok(kept)
}

/// What a page read gives of a retrievable row: updated, importance, vector model, vector.
type ActiveRow = (i64, f64, Option<String>, Option<Vec<f32>>);

fn active_row(r: &sqlx::postgres::PgRow) -> Result<(i64, ActiveRow), TeamError> {
    Ok((
        r.try_get(0)?,
        (r.try_get(1)?, r.try_get(2)?, r.try_get(3)?, r.try_get(4)?),
    ))
}

/// Cosine of the query with each lexical candidate that has a vector of the query's model.
fn semantic(model: &str, query: &[f32], lexical: &[LexRow]) -> Vec<alembic_memory::ChannelRow> {
    lexical
        .iter()
        .filter(|r| r.4.as_deref() == Some(model))
        .filter_map(|r| {
            let v = r.5.as_ref().filter(|v| v.len() == query.len())?;
            Some((r.0, cosine(query, v), r.2, r.3))
        })
        .collect()
}

/// Loads the ranked memories; with `touch` (the time), bumps their access counts in the same
/// statement and returns them as they were before (the SQLite store's order: read, then
/// touch). The bump is committed without waiting for the WAL flush (see [`retrieve`]: the
/// transaction was begun by [`begin_team_unflushed`]).
async fn load(
    conn: &mut PgConnection,
    team: &str,
    seqs: &[i64],
    touch: Option<i64>,
) -> Result<HashMap<i64, Memory>, TeamError> {
    const LOAD: &str = concat!(
        "select ",
        columns!(),
        ", seq from team_memories where team = $1 and seq = any($2)"
    );
    const LOAD_AND_TOUCH: &str = concat!(
        "update team_memories t set access_count = t.access_count + 1, last_accessed = $3
         from (select ",
        columns!(),
        ", seq from team_memories where team = $1 and seq = any($2)) prior
         where t.team = $1 and t.seq = prior.seq
         returning prior.*"
    );
    if seqs.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = match touch {
        Some(now) => {
            sqlx::query(LOAD_AND_TOUCH)
                .bind(team)
                .bind(seqs)
                .bind(now)
                .fetch_all(conn)
                .await?
        }
        None => {
            sqlx::query(LOAD)
                .bind(team)
                .bind(seqs)
                .fetch_all(conn)
                .await?
        }
    };
    rows.iter()
        .map(|r| Ok((r.try_get(19)?, rows::decode(r)?)))
        .collect()
}

pub(super) fn consolidate(
    pm: &mut PgMemory,
    candidates: &[NewMemory],
) -> Result<ConsolidateStats, MemoryError> {
    let consolidator = MemoryConsolidator::new(pm.config.consolidation.clone());
    let now = pm.clock.now_ms();
    let min_chars = consolidator.config().min_chars;
    let prepared: Vec<Option<Memory>> = candidates
        .iter()
        .map(|c| {
            let long_enough = c.content.trim().chars().count() >= min_chars;
            long_enough
                .then(|| prepare_memory(&pm.config, c, now))
                .transpose()
        })
        .collect::<Result<_, _>>()?;
    let texts: Vec<&str> = prepared
        .iter()
        .flatten()
        .map(|m| m.content.as_str())
        .collect();
    let vectors = try_embed(pm.embedder.as_ref(), &texts).unwrap_or_default();
    let model = pm.embedder.as_ref().map(|e| e.model_id().to_string());
    let keep = pm.config.max_per_scope.saturating_sub(1);
    let outcomes = pm.run(move |who, pool| async move {
        let mut tx = begin_team(&pool, &who.team).await?;
        rows::lock_team(&mut tx, &who.team).await?;
        let mut vectors = vectors.into_iter();
        let mut outcomes = Vec::new();
        for candidate in prepared {
            let Some(candidate) = candidate else {
                outcomes.push(Outcome::skipped());
                continue;
            };
            let vector = vectors.next();
            let pool_rows =
                comparison_pool(&mut tx, &who.team, &candidate, now, &consolidator).await?;
            let decision = consolidator.decide(&pool_rows, candidate, now);
            let outcome = decision.outcome();
            let v = model.as_deref().zip(vector.as_deref());
            apply(&mut tx, &who, decision, v, now, keep).await?;
            outcomes.push(outcome);
        }
        tx.commit().await?;
        Ok(outcomes)
    })?;
    embed_merged(pm, &outcomes)?;
    Ok(outcomes.into_iter().collect())
}

/// Current, unexpired memories of the candidate's team, scope and type whose content shares
/// words with it, best BM25 match on the content first (the SQLite consolidator's pool).
async fn comparison_pool(
    conn: &mut PgConnection,
    team: &str,
    candidate: &Memory,
    now: i64,
    consolidator: &MemoryConsolidator,
) -> Result<Vec<Memory>, TeamError> {
    let terms = query_terms(&candidate.content);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let postings = Postings::fetch(&mut *conn, team, &terms.join(" ")).await?;
    let scored = postings.bm25(Weights::ContentOnly);
    let want = consolidator.config().pool.max(1);
    let sql = concat!(
        "select ",
        columns!(),
        ", seq from team_memories
         where team = $1 and seq = any($2) and scope = $3 and type = $4
           and valid_to is null and (expires_at is null or expires_at > $5)"
    );
    let mut kept = Vec::with_capacity(want);
    for page in pages(scored, want * 2) {
        let seqs: Vec<i64> = page.iter().map(|r| r.0).collect();
        let rows = sqlx::query(sql)
            .bind(team)
            .bind(&seqs)
            .bind(candidate.scope.as_str())
            .bind(candidate.kind.as_str())
            .bind(now)
            .fetch_all(&mut *conn)
            .await?;
        let mut found: HashMap<i64, Memory> = rows
            .iter()
            .map(|r| Ok((r.try_get(19)?, rows::decode(r)?)))
            .collect::<Result<_, TeamError>>()?;
        kept.extend(seqs.iter().filter_map(|s| found.remove(s)));
        if kept.len() >= want {
            break;
        }
    }
    kept.truncate(want);
    Ok(kept)
}

/// Writes one decision; a replacing or added memory takes the candidate's vector.
async fn apply(
    tx: &mut PgConnection,
    who: &Who,
    decision: Decision,
    vector: Option<(&str, &[f32])>,
    now: i64,
    keep: usize,
) -> Result<(), TeamError> {
    let (team, author) = (who.team.as_str(), who.author.as_str());
    match decision {
        Decision::Supersede {
            new, old, action, ..
        } => {
            rows::supersede(&mut *tx, team, author, &old, &new.id, now).await?;
            let vector = vector.filter(|_| action == Action::Replaced);
            rows::insert(tx, team, author, &new, vector).await?;
        }
        Decision::Update { memory, .. } => {
            rows::write_back(tx, team, author, &memory, None).await?;
        }
        Decision::Add { memory, .. } => {
            rows::evict_to(&mut *tx, team, memory.scope, keep).await?;
            rows::insert(tx, team, author, &memory, vector).await?;
        }
    }
    Ok(())
}

/// Embeds the merged memories after the commit, as the SQLite consolidator does.
fn embed_merged(pm: &PgMemory, outcomes: &[Outcome]) -> Result<(), MemoryError> {
    let Some(embedder) = pm.embedder.clone() else {
        return Ok(());
    };
    let merged: Vec<Memory> = outcomes
        .iter()
        .filter(|o| o.action == Action::Merged)
        .filter_map(|o| o.id.as_deref())
        .map(|id| pm.get_versioned(id))
        .filter_map(|r| r.transpose())
        .map(|r| r.map(|v| v.memory))
        .collect::<Result<_, _>>()?;
    let texts: Vec<&str> = merged.iter().map(|m| m.content.as_str()).collect();
    let Some(vectors) = try_embed(Some(&embedder), &texts) else {
        return Ok(());
    };
    let ids: Vec<String> = merged.into_iter().map(|m| m.id).collect();
    let model = embedder.model_id().to_string();
    pm.run(move |who, pool| async move {
        let mut conn = begin_team(&pool, &who.team).await?;
        for (id, v) in ids.iter().zip(&vectors) {
            rows::put_vector(&mut conn, &who.team, id, &model, Some(v)).await?;
        }
        conn.commit().await?;
        Ok(())
    })
}
