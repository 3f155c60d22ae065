//! The per-file topology rows (schema step 5): what each file contributes to the module
//! graph, the overview's call-edge totals and its entry points, so a topology query sums
//! rows instead of resolving every call site of the project.
//!
//! A file's row depends on other files (its calls resolve into them, its types' parents
//! are declared there, its imports name them), so a write does not recompute rows: it
//! records in `code_topology_dirty` what it may have changed (the file, the type names it
//! declared before and after, its callable names that name-only resolution can pick, its
//! stem when the file is added or removed, Go), and the next topology query recomputes
//! the rows those marks reach ([`crate::topology_rows`]). A bulk write marks `all`.

use std::collections::{BTreeMap, BTreeSet};

use alembic_store::rusqlite::{self, Connection, OptionalExtension, params};

use super::IndexError;
use crate::calls::MAX_CANDIDATES;
use crate::graph::Totals;
use crate::language::Lang;
use crate::summary::{FileSummary, TypeDecl};
use crate::topology::{EntryPoint, ModuleDeps, ModuleStats, file_stem};

/// Schema step 5: the rows above; an existing index computes them on its next query. Also
/// an index covering the overview's extension and function counts (a scan of
/// `code_file_stats` reads every type skeleton).
pub(super) const MIGRATION_SQL: &str = "create table code_topology_files (
        path text primary key,
        module text not null,
        language text not null,
        primary_types integer not null,
        functions integer not null,
        call_edges integer not null,
        resolved_edges integer not null,
        entries text not null
    );
    create table code_topology_deps (
        path text not null,
        from_module text not null,
        to_module text not null,
        n integer not null
    );
    create index code_topology_deps_path on code_topology_deps(path);
    create table code_topology_imports (path text not null, stem text not null);
    create index code_topology_imports_path on code_topology_imports(path);
    create index code_topology_imports_stem on code_topology_imports(stem);
    create table code_topology_names (
        name text primary key,
        types integer not null,
        classes integer not null,
        structs integer not null,
        enums integer not null,
        protocols integer not null,
        extensions integer not null,
        methods integer not null
    ) without rowid;
    create table code_topology_types (
        name text not null,
        key text not null,
        root_class integer not null,
        superclass text,
        extensions integer not null,
        categories text not null
    );
    create index code_topology_types_name on code_topology_types(name);
    create index code_callables_owner on code_callables(owner);
    create index code_file_stats_counts on code_file_stats(extension, functions);
    create table code_topology_dirty (
        id integer primary key,
        kind text not null,
        name text not null
    );
    insert into code_topology_dirty (kind, name) values ('all', '');";

/// Deletes every topology row and marks everything for recomputation.
/// Covering indexes in the order of the sums a topology query groups by, so it scans
/// them instead of sorting every row (schema step 6).
pub(super) const SUM_INDEXES_SQL: &str = "
    create index code_topology_deps_sum on code_topology_deps(from_module, to_module, n);
    create index code_topology_files_sum on code_topology_files(module, language,
        primary_types, functions, call_edges, resolved_edges);";

pub(super) const DELETE_ALL: &str = "delete from code_topology_files;
    delete from code_topology_deps; delete from code_topology_imports;
    delete from code_topology_names; delete from code_topology_types;
    delete from code_topology_dirty;
    insert into code_topology_dirty (kind, name) values ('all', '');";

const DELETE_FILE: [&str; 3] = [
    "delete from code_topology_files where path = ?1",
    "delete from code_topology_deps where path = ?1",
    "delete from code_topology_imports where path = ?1",
];

/// Whether a write records what it may change (`Names`), or a bulk write already marked
/// everything (`Skip`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Marking {
    #[default]
    Names,
    Skip,
}

fn mark(conn: &Connection, kind: &str, name: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("insert into code_topology_dirty (kind, name) values (?1, ?2)")?
        .execute(params![kind, name])?;
    Ok(())
}

/// Marks everything for recomputation (a bulk write).
pub(super) fn mark_all(conn: &Connection) -> rusqlite::Result<()> {
    mark(conn, "all", "")
}

