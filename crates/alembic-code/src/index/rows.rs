//! The rows the code index keeps per file, and the indexed look-ups graph queries use.
//!
//! Besides the summary (`code_files`), each file contributes one `code_decls` row per type
//! declaration (simple name, scope, primary or not) and one `code_parents` row per parent
//! it names (the parent's simple name, de-aliased: `SansioBlueprint` imported as an alias
//! of `Blueprint` is stored as `Blueprint`; the child's simple name). Both are
//! replaced with the file's summary in the same transaction, so they are always in step
//! with `code_files`; they are what lets a query find the few files it needs
//! ([`crate::focus`]) instead of loading every summary.

use std::collections::{BTreeMap, BTreeSet};

use alembic_store::Migration;
use alembic_store::rusqlite::{self, Connection, OptionalExtension, params};

use super::stat_rows::FileStats;
use super::topology_rows::Marking;
use crate::merge::scope_of;
use crate::summary::FileSummary;

pub(super) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: "create table code_files (
              path text primary key,
              language text not null,
              mtime_ns integer not null,
              size integer not null,
              hash text not null,
              summary text not null,
              indexed_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
          );
          create table code_index_meta (key text primary key, value text not null);",
    },
    Migration {
        version: 2,
        sql: "create table code_decls (
              name text not null,
              path text not null,
              scope text not null,
              is_primary integer not null
          );
          create index code_decls_name on code_decls(name);
          create index code_decls_path on code_decls(path);
          create table code_parents (
              parent text not null,
              child text not null,
              path text not null,
              as_superclass integer not null
          );
          create index code_parents_parent on code_parents(parent);
          create index code_parents_path on code_parents(path);
          create index code_files_language on code_files(language);",
    },
    Migration {
        version: 3,
        sql: super::call_rows::MIGRATION_SQL,
    },
    Migration {
        version: 4,
        sql: super::stat_rows::MIGRATION_SQL,
    },
    Migration {
        version: 5,
        sql: super::topology_rows::MIGRATION_SQL,
    },
    Migration {
        version: 6,
        sql: super::topology_rows::SUM_INDEXES_SQL,
    },
];

/// Deletes every row of the index (summaries, declarations, parents, call rows, stats and
/// chunks).
pub(super) fn delete_all(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "delete from code_files; delete from code_decls; delete from code_parents;",
    )?;
    conn.execute_batch(super::call_rows::DELETE_ALL)?;
    conn.execute_batch(super::stat_rows::DELETE_ALL)?;
    conn.execute_batch(super::topology_rows::DELETE_ALL)
}

/// Deletes the rows of a file that is gone (or no longer indexed), recording what its
/// removal may change in other files' topology rows.
pub(super) fn remove_file(conn: &Connection, path: &str, marking: Marking) -> rusqlite::Result<()> {
    let old = super::topology_rows::declarations(conn, path)?;
    super::topology_rows::mark_change(conn, path, old.as_ref(), None, marking)?;
    delete_file(conn, path)
}

/// Deletes the rows of one file (not its topology rows, replaced when recomputed).
fn delete_file(conn: &Connection, path: &str) -> rusqlite::Result<()> {
    for sql in [
        "delete from code_files where path = ?1",
        "delete from code_decls where path = ?1",
        "delete from code_parents where path = ?1",
    ]
    .into_iter()
    .chain(super::call_rows::DELETE_FILE)
    {
        conn.prepare_cached(sql)?.execute(params![path])?;
    }
    super::stat_rows::delete_file(conn, path)
}

/// What is stored about one file besides its summary.
pub(super) struct FileRow<'a> {
    pub mtime_ns: i64,
    pub size: u64,
    pub hash: &'a str,
    /// The summary as [`encode`] stores it.
    pub summary: &'a [u8],
    pub stats: &'a FileStats,
}

