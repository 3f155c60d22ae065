//! [`KnowledgeBackend`]: the one storage trait of the knowledge base. [`KnowledgeStore`]
//! (SQLite, the embedded default) implements it here; the team store on PostgreSQL
//! (`alembic-team`'s `PgKnowledge`) implements it there. Both run the same contract suite
//! ([`crate::contract`], feature `test-support`).
//!
//! The rules stay in this crate and both backends call them: which lifecycle moves are
//! allowed and need a reason ([`check_transition`]), which entries may be edited
//! ([`check_editable`]), which proposal types exist ([`check_proposal_type`]), the relation
//! vocabulary ([`crate::graph::check_relation`]), the index text ([`crate::text::search_text`]),
//! the hit score ([`crate::text::coverage`]) and impact analysis (a provided method over
//! [`KnowledgeBackend::neighbours`]). A backend owns storage, never the rules.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::KnowledgeError;
use crate::evolution::{PROPOSAL_TYPES, Proposal};
use crate::graph::{IMPACT_RELATIONS, Impact, Impacted, MAX_IMPACTED, Neighbours, Stats};
use crate::guard::{GuardRun, GuardStats, Violation};
use crate::model::{Edge, Entry, NewEntry, Status, Transition};
use crate::store::{Filter, Hit, KnowledgeStore, Usage};

/// Where the knowledge base is stored. Every write is one transaction; every edit and status
/// change bumps the entry's version; a write given an `expected` version that the entry no
/// longer has fails with [`KnowledgeError::Conflict`] naming the entry and writes nothing.
pub trait KnowledgeBackend: Send {
    /// Names the store for messages ("sqlite", "team platform on 127.0.0.1:5432/alembic").
    fn describe(&self) -> String;

    /// Stores a new entry in `status`, refusing a title a live entry already has.
    fn create(
        &mut self,
        new: &NewEntry,
        status: Status,
        by: &str,
        quality: Option<f64>,
    ) -> Result<Entry, KnowledgeError>;
    /// The entry with `id`.
    fn get(&self, id: &str) -> Result<Entry, KnowledgeError>;
    /// The live entry (not deprecated) with this title (compared normalised), as (id, status).
    fn live_title(&self, title: &str) -> Result<Option<(String, Status)>, KnowledgeError>;
    /// Every status change of `id`, oldest first.
    fn history(&self, id: &str) -> Result<Vec<Transition>, KnowledgeError>;
    /// Moves `id` to `to` along the lifecycle ([`check_transition`]), recording who and why;
    /// with `expected`, only if the entry is still at that version.
    fn transition(
        &mut self,
        id: &str,
        to: Status,
        by: &str,
        reason: Option<&str>,
        expected: Option<i64>,
    ) -> Result<Entry, KnowledgeError>;
    /// Replaces the editable fields of a candidate ([`check_editable`]); with `resubmit_by`,
    /// a draft or rejected candidate goes (back) to review in the same transaction; with
    /// `expected`, only if the entry is still at that version.
    fn update(
        &mut self,
        id: &str,
        new: &NewEntry,
        quality: Option<f64>,
        resubmit_by: Option<&str>,
        expected: Option<i64>,
    ) -> Result<Entry, KnowledgeError>;
    /// Entries matching `filter`, newest first.
    fn list(&self, filter: &Filter) -> Result<Vec<Entry>, KnowledgeError>;
    /// Full-text search, best first, filters applied inside the query; each hit scored by
    /// [`crate::text::coverage`].
    fn search(&self, query: &str, filter: &Filter) -> Result<Vec<Hit>, KnowledgeError>;
    /// Every entry that is not deprecated, oldest first (duplicate detection).
    fn live_entries(&self) -> Result<Vec<Entry>, KnowledgeError>;
    /// Increases one usage counter (not a content change: the version stays).
    fn record_usage(&mut self, id: &str, usage: Usage) -> Result<Entry, KnowledgeError>;
    /// Stores a computed quality score.
    fn set_quality(&mut self, id: &str, quality: f64) -> Result<(), KnowledgeError>;

