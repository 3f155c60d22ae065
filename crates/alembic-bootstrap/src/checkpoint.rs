//! Runs and per-dimension checkpoints in the project database. A dimension's candidates, its
//! memory and its checkpoint row commit in ONE immediate SQLite transaction, so a run killed
//! at any moment leaves each dimension either wholly written or not at all, and `--resume`
//! continues after the last committed dimension.

use std::path::Path;

use alembic_context::DimensionReport;
use alembic_knowledge::{Entry, KnowledgeStore, NewEntry, Status};
use alembic_memory::{MemoryConfig, MemorySource, MemoryType, NewMemory};
use alembic_store::rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use alembic_store::{Migration, migrate};
use serde::{Deserialize, Serialize};

use crate::error::BootstrapError;
use crate::extract::Finding;
use crate::facts::Evidence;

/// Who creates bootstrap candidates (the knowledge base's `created_by`).
pub const BOOTSTRAP_SOURCE: &str = "bootstrap";

const COMPONENT: &str = "bootstrap";

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: "create table bootstrap_runs (
              run_id text primary key,
              started_at integer not null,
              finished_at integer,
              dimensions text not null
          );
          create table bootstrap_dimensions (
              run_id text not null references bootstrap_runs (run_id),
              dimension_id text not null,
              tier integer not null,
              completed_at integer not null,
              fingerprint text not null,
              evidence_files text not null,
              candidates text not null,
              memories integer not null,
              report text not null,
              primary key (run_id, dimension_id)
          );",
    },
    // A run is recorded before the scan, so a kill at any point leaves a run to resume:
    // `planned` is 0 until the dimensions are chosen, `requested` keeps `--dimensions`.
    Migration {
        version: 2,
        sql: "alter table bootstrap_runs add column planned integer not null default 1;
              alter table bootstrap_runs add column requested text not null default '[]';",
    },
];

/// A candidate written by a dimension (the `candidates` entries of the JSON summary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateRecord {
    pub id: String,
    pub title: String,
    pub dimension: String,
    pub knowledge_type: String,
    pub evidence: Vec<Evidence>,
}

/// A committed dimension of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedDimension {
    pub dimension_id: String,
    pub tier: u8,
    /// New candidates (the only ones the checkpoint row keeps).
    pub candidates: Vec<CandidateRecord>,
    /// Submitted candidates of an earlier run whose content or evidence changed, revised now.
    pub revised: Vec<CandidateRecord>,
    /// Titles whose candidate was reviewed already (or not written by bootstrap): left as is.
    pub kept: Vec<String>,
    pub memories: usize,
    pub report: DimensionReport,
}

/// A run that did not finish, as `--resume` finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct UnfinishedRun {
    pub run_id: String,
    /// The planned dimensions; `None` when the run was stopped before it planned them.
    pub planned: Option<Vec<String>>,
    /// The dimensions the run was asked for (empty: every active one).
    pub requested: Vec<String>,
}

/// What one dimension writes.
#[derive(Debug, Clone)]
pub struct DimensionWrite<'a> {
    pub run_id: &'a str,
    pub dimension_id: &'a str,
    pub tier: u8,
    pub findings: &'a [Finding],
    pub memory: Option<NewMemory>,
    pub fingerprint: &'a str,
    pub evidence_files: &'a [String],
    pub report: &'a DimensionReport,
    pub now: i64,
}

/// The bootstrap tables on their own connection to the project database.
pub struct CheckpointStore {
    conn: Connection,
    memory: MemoryConfig,
}

impl std::fmt::Debug for CheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointStore").finish_non_exhaustive()
    }
}

fn sql<T>(r: alembic_store::rusqlite::Result<T>) -> Result<T, BootstrapError> {
    r.map_err(BootstrapError::Sqlite)
}

impl CheckpointStore {
    /// Opens `.alembic/alembic.db` of `root`, migrating knowledge, memory and bootstrap.
    pub fn open(root: &Path, memory: MemoryConfig) -> Result<Self, BootstrapError> {
        Self::from_connection(alembic_store::open_project(root)?, memory)
    }