/// Replaces the rows of `summary.path` by this summary and its declarations, recording
/// what the change may reach in other files' topology rows.
pub(super) fn write_file(
    conn: &Connection,
    summary: &FileSummary,
    row: &FileRow<'_>,
    marking: Marking,
) -> rusqlite::Result<()> {
    let path = summary.path.as_str();
    // Asked of the database, not the records, which another process may have outdated.
    // A file new to the index has nothing to look up or delete; that matters on a full
    // index, where each delete of chunk words flushes FTS5's pending terms into a new
    // segment.
    let replaces = conn
        .prepare_cached("select 1 from code_files where path = ?1")?
        .exists(params![path])?;
    let old = match marking {
        Marking::Names if replaces => super::topology_rows::declarations(conn, path)?,
        Marking::Names | Marking::Skip => None,
    };
    if replaces {
        delete_file(conn, path)?;
    }
    conn.prepare_cached(
        "insert into code_files (path, language, mtime_ns, size, hash, summary)
         values (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        path,
        summary.language.name(),
        row.mtime_ns,
        i64::try_from(row.size).unwrap_or(i64::MAX),
        row.hash,
        row.summary
    ])?;
    let scope = scope_of(summary.language, path);
    let mut decl = conn.prepare_cached(
        "insert into code_decls (name, path, scope, is_primary) values (?1, ?2, ?3, ?4)",
    )?;
    let mut parent = conn.prepare_cached(
        "insert into code_parents (parent, child, path, as_superclass) values (?1, ?2, ?3, ?4)",
    )?;
    for t in summary.types.iter().filter(|t| !t.name.is_empty()) {
        decl.execute(params![t.name, path, scope, t.kind.is_primary()])?;
        let written = t.superclass.iter().map(|p| (p, true));
        for (p, as_superclass) in written.chain(t.conformances.iter().map(|p| (p, false))) {
            parent.execute(params![simple_name(p), t.name, path, as_superclass])?;
        }
    }
    super::call_rows::write_file(conn, summary)?;
    super::stat_rows::write_file(conn, summary, row.stats)?;
    super::topology_rows::mark_change(conn, path, old.as_ref(), Some(summary), marking)
}

/// The simple name a written type name ends with (`a::b::C` and `scope::C` give `C`).
pub(crate) fn simple_name(written: &str) -> &str {
    written.rsplit_once("::").map_or(written, |(_, n)| n)
}

/// Updates the mtime and size of a file whose content did not change.
pub(super) fn touch_file(
    conn: &Connection,
    path: &str,
    mtime_ns: i64,
    size: u64,
) -> rusqlite::Result<()> {
    conn.prepare_cached("update code_files set mtime_ns = ?2, size = ?3 where path = ?1")?
        .execute(params![
            path,
            mtime_ns,
            i64::try_from(size).unwrap_or(i64::MAX)
        ])?;
    Ok(())
}

/// How a summary is stored: its JSON, LZ4-compressed with the length prepended. A full
/// index of a large tree writes about a quarter of the bytes (the summaries were 230 MB of
/// JSON on the cargo registry), and every read of many summaries reads less.
pub(super) fn encode(summary: &FileSummary) -> serde_json::Result<Vec<u8>> {
    Ok(lz4_flex::compress_prepend_size(&serde_json::to_vec(
        summary,
    )?))
}

/// Decodes a stored summary; an undecodable row reads as missing (it is re-parsed when the
/// summary format version changes).
pub(crate) fn decode(path: &str, stored: &[u8]) -> Option<FileSummary> {
    let decoded = decompress(stored)
        .and_then(|json| serde_json::from_slice(&json).map_err(|e| e.to_string()));
    match decoded {
        Ok(s) => Some(s),
        Err(error) => {
            tracing::warn!(path, error, "undecodable code summary row");
            None
        }
    }
}

/// The JSON of a stored summary. LZ4 expands at most 255-fold, so a length prefix beyond
/// that is damage, not a size to allocate.
fn decompress(stored: &[u8]) -> Result<Vec<u8>, String> {
    let (size, body) = lz4_flex::block::uncompressed_size(stored).map_err(|e| e.to_string())?;
    if size > body.len().saturating_mul(255) {
        return Err(format!(
            "length prefix {size} exceeds what {} compressed bytes can hold",
            body.len()
        ));
    }
    lz4_flex::decompress(body, size).map_err(|e| e.to_string())
}

/// The stored summary of one file.
pub(super) fn summary(conn: &Connection, path: &str) -> rusqlite::Result<Option<FileSummary>> {
    Ok(stored_summary(conn, path)?.and_then(|s| decode(path, &s)))
}

/// The stored summary of one file, undecoded (callers decode many in parallel).
pub(super) fn stored_summary(conn: &Connection, path: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.prepare_cached("select summary from code_files where path = ?1")?
        .query_row(params![path], |r| r.get(0))
        .optional()
}

