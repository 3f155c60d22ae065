//! Graph edges, counts, evolution proposals and guard totals of [`PgKnowledge`]. The rules
//! (relation vocabulary, proposal types and targets, lifecycle) are the knowledge crate's.

use std::collections::BTreeMap;

use alembic_knowledge::backend::{
    check_proposal_target, check_proposal_type, check_transition, new_proposal_id,
};
use alembic_knowledge::evolution::Proposal;
use alembic_knowledge::graph::{Neighbour, Neighbours, Stats, check_relation};
use alembic_knowledge::guard::GuardStats;
use alembic_knowledge::{Edge, KnowledgeError, Status};
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::PgKnowledge;
use super::rows;
use crate::error::TeamError;
use crate::tx::begin_team;

pub(super) fn add_edge(
    kb: &PgKnowledge,
    from: &str,
    to: &str,
    relation: &str,
    weight: f64,
    by: &str,
) -> Result<(Edge, bool), KnowledgeError> {
    let relation = check_relation(relation)?;
    if from == to {
        return Err(KnowledgeError::SelfEdge {
            id: from.to_string(),
        });
    }
    let edge = Edge {
        from_id: from.to_string(),
        to_id: to.to_string(),
        relation,
        weight,
        created_by: by.to_string(),
        created_at: kb.now(),
    };
    kb.run(move |who, pool| async move {
        let mut tx = begin_team(&pool, &who.team).await?;
        rows::get_for_update(&mut tx, &who.team, &edge.from_id).await?;
        rows::get(&mut tx, &who.team, &edge.to_id).await?;
        let existed: bool = sqlx::query_scalar(
            "select exists (select 1 from team_knowledge_edges where team = $1 and from_id = $2
                 and to_id = $3 and relation = $4)",
        )
        .bind(&who.team)
        .bind(&edge.from_id)
        .bind(&edge.to_id)
        .bind(&edge.relation)
        .fetch_one(&mut *tx)
        .await?;
        insert_edge(&mut tx, &who.team, &who.author, &edge, true).await?;
        tx.commit().await?;
        Ok((edge, !existed))
    })
}

/// Inserts `edge`; an existing one is re-weighted (`reweight`) or left alone. Returns 1 when
/// a row was written.
pub(super) async fn insert_edge(
    conn: &mut PgConnection,
    team: &str,
    author: &str,
    edge: &Edge,
    reweight: bool,
) -> Result<u64, TeamError> {
    let sql = if reweight {
        "insert into team_knowledge_edges (team, from_id, to_id, relation, weight, created_by,
             created_at, author) values ($1, $2, $3, $4, $5, $6, $7, $8)
         on conflict (team, from_id, to_id, relation) do update set weight = excluded.weight,
             version = team_knowledge_edges.version + 1, author = excluded.author"
    } else {
        "insert into team_knowledge_edges (team, from_id, to_id, relation, weight, created_by,
             created_at, author)
         select $1, $2, $3, $4, $5, $6, $7, $8
         where exists (select 1 from team_knowledge_entries where team = $1 and id = $2)
           and exists (select 1 from team_knowledge_entries where team = $1 and id = $3)
         on conflict (team, from_id, to_id, relation) do nothing"
    };
    Ok(sqlx::query(sql)
        .bind(team)
        .bind(&edge.from_id)
        .bind(&edge.to_id)
        .bind(&edge.relation)
        .bind(edge.weight)
        .bind(&edge.created_by)
        .bind(edge.created_at)
        .bind(author)
        .execute(conn)
        .await?
        .rows_affected())
}

pub(super) fn edge_of(r: &PgRow) -> Result<Edge, TeamError> {
    Ok(Edge {
        from_id: r.try_get(0)?,
        to_id: r.try_get(1)?,
        relation: r.try_get(2)?,
        weight: r.try_get(3)?,
        created_by: r.try_get(4)?,
        created_at: r.try_get(5)?,
    })
}

pub(super) fn neighbours(
    kb: &PgKnowledge,
    id: &str,
    relation: Option<&str>,
) -> Result<Neighbours, KnowledgeError> {
    let relation = relation.map(check_relation).transpose()?;
    let id = id.to_string();
    kb.run(move |who, pool| async move {
        let mut tx = begin_team(&pool, &who.team).await?;
        rows::get(&mut tx, &who.team, &id).await?;
        let outgoing = sqlx::query(
            "select g.from_id, g.to_id, g.relation, g.weight, g.created_by, g.created_at,
                    e.id, e.title, e.status
             from team_knowledge_edges g join team_knowledge_entries e
                  on e.team = g.team and e.id = g.to_id
             where g.team = $1 and g.from_id = $2 and ($3::text is null or g.relation = $3)
             order by g.relation, e.title",
        );
        let incoming = sqlx::query(
            "select g.from_id, g.to_id, g.relation, g.weight, g.created_by, g.created_at,
                    e.id, e.title, e.status
             from team_knowledge_edges g join team_knowledge_entries e
                  on e.team = g.team and e.id = g.from_id
             where g.team = $1 and g.to_id = $2 and ($3::text is null or g.relation = $3)
             order by g.relation, e.title",
        );
        let mut out = Neighbours::default();
        for (query, side) in [(outgoing, &mut out.outgoing), (incoming, &mut out.incoming)] {
            let found = query
                .bind(&who.team)
                .bind(&id)
                .bind(&relation)
                .fetch_all(&mut *tx)
                .await?;
            for r in &found {
                let status: String = r.try_get(8)?;
                side.push(Neighbour {
                    edge: edge_of(r)?,
                    other_id: r.try_get(6)?,
                    other_title: r.try_get(7)?,
                    other_status: parse_status(&status)?,
                });
            }
        }
        Ok(out)
    })
}