    /// Adds (or re-weights) the edge `from -relation-> to`; returns it and whether it was new.
    fn add_edge(
        &mut self,
        from: &str,
        to: &str,
        relation: &str,
        weight: f64,
        by: &str,
    ) -> Result<(Edge, bool), KnowledgeError>;
    /// Edges leaving and entering `id`, optionally of one relation.
    fn neighbours(&self, id: &str, relation: Option<&str>) -> Result<Neighbours, KnowledgeError>;
    /// Counts by status, kind, language and relation.
    fn stats(&self) -> Result<Stats, KnowledgeError>;

    /// Files a proposal against a published recipe ([`check_proposal_type`]); one open
    /// proposal per recipe and type.
    fn propose(
        &mut self,
        entry_id: &str,
        kind: &str,
        description: &str,
        evidence: &Value,
        confidence: f64,
        by: &str,
    ) -> Result<Proposal, KnowledgeError>;
    /// Proposals of one entry, oldest first.
    fn proposals_for(&self, entry_id: &str) -> Result<Vec<Proposal>, KnowledgeError>;
    /// Deprecates a published recipe and closes its open proposals as executed, atomically.
    fn confirm_deprecation(
        &mut self,
        entry_id: &str,
        reason: &str,
        by: &str,
    ) -> Result<usize, KnowledgeError>;
    /// Closes the open proposals of a recipe as skipped.
    fn skip_evolution(
        &mut self,
        entry_id: &str,
        reason: &str,
        by: &str,
    ) -> Result<usize, KnowledgeError>;

