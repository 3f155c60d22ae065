//! The audit log: one hash-chained record per attempted tool call, in the project database.
//!
//! `hash = HMAC-SHA256(key, "alembic-audit-v2\0" || prev || "\0" || {"args":<stored args>,...})`
//! (`chain = 2`): the JSON object of the record's columns with sorted keys, where every column
//! appears as the exact text stored in its row (the args column is stored canonical JSON and
//! hashed as stored, not re-derived). So what is stored is what was hashed, and [`verify`]
//! hashes the stored bytes: changing any byte of any column breaks the record. Records written
//! before the key existed (`chain = 1`) used plain SHA-256 with the domain `alembic-audit-v1`;
//! they stay verifiable, but only before the first keyed record.
//!
//! Two files beside the database (see `files.rs`) carry what the table cannot prove alone:
//! - the key (0600) stops someone who can write the database but not read the key from
//!   recomputing the chain after a change;
//! - the anchor (the last committed seq and hash) shows rows deleted from the end, or all.
//!
//! Neither stops someone who can read the key and write the anchor (the user running alembic,
//! or root): they can rewrite everything consistently. Deleting the database, key and anchor
//! together leaves nothing to compare with; verify then says it cannot prove anything.
//! The chain is extended inside an immediate transaction, so concurrent writers (threads or
//! processes) serialise on SQLite's write lock and never fork the chain. Records are written
//! by a background thread so that a tool call only pays for a channel send; `flush` waits for
//! everything sent so far to be on disk.

pub mod bound;
mod chain;
pub mod files;
mod query;
mod verify;
mod writer;

use std::path::Path;
use std::time::SystemTime;