fn parse_status(s: &str) -> Result<Status, TeamError> {
    s.parse::<Status>().map_err(|_| {
        TeamError::Knowledge(KnowledgeError::Corrupt(format!(
            "unknown status '{s}' on the team server"
        )))
    })
}

async fn counts(
    conn: &mut PgConnection,
    sql: &'static str,
    team: &str,
) -> Result<BTreeMap<String, u64>, TeamError> {
    let found = sqlx::query(sql).bind(team).fetch_all(conn).await?;
    let mut out = BTreeMap::new();
    for r in &found {
        out.insert(
            r.try_get::<String, _>(0)?,
            r.try_get::<i64, _>(1)?.max(0) as u64,
        );
    }
    Ok(out)
}

async fn count(conn: &mut PgConnection, sql: &'static str, team: &str) -> Result<u64, TeamError> {
    let n: i64 = sqlx::query_scalar(sql).bind(team).fetch_one(conn).await?;
    Ok(n.max(0) as u64)
}

pub(super) fn stats(kb: &PgKnowledge) -> Result<Stats, KnowledgeError> {
    kb.run(move |who, pool| async move {
        let team = who.team.as_str();
        let mut tx = begin_team(&pool, team).await?;
        let mut stats = Stats {
            by_status: counts(
                &mut tx,
                "select status, count(*) from team_knowledge_entries where team = $1 group by 1",
                team,
            )
            .await?,
            by_kind: counts(
                &mut tx,
                "select kind, count(*) from team_knowledge_entries where team = $1 group by 1",
                team,
            )
            .await?,
            by_language: counts(
                &mut tx,
                "select case when language = '' then '(none)' else language end, count(*)
                 from team_knowledge_entries where team = $1 group by 1",
                team,
            )
            .await?,
            edges_by_relation: counts(
                &mut tx,
                "select relation, count(*) from team_knowledge_edges where team = $1 group by 1",
                team,
            )
            .await?,
            ..Stats::default()
        };
        for (status, n) in &stats.by_status {
            stats.total += n;
            match parse_status(status)? {
                s if s.is_candidate() => stats.candidates += n,
                Status::Published => stats.recipes += n,
                _ => {}
            }
        }
        stats.edges = stats.edges_by_relation.values().sum();
        stats.open_proposals = count(
            &mut tx,
            "select count(*) from team_evolution_proposals where team = $1 and status = 'open'",
            team,
        )
        .await?;
        stats.guard_runs = count(
            &mut tx,
            "select count(*) from team_guard_runs where team = $1",
            team,
        )
        .await?;
        Ok(stats)
    })
}

pub(super) fn guard_stats(kb: &PgKnowledge) -> Result<GuardStats, KnowledgeError> {
    kb.run(move |who, pool| async move {
        let team = who.team.as_str();
        let mut tx = begin_team(&pool, team).await?;
        let mut stats = GuardStats {
            runs: count(
                &mut tx,
                "select count(*) from team_guard_runs where team = $1",
                team,
            )
            .await?,
            violations: count(
                &mut tx,
                "select count(*) from team_guard_violations where team = $1",
                team,
            )
            .await?,
            files_with_violations: count(
                &mut tx,
                "select count(distinct target) from team_guard_runs
                 where team = $1 and violation_count > 0",
                team,
            )
            .await?,
            ..GuardStats::default()
        };
        let found = sqlx::query(
            "select severity, rule_id, count(*) from team_guard_violations where team = $1
             group by 1, 2",
        )
        .bind(team)
        .fetch_all(&mut *tx)
        .await?;
        for r in &found {
            let n = r.try_get::<i64, _>(2)?.max(0) as u64;
            *stats.by_severity.entry(r.try_get(0)?).or_default() += n;
            *stats.by_rule.entry(r.try_get(1)?).or_default() += n;
        }
        Ok(stats)
    })
}