    pub fn from_connection(
        mut conn: Connection,
        memory: MemoryConfig,
    ) -> Result<Self, BootstrapError> {
        KnowledgeStore::migrate(&mut conn)?;
        alembic_memory::shared_tx::migrate(&mut conn)?;
        migrate(&mut conn, COMPONENT, MIGRATIONS)?;
        Ok(CheckpointStore { conn, memory })
    }

    /// Records a new run before its scan, with the dimensions asked for (`--dimensions`; empty:
    /// every active one); [`CheckpointStore::plan_run`] fixes the plan once the facts are in.
    pub fn start_run(&self, requested: &[String], now: i64) -> Result<String, BootstrapError> {
        let run_id = format!("run-{now}-{}", std::process::id());
        sql(self.conn.execute(
            "insert into bootstrap_runs (run_id, started_at, dimensions, planned, requested)
             values (?1, ?2, '[]', 0, ?3)",
            params![run_id, now, serde_json::to_string(requested)?],
        ))?;
        Ok(run_id)
    }

    /// Records the dimensions `run_id` will analyse.
    pub fn plan_run(&self, run_id: &str, dimensions: &[String]) -> Result<(), BootstrapError> {
        sql(self.conn.execute(
            "update bootstrap_runs set dimensions = ?2, planned = 1 where run_id = ?1",
            params![run_id, serde_json::to_string(dimensions)?],
        ))?;
        Ok(())
    }

