//! The call rows the code index keeps per file: what a call query needs to find the few
//! files it must read, without loading every summary.
//!
//! Each file contributes one `code_callables` row per method or free function it defines
//! (simple name, kind, owning type's simple name; its key follows from those and the path)
//! and one `code_call_sites` row per distinct call site shape (caller's name and type's
//! simple name, callee name as written, receiver type and kind as the summary has them;
//! repeated shapes in one file are stored once, since the rows only point to files). Both
//! are replaced with the file's summary in the same transaction, like the declaration rows
//! ([`super::rows`]). The rows hold no graph keys: a method's type key depends on every
//! declaration of the type's name, so queries resolve keys in a focused graph
//! ([`crate::focus_calls`]).

use std::collections::{BTreeMap, BTreeSet};

use alembic_store::rusqlite::{self, Connection, params};

use super::IndexError;
use super::rows::simple_name;
use crate::summary::{CallSite, FileSummary, ReceiverKind};

/// Migration step 3: the call rows.
pub(super) const MIGRATION_SQL: &str = "create table code_callables (
        name text not null,
        path text not null,
        kind text not null,
        owner text
    );
    create index code_callables_name on code_callables(name);
    create index code_callables_path on code_callables(path);
    create table code_call_sites (
        path text not null,
        caller_name text not null,
        caller_type text,
        callee text not null,
        receiver_type text,
        receiver_kind text not null
    );
    create index code_call_sites_callee on code_call_sites(callee);
    create index code_call_sites_caller on code_call_sites(caller_name);
    create index code_call_sites_path on code_call_sites(path);";

/// Name-keyed call indexes a bulk write recreates once at the end (see refresh.rs).
pub(super) const DEFERRED_INDEXES: [&str; 3] = [
    "code_callables_name",
    "code_call_sites_callee",
    "code_call_sites_caller",
];

/// Statements deleting every call row.
pub(super) const DELETE_ALL: &str = "delete from code_callables; delete from code_call_sites;";

/// Statements deleting the call rows of one file (`?1`: its path).
pub(super) const DELETE_FILE: [&str; 2] = [
    "delete from code_callables where path = ?1",
    "delete from code_call_sites where path = ?1",
];

/// Name of the function a call site sits in, as [`crate::calls`] keys callers:
/// `<body>` for code in a type outside any method, `<top-level>` for file-level code.
pub(crate) fn caller_name(call: &CallSite) -> &str {
    match (&call.caller, &call.caller_type) {
        (Some(m), _) => m,
        (None, Some(_)) => "<body>",
        (None, None) => "<top-level>",
    }
}

pub(crate) fn receiver_kind(kind: ReceiverKind) -> &'static str {
    match kind {
        ReceiverKind::None => "none",
        ReceiverKind::SelfRef => "self_ref",
        ReceiverKind::Super => "super",
        ReceiverKind::Typed => "typed",
        ReceiverKind::TypeName => "type_name",
        ReceiverKind::Unknown => "unknown",
    }
}

