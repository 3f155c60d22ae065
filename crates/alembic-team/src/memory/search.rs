//! Retrieval and consolidation of [`PgMemory`]: lexical candidates are ranked by BM25 from
//! the postings table (`postings.rs`, as FTS5 ranks them); scoring, ranking and the
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
use crate::tx::begin_team;

/// A lexical candidate: seq, rank, updated, importance, vector model, vector.
type LexRow = (i64, f64, i64, f64, Option<String>, Option<Vec<f32>>);

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
    let lexical = lexical(pm, &terms, options, now)?;
    let semantic = semantic(pm, query, &lexical);
    let retriever = MemoryRetriever::new(pm.config.retrieval.clone());
    let lexical = lexical.iter().map(|r| (r.0, r.1, r.2, r.3)).collect();
    let candidates = retriever.rank_channels(lexical, semantic, now, options);
    let seqs: Vec<i64> = candidates.iter().map(|c| c.seq).collect();
    let touch = options.touch;
    let mut loaded = pm.run(move |who, pool| async move {
        let mut conn = begin_team(&pool, &who.team).await?;
        let found = load_by_seq(&mut conn, &who.team, &seqs).await?;
        if touch && !found.is_empty() {
            let ids: Vec<String> = found.values().map(|m| m.id.clone()).collect();
            sqlx::query(
                "update team_memories set access_count = access_count + 1, last_accessed = $3
                 where team = $1 and id = any($2)",
            )
            .bind(&who.team)
            .bind(&ids)
            .bind(now)
            .execute(&mut *conn)
            .await?;
        }
        conn.commit().await?;
        Ok(found)
    })?;
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
/// vectors when an embedder will re-rank them. Matches are ranked from their postings, then
/// read a page (twice the pool, as the SQLite ranker's first page) at a time in rank order
/// until the pool is full, so the result is the same as filtering every match.
fn lexical(
    pm: &PgMemory,
    terms: &[String],
    options: &RetrieveOptions,
    now: i64,
) -> Result<Vec<LexRow>, MemoryError> {
    let config = pm.config.retrieval.clone();
    let cutoff = pm.archive_cutoff(now);
    let (scope, kind) = (
        options.scope.map(|s| s.as_str()),
        options.kind.map(|k| k.as_str()),
    );
    let text = terms.join(" ");
    let with_vectors = pm.embedder.is_some();
    let want = config.candidate_pool.max(1);
    pm.run(move |who, pool| async move {
        let mut conn = begin_team(&pool, &who.team).await?;
        let postings = Postings::fetch(&mut conn, &who.team, &text).await?;
        let ranked = postings.bm25(Weights::ContentAndContext(config.context_weight));
        let score: HashMap<i64, f64> = ranked.iter().copied().collect();
        let mut kept = Vec::with_capacity(want);
        for seqs in pages(&ranked, want * 2) {
            let rows = sqlx::query(ACTIVE_PAGE)
                .bind(&who.team)
                .bind(&seqs)
                .bind(scope)
                .bind(kind)
                .bind(now)
                .bind(cutoff)
                .bind(with_vectors)
                .fetch_all(&mut *conn)
                .await?;
            let mut found: HashMap<i64, LexRow> = rows
                .iter()
                .map(|r| lex_row(r, &score))
                .collect::<Result<_, _>>()?;
            kept.extend(seqs.iter().filter_map(|s| found.remove(s)));
            if kept.len() >= want {
                break;
            }
        }
        kept.truncate(want);
        conn.commit().await?;
        Ok(kept)
    })
}

fn lex_row(
    r: &sqlx::postgres::PgRow,
    score: &HashMap<i64, f64>,
) -> Result<(i64, LexRow), TeamError> {
    let seq: i64 = r.try_get(0)?;
    let bm25 = score.get(&seq).copied().unwrap_or(0.0);
    Ok((
        seq,
        (
            seq,
            bm25,
            r.try_get(1)?,
            r.try_get(2)?,
            r.try_get(3)?,
            r.try_get(4)?,
        ),
    ))
}

/// Cosine of the query with each lexical candidate that has a vector of the configured
/// model; `None` without an embedder or when the query cannot be embedded (lexical only).
fn semantic(
    pm: &PgMemory,
    query: &str,
    lexical: &[LexRow],
) -> Option<Vec<alembic_memory::ChannelRow>> {
    let embedder = pm.embedder.as_ref()?;
    let q = try_embed(Some(embedder), &[query])?.into_iter().next()?;
    Some(
        lexical
            .iter()
            .filter(|r| r.4.as_deref() == Some(embedder.model_id()))
            .filter_map(|r| {
                let v = r.5.as_ref().filter(|v| v.len() == q.len())?;
                Some((r.0, cosine(&q, v), r.2, r.3))
            })
            .collect(),
    )
}

async fn load_by_seq(
    conn: &mut PgConnection,
    team: &str,
    seqs: &[i64],
) -> Result<HashMap<i64, Memory>, TeamError> {
    let sql = concat!(
        "select ",
        columns!(),
        ", seq from team_memories where team = $1 and seq = any($2)"
    );
    let rows = sqlx::query(sql)
        .bind(team)
        .bind(seqs)
        .fetch_all(conn)
        .await?;
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
    let ranked = postings.bm25(Weights::ContentOnly);
    let want = consolidator.config().pool.max(1);
    let sql = concat!(
        "select ",
        columns!(),
        ", seq from team_memories
         where team = $1 and seq = any($2) and scope = $3 and type = $4
           and valid_to is null and (expires_at is null or expires_at > $5)"
    );
    let mut kept = Vec::with_capacity(want);
    for seqs in pages(&ranked, want * 2) {
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
