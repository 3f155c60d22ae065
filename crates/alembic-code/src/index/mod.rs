//! The persistent, incremental code index of one project.
//!
//! Each source file's [`FileSummary`] is stored in the project database (table
//! `code_files`) with the file's mtime, size and SHA-256, next to its declaration and
//! parent rows ([`rows`]). A refresh walks the project and `stat`s every file, re-reads
//! only files whose mtime or size changed, re-parses only those whose content hash changed,
//! and drops rows of deleted files. Parsed files stream into one transaction (in parallel,
//! through a bounded channel), so memory stays flat however many files change, and an
//! interrupted refresh leaves the previous index as it was.
//!
//! In memory the index keeps only each file's mtime, size and hash; summaries are read
//! from the database when asked for.

pub(crate) mod call_rows;
mod chunk_rows;
mod refresh;
pub(crate) mod rows;
pub(crate) mod stat_rows;
pub(crate) mod topology_rows;

pub use chunk_rows::ChunkVectors;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alembic_safety::PathGuard;
use alembic_store::StoreError;
use alembic_store::rusqlite::{self, Connection, TransactionBehavior, params};
use serde::Serialize;

use crate::graph::ProjectGraph;
use crate::language::Lang;
use crate::summary::FileSummary;
use crate::walk::walk_files;

/// Migration component name in `schema_migrations`.
pub const COMPONENT: &str = "code";

/// Bumped whenever [`FileSummary`] or the extractors change, so old rows are re-parsed.
/// Version 2 added the declaration and parent rows ([`rows`]); version 3 resolves import
/// aliases and qualified names of parents (the rows hold de-aliased simple names); version 4
/// added the call rows ([`call_rows`]) or the stats and chunk rows whole-project queries read
/// ([`stat_rows`]), which were built side by side; version 5 has both; version 6 stores the
/// summaries compressed ([`rows::encode`]).
pub const SUMMARY_VERSION: &str = "6";

/// Files larger than this are not parsed (generated code, bundles, data) unless the
/// project's `[index] max_file_bytes` says otherwise.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Most files a query about one type's descendants and conformers reads before it answers
/// from counts instead (the project's `[index] max_query_files` says otherwise). A trait
/// that tens of thousands of types implement would otherwise load most of a monorepo: about
/// 125 KB of graph per file, so this keeps such a query near 300 MB.
pub const DEFAULT_MAX_QUERY_FILES: usize = 2_000;

/// A type whose descendants and conformers are declared in more files than a query reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WideClosure {
    /// The simple name asked about.
    pub name: String,
    /// Simple names of its descendants and conformers (all levels asked), from the rows.
    pub types: usize,
    /// Files counted before the limit was passed (more than `limit`).
    pub files: usize,
    /// The limit (`[index] max_query_files`).
    pub limit: usize,
    /// The first descendant and conformer names, in name order.
    pub first: Vec<String>,
}

/// Errors from building or loading the index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("code index database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot confine file access to {root}: {source}")]
    Guard {
        root: PathBuf,
        source: alembic_safety::PathError,
    },
    #[error("cannot encode the summary of {path}: {source}")]
    Encode {
        path: String,
        source: serde_json::Error,
    },
    #[error("{0}")]
    TooWide(Box<WideClosure>),
}

impl std::fmt::Display for WideClosure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} and its {} descendants and conformers are declared in more than {} files, \
             more than one query reads ([index] max_query_files = {})",
            self.name, self.types, self.limit, self.limit
        )?;
        if !self.first.is_empty() {
            write!(f, "; ask about one of them ({}", self.first.join(", "))?;
            if self.types > self.first.len() {
                write!(f, ", …")?;
            }
            write!(f, ")")?;
        }
        Ok(())
    }
}

/// A file left out of the index, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// What a refresh did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexReport {
    /// Source files in the project now.
    pub files: usize,
    /// Files (re)parsed because they are new or their content changed.
    pub parsed: usize,
    /// Files whose mtime changed but whose content did not.
    pub touched: usize,
    pub unchanged: usize,
    pub removed: usize,
    pub skipped: Vec<SkippedFile>,
    pub elapsed_ms: u64,
}

/// Which files a refresh parsed anew or removed, for incremental graph updates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexChanges {
    /// Paths parsed anew or removed (new, edited, deleted, newly skipped files), sorted.
    pub paths: Vec<String>,
}

