//! [`KnowledgeStore`]: entries, their lifecycle history and search on the project database.
//!
//! Every write runs in one immediate transaction, so a refused or failed operation leaves
//! nothing half-applied, and two processes writing at once serialise.

use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use crate::backend::{
    RESUBMIT_REASON, check_editable, check_transition, check_version, resubmit_moves, score_hits,
};
use crate::error::KnowledgeError;
use crate::model::{Entry, Kind, NewEntry, Status, Transition, normalise_title};
use crate::schema::{COMPONENT, MIGRATIONS};
use crate::text;

mod exchange;
mod reindex;
mod rows;

pub(crate) use rows::insert_history;
use rows::{COLUMNS, entry_from_row, insert_entry, update_entry};

/// Where timestamps come from; injectable so tests need no wall clock.
pub use alembic_base::Clock;

/// The knowledge base of one project.
pub struct KnowledgeStore {
    pub(crate) conn: Connection,
    pub(crate) clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for KnowledgeStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnowledgeStore").finish_non_exhaustive()
    }
}

/// Which entries a listing or search returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Empty = every status.
    pub statuses: Vec<Status>,
    pub kind: Option<Kind>,
    pub language: Option<String>,
    pub category: Option<String>,
    pub knowledge_type: Option<String>,
    pub limit: usize,
}

/// A search result: the entry and how much of the query it covers (0..=1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub entry: Entry,
    pub score: f64,
}

/// Which usage counter to increase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    View,
    Adoption,
    Application,
}

impl std::str::FromStr for Usage {
    type Err = KnowledgeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "view" | "views" => Ok(Usage::View),
            "adoption" | "adoptions" => Ok(Usage::Adoption),
            "application" | "applications" => Ok(Usage::Application),
            other => Err(KnowledgeError::UnknownValue {
                field: "usage type",
                value: other.to_string(),
                accepted: "view, adoption, application",
            }),
        }
    }
}

impl KnowledgeStore {
    /// Opens the knowledge base in the project database (`.alembic/alembic.db`).
    pub fn open_project(root: &Path) -> Result<Self, KnowledgeError> {
        Self::from_connection(alembic_store::open_project(root)?)
    }

    /// A throw-away knowledge base in memory (tests, dry runs).
    pub fn open_in_memory() -> Result<Self, KnowledgeError> {
        Self::from_connection(alembic_store::open_in_memory()?)
    }

    /// Migrates `conn` and wraps it.
    pub fn from_connection(mut conn: Connection) -> Result<Self, KnowledgeError> {
        alembic_store::migrate(&mut conn, COMPONENT, MIGRATIONS)?;
        conn.execute_batch("pragma foreign_keys = on")?;
        Ok(KnowledgeStore {
            conn,
            clock: Arc::new(alembic_base::SystemClock),
        })
    }

    /// Uses `clock` for every timestamp from now on.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Stores a new entry in `status` (draft or submitted), refusing a title that a live
    /// entry (anything not deprecated) already has.
    pub(crate) fn create_entry(
        &mut self,
        new: &NewEntry,
        status: Status,
        by: &str,
        quality: Option<f64>,
    ) -> Result<Entry, KnowledgeError> {
        let now = self.now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id = Self::create_in_transaction(&tx, new, status, by, quality, now)?;
        tx.commit()?;
        Self::get_in(&self.conn, &id)
    }

    /// [`KnowledgeStore::create`] on `conn`, which must be inside a transaction the caller
    /// commits (and migrated with [`KnowledgeStore::migrate`]): for writers whose entries must
    /// commit together with rows of their own (bootstrap checkpoints). Returns the new id.
    pub fn create_in_transaction(
        conn: &Connection,
        new: &NewEntry,
        status: Status,
        by: &str,
        quality: Option<f64>,
        now: i64,
    ) -> Result<String, KnowledgeError> {
        let id = crate::backend::new_entry_id();
        if let Some((existing_id, st)) = live_title(conn, &normalise_title(&new.title), None)? {
            return Err(KnowledgeError::DuplicateTitle {
                title: new.title.clone(),
                existing_id,
                status: st,
            });
        }
        insert_entry(conn, &id, new, status, by, quality, now)?;
        insert_history(conn, &id, None, status, now, by, None)?;
        Ok(id)
    }

