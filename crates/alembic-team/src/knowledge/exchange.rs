//! History rows, guard runs and overrides, re-indexing, and export/import of
//! [`PgKnowledge`] (`alembic team push|pull`). An import keeps ids, skips what the team
//! already has and runs in one transaction under the team's knowledge lock, so importing the
//! same data twice writes nothing the second time and two pushes at once do not duplicate.

use std::collections::HashSet;

use alembic_knowledge::guard::{GuardRun, Severity, Violation};
use alembic_knowledge::{
    HistoryRow, ImportReport, KnowledgeError, KnowledgeExport, Moved, Status, Transition,
};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::graph::{edge_of, insert_edge, insert_proposal, proposal_of};
use super::rows::{self, entry_columns};
use super::{PgKnowledge, Who};
use crate::error::TeamError;
use crate::tx::begin_team;

fn status(id: &str, s: &str) -> Result<Status, TeamError> {
    s.parse::<Status>().map_err(|_| {
        TeamError::Knowledge(KnowledgeError::Corrupt(format!(
            "entry '{id}' has an unknown status '{s}' in its history"
        )))
    })
}

/// A history row selected as (from_status, to_status, at, by, reason).
pub(super) fn transition(id: &str, r: &PgRow) -> Result<Transition, TeamError> {
    let from: Option<String> = r.try_get(0)?;
    let to: String = r.try_get(1)?;
    Ok(Transition {
        from: from.map(|f| status(id, &f)).transpose()?,
        to: status(id, &to)?,
        at: r.try_get(2)?,
        by: r.try_get(3)?,
        reason: r.try_get(4)?,
    })
}

pub(super) async fn insert_guard_run(
    conn: &mut PgConnection,
    who: &Who,
    run: &GuardRun,
) -> Result<i64, TeamError> {
    let seq: i64 = sqlx::query_scalar(
        "insert into team_guard_runs (team, target, language, violation_count, checked_at,
             checked_by, author) values ($1, $2, $3, $4, $5, $6, $7) returning seq",
    )
    .bind(&who.team)
    .bind(&run.target)
    .bind(&run.language)
    .bind(run.violation_count as i64)
    .bind(run.checked_at)
    .bind(&run.checked_by)
    .bind(&who.author)
    .fetch_one(&mut *conn)
    .await?;
    for v in &run.violations {
        sqlx::query(
            "insert into team_guard_violations (team, run_seq, rule_id, severity, line, snippet,
                 message, author) values ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&who.team)
        .bind(seq)
        .bind(&v.rule_id)
        .bind(v.severity.as_str())
        .bind(v.line as i32)
        .bind(&v.snippet)
        .bind(&v.message)
        .bind(&who.author)
        .execute(&mut *conn)
        .await?;
    }
    Ok(seq)
}

/// Runs of `team`, newest first (or oldest first without `newest_first`).
pub(super) async fn guard_runs(
    conn: &mut PgConnection,
    team: &str,
    target: Option<&str>,
    limit: i64,
    newest_first: bool,
) -> Result<Vec<GuardRun>, TeamError> {
    let sql = if newest_first {
        "select seq, target, language, violation_count, checked_at, checked_by from team_guard_runs
         where team = $1 and ($2::text is null or target = $2) order by seq desc limit $3"
    } else {
        "select seq, target, language, violation_count, checked_at, checked_by from team_guard_runs
         where team = $1 and ($2::text is null or target = $2) order by seq asc limit $3"
    };
    let found = sqlx::query(sql)
        .bind(team)
        .bind(target)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
    let mut runs = Vec::with_capacity(found.len());
    for r in &found {
        let seq: i64 = r.try_get(0)?;
        let violations = sqlx::query(
            "select rule_id, message, severity, line, snippet from team_guard_violations
             where team = $1 and run_seq = $2 order by line, seq",
        )
        .bind(team)
        .bind(seq)
        .fetch_all(&mut *conn)
        .await?;
        runs.push(GuardRun {
            run: seq,
            target: r.try_get(1)?,
            language: r.try_get(2)?,
            violation_count: r.try_get::<i64, _>(3)?.max(0) as u64,
            checked_at: r.try_get(4)?,
            checked_by: r.try_get(5)?,
            violations: violations.iter().map(violation).collect::<Result<_, _>>()?,
        });
    }
    Ok(runs)
}