impl IndexChanges {
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// What a refresh would do, found without reading a file or writing the index.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexPlan {
    /// Source files in the project now.
    pub files: usize,
    /// Files not in the index yet.
    pub added: Vec<String>,
    /// Indexed files whose size or modification time changed (read again; parsed again if
    /// their content changed).
    pub changed: Vec<String>,
    /// Indexed files that are gone.
    pub removed: Vec<String>,
    /// Rows the index holds now.
    pub indexed: usize,
}

impl IndexPlan {
    /// The plan for a project that has no index yet: every source file is new. Opens no
    /// database, so a dry run on a fresh project creates nothing.
    pub fn for_new_project(root: &Path) -> IndexPlan {
        let found = walk_files(root, &|rel| Lang::from_path(Path::new(rel)).is_some());
        IndexPlan {
            files: found.len(),
            added: found.into_iter().map(|f| f.rel).collect(),
            ..IndexPlan::default()
        }
    }
}

/// Counts of the whole project the overview shows, from the per-file rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProjectStats {
    pub files: usize,
    /// Free functions.
    pub functions: usize,
    /// Files per language.
    pub languages: BTreeMap<Lang, usize>,
    /// Files per extension (`.rs`, `(none)`).
    pub extensions: BTreeMap<String, usize>,
}

/// The phases of a refresh, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexPhase {
    /// Walking the tree and comparing each file's mtime and size with the index.
    Scan,
    /// Reading changed files, parsing those whose content changed, and writing their
    /// summary, declaration and parent rows (streamed into the open transaction).
    Parse,
    /// Committing the transaction.
    Write,
    /// Recomputing every file's module-topology row after a first, forced or large
    /// refresh ([`crate::topology_rows`]); smaller changes leave it to the next topology
    /// query.
    Graph,
}

impl IndexPhase {
    pub fn name(self) -> &'static str {
        match self {
            IndexPhase::Scan => "scan",
            IndexPhase::Parse => "parse",
            IndexPhase::Write => "write",
            IndexPhase::Graph => "graph",
        }
    }
}

/// Progress notifications for a refresh (drive a progress bar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A phase starts.
    Phase(IndexPhase),
    /// The walk is done; `to_check` files changed on disk and will be read.
    Walked { files: usize, to_check: usize },
    /// One changed file was read (and parsed if its content changed).
    Checked,
}

/// What the index remembers of a file between refreshes (its summary stays on disk).
#[derive(Debug, Clone, PartialEq)]
struct FileRecord {
    mtime_ns: i64,
    size: u64,
    hash: String,
}

/// The code index of one project root.
pub struct CodeIndex {
    root: PathBuf,
    guard: PathGuard,
    conn: Connection,
    records: BTreeMap<String, FileRecord>,
    max_file_bytes: u64,
    max_query_files: usize,
}

impl std::fmt::Debug for CodeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeIndex")
            .field("root", &self.root)
            .field("files", &self.records.len())
            .finish()
    }
}

impl CodeIndex {
    /// Opens the index in the project database under `root` (created when missing).
    pub fn open(root: &Path) -> Result<CodeIndex, IndexError> {
        let conn = alembic_store::open_project(root)?;
        CodeIndex::with_connection(root, conn)
    }

