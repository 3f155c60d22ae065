//! One refresh of the index: scan (walk and `stat`), parse changed files in parallel and
//! stream them into one transaction, then commit.
//!
//! Invariant: the in-memory records change only after the transaction committed, so a
//! failed or interrupted refresh leaves both the database and the records as they were.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use alembic_safety::PathGuard;
use alembic_store::rusqlite::{OptionalExtension, Transaction, TransactionBehavior};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::rows::{self, FileRow};
use super::stat_rows::{FileStats, file_stats};
use super::topology_rows::{self, Marking};
use super::{
    CodeIndex, FileRecord, IndexChanges, IndexError, IndexPhase, IndexReport, Progress, SkippedFile,
};
use crate::language::Lang;
use crate::summary::FileSummary;
use crate::walk::{FoundFile, walk_files};

/// Parsed files waiting for the writer; bounds memory on a full index.
const CHANNEL_DEPTH: usize = 64;

/// Outcome of reading one changed file.
enum Checked {
    Touched(FoundFile),
    Parsed {
        found: FoundFile,
        hash: String,
        summary: FileSummary,
        /// The summary as [`rows::encode`] stores it.
        stored: Vec<u8>,
        stats: Box<FileStats>,
    },
    /// Left out; `was_indexed` when the index held it before (a removal).
    Skipped {
        file: SkippedFile,
        was_indexed: bool,
    },
}

/// The read-only part of the index the parallel readers share (the connection is not
/// `Sync`).
struct FileReader<'a> {
    guard: &'a PathGuard,
    records: &'a BTreeMap<String, FileRecord>,
    max_file_bytes: u64,
    /// Parse even when the content hash is unchanged.
    force: bool,
}

impl FileReader<'_> {
    /// Reads one changed file through the path guard; parses it if its content changed.
    fn check(&self, found: FoundFile) -> Result<Checked, IndexError> {
        let skip = |reason: String| {
            Ok(Checked::Skipped {
                file: SkippedFile {
                    path: found.rel.clone(),
                    reason,
                },
                was_indexed: !self.force && self.records.contains_key(&found.rel),
            })
        };
        if found.size > self.max_file_bytes {
            return skip(too_large(self.max_file_bytes));
        }
        let bytes = match self.guard.read(&found.rel) {
            Ok(b) => b,
            Err(e) => return skip(e.to_string()),
        };
        let hash = hex::encode(Sha256::digest(&bytes));
        let same = self.records.get(&found.rel).is_some_and(|r| r.hash == hash);
        if same && !self.force {
            return Ok(Checked::Touched(found));
        }
        let text = String::from_utf8_lossy(&bytes);
        let Some(lang) = Lang::detect(Path::new(&found.rel), &text) else {
            return skip("not a supported source language".to_string());
        };
        let summary = match crate::extract::summarize(&found.rel, lang, &text) {
            Ok(s) => s,
            Err(e) => return skip(e.to_string()),
        };
        let stored = rows::encode(&summary).map_err(|source| IndexError::Encode {
            path: found.rel.clone(),
            source,
        })?;
        let stats = file_stats(&summary, &text).map_err(|source| IndexError::Encode {
            path: found.rel.clone(),
            source,
        })?;
        Ok(Checked::Parsed {
            found,
            hash,
            summary,
            stored,
            stats: Box::new(stats),
        })
    }
}

/// What the writer did, applied to the records once the transaction committed.
#[derive(Default)]
struct Outcome {
    /// New records of parsed files, `None` for removed ones.
    records: Vec<(String, Option<FileRecord>)>,
    /// Files whose content did not change (new mtime and size only).
    touched: Vec<FoundFile>,
    changes: IndexChanges,
    marking: Marking,
}

/// Changes above which a refresh marks every topology row for recomputation instead of
/// the names each change reaches: 200, or a tenth of the indexed files.
fn bulk_marking(indexed: usize) -> usize {
    (indexed / 10).max(200)
}