    /// The live entry (anything not deprecated) titled `title` (compared normalised), as
    /// `(id, status)`, on `conn` (inside a caller's transaction): the entry `create` would
    /// refuse a duplicate of.
    pub fn live_title_in(
        conn: &Connection,
        title: &str,
    ) -> Result<Option<(String, Status)>, KnowledgeError> {
        live_title(conn, &normalise_title(title), None)
    }

    /// Replaces the fields of `id`, which must still be `submitted` (not reviewed yet), with
    /// `new` on `conn` inside the caller's transaction, and records the revision in its history
    /// (a submitted → submitted row by `by` with `reason`). For writers that revise their own
    /// candidates together with rows of their own (bootstrap re-runs whose evidence changed).
    pub fn revise_in_transaction(
        conn: &Connection,
        id: &str,
        new: &NewEntry,
        by: &str,
        reason: &str,
        now: i64,
    ) -> Result<(), KnowledgeError> {
        let status = status_in(conn, id)?;
        if status != Status::Submitted {
            return Err(KnowledgeError::NotEditable {
                id: id.to_string(),
                status,
            });
        }
        if let Some((existing_id, st)) = live_title(conn, &normalise_title(&new.title), Some(id))? {
            return Err(KnowledgeError::DuplicateTitle {
                title: new.title.clone(),
                existing_id,
                status: st,
            });
        }
        update_entry(conn, id, new, None, now)?;
        insert_history(conn, id, Some(status), status, now, by, Some(reason))?;
        Ok(())
    }

    /// Brings the knowledge schema of `conn` up to date (before a shared transaction).
    pub fn migrate(conn: &mut Connection) -> Result<(), KnowledgeError> {
        alembic_store::migrate(conn, COMPONENT, MIGRATIONS)?;
        Ok(())
    }

    /// The entry with `id` on `conn` (inside a caller's transaction).
    pub fn get_in(conn: &Connection, id: &str) -> Result<Entry, KnowledgeError> {
        conn.query_row(
            &format!("select {COLUMNS} from knowledge_entries where id = ?1"),
            [id],
            entry_from_row,
        )
        .optional()?
        .ok_or_else(|| KnowledgeError::NotFound { id: id.to_string() })
    }

    /// Every status change of `id`, oldest first.
    pub(crate) fn entry_history(&self, id: &str) -> Result<Vec<Transition>, KnowledgeError> {
        Self::get_in(&self.conn, id)?;
        let mut stmt = self.conn.prepare(
            "select from_status, to_status, at, by, reason from knowledge_history \
             where entry_id = ?1 order by seq",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (from, to, at, by, reason) = row?;
            out.push(Transition {
                from: from.map(|f| parse_status(&f)).transpose()?,
                to: parse_status(&to)?,
                at,
                by,
                reason,
            });
        }
        Ok(out)
    }

    /// Moves `id` to `to`, recording who and why. Refuses moves the lifecycle does not allow,
    /// naming the current state and the allowed next ones, and (with `expected`) an entry
    /// that moved on from the version the caller read.
    pub(crate) fn move_entry(
        &mut self,
        id: &str,
        to: Status,
        by: &str,
        reason: Option<&str>,
        expected: Option<i64>,
    ) -> Result<Entry, KnowledgeError> {
        let now = self.now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        check_version(id, expected, version_in(&tx, id)?)?;
        transition_in(&tx, id, to, by, reason, now)?;
        tx.commit()?;
        Self::get_in(&self.conn, id)
    }

