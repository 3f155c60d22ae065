//! Walking the chain from the bytes as stored.
//!
//! Each row is read column by column without parsing: the hash is recomputed over the stored
//! text of every column it covers (`args` included, so reformatting it is a change), `seq` is
//! checked against the sequence, `prev_hash` against the record before, and `hash` against the
//! recomputed value (keyed for `chain = 2`, plain SHA-256 for the `chain = 1` records written
//! before the key). A column holding another type than the writer stores, or text that is not
//! UTF-8, breaks the record too, and so does a record without a hash: the writer inserts every
//! record with its hash in one statement, so a committed record without one was changed.
//!
//! Then the table's end is compared with the anchor file: an anchor past the end means records
//! were deleted from the end; an anchor whose record has another hash means they were
//! rewritten. A keyed log without its anchor, or keyed records without the key, cannot be
//! proven and is a break; an unkeyed log with neither file is reported as unprovable.

use alembic_store::rusqlite::types::ValueRef;
use alembic_store::rusqlite::{self, Connection, Row};
use serde::{Deserialize, Serialize};

use super::files::{self, Anchor, AuditKey, ChainFiles};
use super::{AuditError, CHAIN_KEYED, CHAIN_UNKEYED, GENESIS, HashedColumns};

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
    /// Records on the unkeyed v1 chain (`1..=unkeyed`), checked up to the first break.
    pub unkeyed: u64,
    /// Records on the keyed chain, checked up to the first break.
    pub keyed: u64,
    /// The table's last sequence number (0 when empty).
    pub last_seq: i64,
    /// The anchor file as read, if there is one.
    pub anchor: Option<Anchor>,
    pub key_present: bool,
    /// Findings beside the verdict: the v1 to v2 migration, and what cannot be proven.
    pub notes: Vec<String>,
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
    chain: i64,
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
            chain: integer(r, 15, "chain")?,
        })
    })();
    Ok(row.map_err(|reason| ChainBreak { seq, reason }))
}

/// The columns `read_row` reads, in its order.
const SELECT_STORED: &str = "select seq, ts, call_id, parent_call_id, caller, tool, args,
    args_sha256, verdict, rule, outcome, output_sha256, duration_us, prev_hash, hash, chain
    from audit_log order by seq";

/// What the files beside the database say, read once.
struct Outside {
    files: Option<ChainFiles>,
    key: Result<Option<AuditKey>, String>,
    anchor: Result<Option<Anchor>, String>,
}

impl Outside {
    fn read(conn: &Connection) -> Self {
        let files = ChainFiles::for_conn(conn).ok();
        let (key, anchor) = match &files {
            Some(f) => (
                files::read_key(&f.key).map_err(|e| e.to_string()),
                files::read_anchor(&f.anchor).map_err(|e| e.to_string()),
            ),
            None => (Ok(None), Ok(None)),
        };
        Outside { files, key, anchor }
    }

    fn keyed_from(&self) -> Option<i64> {
        self.anchor.as_ref().ok()?.as_ref().map(|a| a.keyed_from)
    }

    fn name(&self, pick: fn(&ChainFiles) -> &std::path::Path) -> String {
        self.files.as_ref().map_or_else(
            || "(none: in-memory database)".into(),
            |f| pick(f).display().to_string(),
        )
    }
}

/// Walks the whole chain, compares its end with the anchor, and reports the first break.
pub fn verify(conn: &Connection) -> Result<VerifyReport, AuditError> {
    let outside = Outside::read(conn);
    let mut report = VerifyReport {
        records: 0,
        first_break: None,
        unkeyed: 0,
        keyed: 0,
        last_seq: 0,
        anchor: outside.anchor.clone().ok().flatten(),
        key_present: matches!(outside.key, Ok(Some(_))),
        notes: Vec::new(),
    };
    let mut stmt = conn.prepare(SELECT_STORED)?;
    let rows = stmt.query_map([], read_row)?;
    let mut expected_seq = 1i64;
    let mut prev = GENESIS.to_string();
    let anchor_seq = report.anchor.as_ref().map(|a| a.seq);
    let mut hash_at_anchor = None;
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
        report.last_seq = rec.seq;
        if let Err(reason) = check_record(&rec, expected_seq, &prev, &outside, report.keyed > 0) {
            report.first_break = Some(ChainBreak {
                seq: rec.seq,
                reason,
            });
            continue;
        }
        if rec.chain == CHAIN_KEYED {
            report.keyed += 1;
        } else {
            report.unkeyed += 1;
        }
        expected_seq = rec.seq + 1;
        prev = rec.hash.unwrap_or_default();
        if Some(rec.seq) == anchor_seq {
            hash_at_anchor = Some(prev.clone());
        }
    }
    migration_note(&mut report);
    if report.first_break.is_none() {
        check_outside(&mut report, &outside, hash_at_anchor);
    }
    Ok(report)
}

