//! The audit log: one hash-chained record per attempted tool call, in the project database.
//!
//! `hash = SHA-256("alembic-audit-v1\0" || prev || "\0" || canonical JSON of the record)`.
//! The chain is extended inside an immediate transaction, so concurrent writers (threads or
//! processes) serialise on SQLite's write lock and never fork the chain. Records are written
//! by a background thread so that a tool call only pays for a channel send; `flush` waits for
//! everything sent so far to be on disk.

use std::path::Path;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::SystemTime;

use alembic_store::rusqlite::{self, Connection, OptionalExtension, params};
use alembic_store::{Migration, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::{ToolCall, ToolOutcome};
use crate::canonical::{canonical_json, sha256_hex};
use crate::redact::{redact_text, redact_value};

const COMPONENT: &str = "audit";
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const DOMAIN: &str = "alembic-audit-v1";
/// Longest outcome summary kept in a record.
const SUMMARY_CHARS: usize = 200;

const MIGRATIONS: [Migration; 1] = [Migration {
    version: 1,
    sql: "create table audit_log (
              seq integer primary key,
              ts text not null,
              call_id text not null,
              parent_call_id text,
              caller text not null,
              tool text not null,
              args text not null,
              args_sha256 text not null,
              verdict text not null,
              rule text,
              outcome text not null,
              output_sha256 text,
              duration_us integer not null,
              prev_hash text not null,
              hash text
          );
          create index audit_log_call on audit_log(call_id);",
}];

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("audit database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("audit writer has stopped")]
    WriterGone,
}

/// What the pipeline hands to the audit sink for one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub ts: String,
    pub call_id: String,
    pub parent_call_id: Option<String>,
    pub caller: String,
    pub tool: String,
    /// Normalised arguments, secrets already redacted.
    pub args: Value,
    /// SHA-256 of the unredacted canonical arguments, so a holder of the value can prove it.
    pub args_sha256: String,
    pub verdict: String,
    pub rule: Option<String>,
    pub outcome: String,
    pub output_sha256: Option<String>,
    pub duration_us: i64,
}

/// The raw facts of one call, handed over before any hashing or redaction, so that the
/// calling thread only pays for moving data and a sink may do the work elsewhere.
#[derive(Debug, Clone)]
pub struct AuditInput {
    pub ts: SystemTime,
    pub call_id: String,
    pub parent_call_id: Option<String>,
    pub caller: String,
    pub tool: String,
    /// Normalised arguments, not yet redacted.
    pub args: Value,
    pub verdict: &'static str,
    pub rule: Option<String>,
    pub summary: String,
    pub output: Option<Value>,
    pub duration_us: i64,
}

impl AuditInput {
    pub fn from_outcome(call: &ToolCall, outcome: &ToolOutcome, args: Value) -> Self {
        let summary = match (&outcome.output, &outcome.error) {
            (Some(out), _) => head(&out.text),
            (_, Some(e)) => head(e),
            _ => String::new(),
        };
        AuditInput {
            ts: SystemTime::now(),
            call_id: call.id.clone(),
            parent_call_id: call.parent_call_id.clone(),
            caller: call.caller.id.clone(),
            tool: call.name.clone(),
            args,
            verdict: outcome.status.as_str(),
            rule: outcome.rule.clone(),
            summary,
            output: outcome.output.as_ref().map(|o| o.data.clone()),
            duration_us: outcome.metadata.duration.as_micros().min(i64::MAX as u128) as i64,
        }
    }

    /// Redacts, hashes and truncates: the record as it is stored.
    pub fn into_entry(self) -> AuditEntry {
        let summary: String = redact_text(&self.summary)
            .chars()
            .take(SUMMARY_CHARS)
            .collect();
        AuditEntry {
            ts: humantime::format_rfc3339_micros(self.ts).to_string(),
            call_id: self.call_id,
            parent_call_id: self.parent_call_id,
            caller: self.caller,
            tool: self.tool,
            args_sha256: sha256_hex(canonical_json(&self.args).as_bytes()),
            args: redact_value(&self.args),
            verdict: self.verdict.to_string(),
            rule: self.rule,
            outcome: summary,
            output_sha256: self
                .output
                .as_ref()
                .map(|o| sha256_hex(canonical_json(o).as_bytes())),
            duration_us: self.duration_us,
        }
    }
}

/// The start of a summary, with room for redaction to see a whole secret before the cut.
fn head(text: &str) -> String {
    text.chars().take(SUMMARY_CHARS * 2).collect()
}