    /// Replaces the editable fields of a candidate that is still draft, submitted or
    /// rejected. Published recipes change only through evolution proposals. With
    /// `resubmit_by`, a draft or rejected candidate goes (back) to review in the same
    /// transaction (rejected → draft → submitted, each move a history row).
    pub(crate) fn edit_entry(
        &mut self,
        id: &str,
        new: &NewEntry,
        quality: Option<f64>,
        resubmit_by: Option<&str>,
        expected: Option<i64>,
    ) -> Result<Entry, KnowledgeError> {
        let now = self.now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let status = status_in(&tx, id)?;
        check_version(id, expected, version_in(&tx, id)?)?;
        check_editable(id, status)?;
        if let Some((existing_id, st)) = live_title(&tx, &normalise_title(&new.title), Some(id))? {
            return Err(KnowledgeError::DuplicateTitle {
                title: new.title.clone(),
                existing_id,
                status: st,
            });
        }
        update_entry(&tx, id, new, quality, now)?;
        if let Some(by) = resubmit_by {
            for to in resubmit_moves(status) {
                transition_in(&tx, id, *to, by, Some(RESUBMIT_REASON), now)?;
            }
        }
        tx.commit()?;
        Self::get_in(&self.conn, id)
    }

    /// Entries matching `filter`, newest first.
    pub(crate) fn list_entries(&self, filter: &Filter) -> Result<Vec<Entry>, KnowledgeError> {
        let (clause, args) = filter_sql(filter);
        let sql = format!(
            "select {COLUMNS} from knowledge_entries where {clause} \
             order by updated_at desc, seq desc limit {}",
            limit_of(filter)
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), entry_from_row)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Full-text search over title, description, content and pattern, best first, with
    /// every filter applied inside the query (not after the limit).
    pub(crate) fn search_entries(
        &self,
        query: &str,
        filter: &Filter,
    ) -> Result<Vec<Hit>, KnowledgeError> {
        let Some(fts) = text::fts_query(query) else {
            return Ok(Vec::new());
        };
        let (clause, mut args) = filter_sql(filter);
        args.insert(0, fts);
        let sql = format!(
            "select {cols} from knowledge_fts f join knowledge_entries e on e.seq = f.rowid \
             where knowledge_fts match ?1 and {clause} order by bm25(knowledge_fts), e.seq \
             limit {}",
            limit_of(filter),
            cols = COLUMNS
                .split(", ")
                .map(|c| format!("e.{c}"))
                .collect::<Vec<_>>()
                .join(", "),
            clause = renumber(&clause, 1),
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args.iter()), entry_from_row)?;
        let entries = rows.collect::<Result<Vec<_>, _>>()?;
        Ok(score_hits(query, entries))
    }

    /// Increases one usage counter of `id`.
    pub(crate) fn count_usage(&mut self, id: &str, usage: Usage) -> Result<Entry, KnowledgeError> {
        let column = match usage {
            Usage::View => "views",
            Usage::Adoption => "adoptions",
            Usage::Application => "applications",
        };
        let now = self.now();
        let changed = self.conn.execute(
            &format!(
                "update knowledge_entries set {column} = {column} + 1, last_used_at = ?2 \
                 where id = ?1"
            ),
            params![id, now],
        )?;
        if changed == 0 {
            return Err(KnowledgeError::NotFound { id: id.to_string() });
        }
        Self::get_in(&self.conn, id)
    }

    /// Stores a computed quality score for `id`.
    pub(crate) fn store_quality(&mut self, id: &str, quality: f64) -> Result<(), KnowledgeError> {
        let changed = self.conn.execute(
            "update knowledge_entries set quality = ?2 where id = ?1",
            params![id, quality],
        )?;
        if changed == 0 {
            return Err(KnowledgeError::NotFound { id: id.to_string() });
        }
        Ok(())
    }

    /// Every entry that is not deprecated, for duplicate detection.
    pub(crate) fn live(&self) -> Result<Vec<Entry>, KnowledgeError> {
        let mut stmt = self.conn.prepare(&format!(
            "select {COLUMNS} from knowledge_entries where status <> 'deprecated' order by seq"
        ))?;
        let rows = stmt.query_map([], entry_from_row)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}

