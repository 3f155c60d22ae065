//! Extending the keyed chain and moving its anchor forward.
//!
//! Every new record is `chain = 2`: `HMAC-SHA256(key, "alembic-audit-v2\0" || prev || "\0" ||
//! columns)`, inserted with its hash in one statement, so a committed record never lacks one.
//! After each committed batch the anchor file is set to the table's end, inside an immediate
//! transaction: no other writer (thread or process) can commit meanwhile, so the anchor only
//! ever moves to a later end. An anchor that no longer matches the table (rows deleted or
//! rewritten) is never moved: it stays as the evidence `verify` reports.

use alembic_store::rusqlite::{self, Connection, OptionalExtension, TransactionBehavior, params};

use super::files::{self, Anchor, AuditKey, ChainFiles};
use super::{AuditEntry, AuditError, CHAIN_KEYED, GENESIS, HashedColumns};
use crate::canonical::canonical_json;

/// The key and anchor of one database, loaded once by a writer.
pub(crate) struct Chain {
    files: ChainFiles,
    key: AuditKey,
}

/// The last record's sequence number and hash (`0` and the genesis hash for an empty table).
pub(crate) fn table_end(conn: &Connection) -> rusqlite::Result<(i64, String)> {
    let end: Option<(i64, Option<String>)> = conn
        .query_row(
            "select seq, hash from audit_log order by seq desc limit 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(match end {
        Some((seq, hash)) => (seq, hash.unwrap_or_else(|| GENESIS.to_string())),
        None => (0, GENESIS.to_string()),
    })
}

/// Whether the table still holds the record the anchor names, with the anchor's hash.
fn anchor_matches(conn: &Connection, anchor: &Anchor) -> rusqlite::Result<bool> {
    if anchor.seq == 0 {
        return Ok(anchor.hash == GENESIS);
    }
    let hash: Option<Option<String>> = conn
        .query_row(
            "select hash from audit_log where seq = ?1",
            params![anchor.seq],
            |r| r.get(0),
        )
        .optional()?;
    Ok(hash.flatten().as_deref() == Some(anchor.hash.as_str()))
}

impl Chain {
    /// Loads the key and anchor of `conn`'s database, creating them on first use.
    ///
    /// A missing anchor is only created while nothing is keyed yet (no key file, no keyed
    /// record): that is the migration of an unkeyed log, whose records so far stay v1 and
    /// are anchored as they are. Otherwise it was removed, and re-creating it would erase
    /// what `verify` must report.
    pub(crate) fn open(conn: &mut Connection) -> Result<Self, AuditError> {
        let files = ChainFiles::for_conn(conn)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let key_exists = files::read_key(&files.key)?.is_some();
        let keyed: i64 = tx.query_row(
            "select count(*) from audit_log where chain = ?1",
            params![CHAIN_KEYED],
            |r| r.get(0),
        )?;
        let anchor_missing = match files::read_anchor(&files.anchor) {
            Ok(anchor) => anchor.is_none(),
            // Kept as it is: verify reports it, and the writer must still record calls.
            Err(e) => {
                tracing::error!("{e}");
                false
            }
        };
        if anchor_missing {
            if !key_exists && keyed == 0 {
                let (seq, hash) = table_end(&tx)?;
                let anchor = Anchor {
                    seq,
                    hash,
                    keyed_from: seq + 1,
                };
                files::write_anchor(&files.anchor, &anchor)?;
                if seq > 0 {
                    tracing::info!(
                        "audit log: records 1..{seq} use the unkeyed v1 chain (written before alembic {}); records from {} on are keyed",
                        env!("CARGO_PKG_VERSION"),
                        seq + 1
                    );
                }
            } else {
                tracing::error!(
                    "audit anchor {} is missing although the log is keyed; it is not re-created, so `alembic audit verify` reports it",
                    files.anchor.display()
                );
            }
        }
        if !key_exists && keyed > 0 {
            tracing::error!(
                "audit key {} is missing although {keyed} records are keyed; a new key is made, and those records cannot be proven",
                files.key.display()
            );
        }
        let key = files::load_or_create_key(&files.key)?;
        tx.commit()?;
        Ok(Chain { files, key })
    }

    /// Appends `entries` as one transaction, then moves the anchor to the new end.
    pub(crate) fn append(
        &self,
        conn: &mut Connection,
        entries: &[AuditEntry],
    ) -> Result<(), AuditError> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (mut seq, mut prev) = table_end(&tx)?;
        {
            let mut stmt = tx.prepare_cached(
                "insert into audit_log (seq, ts, call_id, parent_call_id, caller, tool, args,
                     args_sha256, verdict, rule, outcome, output_sha256, duration_us, prev_hash,
                     hash, chain)
                 values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            )?;
            for e in entries {
                seq += 1;
                let args_json = canonical_json(&e.args);
                // The row is bound from the same strings the hash is computed over.
                let c = HashedColumns::of(seq, e, &args_json);
                let hash = c.hash_keyed(&prev, &self.key);
                stmt.execute(params![
                    c.seq,
                    c.ts,
                    c.call_id,
                    c.parent_call_id,
                    c.caller,
                    c.tool,
                    c.args,
                    c.args_sha256,
                    c.verdict,
                    c.rule,
                    c.outcome,
                    c.output_sha256,
                    c.duration_us,
                    prev,
                    hash,
                    CHAIN_KEYED
                ])?;
                prev = hash;
            }
        }
        tx.commit()?;
        // The records are committed: a failure from here on must not make the caller retry
        // (that would write them twice), so it is logged and the next batch tries again.
        if let Err(e) = self.advance_anchor(conn) {
            tracing::error!(
                "audit anchor {} not updated: {e}",
                self.files.anchor.display()
            );
        }
        Ok(())
    }

    /// Sets the anchor to the table's end, under the write lock, if it still matches the table.
    fn advance_anchor(&self, conn: &mut Connection) -> Result<(), AuditError> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (seq, hash) = table_end(&tx)?;
        let Some(anchor) = files::read_anchor(&self.files.anchor)? else {
            tracing::error!(
                "audit anchor {} is missing; it is not re-created, so `alembic audit verify` reports it",
                self.files.anchor.display()
            );
            return Ok(());
        };
        if !anchor_matches(&tx, &anchor)? {
            tracing::error!(
                "audit anchor says seq {} hash {}, which the table no longer holds (records deleted or rewritten); it is kept as evidence: run `alembic audit verify`",
                anchor.seq,
                anchor.hash
            );
            return Ok(());
        }
        if seq > anchor.seq {
            files::write_anchor(
                &self.files.anchor,
                &Anchor {
                    seq,
                    hash,
                    keyed_from: anchor.keyed_from,
                },
            )?;
        }
        Ok(())
    }
}

/// Appends entries as one transaction, extending the keyed chain and its anchor.
pub fn append_entries(conn: &mut Connection, entries: &[AuditEntry]) -> Result<(), AuditError> {
    Chain::open(conn)?.append(conn, entries)
}