pub(super) fn propose(
    kb: &PgKnowledge,
    entry_id: &str,
    kind: &str,
    description: &str,
    evidence: &Value,
    confidence: f64,
    by: &str,
) -> Result<Proposal, KnowledgeError> {
    check_proposal_type(kind)?;
    let p = Proposal {
        id: new_proposal_id(),
        entry_id: entry_id.to_string(),
        kind: kind.to_string(),
        description: description.to_string(),
        evidence: evidence.clone(),
        confidence: confidence.clamp(0.0, 1.0),
        status: "open".to_string(),
        proposed_by: by.to_string(),
        proposed_at: kb.now(),
        resolved_at: None,
        resolved_by: None,
        resolution: None,
    };
    kb.run(move |who, pool| async move {
        let mut tx = begin_team(&pool, &who.team).await?;
        let e = rows::get_for_update(&mut tx, &who.team, &p.entry_id).await?;
        check_proposal_target(&p.entry_id, e.status)?;
        let open: Option<String> = sqlx::query_scalar(
            "select id from team_evolution_proposals where team = $1 and entry_id = $2
             and type = $3 and status = 'open' order by seq limit 1",
        )
        .bind(&who.team)
        .bind(&p.entry_id)
        .bind(&p.kind)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(proposal_id) = open {
            return Err(TeamError::Knowledge(KnowledgeError::DuplicateProposal {
                entry_id: p.entry_id.clone(),
                kind: p.kind.clone(),
                proposal_id,
            }));
        }
        insert_proposal(&mut tx, &who.team, &who.author, &p).await?;
        tx.commit().await?;
        Ok(p)
    })
}

/// Inserts `p` unless its id is there; returns 1 when written.
pub(super) async fn insert_proposal(
    conn: &mut PgConnection,
    team: &str,
    author: &str,
    p: &Proposal,
) -> Result<u64, TeamError> {
    Ok(sqlx::query(
        "insert into team_evolution_proposals (team, id, entry_id, type, description, evidence,
             confidence, status, proposed_by, proposed_at, resolved_at, resolved_by, resolution,
             author)
         select $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14
         where exists (select 1 from team_knowledge_entries where team = $1 and id = $3)
         on conflict (team, id) do nothing",
    )
    .bind(team)
    .bind(&p.id)
    .bind(&p.entry_id)
    .bind(&p.kind)
    .bind(&p.description)
    .bind(p.evidence.to_string())
    .bind(p.confidence)
    .bind(&p.status)
    .bind(&p.proposed_by)
    .bind(p.proposed_at)
    .bind(p.resolved_at)
    .bind(&p.resolved_by)
    .bind(&p.resolution)
    .bind(author)
    .execute(conn)
    .await?
    .rows_affected())
}

pub(super) fn proposals_for(
    kb: &PgKnowledge,
    entry_id: &str,
) -> Result<Vec<Proposal>, KnowledgeError> {
    let entry_id = entry_id.to_string();
    kb.run(move |who, pool| async move {
        let mut tx = begin_team(&pool, &who.team).await?;
        let found = sqlx::query(
            "select id, entry_id, type, description, evidence, confidence, status, proposed_by,
                    proposed_at, resolved_at, resolved_by, resolution
             from team_evolution_proposals where team = $1 and ($2::text is null or entry_id = $2)
             order by seq",
        )
        .bind(&who.team)
        .bind(Some(&entry_id))
        .fetch_all(&mut *tx)
        .await?;
        found.iter().map(proposal_of).collect()
    })
}

pub(super) fn proposal_of(r: &PgRow) -> Result<Proposal, TeamError> {
    let evidence: String = r.try_get(4)?;
    Ok(Proposal {
        id: r.try_get(0)?,
        entry_id: r.try_get(1)?,
        kind: r.try_get(2)?,
        description: r.try_get(3)?,
        evidence: serde_json::from_str(&evidence).unwrap_or(Value::Null),
        confidence: r.try_get(5)?,
        status: r.try_get(6)?,
        proposed_by: r.try_get(7)?,
        proposed_at: r.try_get(8)?,
        resolved_at: r.try_get(9)?,
        resolved_by: r.try_get(10)?,
        resolution: r.try_get(11)?,
    })
}

/// In one transaction: with `deprecate`, the recipe moves to deprecated (lifecycle rules
/// apply) and its open proposals close as executed; otherwise they close as skipped.
pub(super) fn close_proposals(
    kb: &PgKnowledge,
    entry_id: &str,
    reason: &str,
    by: &str,
    deprecate: bool,
) -> Result<usize, KnowledgeError> {
    let now = kb.now();
    let (id, reason, by) = (entry_id.to_string(), reason.to_string(), by.to_string());
    kb.run(move |who, pool| async move {
        let mut tx = begin_team(&pool, &who.team).await?;
        let e = rows::get_for_update(&mut tx, &who.team, &id).await?;
        if deprecate {
            let to = Status::Deprecated;
            let why = check_transition(&id, e.status, to, Some(&reason))?;
            rows::move_to(&mut tx, &who.stamp(now), &id, e.status, to, &by, why).await?;
        }
        let outcome = if deprecate { "executed" } else { "skipped" };
        let closed = sqlx::query(
            "update team_evolution_proposals set status = $3, resolved_at = $4, resolved_by = $5,
                 resolution = $6, version = version + 1, author = $7
             where team = $1 and entry_id = $2 and status = 'open'",
        )
        .bind(&who.team)
        .bind(&id)
        .bind(outcome)
        .bind(now)
        .bind(&by)
        .bind(&reason)
        .bind(&who.author)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(closed as usize)
    })
}