/// Renumbers `?N` placeholders in `clause` by `by` (the FTS query takes ?1).
fn renumber(clause: &str, by: usize) -> String {
    let re = regex::Regex::new(r"\?(\d+)");
    match re {
        Ok(re) => re
            .replace_all(clause, |c: &regex::Captures<'_>| {
                let n: usize = c[1].parse().unwrap_or(0);
                format!("?{}", n + by)
            })
            .into_owned(),
        Err(_) => clause.to_string(),
    }
}

fn limit_of(filter: &Filter) -> usize {
    if filter.limit == 0 { 20 } else { filter.limit }
}

/// A `where` clause (numbered placeholders from ?1) and its arguments. Text filters match
/// case-insensitively.
fn filter_sql(filter: &Filter) -> (String, Vec<String>) {
    let mut parts = vec!["1 = 1".to_string()];
    let mut args: Vec<String> = Vec::new();
    if !filter.statuses.is_empty() {
        let marks: Vec<String> = filter
            .statuses
            .iter()
            .map(|s| {
                args.push(s.as_str().to_string());
                format!("?{}", args.len())
            })
            .collect();
        parts.push(format!("status in ({})", marks.join(", ")));
    }
    let mut eq = |column: &str, value: Option<&str>| {
        if let Some(v) = value.filter(|v| !v.trim().is_empty()) {
            args.push(v.trim().to_string());
            parts.push(format!("lower({column}) = lower(?{})", args.len()));
        }
    };
    eq("kind", filter.kind.map(Kind::as_str));
    eq("language", filter.language.as_deref());
    eq("category", filter.category.as_deref());
    eq("knowledge_type", filter.knowledge_type.as_deref());
    (parts.join(" and "), args)
}

pub(crate) fn parse_status(s: &str) -> Result<Status, KnowledgeError> {
    s.parse()
        .map_err(|_| KnowledgeError::Corrupt(format!("unknown status '{s}' in the database")))
}

/// The stored version of `id`.
pub(crate) fn version_in(conn: &Connection, id: &str) -> Result<i64, KnowledgeError> {
    conn.query_row(
        "select version from knowledge_entries where id = ?1",
        [id],
        |r| r.get(0),
    )
    .optional()?
    .ok_or_else(|| KnowledgeError::NotFound { id: id.to_string() })
}

pub(crate) fn status_in(conn: &Connection, id: &str) -> Result<Status, KnowledgeError> {
    let status: Option<String> = conn
        .query_row(
            "select status from knowledge_entries where id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()?;
    match status {
        Some(s) => parse_status(&s),
        None => Err(KnowledgeError::NotFound { id: id.to_string() }),
    }
}

/// Applies one lifecycle move inside the caller's transaction.
pub(crate) fn transition_in(
    conn: &Connection,
    id: &str,
    to: Status,
    by: &str,
    reason: Option<&str>,
    now: i64,
) -> Result<(), KnowledgeError> {
    let from = status_in(conn, id)?;
    let reason = check_transition(id, from, to, reason)?;
    conn.execute(
        "update knowledge_entries set status = ?2, updated_at = ?3, version = version + 1 \
         where id = ?1",
        params![id, to.as_str(), now],
    )?;
    insert_history(conn, id, Some(from), to, now, by, reason)
}

fn live_title(
    conn: &Connection,
    title_norm: &str,
    except: Option<&str>,
) -> Result<Option<(String, Status)>, KnowledgeError> {
    let found: Option<(String, String)> = conn
        .query_row(
            "select id, status from knowledge_entries where title_norm = ?1 \
             and status <> 'deprecated' and id <> coalesce(?2, '') limit 1",
            params![title_norm, except],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    found
        .map(|(id, st)| Ok((id, parse_status(&st)?)))
        .transpose()
}
