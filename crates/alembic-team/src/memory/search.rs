//! Retrieval and consolidation of [`PgMemory`]: the server finds lexical candidates with
//! `tsvector` search; scoring, ranking and the consolidation decisions are the memory
//! crate's (`MemoryRetriever::rank_channels`, `MemoryConsolidator::decide`).
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

use super::rows::{self, columns, ts_config};
use super::{PgMemory, Who};
use crate::error::TeamError;

/// A `to_tsquery` text: the OR of the quoted terms (so user text never becomes query
/// syntax), each restricted to `weight` (A: content only) when given.
fn ts_query(terms: &[String], weight: Option<char>) -> String {
    let suffix = weight.map(|w| format!(":{w}")).unwrap_or_default();
    terms
        .iter()
        .map(|t| format!("'{}'{suffix}", t.replace('\\', "\\\\").replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(" | ")
}

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
        let mut conn = pool.acquire().await?;
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

/// BM25 of every active match as SQLite's FTS5 computes it (k1 1.2, b 0.75, idf floored at
/// 1e-6, a hit in the context counting `context_weight`, N and the average length over the
/// team's rows), the best `candidate_pool` first, with their vectors.
const BM25: &str = concat!(
    "with q as (select distinct lexeme from unnest(to_tsvector(",
    ts_config!(),
    ", $2))),
     corpus as (select rows::float8 as total,
                       greatest(total_len::float8 / greatest(rows, 1), 1.0) as avgdl
                from team_memory_stats where team = $1),
     idf as (select q.lexeme, greatest(ln((corpus.total - d.n + 0.5) / (d.n + 0.5)), 1e-6) as idf
             from q cross join corpus
             cross join lateral (select count(*)::float8 as n from team_memories t
                                 where t.team = $1
                                   and t.search @@ plainto_tsquery('simple', q.lexeme)) d),
     cand as (select m.seq, m.search, m.search_len, m.updated, m.importance, m.vector_model,
                     m.vector
              from team_memories m, to_tsquery(",
    ts_config!(),
    ", $3) tq
              where m.team = $1 and m.search @@ tq
                and ($5::text is null or m.scope = $5) and ($6::text is null or m.type = $6)
                and m.valid_to is null and m.archived_at is null
                and (m.expires_at is null or m.expires_at > $7) and m.last_accessed >= $8),
     scored as (select c.seq,
                       sum(i.idf * (t.tf * 2.2)
                           / (t.tf + 1.2 * (0.25 + 0.75 * c.search_len / corpus.avgdl))) as score
                from cand c cross join corpus
                cross join lateral (
                    select u.lexeme,
                           sum(case when w = 'A' then 1.0::float8 else $4 end) as tf
                    from unnest(c.search) u, unnest(u.weights) w group by u.lexeme) t
                join idf i on i.lexeme = t.lexeme
                group by c.seq)
     select c.seq, s.score, c.updated, c.importance, c.vector_model, c.vector
     from scored s join cand c on c.seq = s.seq
     order by s.score desc, c.seq asc limit $9"
);

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
    let (text, tsq) = (terms.join(" "), ts_query(terms, None));
    pm.run(move |who, pool| async move {
        // planned with its arguments every time: a generic plan of this query (which sqlx's
        // cached statements get after five runs) is two orders of magnitude slower
        let rows = sqlx::query(BM25)
            .persistent(false)
            .bind(&who.team)
            .bind(&text)
            .bind(&tsq)
            .bind(config.context_weight)
            .bind(scope)
            .bind(kind)
            .bind(now)
            .bind(cutoff)
            .bind(config.candidate_pool.max(1) as i64)
            .fetch_all(&pool)
            .await?;
        rows.iter().map(lex_row).collect()
    })
}

fn lex_row(r: &sqlx::postgres::PgRow) -> Result<LexRow, TeamError> {
    Ok((
        r.try_get(0)?,
        r.try_get(1)?,
        r.try_get(2)?,
        r.try_get(3)?,
        r.try_get(4)?,
        r.try_get(5)?,
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
        let mut tx = pool.begin().await?;
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
/// words with it, best match first (the SQLite consolidator's pool).
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
    let sql = concat!(
        "select ",
        columns!(),
        " from team_memories, to_tsquery(",
        ts_config!(),
        ", $2) q
         where team = $1 and search @@ q and scope = $3 and type = $4
           and valid_to is null and (expires_at is null or expires_at > $5)
         order by ts_rank(search, q) desc, seq asc limit $6"
    );
    let rows = sqlx::query(sql)
        .bind(team)
        .bind(ts_query(&terms, Some('A')))
        .bind(candidate.scope.as_str())
        .bind(candidate.kind.as_str())
        .bind(now)
        .bind(consolidator.config().pool as i64)
        .fetch_all(conn)
        .await?;
    rows.iter().map(rows::decode).collect()
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
        let mut conn = pool.acquire().await?;
        for (id, v) in ids.iter().zip(&vectors) {
            rows::put_vector(&mut conn, &who.team, id, &model, Some(v)).await?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn ts_queries_quote_every_term() {
        let terms = vec![
            "payment".to_string(),
            "o'brien".to_string(),
            "支付".to_string(),
        ];
        assert_eq!(ts_query(&terms, None), "'payment' | 'o''brien' | '支付'");
        assert_eq!(ts_query(&terms[..1], Some('A')), "'payment':A");
    }
}