/// What a file declared before a write, read before its rows are deleted: only what other
/// files' rows can depend on (lines are left out, so moving code marks nothing).
#[derive(Debug)]
pub(super) struct Declarations {
    language: String,
    /// Each type name's declarations in the file, as skeletons without lines.
    types: BTreeMap<String, Vec<String>>,
    /// Each callable name's owners in the file (`None`: a free function), in order.
    callables: BTreeMap<String, Vec<Option<String>>>,
    /// The whole summary as JSON without lines: equal before and after a write that changed
    /// nothing a topology row reads (a comment, moved code).
    content: String,
}

impl Declarations {
    fn of(summary: &FileSummary) -> Declarations {
        let mut callables: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
        for f in &summary.functions {
            callables.entry(f.name.clone()).or_default().push(None);
        }
        for t in summary.types.iter().filter(|t| !t.name.is_empty()) {
            for m in &t.methods {
                callables
                    .entry(m.name.clone())
                    .or_default()
                    .push(Some(t.name.clone()));
            }
        }
        Declarations {
            language: summary.language.name().to_string(),
            types: type_signatures(&super::stat_rows::skeleton(&summary.types)),
            callables,
            content: content_signature(summary),
        }
    }
}

/// A summary as JSON without its lines and line count.
fn content_signature(summary: &FileSummary) -> String {
    let mut value = serde_json::to_value(summary).unwrap_or_default();
    drop_lines(&mut value);
    if let serde_json::Value::Object(map) = &mut value {
        map.remove("line_count");
    }
    value.to_string()
}

/// Each type name's declarations as JSON without `line` and `end_line`.
fn type_signatures(types: &[TypeDecl]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in types.iter().filter(|t| !t.name.is_empty()) {
        let mut value = serde_json::to_value(t).unwrap_or_default();
        drop_lines(&mut value);
        out.entry(t.name.clone())
            .or_default()
            .push(value.to_string());
    }
    out
}

fn drop_lines(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("line");
            map.remove("end_line");
            map.values_mut().for_each(drop_lines);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_lines),
        _ => {}
    }
}