impl AuditEntry {
    pub fn from_outcome(call: &ToolCall, outcome: &ToolOutcome, args: Value) -> Self {
        AuditInput::from_outcome(call, outcome, args).into_entry()
    }
}

/// Where audit entries go. The pipeline calls `record` once per attempted call.
pub trait AuditSink: Send + Sync {
    fn record(&self, entry: AuditEntry);

    /// Called by the pipeline. The default builds the entry here; sinks that write elsewhere
    /// (the SQLite log's background thread) override it to move the work off the caller.
    fn record_input(&self, input: AuditInput) {
        self.record(input.into_entry());
    }
}

/// One stored record, as `tail` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub seq: i64,
    #[serde(flatten)]
    pub entry: AuditEntry,
    pub prev_hash: String,
    pub hash: Option<String>,
}

/// The hash of a record: SHA-256 of the domain, the previous hash and the canonical JSON of
/// the record's fields. `args_json` is the canonical form of `e.args` (the caller has it
/// already for the row). Written field by field, keys in sorted order, rather than through
/// a `json!` value: this runs once per tool call on the audit thread, and building the value
/// copied every field.
fn record_hash(seq: i64, e: &AuditEntry, prev: &str, args_json: &str) -> String {
    let mut text = Vec::with_capacity(320 + args_json.len());
    text.extend_from_slice(DOMAIN.as_bytes());
    text.push(0);
    text.extend_from_slice(prev.as_bytes());
    text.push(0);
    text.extend_from_slice(b"{\"args\":");
    text.extend_from_slice(args_json.as_bytes());
    hash_field(&mut text, "args_sha256", &e.args_sha256);
    hash_field(&mut text, "call_id", &e.call_id);
    hash_field(&mut text, "caller", &e.caller);
    hash_field(&mut text, "duration_us", &e.duration_us);
    hash_field(&mut text, "outcome", &e.outcome);
    hash_field(&mut text, "output_sha256", &e.output_sha256);
    hash_field(&mut text, "parent_call_id", &e.parent_call_id);
    hash_field(&mut text, "rule", &e.rule);
    hash_field(&mut text, "seq", &seq);
    hash_field(&mut text, "tool", &e.tool);
    hash_field(&mut text, "ts", &e.ts);
    hash_field(&mut text, "verdict", &e.verdict);
    text.push(b'}');
    sha256_hex(&text)
}

fn hash_field<T: Serialize + ?Sized>(out: &mut Vec<u8>, key: &str, value: &T) {
    out.push(b',');
    // Writing a string, number or null into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, key);
    out.push(b':');
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Opens the project database and brings the audit table up to date.
pub fn open_audit_db(path: &Path) -> Result<Connection, AuditError> {
    let mut conn = alembic_store::open(path)?;
    alembic_store::migrate(&mut conn, COMPONENT, &MIGRATIONS)?;
    Ok(conn)
}

/// Appends entries as one transaction, extending the chain from the last complete record.
pub fn append_entries(conn: &mut Connection, entries: &[AuditEntry]) -> Result<(), AuditError> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut seq: i64 = tx.query_row("select coalesce(max(seq), 0) from audit_log", [], |r| {
        r.get(0)
    })?;
    let mut prev: String = tx
        .query_row(
            "select hash from audit_log where hash is not null order by seq desc limit 1",
            [],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or_else(|| GENESIS.to_string());
    {
        let mut stmt = tx.prepare_cached(
            "insert into audit_log (seq, ts, call_id, parent_call_id, caller, tool, args, args_sha256,
                 verdict, rule, outcome, output_sha256, duration_us, prev_hash, hash)
             values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )?;
        for e in entries {
            seq += 1;
            let args_json = canonical_json(&e.args);
            let hash = record_hash(seq, e, &prev, &args_json);
            stmt.execute(params![
                seq,
                e.ts,
                e.call_id,
                e.parent_call_id,
                e.caller,
                e.tool,
                args_json,
                e.args_sha256,
                e.verdict,
                e.rule,
                e.outcome,
                e.output_sha256,
                e.duration_us,
                prev,
                hash
            ])?;
            prev = hash;
        }
    }
    tx.commit()?;
    Ok(())
}

fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<AuditRecord> {
    let args_text: String = r.get(6)?;
    Ok(AuditRecord {
        seq: r.get(0)?,
        entry: AuditEntry {
            ts: r.get(1)?,
            call_id: r.get(2)?,
            parent_call_id: r.get(3)?,
            caller: r.get(4)?,
            tool: r.get(5)?,
            // A record whose args are not JSON any more keeps the text, so verify sees the change.
            args: serde_json::from_str(&args_text).unwrap_or(Value::String(args_text)),
            args_sha256: r.get(7)?,
            verdict: r.get(8)?,
            rule: r.get(9)?,
            outcome: r.get(10)?,
            output_sha256: r.get(11)?,
            duration_us: r.get(12)?,
        },
        prev_hash: r.get(13)?,
        hash: r.get(14)?,
    })
}