/// Every stored summary, in path order.
pub(super) fn summaries(conn: &Connection) -> rusqlite::Result<Vec<FileSummary>> {
    let mut stmt = conn.prepare("select path, summary from code_files order by path")?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (path, stored) = row?;
        out.extend(decode(&path, &stored));
    }
    Ok(out)
}

/// One column of strings from a query with one parameter.
fn strings(conn: &Connection, sql: &str, arg: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params![arg], |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// Files with a declaration (primary or not) of a type with this simple name, in path order.
pub(super) fn files_declaring(conn: &Connection, name: &str) -> rusqlite::Result<Vec<String>> {
    strings(
        conn,
        "select distinct path from code_decls where name = ?1 order by path",
        name,
    )
}

/// Simple names of the types that name `parent` (a simple name) as a parent; with
/// `superclass_only`, only those that write it as their superclass.
pub(super) fn children_of(
    conn: &Connection,
    parent: &str,
    superclass_only: bool,
) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "select distinct child from code_parents
         where parent = ?1 and (?2 = 0 or as_superclass = 1) order by child",
    )?;
    let rows = stmt.query_map(params![parent, superclass_only], |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// Files of one language (its [`crate::Lang::name`]), in path order.
pub(super) fn files_in_language(
    conn: &Connection,
    language: &str,
) -> rusqlite::Result<Vec<String>> {
    strings(
        conn,
        "select path from code_files where language = ?1 order by path",
        language,
    )
}

/// Every type key the full graph has, computed from the declaration rows the way
/// [`crate::merge`] keys types: the simple name, or `scope::Name` for each scope when
/// primary declarations of the name sit in several non-empty scopes.
pub(super) fn type_keys(conn: &Connection) -> rusqlite::Result<BTreeSet<String>> {
    let mut stmt = conn.prepare(
        "select name, scope, max(is_primary) from code_decls group by name, scope order by name",
    )?;
    keys_of(stmt.query([])?)
}

/// The type keys that may contain `keyword` (lowercase) case-insensitively: a superset,
/// found in SQL (`lower` folds ASCII only, so every name or scope with a non-ASCII
/// character, which Unicode folding could make match, is kept); callers filter exactly.
pub(super) fn type_keys_like(
    conn: &Connection,
    keyword: &str,
) -> rusqlite::Result<BTreeSet<String>> {
    let mut stmt = conn.prepare(
        "select name, scope, max(is_primary) from code_decls where name in (
             select name from code_decls
             where instr(lower(scope || '::' || name), ?1)
                or length(name) != length(cast(name as blob))
                or length(scope) != length(cast(scope as blob)))
         group by name, scope order by name",
    )?;
    keys_of(stmt.query(params![keyword])?)
}

/// Keys from (name, scope, any primary) rows in name order.
fn keys_of(mut rows: rusqlite::Rows<'_>) -> rusqlite::Result<BTreeSet<String>> {
    let mut scopes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    while let Some(r) = rows.next()? {
        let (name, scope, primary): (String, String, bool) = (r.get(0)?, r.get(1)?, r.get(2)?);
        let list = scopes.entry(name).or_default();
        if primary {
            list.push(scope);
        }
    }
    let mut keys = BTreeSet::new();
    for (name, list) in scopes {
        if list.len() > 1 {
            keys.extend(list.iter().map(|s| {
                if s.is_empty() {
                    name.clone()
                } else {
                    format!("{s}::{name}")
                }
            }));
        } else {
            keys.insert(name);
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_summaries_round_trip_and_damaged_ones_read_as_missing() {
        let summary: FileSummary = serde_json::from_value(serde_json::json!({
            "path": "src/a.rs", "language": "rust", "line_count": 3, "imports": [],
            "types": [], "functions": [], "calls": [], "has_entry_point": false
        }))
        .unwrap();
        let stored = encode(&summary).unwrap();
        assert_eq!(decode("src/a.rs", &stored), Some(summary));
        // A JSON text row (an older format), a cut row, and a length prefix far beyond
        // what the body can expand to.
        assert_eq!(decode("src/a.rs", b"{\"path\":\"src/a.rs\"}"), None);
        assert_eq!(decode("src/a.rs", &stored[..stored.len() / 2]), None);
        let mut huge = stored.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode("src/a.rs", &huge), None);
    }
}