/// The declarations of `path` as its rows hold them (`None`: not indexed).
pub(super) fn declarations(
    conn: &Connection,
    path: &str,
) -> rusqlite::Result<Option<Declarations>> {
    let row: Option<(String, Option<String>, Vec<u8>)> = conn
        .prepare_cached(
            "select f.language, s.types, f.summary from code_files f
             left join code_file_stats s on s.path = f.path where f.path = ?1",
        )?
        .query_row(params![path], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let Some((language, types, summary)) = row else {
        return Ok(None);
    };
    // An undecodable summary compares unequal to any new one.
    let content = super::rows::decode(path, &summary)
        .map(|s| content_signature(&s))
        .unwrap_or_default();
    let types: Vec<TypeDecl> = types
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_default();
    let mut callables: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
    let mut stmt = conn
        .prepare_cached("select name, owner from code_callables where path = ?1 order by rowid")?;
    for row in stmt.query_map(params![path], |r| Ok((r.get(0)?, r.get(1)?)))? {
        let (name, owner): (String, Option<String>) = row?;
        callables.entry(name).or_default().push(owner);
    }
    Ok(Some(Declarations {
        language,
        types: type_signatures(&types),
        callables,
        content,
    }))
}

/// Records what a write changed that other files' topology rows may depend on: `old` the
/// file's declarations before (`None`: it was not indexed), `new` its summary after
/// (`None`: removed, and its own topology rows are dropped).
pub(super) fn mark_change(
    conn: &Connection,
    path: &str,
    old: Option<&Declarations>,
    new: Option<&FileSummary>,
    marking: Marking,
) -> rusqlite::Result<()> {
    if new.is_none() {
        for sql in DELETE_FILE {
            conn.prepare_cached(sql)?.execute(params![path])?;
        }
    }
    if marking == Marking::Skip || (old.is_none() && new.is_none()) {
        return Ok(());
    }
    let new_decls = new.map(Declarations::of);
    // Nothing any row reads changed (lines aside): not even this file's row.
    if let (Some(old), Some(new)) = (old, &new_decls)
        && old.content == new.content
    {
        return Ok(());
    }
    mark(conn, "file", path)?;
    if old.is_none() || new_decls.is_none() {
        mark(conn, "stem", file_stem(path))?;
    }
    let empty = Declarations {
        language: String::new(),
        types: BTreeMap::new(),
        callables: BTreeMap::new(),
        content: String::new(),
    };
    let (old, new_decls) = (old.unwrap_or(&empty), new_decls.as_ref().unwrap_or(&empty));
    // Another language reads the same names another way: everything counts as changed.
    let relanguaged = old.language != new_decls.language;
    let go = [&old.language, &new_decls.language]
        .iter()
        .any(|l| l.as_str() == Lang::Go.name());
    let mut types_changed = false;
    for name in old
        .types
        .keys()
        .chain(new_decls.types.keys())
        .collect::<BTreeSet<_>>()
    {
        if relanguaged || old.types.get(name) != new_decls.types.get(name) {
            mark(conn, "type", name)?;
            types_changed = true;
        }
    }
    if go && types_changed {
        mark(conn, "go", "")?;
    }
    let names = old.callables.keys().chain(new_decls.callables.keys());
    for name in names.collect::<BTreeSet<_>>() {
        let now = new_decls.callables.get(name);
        if (relanguaged || old.callables.get(name) != now)
            && resolvable_by_name(conn, name, now.map_or(&[][..], Vec::as_slice))?
        {
            mark(conn, "callee", name)?;
        }
    }
    Ok(())
}

/// True when name-only resolution may have picked `name` before or after this write: at
/// most [`MAX_CANDIDATES`] types have a method of it, or functions are named it, counting
/// from the rows after the write and allowing for the owners `in_file` added (an
/// over-estimate: rows count types by simple name).
fn resolvable_by_name(
    conn: &Connection,
    name: &str,
    in_file: &[Option<String>],
) -> rusqlite::Result<bool> {
    let (owners, functions): (i64, i64) = conn
        .prepare_cached(
            "select count(distinct case when kind = 'method' then owner end),
                    coalesce(sum(kind = 'function'), 0)
             from code_callables where name = ?1",
        )?
        .query_row(params![name], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let added_owners = in_file.iter().flatten().collect::<BTreeSet<_>>().len();
    let added_functions = in_file.iter().filter(|o| o.is_none()).count();
    let within =
        |n: i64, added: usize| usize::try_from(n).unwrap_or(usize::MAX) <= MAX_CANDIDATES + added;
    Ok(within(owners, added_owners) || within(functions, added_functions))
}

/// What the dirty marks say, up to the mark `upto`.
#[derive(Debug, Default)]
pub(crate) struct Dirty {
    pub upto: i64,
    pub all: bool,
    pub go: bool,
    pub files: BTreeSet<String>,
    pub types: BTreeSet<String>,
    pub callees: BTreeSet<String>,
    pub stems: BTreeSet<String>,
}

impl Dirty {
    pub(crate) fn is_empty(&self) -> bool {
        self.upto == 0
    }
}

pub(super) fn dirty(conn: &Connection) -> rusqlite::Result<Dirty> {
    let mut out = Dirty::default();
    let mut stmt = conn.prepare("select id, kind, name from code_topology_dirty order by id")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    for row in rows {
        let (id, kind, name) = row?;
        out.upto = id;
        match kind.as_str() {
            "all" => out.all = true,
            "go" => out.go = true,
            "file" => drop(out.files.insert(name)),
            "type" => drop(out.types.insert(name)),
            "callee" => drop(out.callees.insert(name)),
            "stem" => drop(out.stems.insert(name)),
            other => tracing::warn!(kind = other, "unknown topology mark"),
        }
    }
    Ok(out)
}

/// Files whose call sites mention (as callee, receiver type or caller type, by simple
/// name) one of `types`, or call one of `callees`.
pub(super) fn files_mentioning(
    conn: &Connection,
    types: &BTreeSet<String>,
    callees: &BTreeSet<String>,
) -> rusqlite::Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut by_callee =
        conn.prepare_cached("select distinct path from code_call_sites where callee = ?1")?;
    for name in types.iter().chain(callees) {
        for path in by_callee.query_map(params![name], |r| r.get::<_, String>(0))? {
            out.insert(path?);
        }
    }
    if types.is_empty() {
        return Ok(out);
    }
    let mut stmt = conn.prepare(
        "select path, caller_type, receiver_type from code_call_sites
         where caller_type is not null or receiver_type is not null",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, Option<String>>(1)?,
            r.get::<_, Option<String>>(2)?,
        ))
    })?;
    for row in rows {
        let (path, caller_type, receiver_type) = row?;
        let named = |t: &Option<String>| {
            t.as_deref()
                .is_some_and(|t| types.contains(super::rows::simple_name(t)))
        };
        if named(&caller_type) || named(&receiver_type) {
            out.insert(path);
        }
    }
    Ok(out)
}