    /// Records one guard check and its violations; returns the run's number.
    fn record_guard_run(
        &mut self,
        target: &str,
        language: &str,
        violations: &[Violation],
        by: &str,
    ) -> Result<i64, KnowledgeError>;
    /// The latest guard runs, newest first, optionally only those of `target`.
    fn guard_runs(
        &self,
        target: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GuardRun>, KnowledgeError>;
    /// Totals over every recorded guard run.
    fn guard_stats(&self) -> Result<GuardStats, KnowledgeError>;
    /// Guard-rule overrides kept in the store (the text of a rules file, as
    /// `.alembic/guard-rules.toml`), applied over the built-ins before the project's file.
    fn guard_overrides(&self) -> Result<Option<String>, KnowledgeError>;
    /// Replaces the stored guard-rule overrides (`None` removes them). The text must parse.
    fn set_guard_overrides(&mut self, text: Option<&str>, by: &str) -> Result<(), KnowledgeError>;

    /// Recomputes every entry's index text (with `dry_run`, only counts the stale ones).
    fn reindex(&mut self, dry_run: bool) -> Result<alembic_store::ReindexReport, KnowledgeError>;
    /// Everything the store holds, for moving it to another backend.
    fn export(&self) -> Result<KnowledgeExport, KnowledgeError>;
    /// Inserts exported rows keeping their ids; see [`ImportReport`] for what is skipped.
    /// Importing the same export twice writes nothing the second time.
    fn import(&mut self, data: &KnowledgeExport) -> Result<ImportReport, KnowledgeError>;
    /// Removes what another store now holds (`alembic team push` moves, never copies): the
    /// entries named (with their history, edges and proposals), the guard runs named and,
    /// with `guard_overrides`, the stored overrides; one transaction. Returns how many
    /// entries were removed (names it does not hold are skipped).
    fn remove_moved(&mut self, moved: &Moved) -> Result<usize, KnowledgeError>;

    /// Entries a change to `id` reaches: breadth first over incoming edges of the
    /// [`IMPACT_RELATIONS`], up to `max_depth` edges away, each entry once (at its smallest
    /// depth), cycles included; at most [`MAX_IMPACTED`].
    fn impact(&self, id: &str, max_depth: usize) -> Result<Impact, KnowledgeError> {
        self.get(id)?;
        let mut seen = HashSet::from([id.to_string()]);
        let mut frontier = vec![(vec![id.to_string()], Vec::<String>::new())];
        let mut impact = Impact::default();
        for depth in 1..=max_depth {
            let mut next = Vec::new();
            for (path, relations) in &frontier {
                let node = path.last().map_or(id, String::as_str);
                for n in self.neighbours(node, None)?.incoming {
                    let relation = n.edge.relation;
                    if !IMPACT_RELATIONS.contains(&relation.as_str()) || seen.contains(&n.other_id)
                    {
                        continue;
                    }
                    if impact.impacted.len() == MAX_IMPACTED {
                        impact.truncated = true;
                        return Ok(impact);
                    }
                    seen.insert(n.other_id.clone());
                    let mut path = path.clone();
                    path.push(n.other_id.clone());
                    let mut relations = relations.clone();
                    relations.push(relation.clone());
                    impact.impacted.push(Impacted {
                        id: n.other_id,
                        title: n.other_title,
                        status: n.other_status,
                        depth,
                        relation,
                        path: path.clone(),
                        relations: relations.clone(),
                    });
                    next.push((path, relations));
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        Ok(impact)
    }
}

/// One recorded status change with the entry it belongs to (export rows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryRow {
    pub entry_id: String,
    #[serde(flatten)]
    pub transition: Transition,
}

/// Everything a knowledge store holds, backend-neutral (`alembic team push|pull`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeExport {
    /// Oldest first.
    pub entries: Vec<Entry>,
    /// Oldest first.
    pub history: Vec<HistoryRow>,
    pub edges: Vec<Edge>,
    pub proposals: Vec<Proposal>,
    /// Oldest first.
    pub guard_runs: Vec<GuardRun>,
    pub guard_overrides: Option<String>,
}

/// What a move took to another store, for [`KnowledgeBackend::remove_moved`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Moved {
    /// Entry ids.
    pub entries: Vec<String>,
    /// Guard run numbers ([`GuardRun::run`]).
    pub guard_runs: Vec<i64>,
    pub guard_overrides: bool,
}

/// What an import wrote and what it skipped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    /// Entries written (with their history).
    pub imported: usize,
    /// Entries whose id the store already had (left as they are).
    pub already_present: usize,
    /// Entries skipped because another live entry has their title: (their id, the one kept).
    pub title_taken: Vec<(String, String)>,
    pub edges: usize,
    pub proposals: usize,
    pub guard_runs: usize,
}

/// The lifecycle rule for one move of entry `id` from `from` to `to`: refuses moves the
/// lifecycle does not allow (naming the allowed ones) and a missing reason where one is
/// needed. Returns the trimmed reason.
pub fn check_transition<'r>(
    id: &str,
    from: Status,
    to: Status,
    reason: Option<&'r str>,
) -> Result<Option<&'r str>, KnowledgeError> {
    if !from.can_move_to(to) {
        return Err(KnowledgeError::InvalidTransition {
            id: id.to_string(),
            from,
            to,
            allowed: from.next(),
        });
    }
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    if to.needs_reason() && reason.is_none() {
        return Err(KnowledgeError::ReasonRequired {
            id: id.to_string(),
            to,
        });
    }
    Ok(reason)
}

/// Only draft, submitted or rejected candidates are edited in place; published recipes
/// change through evolution proposals.
pub fn check_editable(id: &str, status: Status) -> Result<(), KnowledgeError> {
    if matches!(status, Status::Draft | Status::Submitted | Status::Rejected) {
        Ok(())
    } else {
        Err(KnowledgeError::NotEditable {
            id: id.to_string(),
            status,
        })
    }
}

