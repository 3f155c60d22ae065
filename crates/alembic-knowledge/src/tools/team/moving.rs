//! [`KnowledgeService::move_local`]: `alembic team push` (and bootstrap's publication) move
//! the local knowledge base to the team store; they never leave a second, stale copy behind.
//!
//! A move is two steps, each one transaction: the team store imports the local rows (keeping
//! ids, skipping what it has), then the local store removes every entry the team now holds at
//! the same or a newer version (with its history, edges and proposals), the guard runs the
//! import carried and overrides equal to the team's. A crash between the two loses nothing
//! (both hold the rows) and a rerun duplicates nothing (the import skips known ids, the
//! check finds them and the removal follows). What the team does not take stays here and is
//! named: an entry whose title a different live team entry has, an entry edited here after
//! the team got it (newer here), overrides that differ from the team's.

use std::collections::HashSet;

use alembic_tools::ToolError;

use super::super::KnowledgeService;
use crate::backend::{ImportReport, KnowledgeBackend, Moved};
use crate::error::KnowledgeError;
use crate::model::{Entry, NewEntry, Status};

/// Decides whether the team's entry (second) takes a local entry's fields (first): bootstrap
/// revising its own candidates that nobody has reviewed yet.
pub type Revise<'a> = &'a dyn Fn(&Entry, &Entry) -> bool;

/// What a move did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MoveReport {
    /// The team store's import.
    pub import: ImportReport,
    /// Local entries removed because the team holds them now.
    pub removed_here: usize,
    /// Entries kept here because they changed after the team got them: (id, version here,
    /// version on the team).
    pub newer_here: Vec<(String, i64, i64)>,
    /// Team entries revised with a local revision (ids on the team).
    pub revised: Vec<String>,
    /// Local entries the team already had (by id, or by title with [`Revise`]) and kept as
    /// they were: unchanged, or reviewed (never overwritten).
    pub left_as_they_were: usize,
    /// Revisions refused because the team's entry moved on meanwhile (the conflict message);
    /// the local entry stays for the next run.
    pub conflicts: Vec<String>,
    /// The local guard-rule overrides differ from the team's: kept here, not moved.
    pub guard_overrides_kept_here: bool,
}

/// A local entry's counterpart on the team, after the revision pass.
enum Matched {
    None,
    Settled { revised: Option<String> },
    Conflict(String),
}

impl KnowledgeService {
    /// Moves the local entries `keep` selects (with their history, the edges between moved
    /// entries and their proposals; with `everything` also the guard runs and the stored
    /// guard-rule overrides) to the team store (see the module docs). With `revise`, a local
    /// entry whose id or live title the team has revises the team's entry when `revise`
    /// says so, at the version read (a reviewer's move in between is a conflict, reported).
    /// `Ok(None)` without a team.
    pub fn move_local(
        &self,
        keep: impl Fn(&Entry) -> bool,
        everything: bool,
        revise: Option<Revise<'_>>,
    ) -> Result<Option<MoveReport>, ToolError> {
        if self.team_label().is_none() {
            return Ok(None);
        }
        let mut data = self.with_local(|kb| kb.export())?;
        data.entries.retain(|e| keep(e));
        let mut report = MoveReport::default();
        let mut moved = Moved::default();
        if let Some(revise) = revise {
            let matched = self
                .with_team_store(|t| {
                    data.entries
                        .iter()
                        .map(|e| revise_on(t, e, revise))
                        .collect::<Result<Vec<_>, _>>()
                })?
                .unwrap_or_default();
            let mut settled = HashSet::new();
            for (e, m) in data.entries.iter().zip(matched) {
                match m {
                    Matched::None => continue,
                    Matched::Settled { revised } => {
                        moved.entries.push(e.id.clone());
                        match revised {
                            Some(id) => report.revised.push(id),
                            None => report.left_as_they_were += 1,
                        }
                    }
                    Matched::Conflict(message) => report.conflicts.push(message),
                }
                settled.insert(e.id.clone());
            }
            data.entries.retain(|e| !settled.contains(&e.id));
        }
        let ids: HashSet<String> = data.entries.iter().map(|e| e.id.clone()).collect();
        data.history.retain(|h| ids.contains(&h.entry_id));
        data.proposals.retain(|p| ids.contains(&p.entry_id));
        if !everything {
            data.guard_runs.clear();
            data.guard_overrides = None;
        }
        let checked = self.with_team_store(|t| {
            let import = t.import(&data)?;
            let mut held = Vec::new();
            for e in &data.entries {
                match t.get(&e.id) {
                    Ok(there) => held.push((e.id.clone(), e.version, there.version)),
                    // not taken (its title is another entry's): the import named it
                    Err(KnowledgeError::NotFound { .. }) => {}
                    Err(other) => return Err(other),
                }
            }
            Ok((import, held, t.guard_overrides()?))
        })?;
        let Some((import, held, team_overrides)) = checked else {
            return Ok(None);
        };
        report.import = import;
        for (id, here, there) in held {
            if there >= here {
                moved.entries.push(id);
            } else {
                report.newer_here.push((id, here, there));
            }
        }
        if everything {
            moved.guard_runs = data.guard_runs.iter().map(|r| r.run).collect();
            if let Some(text) = &data.guard_overrides {
                moved.guard_overrides = team_overrides.as_deref() == Some(text.as_str());
                report.guard_overrides_kept_here = !moved.guard_overrides;
            }
        }
        report.removed_here = self.with_local(|kb| kb.remove_moved(&moved))?;
        Ok(Some(report))
    }
}

/// The revision pass for one local entry: its counterpart on the team (same id, else the
/// live entry with its title), revised at the version read when `revise` says so.
fn revise_on(
    team: &mut dyn KnowledgeBackend,
    e: &Entry,
    revise: Revise<'_>,
) -> Result<Matched, KnowledgeError> {
    let Some(there) = counterpart(team, e)? else {
        return Ok(Matched::None);
    };
    if !revise(e, &there) {
        return Ok(Matched::Settled { revised: None });
    }
    match team.update(
        &there.id,
        &NewEntry::from(e),
        e.quality,
        None,
        Some(there.version),
    ) {
        Ok(done) => Ok(Matched::Settled {
            revised: Some(done.id),
        }),
        Err(conflict @ (KnowledgeError::Conflict { .. } | KnowledgeError::NotEditable { .. })) => {
            Ok(Matched::Conflict(conflict.to_string()))
        }
        Err(other) => Err(other),
    }
}

fn counterpart(
    team: &mut dyn KnowledgeBackend,
    e: &Entry,
) -> Result<Option<Entry>, KnowledgeError> {
    match team.get(&e.id) {
        Ok(there) => return Ok(Some(there)),
        Err(KnowledgeError::NotFound { .. }) => {}
        Err(other) => return Err(other),
    }
    if e.status == Status::Deprecated {
        return Ok(None);
    }
    match team.live_title(&e.title)? {
        Some((id, _)) => team.get(&id).map(Some),
        None => Ok(None),
    }
}
