//! The persistent, incremental code index of one project.
//!
//! Each source file's [`FileSummary`] is stored in the project database (table
//! `code_files`) with the file's mtime, size and SHA-256. A refresh walks the project,
//! re-reads only files whose mtime or size changed, re-parses only those whose content
//! hash changed, and drops rows of deleted files — all in one transaction.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use alembic_safety::PathGuard;
use alembic_store::rusqlite::{self, Connection, params};
use alembic_store::{Migration, StoreError};
use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::graph::ProjectGraph;
use crate::language::Lang;
use crate::summary::FileSummary;
use crate::walk::{FoundFile, walk_files};

/// Migration component name in `schema_migrations`.
pub const COMPONENT: &str = "code";

/// Bumped whenever [`FileSummary`] or the extractors change, so old rows are re-parsed.
pub const SUMMARY_VERSION: &str = "1";

const MIGRATIONS: &[Migration] = &[Migration {
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
}];

/// Files larger than this are not parsed (generated code, bundles, data).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

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

/// Which summaries a refresh replaced or removed, for incremental graph updates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexChanges {
    /// Paths parsed anew or removed (new, edited, deleted, newly skipped files).
    pub paths: Vec<String>,
    /// The summaries those paths had before the refresh (none for new files).
    pub previous: Vec<FileSummary>,
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

/// Progress notifications for a refresh (drive a progress bar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The walk is done; `to_check` files changed on disk and will be read.
    Walked { files: usize, to_check: usize },
    /// One changed file was read (and parsed if its content changed).
    Checked,
}

struct FileRecord {
    mtime_ns: i64,
    size: u64,
    hash: String,
    summary: FileSummary,
}

/// Outcome of reading one changed file.
enum Checked {
    Touched {
        rel: String,
        mtime_ns: i64,
        size: u64,
    },
    Parsed {
        found: FoundFile,
        hash: String,
        summary: FileSummary,
        json: String,
    },
    Skipped(SkippedFile),
}

/// The read-only part of the index the parallel readers share (the connection is not
/// `Sync`).
struct FileReader<'a> {
    guard: &'a PathGuard,
    records: &'a BTreeMap<String, FileRecord>,
    max_file_bytes: u64,
}

impl FileReader<'_> {
    /// Reads one changed file through the path guard; parses it if its content changed.
    fn check(&self, found: FoundFile) -> Result<Checked, IndexError> {
        let skip = |reason: String| {
            Ok(Checked::Skipped(SkippedFile {
                path: found.rel.clone(),
                reason,
            }))
        };
        if found.size > self.max_file_bytes {
            return skip(format!("larger than {} bytes", self.max_file_bytes));
        }
        let bytes = match self.guard.read(&found.rel) {
            Ok(b) => b,
            Err(e) => return skip(e.to_string()),
        };
        let hash = hex::encode(Sha256::digest(&bytes));
        if self.records.get(&found.rel).is_some_and(|r| r.hash == hash) {
            return Ok(Checked::Touched {
                rel: found.rel,
                mtime_ns: found.mtime_ns,
                size: found.size,
            });
        }
        let text = String::from_utf8_lossy(&bytes);
        let Some(lang) = Lang::detect(Path::new(&found.rel), &text) else {
            return skip("not a supported source language".to_string());
        };
        let summary = match crate::extract::summarize(&found.rel, lang, &text) {
            Ok(s) => s,
            Err(e) => return skip(e.to_string()),
        };
        let json = serde_json::to_string(&summary).map_err(|source| IndexError::Encode {
            path: found.rel.clone(),
            source,
        })?;
        Ok(Checked::Parsed {
            found,
            hash,
            summary,
            json,
        })
    }
}