/// Refuses a write at `expected` when the entry is at `found`.
pub fn check_version(id: &str, expected: Option<i64>, found: i64) -> Result<(), KnowledgeError> {
    match expected {
        Some(expected) if expected != found => Err(KnowledgeError::Conflict {
            id: id.to_string(),
            expected,
            found,
        }),
        _ => Ok(()),
    }
}

/// The moves `update` with `resubmit_by` makes from `status`: rejected → draft → submitted.
pub fn resubmit_moves(status: Status) -> &'static [Status] {
    match status {
        Status::Rejected => &[Status::Draft, Status::Submitted],
        Status::Draft => &[Status::Submitted],
        _ => &[],
    }
}

/// The reason recorded for the moves of a resubmission.
pub const RESUBMIT_REASON: &str = "revised and resubmitted";

/// Proposal types: the vocabulary, and that proposals are filed against published recipes.
pub fn check_proposal_type(kind: &str) -> Result<(), KnowledgeError> {
    if PROPOSAL_TYPES.contains(&kind) {
        Ok(())
    } else {
        Err(KnowledgeError::UnknownValue {
            field: "proposal type",
            value: kind.to_string(),
            accepted: "enhance, correction, deprecate, merge, supersede",
        })
    }
}

/// Proposals are filed against published recipes only.
pub fn check_proposal_target(entry_id: &str, status: Status) -> Result<(), KnowledgeError> {
    if status == Status::Published {
        Ok(())
    } else {
        Err(KnowledgeError::InvalidTransition {
            id: entry_id.to_string(),
            from: status,
            to: Status::Published,
            allowed: status.next(),
        })
    }
}