/// Files with an import looked up by one of these stems.
pub(super) fn files_importing(
    conn: &Connection,
    stems: &BTreeSet<String>,
) -> rusqlite::Result<BTreeSet<String>> {
    let mut stmt =
        conn.prepare_cached("select distinct path from code_topology_imports where stem = ?1")?;
    let mut out = BTreeSet::new();
    for stem in stems {
        for path in stmt.query_map(params![stem], |r| r.get::<_, String>(0))? {
            out.insert(path?);
        }
    }
    Ok(out)
}

/// What one file contributes to the topology.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TopologyRow {
    pub path: String,
    pub module: String,
    pub language: Lang,
    pub primary_types: usize,
    pub functions: usize,
    pub call_edges: usize,
    pub resolved_edges: usize,
    /// (kind, symbol) of the entry points the file holds.
    pub entries: Vec<(String, Option<String>)>,
    /// References to each module, by module.
    pub deps: BTreeMap<String, usize>,
    /// Stems the file's imports are looked up by.
    pub stems: BTreeSet<String>,
}

/// What the types of one simple name count for in the overview's totals (a type's merge
/// reads only the declarations of its own name, so this changes only when they do).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NameTotals {
    pub name: String,
    /// Type keys of the name.
    pub types: usize,
    /// The type counts (classes, structs, enums, protocols, extensions, methods).
    pub totals: Totals,
    /// The name's root classes and extended types.
    pub types_of_note: Vec<TypeOfNote>,
}

/// A merged type the whole-project hierarchy or category map lists: a root class (a
/// declared class whose superclass is not a declared project type), or a type with
/// extensions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TypeOfNote {
    pub key: String,
    pub root_class: bool,
    /// Superclass key (its simple name when it is not a project type).
    pub superclass: Option<String>,
    /// Category, trait or `extension` of each extension, in merge order.
    pub categories: Vec<String>,
}

/// Replaces the rows of `rows`' files and of `names`' type names (a name without types
/// counts zero: its row goes), every row when `dirty.all`, and clears the marks `dirty`
/// read, in one transaction.
pub(super) fn write(
    conn: &mut Connection,
    rows: &[TopologyRow],
    names: &[NameTotals],
    dirty: &Dirty,
) -> Result<(), IndexError> {
    let tx = conn.transaction()?;
    if dirty.all {
        // Rows of files gone since are dropped with the rest.
        tx.execute_batch(
            "delete from code_topology_files; delete from code_topology_deps;
             delete from code_topology_imports; delete from code_topology_names;
             delete from code_topology_types;",
        )?;
    }
    write_files(&tx, rows, !dirty.all)?;
    let to_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    for n in names {
        tx.prepare_cached("delete from code_topology_names where name = ?1")?
            .execute(params![n.name])?;
        tx.prepare_cached("delete from code_topology_types where name = ?1")?
            .execute(params![n.name])?;
        for t in &n.types_of_note {
            let categories =
                serde_json::to_string(&t.categories).map_err(|source| IndexError::Encode {
                    path: t.key.clone(),
                    source,
                })?;
            tx.prepare_cached(
                "insert into code_topology_types
                 (name, key, root_class, superclass, extensions, categories)
                 values (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                n.name,
                t.key,
                t.root_class,
                t.superclass,
                to_i64(t.categories.len()),
                categories
            ])?;
        }
        if n.types == 0 {
            continue;
        }
        tx.prepare_cached(
            "insert into code_topology_names
             (name, types, classes, structs, enums, protocols, extensions, methods)
             values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![
            n.name,
            to_i64(n.types),
            to_i64(n.totals.classes),
            to_i64(n.totals.structs),
            to_i64(n.totals.enums),
            to_i64(n.totals.protocols),
            to_i64(n.totals.extensions),
            to_i64(n.totals.methods)
        ])?;
    }
    tx.execute(
        "delete from code_topology_dirty where id <= ?1",
        params![dirty.upto],
    )?;
    tx.commit()?;
    Ok(())
}