fn violation(r: &PgRow) -> Result<Violation, TeamError> {
    let severity: String = r.try_get(2)?;
    Ok(Violation {
        rule_id: r.try_get(0)?,
        message: r.try_get(1)?,
        severity: match severity.as_str() {
            "error" => Severity::Error,
            "info" => Severity::Info,
            _ => Severity::Warning,
        },
        line: r.try_get::<i32, _>(3)?.max(0) as u32,
        snippet: r.try_get(4)?,
        fix_suggestion: None,
    })
}

/// Sets (or with `None` removes) the team's guard-rule overrides; without `replace`, an
/// existing text is kept (import).
pub(super) async fn put_guard_overrides(
    conn: &mut PgConnection,
    who: &Who,
    text: Option<&str>,
    by: &str,
    now: i64,
    replace: bool,
) -> Result<(), TeamError> {
    let Some(text) = text else {
        sqlx::query("delete from team_guard_overrides where team = $1")
            .bind(&who.team)
            .execute(conn)
            .await?;
        return Ok(());
    };
    let sql = if replace {
        "insert into team_guard_overrides (team, rules, updated_by, updated_at, author)
         values ($1, $2, $3, $4, $5) on conflict (team) do update set rules = excluded.rules,
             updated_by = excluded.updated_by, updated_at = excluded.updated_at,
             version = team_guard_overrides.version + 1, author = excluded.author"
    } else {
        "insert into team_guard_overrides (team, rules, updated_by, updated_at, author)
         values ($1, $2, $3, $4, $5) on conflict (team) do nothing"
    };
    sqlx::query(sql)
        .bind(&who.team)
        .bind(text)
        .bind(by)
        .bind(now)
        .bind(&who.author)
        .execute(conn)
        .await?;
    Ok(())
}