/// Writes the call rows of one file (its old rows are already deleted).
pub(super) fn write_file(conn: &Connection, summary: &FileSummary) -> rusqlite::Result<()> {
    let path = summary.path.as_str();
    let mut callable = conn.prepare_cached(
        "insert into code_callables (name, path, kind, owner) values (?1, ?2, ?3, ?4)",
    )?;
    for f in &summary.functions {
        callable.execute(params![f.name, path, "function", None::<&str>])?;
    }
    for t in summary.types.iter().filter(|t| !t.name.is_empty()) {
        for m in &t.methods {
            callable.execute(params![m.name, path, "method", t.name])?;
        }
    }
    let mut site = conn.prepare_cached(
        "insert into code_call_sites
         (path, caller_name, caller_type, callee, receiver_type, receiver_kind)
         values (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut seen = BTreeSet::new();
    for call in &summary.calls {
        let name = caller_name(call);
        let caller_type = call.caller_type.as_deref().map(simple_name);
        let kind = receiver_kind(call.receiver_kind);
        let shape = (
            name,
            caller_type,
            call.callee.as_str(),
            call.receiver_type.as_deref(),
            kind,
        );
        if seen.insert(shape) {
            site.execute(params![
                path,
                name,
                caller_type,
                call.callee,
                call.receiver_type,
                kind
            ])?;
        }
    }
    Ok(())
}

/// A call site shape as the rows hold it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SiteRow {
    pub path: String,
    /// [`receiver_kind`]'s name.
    pub receiver_kind: String,
    pub receiver_type: Option<String>,
    /// Simple name of the calling type.
    pub caller_type: Option<String>,
}

/// The call site shapes whose callee is written `callee`.
pub(super) fn sites_calling(conn: &Connection, callee: &str) -> rusqlite::Result<Vec<SiteRow>> {
    let mut stmt = conn.prepare_cached(
        "select distinct path, receiver_kind, receiver_type, caller_type
         from code_call_sites where callee = ?1",
    )?;
    let rows = stmt.query_map(params![callee], |r| {
        Ok(SiteRow {
            path: r.get(0)?,
            receiver_kind: r.get(1)?,
            receiver_type: r.get(2)?,
            caller_type: r.get(3)?,
        })
    })?;
    rows.collect()
}

/// How many files call something written `callee`.
pub(super) fn count_files_calling(conn: &Connection, callee: &str) -> rusqlite::Result<usize> {
    let mut stmt =
        conn.prepare_cached("select count(distinct path) from code_call_sites where callee = ?1")?;
    stmt.query_row(params![callee], |r| r.get::<_, i64>(0))
        .map(|n| usize::try_from(n).unwrap_or(0))
}

/// Files with a call site made from a function or method named `caller_name`, with the
/// simple name of its type (`None`: outside any type).
pub(super) fn files_called_from(
    conn: &Connection,
    caller_name: &str,
) -> rusqlite::Result<Vec<(String, Option<String>)>> {
    let mut stmt = conn.prepare_cached(
        "select distinct path, caller_type from code_call_sites where caller_name = ?1",
    )?;
    let rows = stmt.query_map(params![caller_name], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Simple names of the types defining a method named `name`, and the files defining a
/// free function of that name with how many such functions each holds.
pub(super) fn callables_named(conn: &Connection, name: &str) -> rusqlite::Result<Callables> {
    let mut stmt =
        conn.prepare_cached("select kind, owner, path from code_callables where name = ?1")?;
    let rows = stmt.query_map(params![name], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, Option<String>>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let mut out = Callables::default();
    for row in rows {
        match row? {
            (kind, Some(owner), _) if kind == "method" => {
                out.owners.insert(owner);
            }
            (_, _, path) => *out.function_files.entry(path).or_default() += 1,
        }
    }
    Ok(out)
}

/// What the callable rows say about one name.
#[derive(Debug, Default)]
pub(crate) struct Callables {
    /// Simple names of the types with a method of the name.
    pub owners: BTreeSet<String>,
    /// Files with free functions of the name, and how many each has.
    pub function_files: BTreeMap<String, usize>,
}

impl Callables {
    /// Number of free functions of the name (the graph lists each, even two in one file).
    pub fn functions(&self) -> usize {
        self.function_files.values().sum()
    }
}

/// Every distinct callable name (method or function) and its kinds' owners, for
/// substring searches: (name, owner simple name or `None` for a function, path).
pub(super) fn all_callables(
    conn: &Connection,
) -> rusqlite::Result<Vec<(String, Option<String>, String)>> {
    let mut stmt = conn.prepare("select distinct name, owner, path from code_callables")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    rows.collect()
}

/// The (callable name, owning type or `None`, path) rows whose name may contain `keyword`
/// (lowercase) case-insensitively: a superset found in SQL (see
/// [`super::rows::type_keys_like`]); callers filter exactly.
pub(super) fn callables_like(
    conn: &Connection,
    keyword: &str,
) -> rusqlite::Result<Vec<(String, Option<String>, String)>> {
    let mut stmt = conn.prepare(
        "select name, owner, path from code_callables
         where instr(lower(name), ?1) or length(name) != length(cast(name as blob))",
    )?;
    let rows = stmt.query_map(params![keyword], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    rows.collect()
}

impl super::CodeIndex {
    /// Callable rows whose name may contain `keyword` (see [`callables_like`]).
    pub(crate) fn callables_like(
        &self,
        keyword: &str,
    ) -> Result<Vec<(String, Option<String>, String)>, IndexError> {
        Ok(callables_like(&self.conn, keyword)?)
    }

    /// Type keys that may contain `keyword` (see [`super::rows::type_keys_like`]).
    pub(crate) fn type_keys_like(&self, keyword: &str) -> Result<BTreeSet<String>, IndexError> {
        Ok(super::rows::type_keys_like(&self.conn, keyword)?)
    }

    /// The call site shapes whose callee is written `callee`.
    pub(crate) fn sites_calling(&self, callee: &str) -> Result<Vec<SiteRow>, IndexError> {
        Ok(sites_calling(&self.conn, callee)?)
    }

    /// How many files call something written `callee` (any receiver, unresolved).
    pub(crate) fn count_files_calling(&self, callee: &str) -> Result<usize, IndexError> {
        Ok(count_files_calling(&self.conn, callee)?)
    }

    /// Files with call sites made from a function or method named `caller_name`, with the
    /// simple name of the caller's type (`None`: a free function or file-level code).
    pub(crate) fn files_called_from(
        &self,
        caller_name: &str,
    ) -> Result<Vec<(String, Option<String>)>, IndexError> {
        Ok(files_called_from(&self.conn, caller_name)?)
    }

    /// The types and files defining a method or function named `name`.
    pub(crate) fn callables_named(&self, name: &str) -> Result<Callables, IndexError> {
        Ok(callables_named(&self.conn, name)?)
    }

    /// Simple names of the types keyed `scope::Name` (declared in several scopes).
    pub(crate) fn shared_type_names(&self) -> Result<BTreeSet<String>, IndexError> {
        Ok(shared_type_names(&self.conn)?)
    }

    /// Every distinct (callable name, owning type or `None`, path).
    pub(crate) fn all_callables(
        &self,
    ) -> Result<Vec<(String, Option<String>, String)>, IndexError> {
        Ok(all_callables(&self.conn)?)
    }
}

/// Simple names of the types whose primary declarations sit in several scopes (keyed
/// `scope::Name` in the graph).
pub(super) fn shared_type_names(conn: &Connection) -> rusqlite::Result<BTreeSet<String>> {
    let mut stmt = conn.prepare(
        "select name from code_decls where is_primary = 1
         group by name having count(distinct scope) > 1",
    )?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    rows.collect()
}