impl CodeIndex {
    /// Brings the index up to date; with `force` every file is parsed again and every old
    /// row is replaced, in the same single transaction (an interrupted forced refresh keeps
    /// the old index).
    pub fn refresh_with(
        &mut self,
        force: bool,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<(IndexReport, IndexChanges), IndexError> {
        let started = Instant::now();
        progress(Progress::Phase(IndexPhase::Scan));
        let scan = self.scan(force);
        progress(Progress::Walked {
            files: scan.files,
            to_check: scan.changed.len(),
        });
        let mut report = IndexReport {
            files: scan.files,
            unchanged: scan.unchanged,
            removed: scan.removed.len(),
            skipped: scan.oversized,
            ..IndexReport::default()
        };
        if !force && scan.changed.is_empty() && scan.removed.is_empty() {
            // Nothing to write: no transaction, so a query takes no write lock.
            report.elapsed_ms = alembic_base::millis(started.elapsed());
            return Ok((report, IndexChanges::default()));
        }
        progress(Progress::Phase(IndexPhase::Parse));
        let reader = FileReader {
            guard: &self.guard,
            records: &self.records,
            max_file_bytes: self.max_file_bytes,
            force,
        };
        // immediate: take the write lock before the first read, so a writer that commits
        // in between cannot turn this transaction's first write into SQLITE_BUSY_SNAPSHOT
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if force {
            rows::delete_all(&tx)?;
        }
        // Most of the tree to write: maintain the name-keyed indexes once at the end.
        let deferred = if force || scan.changed.len() > self.records.len() {
            defer_indexes(&tx)?
        } else {
            Vec::new()
        };
        // Marking what each write may reach costs a few queries per file; past this many
        // changes, recomputing every topology row is cheaper.
        let bulk =
            force || scan.changed.len() + scan.removed.len() > bulk_marking(self.records.len());
        let marking = if bulk {
            topology_rows::mark_all(&tx)?;
            Marking::Skip
        } else {
            Marking::Names
        };
        let mut outcome = Outcome {
            marking,
            ..Outcome::default()
        };
        for path in scan.removed {
            rows::remove_file(&tx, &path, marking)?;
            outcome.note(path, None);
        }
        stream(&reader, scan.changed, progress, |item| {
            outcome.write(&tx, item, &mut report)
        })?;
        log_phase("parse", started);
        progress(Progress::Phase(IndexPhase::Write));
        if !deferred.is_empty() {
            // Lets SQLite's sorter use helper threads to build the deferred indexes.
            tx.execute_batch("pragma threads = 4")?;
        }
        for sql in &deferred {
            tx.execute_batch(sql)?;
        }
        log_phase("indexes", started);
        tx.commit()?;
        log_phase("commit", started);
        if force {
            self.records.clear();
        }
        let changes = outcome.apply(&mut self.records);
        report.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        report.elapsed_ms = alembic_base::millis(started.elapsed());
        Ok((report, changes))
    }

    /// Walks the tree and compares each file's mtime and size with the records.
    fn scan(&self, force: bool) -> Scan {
        let found = walk_files(&self.root, &|rel| Lang::from_path(Path::new(rel)).is_some());
        let present: HashSet<&str> = found.iter().map(|f| f.rel.as_str()).collect();
        let removed: Vec<String> = self
            .records
            .keys()
            .filter(|k| !present.contains(k.as_str()))
            .cloned()
            .collect();
        let files = found.len();
        let mut oversized = Vec::new();
        let mut changed = Vec::new();
        for f in found {
            let record = if force {
                None
            } else {
                self.records.get(&f.rel)
            };
            match record {
                // Not indexed and still too large: skipped without a read or a write.
                None if f.size > self.max_file_bytes => oversized.push(SkippedFile {
                    path: f.rel,
                    reason: too_large(self.max_file_bytes),
                }),
                None => changed.push(f),
                Some(r) if r.mtime_ns != f.mtime_ns || r.size != f.size => changed.push(f),
                Some(_) => {}
            }
        }
        Scan {
            files,
            unchanged: files - changed.len() - oversized.len(),
            changed,
            removed,
            oversized,
        }
    }
}

/// Indexes a bulk write drops and recreates after the rows are in: those keyed by name or
/// language, whose entries arrive in random order, and the call rows' name-keyed ones
/// ([`super::call_rows::DEFERRED_INDEXES`]); path-keyed ones arrive nearly in order
/// and serve the per-file deletes, so they stay.
const DEFERRED_INDEXES: [&str; 5] = [
    "code_decls_name",
    "code_parents_parent",
    "code_files_language",
    "code_callables_owner",
    "code_file_stats_counts",
];

/// Drops [`DEFERRED_INDEXES`] inside `tx` and returns the statements that recreate them
/// (the same transaction, so an interrupted refresh keeps them).
fn defer_indexes(tx: &Transaction<'_>) -> Result<Vec<String>, IndexError> {
    let mut recreate = Vec::new();
    for name in DEFERRED_INDEXES
        .into_iter()
        .chain(super::call_rows::DEFERRED_INDEXES)
    {
        let sql: Option<String> = tx
            .query_row(
                "select sql from sqlite_master where type = 'index' and name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(sql) = sql {
            tx.execute_batch(&format!("drop index {name}"))?;
            recreate.push(sql);
        }
    }
    Ok(recreate)
}

/// Logs (at debug) how long the refresh has run when `phase` ended.
fn log_phase(phase: &str, started: Instant) {
    tracing::debug!(phase, ms = started.elapsed().as_millis(), "index refresh");
}

/// What the scan found.
struct Scan {
    files: usize,
    unchanged: usize,
    /// New files and files whose mtime or size changed (every file when forced).
    changed: Vec<FoundFile>,
    /// Indexed files that are gone.
    removed: Vec<String>,
    /// Files over the size limit that the index does not hold.
    oversized: Vec<SkippedFile>,
}

/// Why a file over the size limit is skipped.
fn too_large(max_file_bytes: u64) -> String {
    format!("larger than {max_file_bytes} bytes")
}

/// Checks `files` in parallel and hands each result to `write` on this thread, stopping
/// at the first error.
fn stream(
    reader: &FileReader<'_>,
    files: Vec<FoundFile>,
    progress: &(dyn Fn(Progress) + Sync),
    mut write: impl FnMut(Checked) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    let stop = AtomicBool::new(false);
    let (send, receive) = sync_channel::<Result<Checked, IndexError>>(CHANNEL_DEPTH);
    std::thread::scope(|scope| {
        let stop = &stop;
        scope.spawn(move || {
            files.into_par_iter().for_each_with(send, |send, f| {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let out = reader.check(f);
                progress(Progress::Checked);
                if send.send(out).is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
            });
        });
        let mut result = Ok(());
        for item in receive.iter() {
            if let Err(e) = item.and_then(&mut write) {
                stop.store(true, Ordering::Relaxed);
                result = Err(e);
                break;
            }
        }
        // Dropping the receiver makes the remaining sends fail, so the readers stop.
        drop(receive);
        result
    })
}

impl Outcome {
    fn note(&mut self, path: String, record: Option<FileRecord>) {
        self.changes.paths.push(path.clone());
        self.records.push((path, record));
    }

