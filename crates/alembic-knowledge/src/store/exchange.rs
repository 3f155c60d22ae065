//! Export and import of the whole SQLite knowledge base ([`KnowledgeExport`]), the two halves
//! of `alembic team push|pull`. An import keeps ids, skips what is already there and writes
//! in one transaction, so running it twice writes nothing the second time.

use std::collections::HashSet;

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::rows::{COLUMNS, entry_from_row, import_entry, insert_history};
use super::{KnowledgeStore, live_title};
use crate::backend::{HistoryRow, ImportReport, KnowledgeExport, Moved};
use crate::error::KnowledgeError;
use crate::guard::GuardRun;
use crate::model::{Edge, Transition, normalise_title};

impl KnowledgeStore {
    pub(crate) fn export_all(&self) -> Result<KnowledgeExport, KnowledgeError> {
        let mut stmt = self.conn.prepare(&format!(
            "select {COLUMNS} from knowledge_entries order by seq"
        ))?;
        let entries = stmt
            .query_map([], entry_from_row)?
            .collect::<Result<Vec<_>, _>>()?;
        let mut stmt = self.conn.prepare(
            "select entry_id, from_status, to_status, at, by, reason from knowledge_history \
             order by seq",
        )?;
        let raw = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<String>>(5)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut history = Vec::with_capacity(raw.len());
        for (entry_id, from, to, at, by, reason) in raw {
            history.push(HistoryRow {
                entry_id,
                transition: Transition {
                    from: from.map(|f| super::parse_status(&f)).transpose()?,
                    to: super::parse_status(&to)?,
                    at,
                    by,
                    reason,
                },
            });
        }
        let mut stmt = self.conn.prepare(
            "select from_id, to_id, relation, weight, created_by, created_at from knowledge_edges \
             order by created_at, from_id, to_id, relation",
        )?;
        let edges = stmt
            .query_map([], |r| {
                Ok(Edge {
                    from_id: r.get(0)?,
                    to_id: r.get(1)?,
                    relation: r.get(2)?,
                    weight: r.get(3)?,
                    created_by: r.get(4)?,
                    created_at: r.get(5)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut proposals = Vec::new();
        for e in &entries {
            proposals.extend(self.proposals_of(&e.id)?);
        }
        let mut guard_runs = self.latest_guard_runs(None, usize::MAX >> 1)?;
        guard_runs.reverse();
        Ok(KnowledgeExport {
            entries,
            history,
            edges,
            proposals,
            guard_runs,
            guard_overrides: self.stored_guard_overrides()?,
        })
    }

    pub(crate) fn import_all(
        &mut self,
        data: &KnowledgeExport,
    ) -> Result<ImportReport, KnowledgeError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut report = ImportReport::default();
        let mut fresh = HashSet::new();
        for e in &data.entries {
            let present = tx
                .query_row(
                    "select 1 from knowledge_entries where id = ?1",
                    [&e.id],
                    |_| Ok(()),
                )
                .optional()?
                .is_some();
            if present {
                report.already_present += 1;
                continue;
            }
            let live = e.status != crate::model::Status::Deprecated;
            if live && let Some((kept, _)) = live_title(&tx, &normalise_title(&e.title), None)? {
                report.title_taken.push((e.id.clone(), kept));
                continue;
            }
            import_entry(&tx, e)?;
            fresh.insert(e.id.as_str());
            report.imported += 1;
        }
        for h in data
            .history
            .iter()
            .filter(|h| fresh.contains(h.entry_id.as_str()))
        {
            let t = &h.transition;
            insert_history(
                &tx,
                &h.entry_id,
                t.from,
                t.to,
                t.at,
                &t.by,
                t.reason.as_deref(),
            )?;
        }
        for edge in &data.edges {
            report.edges += tx.execute(
                "insert into knowledge_edges (from_id, to_id, relation, weight, created_by, \
                 created_at) select ?1, ?2, ?3, ?4, ?5, ?6 \
                 where exists (select 1 from knowledge_entries where id = ?1) \
                 and exists (select 1 from knowledge_entries where id = ?2) \
                 on conflict (from_id, to_id, relation) do nothing",
                params![
                    edge.from_id,
                    edge.to_id,
                    edge.relation,
                    edge.weight,
                    edge.created_by,
                    edge.created_at
                ],
            )?;
        }
        for p in &data.proposals {
            report.proposals += tx.execute(
                "insert into evolution_proposals (id, entry_id, type, description, evidence, \
                 confidence, status, proposed_by, proposed_at, resolved_at, resolved_by, \
                 resolution) select ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12 \
                 where exists (select 1 from knowledge_entries where id = ?2) \
                 on conflict (id) do nothing",
                params![
                    p.id,
                    p.entry_id,
                    p.kind,
                    p.description,
                    p.evidence.to_string(),
                    p.confidence,
                    p.status,
                    p.proposed_by,
                    p.proposed_at,
                    p.resolved_at,
                    p.resolved_by,
                    p.resolution
                ],
            )?;
        }
        for run in &data.guard_runs {
            report.guard_runs += import_guard_run(&tx, run)?;
        }
        if let Some(text) = &data.guard_overrides {
            tx.execute(
                "insert into guard_overrides (id, rules, updated_by, updated_at) \
                 values (1, ?1, 'import', 0) on conflict (id) do nothing",
                [text],
            )?;
        }
        tx.commit()?;
        Ok(report)
    }
}

impl KnowledgeStore {
    /// [`crate::KnowledgeBackend::remove_moved`]: history, edges, proposals and violations go
    /// with their rows (foreign keys cascade), the FTS index follows its triggers.
    pub(crate) fn remove_all(&mut self, moved: &Moved) -> Result<usize, KnowledgeError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut removed = 0;
        for id in &moved.entries {
            removed += tx.execute("delete from knowledge_entries where id = ?1", [id])?;
        }
        for run in &moved.guard_runs {
            tx.execute("delete from guard_runs where seq = ?1", [run])?;
        }
        if moved.guard_overrides {
            tx.execute("delete from guard_overrides", [])?;
        }
        tx.commit()?;
        Ok(removed)
    }
}

/// A guard run is the same run when target, time and checker match (runs have no id of
/// their own across stores). Returns 1 when it was written.
fn import_guard_run(conn: &rusqlite::Connection, run: &GuardRun) -> Result<usize, KnowledgeError> {
    let present = conn
        .query_row(
            "select 1 from guard_runs where target = ?1 and checked_at = ?2 and checked_by = ?3",
            params![run.target, run.checked_at, run.checked_by],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    if present {
        return Ok(0);
    }
    crate::guard::insert_run(conn, run)?;
    Ok(1)
}