/// A new proposal id.
pub fn new_proposal_id() -> String {
    format!("ep-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

/// A new entry id.
pub fn new_entry_id() -> String {
    format!("k-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

/// Hits for entries found by a backend's full-text query, in its order, scored by
/// [`crate::text::coverage`] of the query over title, description, content and pattern.
pub fn score_hits(query: &str, entries: Vec<Entry>) -> Vec<Hit> {
    entries
        .into_iter()
        .map(|entry| {
            let body = format!(
                "{} {} {} {}",
                entry.title, entry.description, entry.content, entry.pattern
            );
            let score = (crate::text::coverage(query, &body) * 100.0).round() / 100.0;
            Hit { entry, score }
        })
        .collect()
}

/// The SQLite store is the embedded default backend.
impl KnowledgeBackend for KnowledgeStore {
    fn describe(&self) -> String {
        "sqlite".to_string()
    }
    fn create(
        &mut self,
        new: &NewEntry,
        status: Status,
        by: &str,
        quality: Option<f64>,
    ) -> Result<Entry, KnowledgeError> {
        KnowledgeStore::create_entry(self, new, status, by, quality)
    }
    fn get(&self, id: &str) -> Result<Entry, KnowledgeError> {
        KnowledgeStore::get_in(&self.conn, id)
    }
    fn live_title(&self, title: &str) -> Result<Option<(String, Status)>, KnowledgeError> {
        KnowledgeStore::live_title_in(&self.conn, title)
    }
    fn history(&self, id: &str) -> Result<Vec<Transition>, KnowledgeError> {
        KnowledgeStore::entry_history(self, id)
    }
    fn transition(
        &mut self,
        id: &str,
        to: Status,
        by: &str,
        reason: Option<&str>,
        expected: Option<i64>,
    ) -> Result<Entry, KnowledgeError> {
        KnowledgeStore::move_entry(self, id, to, by, reason, expected)
    }
    fn update(
        &mut self,
        id: &str,
        new: &NewEntry,
        quality: Option<f64>,
        resubmit_by: Option<&str>,
        expected: Option<i64>,
    ) -> Result<Entry, KnowledgeError> {
        KnowledgeStore::edit_entry(self, id, new, quality, resubmit_by, expected)
    }
    fn list(&self, filter: &Filter) -> Result<Vec<Entry>, KnowledgeError> {
        KnowledgeStore::list_entries(self, filter)
    }
    fn search(&self, query: &str, filter: &Filter) -> Result<Vec<Hit>, KnowledgeError> {
        KnowledgeStore::search_entries(self, query, filter)
    }
    fn live_entries(&self) -> Result<Vec<Entry>, KnowledgeError> {
        KnowledgeStore::live(self)
    }
    fn record_usage(&mut self, id: &str, usage: Usage) -> Result<Entry, KnowledgeError> {
        KnowledgeStore::count_usage(self, id, usage)
    }
    fn set_quality(&mut self, id: &str, quality: f64) -> Result<(), KnowledgeError> {
        KnowledgeStore::store_quality(self, id, quality)
    }
    fn add_edge(
        &mut self,
        from: &str,
        to: &str,
        relation: &str,
        weight: f64,
        by: &str,
    ) -> Result<(Edge, bool), KnowledgeError> {
        KnowledgeStore::put_edge(self, from, to, relation, weight, by)
    }
    fn neighbours(&self, id: &str, relation: Option<&str>) -> Result<Neighbours, KnowledgeError> {
        KnowledgeStore::edges_around(self, id, relation)
    }
    fn stats(&self) -> Result<Stats, KnowledgeError> {
        KnowledgeStore::counts_all(self)
    }
    fn propose(
        &mut self,
        entry_id: &str,
        kind: &str,
        description: &str,
        evidence: &Value,
        confidence: f64,
        by: &str,
    ) -> Result<Proposal, KnowledgeError> {
        KnowledgeStore::file_proposal(self, entry_id, kind, description, evidence, confidence, by)
    }
    fn proposals_for(&self, entry_id: &str) -> Result<Vec<Proposal>, KnowledgeError> {
        KnowledgeStore::proposals_of(self, entry_id)
    }
    fn confirm_deprecation(
        &mut self,
        entry_id: &str,
        reason: &str,
        by: &str,
    ) -> Result<usize, KnowledgeError> {
        KnowledgeStore::deprecate_closing(self, entry_id, reason, by)
    }
    fn skip_evolution(
        &mut self,
        entry_id: &str,
        reason: &str,
        by: &str,
    ) -> Result<usize, KnowledgeError> {
        KnowledgeStore::skip_closing(self, entry_id, reason, by)
    }
    fn record_guard_run(
        &mut self,
        target: &str,
        language: &str,
        violations: &[Violation],
        by: &str,
    ) -> Result<i64, KnowledgeError> {
        KnowledgeStore::insert_guard_run(self, target, language, violations, by)
    }
    fn guard_runs(
        &self,
        target: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GuardRun>, KnowledgeError> {
        KnowledgeStore::latest_guard_runs(self, target, limit)
    }
    fn guard_stats(&self) -> Result<GuardStats, KnowledgeError> {
        KnowledgeStore::guard_totals(self)
    }
    fn guard_overrides(&self) -> Result<Option<String>, KnowledgeError> {
        KnowledgeStore::stored_guard_overrides(self)
    }
    fn set_guard_overrides(&mut self, text: Option<&str>, by: &str) -> Result<(), KnowledgeError> {
        KnowledgeStore::store_guard_overrides(self, text, by)
    }
    fn reindex(&mut self, dry_run: bool) -> Result<alembic_store::ReindexReport, KnowledgeError> {
        KnowledgeStore::reindex_entries(self, dry_run)
    }
    fn export(&self) -> Result<KnowledgeExport, KnowledgeError> {
        KnowledgeStore::export_all(self)
    }
    fn import(&mut self, data: &KnowledgeExport) -> Result<ImportReport, KnowledgeError> {
        KnowledgeStore::import_all(self, data)
    }
    fn remove_moved(&mut self, moved: &Moved) -> Result<usize, KnowledgeError> {
        KnowledgeStore::remove_all(self, moved)
    }
}