/// Writes `rows`, first deleting the old rows of their files when `replace`.
fn write_files(tx: &Connection, rows: &[TopologyRow], replace: bool) -> Result<(), IndexError> {
    let mut file = tx.prepare_cached(
        "insert into code_topology_files (path, module, language, primary_types, functions,
         call_edges, resolved_edges, entries) values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut dep = tx.prepare_cached(
        "insert into code_topology_deps (path, from_module, to_module, n) values (?1, ?2, ?3, ?4)",
    )?;
    let mut stem =
        tx.prepare_cached("insert into code_topology_imports (path, stem) values (?1, ?2)")?;
    let to_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    for row in rows {
        for sql in DELETE_FILE.iter().filter(|_| replace) {
            tx.prepare_cached(sql)?.execute(params![row.path])?;
        }
        let entries = serde_json::to_string(&row.entries).map_err(|source| IndexError::Encode {
            path: row.path.clone(),
            source,
        })?;
        file.execute(params![
            row.path,
            row.module,
            row.language.name(),
            to_i64(row.primary_types),
            to_i64(row.functions),
            to_i64(row.call_edges),
            to_i64(row.resolved_edges),
            entries
        ])?;
        for (to, n) in &row.deps {
            dep.execute(params![row.path, row.module, to, to_i64(*n)])?;
        }
        for s in &row.stems {
            stem.execute(params![row.path, s])?;
        }
    }
    Ok(())
}

/// The topology as the rows sum it up.
#[derive(Debug, Default)]
pub(crate) struct StoredTopology {
    pub modules: BTreeMap<String, ModuleStats>,
    pub deps: ModuleDeps,
    pub entry_points: Vec<EntryPoint>,
    /// Files, functions, type and call-edge counts.
    pub totals: Totals,
    /// Number of type keys.
    pub types: usize,
}

pub(super) fn read(conn: &Connection) -> Result<StoredTopology, IndexError> {
    let mut out = StoredTopology::default();
    let to_usize = |n: i64| usize::try_from(n).unwrap_or(0);
    let mut stmt = conn.prepare(
        "select module, language, count(*), sum(primary_types), sum(functions),
                sum(call_edges), sum(resolved_edges)
         from code_topology_files group by module, language",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            [
                r.get::<_, i64>(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ],
        ))
    })?;
    for row in rows {
        let (module, language, [files, types, functions, edges, resolved]) = row?;
        let stats = out.modules.entry(module).or_default();
        stats.files += to_usize(files);
        stats.types += to_usize(types);
        if let Some(lang) = Lang::from_name(&language) {
            *stats.languages.entry(lang).or_default() += to_usize(files);
        }
        out.totals.files += to_usize(files);
        out.totals.functions += to_usize(functions);
        out.totals.call_edges += to_usize(edges);
        out.totals.resolved_call_edges += to_usize(resolved);
    }
    let mut stmt = conn
        .prepare("select from_module, to_module, sum(n) from code_topology_deps group by 1, 2")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    for row in rows {
        let (from, to, n) = row?;
        out.deps.insert((from, to), to_usize(n));
    }
    out.entry_points = entry_points(conn)?;
    let counts: [i64; 7] = conn.query_row(
        "select coalesce(sum(types), 0), coalesce(sum(classes), 0), coalesce(sum(structs), 0),
                coalesce(sum(enums), 0), coalesce(sum(protocols), 0),
                coalesce(sum(extensions), 0), coalesce(sum(methods), 0)
         from code_topology_names",
        [],
        |r| {
            Ok([
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ])
        },
    )?;
    let [
        types,
        classes,
        structs,
        enums,
        protocols,
        extensions,
        methods,
    ] = counts.map(to_usize);
    out.types = types;
    out.totals.classes = classes;
    out.totals.structs = structs;
    out.totals.enums = enums;
    out.totals.protocols = protocols;
    out.totals.extensions = extensions;
    out.totals.methods = methods;
    Ok(out)
}