    /// Writes one checked file into the open transaction.
    fn write(
        &mut self,
        tx: &Transaction<'_>,
        item: Checked,
        report: &mut IndexReport,
    ) -> Result<(), IndexError> {
        match item {
            Checked::Touched(found) => {
                rows::touch_file(tx, &found.rel, found.mtime_ns, found.size)?;
                report.touched += 1;
                self.touched.push(found);
            }
            Checked::Parsed {
                found,
                hash,
                summary,
                stored,
                stats,
            } => {
                let row = FileRow {
                    mtime_ns: found.mtime_ns,
                    size: found.size,
                    hash: &hash,
                    summary: &stored,
                    stats: &stats,
                };
                rows::write_file(tx, &summary, &row, self.marking)?;
                let record = FileRecord {
                    mtime_ns: found.mtime_ns,
                    size: found.size,
                    hash,
                };
                self.note(found.rel, Some(record));
                report.parsed += 1;
            }
            Checked::Skipped { file, was_indexed } => {
                rows::remove_file(tx, &file.path, self.marking)?;
                if was_indexed {
                    self.note(file.path.clone(), None);
                    report.removed += 1;
                }
                report.skipped.push(file);
            }
        }
        Ok(())
    }

    /// Applies the committed outcome to the records; returns the changed paths.
    fn apply(mut self, records: &mut BTreeMap<String, FileRecord>) -> IndexChanges {
        for found in self.touched {
            if let Some(r) = records.get_mut(&found.rel) {
                r.mtime_ns = found.mtime_ns;
                r.size = found.size;
            }
        }
        for (path, record) in self.records {
            match record {
                Some(r) => records.insert(path, r),
                None => records.remove(&path),
            };
        }
        self.changes.paths.sort();
        self.changes.paths.dedup();
        self.changes
    }
}