    /// Opens the index on an existing connection (tests, shared connections).
    pub fn with_connection(root: &Path, mut conn: Connection) -> Result<CodeIndex, IndexError> {
        alembic_store::migrate(&mut conn, COMPONENT, rows::MIGRATIONS)?;
        let guard = PathGuard::new(root).map_err(|source| IndexError::Guard {
            root: root.to_path_buf(),
            source,
        })?;
        let mut index = CodeIndex {
            root: guard.root().to_path_buf(),
            guard,
            conn,
            records: BTreeMap::new(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_query_files: DEFAULT_MAX_QUERY_FILES,
        };
        index.load()?;
        Ok(index)
    }

    /// Changes the largest file that is parsed.
    pub fn set_max_file_bytes(&mut self, bytes: u64) {
        self.max_file_bytes = bytes;
    }

    /// Changes how many files a query about one type's descendants reads at most.
    pub fn set_max_query_files(&mut self, files: usize) {
        self.max_query_files = files;
    }

    /// How many files a query about one type's descendants reads at most.
    pub fn max_query_files(&self) -> usize {
        self.max_query_files
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Loads each file's mtime, size and hash; rows from an older summary format are
    /// dropped.
    fn load(&mut self) -> Result<(), IndexError> {
        let version: Option<String> = self
            .conn
            .query_row(
                "select value from code_index_meta where key = 'summary_version'",
                [],
                |r| r.get(0),
            )
            .ok();
        if version.as_deref() != Some(SUMMARY_VERSION) {
            // immediate: take the write lock before the first read, so a writer that commits
            // in between cannot turn this transaction's first write into SQLITE_BUSY_SNAPSHOT
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            rows::delete_all(&tx)?;
            tx.execute(
                "insert or replace into code_index_meta (key, value) values ('summary_version', ?1)",
                params![SUMMARY_VERSION],
            )?;
            tx.commit()?;
        }
        let mut stmt = self
            .conn
            .prepare("select path, mtime_ns, size, hash from code_files")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                FileRecord {
                    mtime_ns: r.get(1)?,
                    size: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                    hash: r.get(3)?,
                },
            ))
        })?;
        for row in rows {
            let (path, record) = row?;
            self.records.insert(path, record);
        }
        Ok(())
    }

    /// What [`CodeIndex::refresh`] would do now, without reading a file or writing a row.
    pub fn plan(&self) -> IndexPlan {
        let found = walk_files(&self.root, &|rel| Lang::from_path(Path::new(rel)).is_some());
        let mut plan = IndexPlan {
            files: found.len(),
            indexed: self.records.len(),
            ..IndexPlan::default()
        };
        for f in &found {
            match self.records.get(&f.rel) {
                None if f.size > self.max_file_bytes => {}
                None => plan.added.push(f.rel.clone()),
                Some(r) if r.mtime_ns != f.mtime_ns || r.size != f.size => {
                    plan.changed.push(f.rel.clone())
                }
                Some(_) => {}
            }
        }
        let present: std::collections::HashSet<&str> =
            found.iter().map(|f| f.rel.as_str()).collect();
        plan.removed = self
            .records
            .keys()
            .filter(|p| !present.contains(p.as_str()))
            .cloned()
            .collect();
        plan.removed.sort();
        plan
    }

    /// Brings the index up to date with the files on disk.
    pub fn refresh(
        &mut self,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<IndexReport, IndexError> {
        self.refresh_with(false, progress).map(|(report, _)| report)
    }

    /// [`CodeIndex::refresh`], also returning which files changed.
    pub fn refresh_tracked(
        &mut self,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<(IndexReport, IndexChanges), IndexError> {
        self.refresh_with(false, progress)
    }

    /// Number of indexed files.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Indexed paths, in order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.records.keys().map(String::as_str)
    }

    /// The stored summary of a file (path relative to the root), read from the database.
    pub fn summary(&self, path: &str) -> Result<Option<FileSummary>, IndexError> {
        if !self.records.contains_key(path) {
            return Ok(None);
        }
        Ok(rows::summary(&self.conn, path)?)
    }

    /// Every stored summary in path order, read from the database.
    pub fn summaries(&self) -> Result<Vec<FileSummary>, IndexError> {
        Ok(rows::summaries(&self.conn)?)
    }

    /// Builds the project graph from every stored summary.
    pub fn graph(&self) -> Result<ProjectGraph, IndexError> {
        Ok(ProjectGraph::build(&self.summaries()?))
    }

    /// Files with a declaration of a type with this simple name.
    pub(crate) fn files_declaring(&self, name: &str) -> Result<Vec<String>, IndexError> {
        Ok(rows::files_declaring(&self.conn, name)?)
    }

    /// Simple names of the types that name this simple name as a parent (with
    /// `superclass_only`, as their superclass).
    pub(crate) fn children_of(
        &self,
        name: &str,
        superclass_only: bool,
    ) -> Result<Vec<String>, IndexError> {
        Ok(rows::children_of(&self.conn, name, superclass_only)?)
    }

    /// Indexed files of one language.
    pub(crate) fn files_in_language(&self, lang: Lang) -> Result<Vec<String>, IndexError> {
        Ok(rows::files_in_language(&self.conn, lang.name())?)
    }

    /// Files, functions, languages and extensions, from the per-file rows.
    pub fn project_stats(&self) -> Result<ProjectStats, IndexError> {
        let (files, functions) = stat_rows::file_totals(&self.conn)?;
        Ok(ProjectStats {
            files,
            functions,
            languages: stat_rows::languages(&self.conn)?,
            extensions: stat_rows::extensions(&self.conn)?,
        })
    }

    /// Every file declaring a type, as a summary holding only its type skeleton (what
    /// merging types and resolving parents read), in path order.
    pub fn type_skeletons(&self) -> Result<Vec<FileSummary>, IndexError> {
        Ok(stat_rows::type_skeletons(&self.conn)?)
    }

    /// Every type key of the full project graph, from the declaration rows alone.
    pub fn type_keys(&self) -> Result<std::collections::BTreeSet<String>, IndexError> {
        Ok(rows::type_keys(&self.conn)?)
    }
}
