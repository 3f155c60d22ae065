//! Walking the chain from the bytes as stored.
//!
//! Each row is read column by column without parsing: the hash is recomputed over the stored
//! text of every column it covers (`args` included, so reformatting it is a change), `seq` is
//! checked against the sequence, `prev_hash` against the record before, and `hash` against the
//! recomputed value. A column holding another type than the writer stores, or text that is not
//! UTF-8, breaks the record too. Only a record without a hash (a writer stopped mid-record) is
//! not judged: it is reported apart as incomplete.

use alembic_store::rusqlite::types::ValueRef;
use alembic_store::rusqlite::{self, Connection, Row};
use serde::{Deserialize, Serialize};

use super::{AuditError, GENESIS, HashedColumns, SELECT_RECORD};

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

/// One row as stored: each column's own text, never a re-serialisation of a parsed value.
struct StoredRow {
    seq: i64,
    ts: String,
    call_id: String,
    parent_call_id: Option<String>,
    caller: String,
    tool: String,
    args: String,
    args_sha256: String,
    verdict: String,
    rule: Option<String>,
    outcome: String,
    output_sha256: Option<String>,
    duration_us: i64,
    prev_hash: String,
    hash: Option<String>,
}

impl StoredRow {
    fn hashed_columns(&self) -> HashedColumns<'_> {
        HashedColumns {
            seq: self.seq,
            ts: &self.ts,
            call_id: &self.call_id,
            parent_call_id: self.parent_call_id.as_deref(),
            caller: &self.caller,
            tool: &self.tool,
            args: &self.args,
            args_sha256: &self.args_sha256,
            verdict: &self.verdict,
            rule: self.rule.as_deref(),
            outcome: &self.outcome,
            output_sha256: self.output_sha256.as_deref(),
            duration_us: self.duration_us,
        }
    }
}

/// A column's stored text; any other storage class or bytes that are not UTF-8 are a change.
fn text(r: &Row<'_>, i: usize, name: &str) -> Result<String, String> {
    match r.get_ref(i).map_err(|e| e.to_string())? {
        ValueRef::Text(bytes) => std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|_| format!("column {name} is not UTF-8 text (modified)")),
        other => Err(format!(
            "column {name} holds {} where text was stored (modified)",
            other.data_type()
        )),
    }
}

fn nullable_text(r: &Row<'_>, i: usize, name: &str) -> Result<Option<String>, String> {
    match r.get_ref(i).map_err(|e| e.to_string())? {
        ValueRef::Null => Ok(None),
        _ => text(r, i, name).map(Some),
    }
}

fn integer(r: &Row<'_>, i: usize, name: &str) -> Result<i64, String> {
    match r.get_ref(i).map_err(|e| e.to_string())? {
        ValueRef::Integer(n) => Ok(n),
        other => Err(format!(
            "column {name} holds {} where an integer was stored (modified)",
            other.data_type()
        )),
    }
}

/// Reads a row in `SELECT_RECORD`'s column order; a column that cannot be what the writer
/// stored breaks the record there.
fn read_row(r: &Row<'_>) -> rusqlite::Result<Result<StoredRow, ChainBreak>> {
    // `seq` is the rowid: SQLite keeps it an integer whatever is written to it.
    let seq: i64 = r.get(0)?;
    let row = (|| {
        Ok(StoredRow {
            seq,
            ts: text(r, 1, "ts")?,
            call_id: text(r, 2, "call_id")?,
            parent_call_id: nullable_text(r, 3, "parent_call_id")?,
            caller: text(r, 4, "caller")?,
            tool: text(r, 5, "tool")?,
            args: text(r, 6, "args")?,
            args_sha256: text(r, 7, "args_sha256")?,
            verdict: text(r, 8, "verdict")?,
            rule: nullable_text(r, 9, "rule")?,
            outcome: text(r, 10, "outcome")?,
            output_sha256: nullable_text(r, 11, "output_sha256")?,
            duration_us: integer(r, 12, "duration_us")?,
            prev_hash: text(r, 13, "prev_hash")?,
            hash: nullable_text(r, 14, "hash")?,
        })
    })();
    Ok(row.map_err(|reason| ChainBreak { seq, reason }))
}

/// Walks the whole chain and reports the first record that does not fit.
pub fn verify(conn: &Connection) -> Result<VerifyReport, AuditError> {
    let mut stmt = conn.prepare(&format!("{SELECT_RECORD} order by seq"))?;
    let rows = stmt.query_map([], read_row)?;
    let mut report = VerifyReport {
        records: 0,
        first_break: None,
        incomplete: Vec::new(),
    };
    let mut expected_seq = 1i64;
    let mut prev = GENESIS.to_string();
    for row in rows {
        let row = row?;
        report.records += 1;
        if report.first_break.is_some() {
            continue;
        }
        let rec = match row {
            Ok(rec) => rec,
            Err(b) => {
                report.first_break = Some(b);
                continue;
            }
        };
        if let Some(reason) = check_record(&rec, expected_seq, &prev) {
            report.first_break = Some(ChainBreak {
                seq: rec.seq,
                reason,
            });
            continue;
        }
        expected_seq = rec.seq + 1;
        match rec.hash {
            Some(h) => prev = h,
            None => report.incomplete.push(rec.seq),
        }
    }
    Ok(report)
}

fn check_record(rec: &StoredRow, expected_seq: i64, prev: &str) -> Option<String> {
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
    if *hash != rec.hashed_columns().hash(prev) {
        return Some("record contents do not match its hash (modified)".into());
    }
    None
}