use alembic_base::{Clock, SystemClock};
use alembic_store::rusqlite::{self, Connection, params};
use alembic_store::{Migration, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::{ToolCall, ToolOutcome};
use crate::canonical::{canonical_json, sha256_hex};
use crate::redact::{redact_text, redact_value};

pub use chain::append_entries;
pub use files::{Anchor, ChainFiles};
pub use query::{AuditPage, AuditQuery, AuditReader, AuditStats, parse_time, register_tools};
pub use verify::{ChainBreak, VerifyReport, verify};
pub use writer::AuditLog;

const COMPONENT: &str = "audit";
const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const DOMAIN_V1: &str = "alembic-audit-v1";
const DOMAIN_V2: &str = "alembic-audit-v2";
/// `chain` of a record hashed with plain SHA-256 (written before the key existed).
pub(crate) const CHAIN_UNKEYED: i64 = 1;
/// `chain` of a record hashed with HMAC-SHA256 under the project's audit key.
pub(crate) const CHAIN_KEYED: i64 = 2;
/// Longest outcome summary kept in a record.
const SUMMARY_CHARS: usize = 200;

const MIGRATIONS: [Migration; 2] = [
    Migration {
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
    },
    // Which hash a record carries: every record before this version is unkeyed.
    Migration {
        version: 2,
        sql: "alter table audit_log add column chain integer not null default 1;",
    },
];

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("audit database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("audit writer has stopped")]
    WriterGone,
    #[error("audit file {}: {what}", path.display())]
    File {
        path: std::path::PathBuf,
        what: String,
    },
    #[error(
        "the audit log needs a database file (its key and anchor live beside it), not an in-memory database"
    )]
    NoDatabaseFile,
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
            ts: SystemClock.system_time(),
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

    /// Redacts, hashes and truncates: the record as it is stored. Redaction runs on the whole
    /// text before any cut, so a cut never leaves half a secret behind.
    pub fn into_entry(self) -> AuditEntry {
        let name = |s: &str| bound::bound_str(s, bound::MAX_NAME_BYTES);
        let summary: String = redact_text(&self.summary)
            .chars()
            .take(SUMMARY_CHARS)
            .collect();
        AuditEntry {
            ts: humantime::format_rfc3339_micros(self.ts).to_string(),
            call_id: name(&self.call_id),
            parent_call_id: self.parent_call_id.as_deref().map(name),
            caller: name(&self.caller),
            tool: name(&self.tool),
            args_sha256: sha256_hex(canonical_json(&self.args).as_bytes()),
            args: bound::bound_args(redact_value(&self.args)),
            verdict: self.verdict.to_string(),
            rule: self.rule.as_deref().map(name),
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

/// The columns a record's hash covers, as the very strings bound into its row (and as
/// [`verify`] reads them back). `seq`, `prev_hash` and `hash` are covered by the chain checks.
pub(crate) struct HashedColumns<'a> {
    pub seq: i64,
    pub ts: &'a str,
    pub call_id: &'a str,
    pub parent_call_id: Option<&'a str>,
    pub caller: &'a str,
    pub tool: &'a str,
    /// The stored args text: canonical JSON when written, hashed as it is.
    pub args: &'a str,
    pub args_sha256: &'a str,
    pub verdict: &'a str,
    pub rule: Option<&'a str>,
    pub outcome: &'a str,
    pub output_sha256: Option<&'a str>,
    pub duration_us: i64,
}

impl<'a> HashedColumns<'a> {
    /// The columns of a new record; `args_json` is the canonical form of `e.args`.
    fn of(seq: i64, e: &'a AuditEntry, args_json: &'a str) -> Self {
        HashedColumns {
            seq,
            ts: &e.ts,
            call_id: &e.call_id,
            parent_call_id: e.parent_call_id.as_deref(),
            caller: &e.caller,
            tool: &e.tool,
            args: args_json,
            args_sha256: &e.args_sha256,
            verdict: &e.verdict,
            rule: e.rule.as_deref(),
            outcome: &e.outcome,
            output_sha256: e.output_sha256.as_deref(),
            duration_us: e.duration_us,
        }
    }

    /// The unkeyed (v1) hash: SHA-256 of [`Self::preimage`].
    pub(crate) fn hash_unkeyed(&self, prev: &str) -> String {
        sha256_hex(&self.preimage(DOMAIN_V1, prev))
    }

    /// The keyed (v2) hash: HMAC-SHA256 of [`Self::preimage`] under the project's key.
    pub(crate) fn hash_keyed(&self, prev: &str, key: &files::AuditKey) -> String {
        use hmac::Mac;
        let mut mac = key.0.clone();
        mac.update(&self.preimage(DOMAIN_V2, prev));
        hex::encode(mac.finalize().into_bytes())
    }

    /// The domain, the previous hash and the JSON object of the columns, keys in sorted
    /// order. Written field by field rather than through a `json!` value: this runs once per
    /// tool call on the audit thread, and building the value copied every field. It equals
    /// the record as first defined (canonical JSON of the record), so logs written before
    /// verify hashed the stored bytes still verify.
    fn preimage(&self, domain: &str, prev: &str) -> Vec<u8> {
        let mut text = Vec::with_capacity(320 + self.args.len());
        text.extend_from_slice(domain.as_bytes());
        text.push(0);
        text.extend_from_slice(prev.as_bytes());
        text.push(0);
        text.extend_from_slice(b"{\"args\":");
        text.extend_from_slice(self.args.as_bytes());
        hash_field(&mut text, "args_sha256", self.args_sha256);
        hash_field(&mut text, "call_id", self.call_id);
        hash_field(&mut text, "caller", self.caller);
        hash_field(&mut text, "duration_us", &self.duration_us);
        hash_field(&mut text, "outcome", self.outcome);
        hash_field(&mut text, "output_sha256", &self.output_sha256);
        hash_field(&mut text, "parent_call_id", &self.parent_call_id);
        hash_field(&mut text, "rule", &self.rule);
        hash_field(&mut text, "seq", &self.seq);
        hash_field(&mut text, "tool", self.tool);
        hash_field(&mut text, "ts", self.ts);
        hash_field(&mut text, "verdict", self.verdict);
        text.push(b'}');
        text
    }
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

pub(crate) const SELECT_RECORD: &str =
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
        let text = format!("{DOMAIN_V1}\0{prev}\0{}", canonical_json(&body));
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
                HashedColumns::of(7, &e, &args_json).hash_unkeyed(GENESIS),
                hash_as_defined(7, &e, GENESIS)
            );
        }
    }

    #[test]
    fn records_stored_as_the_first_writer_stored_them_still_verify() {
        // The first writer stored canonical_json(args) and hashed the record as defined above:
        // verify, which now hashes the stored text, must accept such a log unchanged.
        let dir = tempfile::tempdir().unwrap();
        let conn = open_audit_db(&dir.path().join("old.db")).unwrap();
        let mut prev = GENESIS.to_string();
        for (seq, e) in [
            (1, entry(None, None, None)),
            (2, entry(Some("p"), Some("path.escape"), Some("cd"))),
        ] {
            let hash = hash_as_defined(seq, &e, &prev);
            conn.execute(
                "insert into audit_log (seq, ts, call_id, parent_call_id, caller, tool, args,
                     args_sha256, verdict, rule, outcome, output_sha256, duration_us, prev_hash, hash)
                 values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    seq, e.ts, e.call_id, e.parent_call_id, e.caller, e.tool,
                    canonical_json(&e.args), e.args_sha256, e.verdict, e.rule, e.outcome,
                    e.output_sha256, e.duration_us, prev, hash
                ],
            )
            .unwrap();
            prev = hash;
        }
        let report = verify(&conn).unwrap();
        assert_eq!((report.records, report.first_break), (2, None));
    }
}