fn migration_note(report: &mut VerifyReport) {
    if report.unkeyed == 0 {
        return;
    }
    let n = report.unkeyed;
    let before = env!("CARGO_PKG_VERSION");
    report.notes.push(if report.keyed > 0 {
        format!(
            "records 1..{n} use the unkeyed v1 chain (written before alembic {before}); records {}.. are keyed",
            n + 1
        )
    } else {
        format!(
            "records 1..{n} use the unkeyed v1 chain (written before alembic {before}); no record is keyed yet"
        )
    });
}

/// Compares the table's end with the anchor, and says what the missing files leave unproven.
fn check_outside(report: &mut VerifyReport, outside: &Outside, hash_at_anchor: Option<String>) {
    let end = report.last_seq;
    let mut brk = |seq: i64, reason: String| {
        report.first_break = Some(ChainBreak { seq, reason });
    };
    match &outside.anchor {
        Err(e) => brk(end + 1, format!("the anchor cannot be read: {e}")),
        Ok(None) if report.key_present || report.keyed > 0 => brk(
            end + 1,
            format!(
                "the anchor {} is missing while the log is keyed: records deleted from the end cannot be ruled out",
                outside.name(|f| &f.anchor)
            ),
        ),
        Ok(None) => report.notes.push(format!(
            "no key/anchor: cannot prove the log is complete or unforged (nothing outside the table vouches for it; the writer adds {} and {} when it next opens the log)",
            outside.name(|f| &f.key),
            outside.name(|f| &f.anchor)
        )),
        Ok(Some(a)) if a.seq > end => brk(
            end + 1,
            format!(
                "truncated: anchor says seq {} hash {}, table ends at {end}",
                a.seq, a.hash
            ),
        ),
        Ok(Some(a)) if a.seq > 0 && hash_at_anchor.as_deref() != Some(a.hash.as_str()) => brk(
            a.seq,
            format!(
                "anchor says seq {} hash {}, but the table's record {} has hash {} (records rewritten)",
                a.seq,
                a.hash,
                a.seq,
                hash_at_anchor.unwrap_or_default()
            ),
        ),
        Ok(Some(a)) if a.seq == 0 && a.hash != GENESIS => brk(
            1,
            format!("anchor says seq 0 with hash {}, which is not the genesis hash (modified)", a.hash),
        ),
        Ok(Some(a)) if end > a.seq => report.notes.push(format!(
            "records {}..{end} are past the anchor (a writer stopped before moving it); they verify under the key",
            a.seq + 1
        )),
        Ok(Some(_)) => {}
    }
}

fn check_record(
    rec: &StoredRow,
    expected_seq: i64,
    prev: &str,
    outside: &Outside,
    keyed_seen: bool,
) -> Result<(), String> {
    if rec.seq != expected_seq {
        return Err(format!(
            "sequence jumps from {} to {} (records missing or reordered)",
            expected_seq - 1,
            rec.seq
        ));
    }
    if rec.prev_hash != prev {
        return Err("previous-hash link does not match the record before it".into());
    }
    let Some(hash) = rec.hash.as_ref() else {
        return Err(
            "record has no hash; every record is stored with its hash, so it was removed (modified)"
                .into(),
        );
    };
    let expected = match rec.chain {
        CHAIN_UNKEYED if keyed_seen => {
            return Err("an unkeyed (v1) record after keyed records (downgraded or forged)".into());
        }
        CHAIN_UNKEYED if outside.keyed_from().is_some_and(|k| rec.seq >= k) => {
            return Err(format!(
                "an unkeyed (v1) record where the anchor says records from {} on are keyed (downgraded or forged)",
                outside.keyed_from().unwrap_or_default()
            ));
        }
        CHAIN_UNKEYED => rec.hashed_columns().hash_unkeyed(prev),
        CHAIN_KEYED => match &outside.key {
            Ok(Some(key)) => rec.hashed_columns().hash_keyed(prev, key),
            Ok(None) => {
                return Err(format!(
                    "record is keyed but the key {} is missing: no key, cannot prove it",
                    outside.name(|f| &f.key)
                ));
            }
            Err(e) => return Err(format!("record is keyed but the key cannot be read: {e}")),
        },
        other => {
            return Err(format!(
                "column chain holds {other}; 1 (unkeyed) and 2 (keyed) are known (modified)"
            ));
        }
    };
    if *hash != expected {
        return Err("record contents do not match its hash (modified)".into());
    }
    Ok(())
}