const SELECT_RECORD: &str =
    "select seq, ts, call_id, parent_call_id, caller, tool, args, args_sha256, verdict, rule,
        outcome, output_sha256, duration_us, prev_hash, hash from audit_log";

/// The last `n` records, oldest first.
pub fn tail(conn: &Connection, n: usize) -> Result<Vec<AuditRecord>, AuditError> {
    let mut stmt = conn.prepare(&format!("{SELECT_RECORD} order by seq desc limit ?1"))?;
    let mut rows: Vec<AuditRecord> = stmt
        .query_map(params![n as i64], row_to_record)?
        .collect::<Result<_, _>>()?;
    rows.reverse();
    Ok(rows)
}

/// Records of one call id (and its nested calls when `with_children`).
pub fn records_for_call(conn: &Connection, call_id: &str) -> Result<Vec<AuditRecord>, AuditError> {
    let mut stmt = conn.prepare(&format!(
        "{SELECT_RECORD} where call_id = ?1 or parent_call_id = ?1 order by seq"
    ))?;
    let rows = stmt
        .query_map(params![call_id], row_to_record)?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// The first record that breaks the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainBreak {
    pub seq: i64,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyReport {
    pub records: u64,
    pub first_break: Option<ChainBreak>,
    /// Records without a hash (a writer died mid-record): not tampering, reported apart.
    pub incomplete: Vec<i64>,
}

impl VerifyReport {
    pub fn is_intact(&self) -> bool {
        self.first_break.is_none()
    }
}

/// Walks the whole chain and reports the first record that does not fit.
pub fn verify(conn: &Connection) -> Result<VerifyReport, AuditError> {
    let mut stmt = conn.prepare(&format!("{SELECT_RECORD} order by seq"))?;
    let rows = stmt.query_map([], row_to_record)?;
    let mut report = VerifyReport {
        records: 0,
        first_break: None,
        incomplete: Vec::new(),
    };
    let mut expected_seq = 1i64;
    let mut prev = GENESIS.to_string();
    for row in rows {
        let rec = row?;
        report.records += 1;
        if report.first_break.is_some() {
            continue;
        }
        if let Some(reason) = check_record(&rec, expected_seq, &prev) {
            report.first_break = Some(ChainBreak {
                seq: rec.seq,
                reason,
            });
            continue;
        }
        expected_seq = rec.seq + 1;
        match &rec.hash {
            Some(h) => prev = h.clone(),
            None => report.incomplete.push(rec.seq),
        }
    }
    Ok(report)
}

fn check_record(rec: &AuditRecord, expected_seq: i64, prev: &str) -> Option<String> {
    if rec.seq != expected_seq {
        return Some(format!(
            "sequence jumps from {} to {} (records missing or reordered)",
            expected_seq - 1,
            rec.seq
        ));
    }
    if rec.prev_hash != prev {
        return Some("previous-hash link does not match the record before it".into());
    }
    let hash = rec.hash.as_ref()?;
    if *hash != record_hash(rec.seq, &rec.entry, prev, &canonical_json(&rec.entry.args)) {
        return Some("record contents do not match its hash (modified)".into());
    }
    None
}

// Unboxed on purpose: a box per record is one more allocation the caller makes and the
// writer thread frees, and cross-thread frees showed up in the per-call profile.
enum WriterMsg {
    Entry(AuditEntry),
    Input(AuditInput),
    Flush(Sender<Result<(), String>>),
}

/// The SQLite audit sink with a background writer thread.
pub struct AuditLog {
    tx: Mutex<Option<Sender<WriterMsg>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditLog")
    }
}

impl AuditLog {
    /// Opens (creating) the audit table in the database at `path` and starts the writer.
    pub fn open(path: &Path) -> Result<Self, AuditError> {
        let conn = open_audit_db(path)?;
        let (tx, rx) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("alembic-audit".into())
            .spawn(move || writer_loop(conn, rx))
            .map_err(|_| AuditError::WriterGone)?;
        Ok(AuditLog {
            tx: Mutex::new(Some(tx)),
            worker: Mutex::new(Some(worker)),
        })
    }