/// How many root classes there are, and the first `limit` in key order.
pub(super) fn root_classes(
    conn: &Connection,
    limit: usize,
) -> rusqlite::Result<(usize, Vec<TypeOfNote>)> {
    let total: i64 = conn.query_row(
        "select count(*) from code_topology_types where root_class",
        [],
        |r| r.get(0),
    )?;
    let mut stmt = conn.prepare(
        "select key, superclass from code_topology_types where root_class
         order by key limit ?1",
    )?;
    let rows = stmt.query_map(params![i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
        Ok(TypeOfNote {
            key: r.get(0)?,
            root_class: true,
            superclass: r.get(1)?,
            categories: Vec::new(),
        })
    })?;
    Ok((
        usize::try_from(total).unwrap_or(0),
        rows.collect::<rusqlite::Result<_>>()?,
    ))
}

/// How many types have extensions, and the first `limit`, most extended first (then by
/// key), as the category map lists them.
pub(super) fn extended_types(
    conn: &Connection,
    limit: usize,
) -> rusqlite::Result<(usize, Vec<TypeOfNote>)> {
    let total: i64 = conn.query_row(
        "select count(*) from code_topology_types where extensions > 0",
        [],
        |r| r.get(0),
    )?;
    let mut stmt = conn.prepare(
        "select key, categories from code_topology_types where extensions > 0
         order by extensions desc, key limit ?1",
    )?;
    let rows = stmt.query_map(params![i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (key, categories) = row?;
        let categories = serde_json::from_str(&categories).unwrap_or_else(|_| {
            tracing::warn!(key, "undecodable topology type row");
            Vec::new()
        });
        out.push(TypeOfNote {
            key,
            root_class: false,
            superclass: None,
            categories,
        });
    }
    Ok((usize::try_from(total).unwrap_or(0), out))
}

/// Mains in path order, then application delegates in type-key order, as the full graph
/// lists them.
fn entry_points(conn: &Connection) -> rusqlite::Result<Vec<EntryPoint>> {
    let mut stmt = conn.prepare(
        "select path, entries from code_topology_files where entries != '[]' order by path",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    let mut mains = Vec::new();
    let mut delegates = Vec::new();
    for row in rows {
        let (path, json) = row?;
        let entries: Vec<(String, Option<String>)> = match serde_json::from_str(&json) {
            Ok(e) => e,
            Err(_) => {
                tracing::warn!(path, "undecodable topology entry row");
                continue;
            }
        };
        for (kind, symbol) in entries {
            let entry = |kind| EntryPoint {
                file: path.clone(),
                kind,
                symbol: symbol.clone(),
            };
            match kind.as_str() {
                "main" => mains.push(entry("main")),
                _ => delegates.push(entry("app-delegate")),
            }
        }
    }
    delegates.sort_by(|a, b| a.symbol.cmp(&b.symbol));
    mains.extend(delegates);
    Ok(mains)
}

impl super::CodeIndex {
    /// The topology marks not yet applied.
    pub(crate) fn topology_dirty(&self) -> Result<Dirty, IndexError> {
        Ok(dirty(&self.conn)?)
    }

    /// Every file as its type skeleton and free-function names (see
    /// [`super::stat_rows::resolution_skeletons`]).
    pub(crate) fn resolution_skeletons(&self) -> Result<Vec<FileSummary>, IndexError> {
        Ok(super::stat_rows::resolution_skeletons(&self.conn)?)
    }

    /// Files whose call sites name one of `types` or call one of `callees`.
    pub(crate) fn files_mentioning(
        &self,
        types: &BTreeSet<String>,
        callees: &BTreeSet<String>,
    ) -> Result<BTreeSet<String>, IndexError> {
        Ok(files_mentioning(&self.conn, types, callees)?)
    }

    /// Files with an import looked up by one of `stems`.
    pub(crate) fn files_importing(
        &self,
        stems: &BTreeSet<String>,
    ) -> Result<BTreeSet<String>, IndexError> {
        Ok(files_importing(&self.conn, stems)?)
    }

    /// The stored summaries of `paths` as JSON, in order (missing ones left out), for
    /// decoding in parallel with [`super::rows::decode`].
    pub(crate) fn stored_summaries(
        &self,
        paths: &[String],
    ) -> Result<Vec<(String, Vec<u8>)>, IndexError> {
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            if let Some(stored) = super::rows::stored_summary(&self.conn, path)? {
                out.push((path.clone(), stored));
            }
        }
        Ok(out)
    }

    /// Names of the methods of the types with this simple name.
    pub(crate) fn methods_owned_by(&self, owner: &str) -> Result<Vec<String>, IndexError> {
        let mut stmt = self.conn.prepare_cached(
            "select distinct name from code_callables where kind = 'method' and owner = ?1",
        )?;
        let names = stmt.query_map(params![owner], |r| r.get(0))?;
        Ok(names.collect::<rusqlite::Result<_>>()?)
    }

    /// True when name-only resolution can pick a callable of this name (see
    /// [`resolvable_by_name`]).
    pub(crate) fn resolvable_by_name(&self, name: &str) -> Result<bool, IndexError> {
        Ok(resolvable_by_name(&self.conn, name, &[])?)
    }

    /// How many root classes there are, and the first `limit` (current only when no marks
    /// are pending).
    pub(crate) fn stored_root_classes(
        &self,
        limit: usize,
    ) -> Result<(usize, Vec<TypeOfNote>), IndexError> {
        Ok(root_classes(&self.conn, limit)?)
    }

    /// How many types have extensions, and the first `limit` (current only when no marks
    /// are pending).
    pub(crate) fn stored_extended_types(
        &self,
        limit: usize,
    ) -> Result<(usize, Vec<TypeOfNote>), IndexError> {
        Ok(extended_types(&self.conn, limit)?)
    }

    /// Stores recomputed rows and clears the marks `dirty` read.
    pub(crate) fn write_topology(
        &mut self,
        rows: &[TopologyRow],
        names: &[NameTotals],
        dirty: &Dirty,
    ) -> Result<(), IndexError> {
        write(&mut self.conn, rows, names, dirty)
    }

    /// The topology rows summed up (current only when no marks are pending).
    pub(crate) fn stored_topology(&self) -> Result<StoredTopology, IndexError> {
        read(&self.conn)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::super::CodeIndex;

    fn write(root: &std::path::Path, text: &str, step: u64) {
        let path = root.join("src/lib.rs");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::now() + Duration::from_secs(10 + step))
            .unwrap();
    }

    /// Kinds of the pending marks.
    fn marks(index: &CodeIndex) -> Vec<String> {
        let mut stmt = index
            .conn
            .prepare("select kind || ' ' || name from code_topology_dirty order by id")
            .unwrap();
        let rows = stmt.query_map([], |r| r.get(0)).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn an_edit_that_changes_no_row_input_leaves_no_mark_and_others_mark_what_they_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let code =
            "pub struct Pump;\nimpl Pump { pub fn run(&self) { helper(); } }\nfn helper() {}\n";
        write(root, code, 1);
        let mut index = CodeIndex::open(root).unwrap();
        index.refresh(&|_| {}).unwrap();
        index.topology(300).unwrap();
        assert_eq!(marks(&index), Vec::<String>::new());

        // A comment and moved lines: nothing a row reads.
        write(root, &format!("// a comment\n\n{code}// more\n"), 2);
        index.refresh(&|_| {}).unwrap();
        assert_eq!(marks(&index), Vec::<String>::new());

        // A new call: the file's own row only.
        write(
            root,
            &code.replace("helper(); }", "helper(); helper2(); }"),
            3,
        );
        index.refresh(&|_| {}).unwrap();
        assert_eq!(marks(&index), ["file src/lib.rs"]);
        index.topology(300).unwrap();

        // A new method of a type: the type and the (rare) callable name.
        write(
            root,
            &code.replace("helper(); }", "helper(); }\n pub fn stop(&self) {}"),
            4,
        );
        index.refresh(&|_| {}).unwrap();
        assert_eq!(
            marks(&index),
            ["file src/lib.rs", "type Pump", "callee stop"]
        );
    }
}