/// Recomputes every entry's index text with the current tokenizer (and its `tsvector`).
pub(super) fn reindex(
    kb: &PgKnowledge,
    dry_run: bool,
) -> Result<alembic_store::ReindexReport, KnowledgeError> {
    kb.run(move |who, pool| async move {
        let mut tx = begin_team(&pool, &who.team).await?;
        rows::lock_team(&mut tx, &who.team).await?;
        let sql = concat!(
            "select ",
            entry_columns!(),
            ", search_text from team_knowledge_entries where team = $1 order by seq"
        );
        let found = sqlx::query(sql).bind(&who.team).fetch_all(&mut *tx).await?;
        let mut stale = Vec::new();
        for r in &found {
            let e = rows::decode(r)?;
            let stored: String = r.try_get(23)?;
            let text = alembic_knowledge::text::entry_search_text(
                &e.title,
                &e.description,
                &e.content,
                &e.pattern,
                &e.tags,
            );
            if text != stored {
                stale.push((e.id, text));
            }
        }
        let report = alembic_store::ReindexReport {
            rows: found.len() as u64,
            stale: stale.len() as u64,
            written: !dry_run,
        };
        if dry_run {
            return Ok(report);
        }
        for (id, text) in &stale {
            sqlx::query(
                "update team_knowledge_entries set search_text = $3,
                     search = to_tsvector('english', $3) where team = $1 and id = $2",
            )
            .bind(&who.team)
            .bind(id)
            .bind(text)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(report)
    })
}

pub(super) fn export(kb: &PgKnowledge) -> Result<KnowledgeExport, KnowledgeError> {
    kb.run(move |who, pool| async move {
        let team = who.team.as_str();
        let mut tx = begin_team(&pool, team).await?;
        let sql = concat!(
            "select ",
            entry_columns!(),
            " from team_knowledge_entries where team = $1 order by seq"
        );
        let found = sqlx::query(sql).bind(team).fetch_all(&mut *tx).await?;
        let entries = found
            .iter()
            .map(rows::decode)
            .collect::<Result<Vec<_>, _>>()?;
        let found = sqlx::query(
            "select from_status, to_status, at, by, reason, entry_id from team_knowledge_history
             where team = $1 order by seq",
        )
        .bind(team)
        .fetch_all(&mut *tx)
        .await?;
        let mut history = Vec::with_capacity(found.len());
        for r in &found {
            let entry_id: String = r.try_get(5)?;
            history.push(HistoryRow {
                transition: transition(&entry_id, r)?,
                entry_id,
            });
        }
        let found = sqlx::query(
            "select from_id, to_id, relation, weight, created_by, created_at
             from team_knowledge_edges where team = $1
             order by created_at, from_id, to_id, relation",
        )
        .bind(team)
        .fetch_all(&mut *tx)
        .await?;
        let edges = found.iter().map(edge_of).collect::<Result<Vec<_>, _>>()?;
        let found = sqlx::query(
            "select id, entry_id, type, description, evidence, confidence, status, proposed_by,
                    proposed_at, resolved_at, resolved_by, resolution
             from team_evolution_proposals where team = $1 order by seq",
        )
        .bind(team)
        .fetch_all(&mut *tx)
        .await?;
        let proposals = found
            .iter()
            .map(proposal_of)
            .collect::<Result<Vec<_>, _>>()?;
        let guard_runs = guard_runs(&mut tx, team, None, i64::MAX, false).await?;
        let guard_overrides: Option<String> =
            sqlx::query_scalar("select rules from team_guard_overrides where team = $1")
                .bind(team)
                .fetch_optional(&mut *tx)
                .await?;
        Ok(KnowledgeExport {
            entries,
            history,
            edges,
            proposals,
            guard_runs,
            guard_overrides,
        })
    })
}

pub(super) fn import(
    kb: &PgKnowledge,
    data: &KnowledgeExport,
) -> Result<ImportReport, KnowledgeError> {
    let data = data.clone();
    let now = kb.now();
    kb.run(move |who, pool| async move {
        let mut tx = begin_team(&pool, &who.team).await?;
        rows::lock_team(&mut tx, &who.team).await?;
        let mut report = ImportReport::default();
        let mut fresh = HashSet::new();
        let stamp = who.stamp(now);
        for e in &data.entries {
            if rows::find(&mut tx, &who.team, &e.id).await?.is_some() {
                report.already_present += 1;
                continue;
            }
            if e.status != Status::Deprecated {
                let norm = alembic_knowledge::model::normalise_title(&e.title);
                if let Some((kept, _)) = rows::live_title(&mut tx, &who.team, &norm, None).await? {
                    report.title_taken.push((e.id.clone(), kept));
                    continue;
                }
            }
            rows::insert(&mut tx, &stamp, e).await?;
            fresh.insert(e.id.clone());
            report.imported += 1;
        }
        for h in data.history.iter().filter(|h| fresh.contains(&h.entry_id)) {
            let t = &h.transition;
            let reason = t.reason.as_deref();
            rows::insert_history(
                &mut tx,
                &stamp,
                &h.entry_id,
                t.from,
                t.to,
                t.at,
                &t.by,
                reason,
            )
            .await?;
        }
        for edge in &data.edges {
            report.edges +=
                insert_edge(&mut tx, &who.team, &who.author, edge, false).await? as usize;
        }
        for p in &data.proposals {
            report.proposals += insert_proposal(&mut tx, &who.team, &who.author, p).await? as usize;
        }
        for run in &data.guard_runs {
            let present: bool = sqlx::query_scalar(
                "select exists (select 1 from team_guard_runs where team = $1 and target = $2
                     and checked_at = $3 and checked_by = $4)",
            )
            .bind(&who.team)
            .bind(&run.target)
            .bind(run.checked_at)
            .bind(&run.checked_by)
            .fetch_one(&mut *tx)
            .await?;
            if !present {
                insert_guard_run(&mut tx, &who, run).await?;
                report.guard_runs += 1;
            }
        }
        let overrides = data.guard_overrides.as_deref();
        if overrides.is_some() {
            put_guard_overrides(&mut tx, &who, overrides, "import", now, false).await?;
        }
        tx.commit().await?;
        Ok(report)
    })
}

/// [`alembic_knowledge::KnowledgeBackend::remove_moved`] on the team's rows (history, edges,
/// proposals and violations cascade), under the team's knowledge lock, in one transaction.
pub(super) fn remove_moved(kb: &PgKnowledge, moved: &Moved) -> Result<usize, KnowledgeError> {
    let moved = moved.clone();
    kb.run(move |who, pool| async move {
        let mut tx = begin_team(&pool, &who.team).await?;
        rows::lock_team(&mut tx, &who.team).await?;
        let removed =
            sqlx::query("delete from team_knowledge_entries where team = $1 and id = any($2)")
                .bind(&who.team)
                .bind(&moved.entries)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        sqlx::query("delete from team_guard_runs where team = $1 and seq = any($2)")
            .bind(&who.team)
            .bind(&moved.guard_runs)
            .execute(&mut *tx)
            .await?;
        if moved.guard_overrides {
            sqlx::query("delete from team_guard_overrides where team = $1")
                .bind(&who.team)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(removed as usize)
    })
}