/// The code index of one project root.
pub struct CodeIndex {
    root: PathBuf,
    guard: PathGuard,
    conn: Connection,
    records: BTreeMap<String, FileRecord>,
    max_file_bytes: u64,
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
        alembic_store::migrate(&mut conn, COMPONENT, MIGRATIONS)?;
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
        };
        index.load()?;
        Ok(index)
    }

    /// Changes the largest file that is parsed.
    pub fn set_max_file_bytes(&mut self, bytes: u64) {
        self.max_file_bytes = bytes;
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Loads stored summaries; rows from an older summary format are dropped.
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
            self.conn.execute_batch("delete from code_files")?;
            self.conn.execute(
                "insert or replace into code_index_meta (key, value) values ('summary_version', ?1)",
                params![SUMMARY_VERSION],
            )?;
        }
        let mut stmt = self
            .conn
            .prepare("select path, mtime_ns, size, hash, summary from code_files")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
            ))
        })?;
        for row in rows {
            let (path, mtime_ns, size, hash, json) = row?;
            // An undecodable row is simply re-parsed on the next refresh.
            if let Ok(summary) = serde_json::from_str::<FileSummary>(&json) {
                let size = u64::try_from(size).unwrap_or(0);
                self.records.insert(
                    path,
                    FileRecord {
                        mtime_ns,
                        size,
                        hash,
                        summary,
                    },
                );
            }
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

    /// Forgets every stored summary, so the next refresh parses every file again.
    pub fn clear(&mut self) -> Result<(), IndexError> {
        self.conn.execute("delete from code_files", [])?;
        self.records.clear();
        Ok(())
    }

    /// Brings the index up to date with the files on disk.
    pub fn refresh(
        &mut self,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<IndexReport, IndexError> {
        self.refresh_tracked(progress).map(|(report, _)| report)
    }

    /// [`CodeIndex::refresh`], also returning which summaries changed.
    pub fn refresh_tracked(
        &mut self,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<(IndexReport, IndexChanges), IndexError> {
        let started = Instant::now();
        let found = walk_files(&self.root, &|rel| Lang::from_path(Path::new(rel)).is_some());
        let (changed, unchanged): (Vec<FoundFile>, Vec<FoundFile>) =
            found.iter().cloned().partition(|f| {
                self.records
                    .get(&f.rel)
                    .is_none_or(|r| r.mtime_ns != f.mtime_ns || r.size != f.size)
            });
        progress(Progress::Walked {
            files: found.len(),
            to_check: changed.len(),
        });
        let reader = FileReader {
            guard: &self.guard,
            records: &self.records,
            max_file_bytes: self.max_file_bytes,
        };
        let checked: Vec<Checked> = changed
            .into_par_iter()
            .map(|f| {
                let out = reader.check(f);
                progress(Progress::Checked);
                out
            })
            .collect::<Result<_, _>>()?;
        let present: std::collections::HashSet<&str> =
            found.iter().map(|f| f.rel.as_str()).collect();
        let removed: Vec<String> = self
            .records
            .keys()
            .filter(|k| !present.contains(k.as_str()))
            .cloned()
            .collect();
        let mut report = IndexReport {
            files: found.len(),
            unchanged: unchanged.len(),
            removed: removed.len(),
            ..IndexReport::default()
        };
        let changes = self.persist(checked, &removed, &mut report)?;
        report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok((report, changes))
    }

    fn persist(
        &mut self,
        checked: Vec<Checked>,
        removed: &[String],
        report: &mut IndexReport,
    ) -> Result<IndexChanges, IndexError> {
        let mut changes = IndexChanges::default();
        let mut note = |path: &str, old: Option<FileRecord>| {
            changes.paths.push(path.to_string());
            changes.previous.extend(old.map(|r| r.summary));
        };
        let tx = self.conn.transaction()?;
        for path in removed {
            tx.execute("delete from code_files where path = ?1", params![path])?;
            note(path, self.records.remove(path));
        }
        for item in checked {
            match item {
                Checked::Touched {
                    rel,
                    mtime_ns,
                    size,
                } => {
                    tx.execute(
                        "update code_files set mtime_ns = ?2, size = ?3 where path = ?1",
                        params![rel, mtime_ns, i64::try_from(size).unwrap_or(i64::MAX)],
                    )?;
                    if let Some(r) = self.records.get_mut(&rel) {
                        r.mtime_ns = mtime_ns;
                        r.size = size;
                    }
                    report.touched += 1;
                }
                Checked::Parsed {
                    found,
                    hash,
                    summary,
                    json,
                } => {
                    tx.execute(
                        "insert into code_files (path, language, mtime_ns, size, hash, summary)
                         values (?1, ?2, ?3, ?4, ?5, ?6)
                         on conflict(path) do update set language = excluded.language,
                           mtime_ns = excluded.mtime_ns, size = excluded.size, hash = excluded.hash,
                           summary = excluded.summary, indexed_at = excluded.indexed_at",
                        params![
                            found.rel,
                            summary.language.name(),
                            found.mtime_ns,
                            i64::try_from(found.size).unwrap_or(i64::MAX),
                            hash,
                            json
                        ],
                    )?;
                    let record = FileRecord {
                        mtime_ns: found.mtime_ns,
                        size: found.size,
                        hash,
                        summary,
                    };
                    let path = found.rel.clone();
                    note(&path, self.records.insert(found.rel, record));
                    report.parsed += 1;
                }
                Checked::Skipped(s) => {
                    tx.execute("delete from code_files where path = ?1", params![s.path])?;
                    if let Some(old) = self.records.remove(&s.path) {
                        note(&s.path, Some(old));
                        report.removed += 1;
                    }
                    report.skipped.push(s);
                }
            }
        }
        tx.commit()?;
        report.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(changes)
    }

    /// Number of indexed files.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The stored summary of a file (path relative to the root).
    pub fn summary(&self, path: &str) -> Option<&FileSummary> {
        self.records.get(path).map(|r| &r.summary)
    }

    /// All summaries in path order.
    pub fn summaries(&self) -> impl Iterator<Item = &FileSummary> {
        self.records.values().map(|r| &r.summary)
    }

    /// Builds the project graph from the current summaries.
    pub fn graph(&self) -> ProjectGraph {
        ProjectGraph::build(self.summaries())
    }

    /// Applies `changes` (accumulated since `graph` was last in step with this index) to
    /// `graph` without rebuilding it.
    pub fn update_graph(&self, graph: &mut ProjectGraph, changes: &IndexChanges) {
        let all: crate::graph::Summaries = self
            .records
            .iter()
            .map(|(p, r)| (p.as_str(), &r.summary))
            .collect();
        let paths: Vec<&str> = changes.paths.iter().map(String::as_str).collect();
        graph.update(&all, &paths, &changes.previous);
    }
}