    /// Opens the audit log of a project (`<root>/.alembic/alembic.db`).
    pub fn open_project(root: &Path) -> Result<Self, AuditError> {
        let conn = alembic_store::open_project(root)?;
        drop(conn);
        Self::open(&alembic_store::project_db_path(root))
    }

    /// Blocks until every entry sent before this call is committed.
    pub fn flush(&self) -> Result<(), AuditError> {
        let (ack_tx, ack_rx) = mpsc::channel();
        {
            let guard = self.tx.lock().unwrap_or_else(|e| e.into_inner());
            let tx = guard.as_ref().ok_or(AuditError::WriterGone)?;
            tx.send(WriterMsg::Flush(ack_tx))
                .map_err(|_| AuditError::WriterGone)?;
        }
        match ack_rx.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(AuditError::Sqlite(rusqlite::Error::InvalidParameterName(e))),
            Err(_) => Err(AuditError::WriterGone),
        }
    }
}

impl AuditLog {
    fn send(&self, msg: WriterMsg) {
        let guard = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = guard.as_ref()
            && tx.send(msg).is_err()
        {
            tracing::error!("audit writer has stopped; a record was lost");
        }
    }
}

impl AuditSink for AuditLog {
    fn record(&self, entry: AuditEntry) {
        self.send(WriterMsg::Entry(entry));
    }

    fn record_input(&self, input: AuditInput) {
        self.send(WriterMsg::Input(input));
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        // Closing the channel lets the writer drain what is queued and exit.
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = self.worker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = handle.join();
        }
    }
}

fn writer_loop(mut conn: Connection, rx: Receiver<WriterMsg>) {
    let mut pending: Vec<AuditEntry> = Vec::new();
    let mut acks: Vec<Sender<Result<(), String>>> = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                WriterMsg::Entry(e) => pending.push(e),
                WriterMsg::Input(i) => pending.push(i.into_entry()),
                WriterMsg::Flush(ack) => acks.push(ack),
            }
            next = if pending.len() >= 512 {
                None
            } else {
                rx.try_recv().ok()
            };
        }
        let result = write_with_retry(&mut conn, &pending);
        if let Err(e) = &result {
            tracing::error!("audit write failed, {} records lost: {e}", pending.len());
        }
        pending.clear();
        for ack in acks.drain(..) {
            let _ = ack.send(result.clone());
        }
    }
}

fn write_with_retry(conn: &mut Connection, entries: &[AuditEntry]) -> Result<(), String> {
    if entries.is_empty() {
        return Ok(());
    }
    append_entries(conn, entries)
        .or_else(|_| append_entries(conn, entries))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The record hash as first defined (canonical JSON of a `json!` object): the field by
    /// field writer must give the same hashes, or existing logs would stop verifying.
    fn hash_as_defined(seq: i64, e: &AuditEntry, prev: &str) -> String {
        let body = json!({
            "seq": seq, "ts": e.ts, "call_id": e.call_id, "parent_call_id": e.parent_call_id,
            "caller": e.caller, "tool": e.tool, "args": e.args, "args_sha256": e.args_sha256,
            "verdict": e.verdict, "rule": e.rule, "outcome": e.outcome,
            "output_sha256": e.output_sha256, "duration_us": e.duration_us,
        });
        let text = format!("{DOMAIN}\0{prev}\0{}", canonical_json(&body));
        sha256_hex(text.as_bytes())
    }

    fn entry(parent: Option<&str>, rule: Option<&str>, output: Option<&str>) -> AuditEntry {
        AuditEntry {
            ts: "2026-11-30T21:00:00.000001Z".into(),
            call_id: "0193-a".into(),
            parent_call_id: parent.map(str::to_string),
            caller: "mcp:\"cursor\"".into(),
            tool: "read_project_file".into(),
            args: json!({"filePath": "src/é.rs", "lines": [1, 2], "z": {"b": null, "a": 1.5}}),
            args_sha256: "ab".repeat(32),
            verdict: "blocked".into(),
            rule: rule.map(str::to_string),
            outcome: "refused: path escapes the project \n\u{1}".into(),
            output_sha256: output.map(str::to_string),
            duration_us: -3,
        }
    }

    #[test]
    fn the_field_by_field_hash_equals_the_hash_as_defined() {
        for e in [
            entry(None, None, None),
            entry(Some("p"), Some("path.escape"), Some("cd")),
        ] {
            let args_json = canonical_json(&e.args);
            assert_eq!(
                record_hash(7, &e, GENESIS, &args_json),
                hash_as_defined(7, &e, GENESIS)
            );
        }
    }
}