    /// The latest run that did not finish.
    pub fn unfinished_run(&self) -> Result<Option<UnfinishedRun>, BootstrapError> {
        let row: Option<(String, String, bool, String)> = sql(self
            .conn
            .query_row(
                "select run_id, dimensions, planned, requested from bootstrap_runs
                 where finished_at is null order by started_at desc, rowid desc limit 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional())?;
        row.map(|(run_id, dims, planned, requested)| {
            Ok(UnfinishedRun {
                run_id,
                planned: if planned {
                    Some(serde_json::from_str(&dims)?)
                } else {
                    None
                },
                requested: serde_json::from_str(&requested)?,
            })
        })
        .transpose()
    }

    /// Why `--resume` has nothing to continue: no run ever started, or the latest one finished.
    pub fn nothing_to_resume(&self) -> Result<BootstrapError, BootstrapError> {
        let last: Option<String> = sql(self
            .conn
            .query_row(
                "select run_id from bootstrap_runs where finished_at is not null
                 order by started_at desc, rowid desc limit 1",
                [],
                |r| r.get(0),
            )
            .optional())?;
        Ok(BootstrapError::NothingToResume {
            why: match last {
                None => "no bootstrap run was ever started in this project".to_owned(),
                Some(run_id) => {
                    format!("the latest run ({run_id}) finished and left nothing to continue")
                }
            },
        })
    }

    pub fn finish_run(&self, run_id: &str, now: i64) -> Result<(), BootstrapError> {
        sql(self.conn.execute(
            "update bootstrap_runs set finished_at = ?2 where run_id = ?1",
            params![run_id, now],
        ))?;
        Ok(())
    }

    /// The dimensions `run_id` committed, in commit order.
    pub fn completed(&self, run_id: &str) -> Result<Vec<CompletedDimension>, BootstrapError> {
        let mut stmt = sql(self.conn.prepare(
            "select dimension_id, tier, candidates, memories, report from bootstrap_dimensions
             where run_id = ?1 order by completed_at, rowid",
        ))?;
        let rows: Vec<(String, u8, String, i64, String)> = sql(stmt
            .query_map(params![run_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .and_then(|rows| rows.collect()))?;
        rows.into_iter()
            .map(|(dimension_id, tier, cands, memories, report)| {
                Ok(CompletedDimension {
                    dimension_id,
                    tier,
                    candidates: serde_json::from_str(&cands)?,
                    revised: Vec::new(),
                    kept: Vec::new(),
                    memories: usize::try_from(memories).unwrap_or(0),
                    report: serde_json::from_str(&report)?,
                })
            })
            .collect()
    }

    /// Fingerprint and evidence files of the latest committed analysis of `dimension_id`.
    pub fn last_fingerprint(
        &self,
        dimension_id: &str,
    ) -> Result<Option<(String, Vec<String>)>, BootstrapError> {
        let row: Option<(String, String)> = sql(self
            .conn
            .query_row(
                "select fingerprint, evidence_files from bootstrap_dimensions
                 where dimension_id = ?1 order by completed_at desc, rowid desc limit 1",
                params![dimension_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional())?;
        row.map(|(f, files)| Ok((f, serde_json::from_str(&files)?)))
            .transpose()
    }

    /// Writes a dimension's candidates, its memory and its checkpoint row in one immediate
    /// transaction. A new title becomes a candidate (status submitted, created by bootstrap,
    /// `extra.version` 1). A title bootstrap already submitted is revised when its content or
    /// evidence changed (history row, version bumped) while nobody has reviewed it yet; a
    /// reviewed one, or one somebody else wrote, is kept as it is.
    pub fn commit_dimension(
        &mut self,
        w: &DimensionWrite<'_>,
    ) -> Result<CompletedDimension, BootstrapError> {
        let tx = sql(self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate))?;
        let (mut candidates, mut revised, mut kept) = (Vec::new(), Vec::new(), Vec::new());
        for f in w.findings {
            let record = |id: String| CandidateRecord {
                id,
                title: f.title.clone(),
                dimension: w.dimension_id.to_string(),
                knowledge_type: f.knowledge_type.clone(),
                evidence: f.evidence.clone(),
            };
            match write_finding(&tx, w, f)? {
                Written::Created(id) => candidates.push(record(id)),
                Written::Revised(id) => revised.push(record(id)),
                Written::Kept => kept.push(f.title.clone()),
                Written::Unchanged => {}
            }
        }
        let memories = match &w.memory {
            Some(m) => {
                alembic_memory::shared_tx::replace_dimension_memory(&tx, &self.memory, w.now, m)?
                    .map_or(0, |_| 1)
            }
            None => 0,
        };
        sql(tx.execute(
            "insert or replace into bootstrap_dimensions (run_id, dimension_id, tier, completed_at,
                 fingerprint, evidence_files, candidates, memories, report)
             values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                w.run_id,
                w.dimension_id,
                w.tier,
                w.now,
                w.fingerprint,
                serde_json::to_string(w.evidence_files)?,
                serde_json::to_string(&candidates)?,
                memories,
                serde_json::to_string(w.report)?,
            ],
        ))?;
        sql(tx.commit())?;
        Ok(CompletedDimension {
            dimension_id: w.dimension_id.to_string(),
            tier: w.tier,
            candidates,
            revised,
            kept,
            memories: usize::from(memories == 1),
            report: w.report.clone(),
        })
    }
}

/// What became of one finding.
enum Written {
    Created(String),
    Revised(String),
    Unchanged,
    Kept,
}

/// The reason recorded in the history of a revised candidate.
pub const REVISED_REASON: &str = "bootstrap re-run: the evidence changed";

fn write_finding(
    tx: &Connection,
    w: &DimensionWrite<'_>,
    f: &Finding,
) -> Result<Written, BootstrapError> {
    let mut entry = new_entry(w.dimension_id, f);
    let Some((id, status)) = KnowledgeStore::live_title_in(tx, &f.title)? else {
        entry.extra.insert("version".into(), 1.into());
        let id = KnowledgeStore::create_in_transaction(
            tx,
            &entry,
            Status::Submitted,
            BOOTSTRAP_SOURCE,
            None,
            w.now,
        )?;
        return Ok(Written::Created(id));
    };
    let existing = KnowledgeStore::get_in(tx, &id)?;
    if status != Status::Submitted || existing.created_by != BOOTSTRAP_SOURCE {
        return Ok(Written::Kept);
    }
    let evidence = |e: &serde_json::Map<String, serde_json::Value>| e.get("evidence").cloned();
    if existing.content == entry.content && evidence(&existing.extra) == evidence(&entry.extra) {
        return Ok(Written::Unchanged);
    }
    let version = existing
        .extra
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(1);
    entry.extra.insert("version".into(), (version + 1).into());
    KnowledgeStore::revise_in_transaction(
        tx,
        &id,
        &entry,
        BOOTSTRAP_SOURCE,
        REVISED_REASON,
        w.now,
    )?;
    Ok(Written::Revised(id))
}

/// Whether the team's entry takes a revision bootstrap made here (its publication): only a
/// bootstrap candidate nobody has reviewed yet, and only when the content or the evidence
/// changed (as [`write_finding`] revises its local candidates).
pub fn revises_team_candidate(here: &Entry, team: &Entry) -> bool {
    let evidence = |e: &Entry| e.extra.get("evidence").cloned();
    here.created_by == BOOTSTRAP_SOURCE
        && team.created_by == BOOTSTRAP_SOURCE
        && team.status == Status::Submitted
        && (here.content != team.content || evidence(here) != evidence(team))
}

/// The knowledge entry of a finding: tagged with its dimension, evidence in `sources` and
/// as `file:line` places in `extra.evidence`. An LLM producer's entry keeps its own fields
/// and gets the same marks (source, dimension tag, evidence).
pub fn new_entry(dimension_id: &str, f: &Finding) -> NewEntry {
    let mut extra = serde_json::Map::new();
    extra.insert("source".into(), BOOTSTRAP_SOURCE.into());
    extra.insert("dimensionId".into(), dimension_id.into());
    extra.insert(
        "evidence".into(),
        serde_json::to_value(&f.evidence).unwrap_or_default(),
    );
    let mut sources: Vec<String> = f.evidence.iter().map(|e| e.file.clone()).collect();
    sources.dedup();
    if let Some(entry) = &f.entry {
        return marked_entry(dimension_id, entry.clone(), extra, sources);
    }
    NewEntry {
        title: f.title.clone(),
        description: f.summary.chars().take(200).collect(),
        kind: None,
        knowledge_type: f.knowledge_type.clone(),
        category: dimension_id.to_string(),
        language: f.language.clone(),
        trigger: None,
        content: f.detail.clone(),
        pattern: String::new(),
        rationale: format!("Measured by the deterministic bootstrap ({dimension_id})."),
        tags: vec![
            BOOTSTRAP_SOURCE.to_string(),
            format!("dimension:{dimension_id}"),
        ],
        sources,
        extra,
    }
}

/// `entry` (an LLM producer's submission) with the bootstrap marks: tags `bootstrap` and
/// `dimension:<id>`, the dimension as category when it named none, the cited files that exist
/// as sources, and `extra` merged in.
fn marked_entry(
    dimension_id: &str,
    mut entry: NewEntry,
    extra: serde_json::Map<String, serde_json::Value>,
    sources: Vec<String>,
) -> NewEntry {
    for tag in [
        BOOTSTRAP_SOURCE.to_string(),
        format!("dimension:{dimension_id}"),
    ] {
        if !entry.tags.contains(&tag) {
            entry.tags.push(tag);
        }
    }
    if entry.category.trim().is_empty() {
        entry.category = dimension_id.to_string();
    }
    if entry.rationale.trim().is_empty() {
        entry.rationale = format!("Found by the LLM bootstrap ({dimension_id}).");
    }
    entry.sources = sources;
    entry.extra.extend(extra);
    entry
}

/// The memory of a dimension's distilled findings (`None` when there is nothing to keep).
pub fn dimension_memory(dimension_id: &str, analysis: &str, importance: u8) -> Option<NewMemory> {
    if analysis.trim().is_empty() {
        return None;
    }
    let content: String = analysis.chars().take(1900).collect();
    let mut m = NewMemory::fact(content)
        .with_type(MemoryType::Insight)
        .with_source(MemorySource::Bootstrap)
        .with_importance(f64::from(importance.clamp(1, 10)))
        .with_provenance(format!("bootstrap:{dimension_id}"));
    m.source_dimension = Some(dimension_id.to_string());
    m.tags = vec!["bootstrap".into(), format!("dimension:{dimension_id}")];
    Some(m)
}
