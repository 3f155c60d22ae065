//! Deletion and forgery against the keyed chain and its anchor (issue 36, hole 8).
//!
//! Each test writes a real log through `AuditLog` or `append_entries` (with the key and
//! anchor files beside the database), tampers with the database or the files the way an
//! attacker would, and asserts that `verify` names the break.

use std::path::{Path, PathBuf};

use alembic_store::rusqlite::{Connection, params};
use alembic_tools::audit::{
    Anchor, ChainFiles, append_entries, files::read_anchor, open_audit_db, tail, verify,
};
use alembic_tools::canonical::{canonical_json, sha256_hex};
use alembic_tools::*;
use hmac::Mac;
use pretty_assertions::assert_eq;
use serde_json::json;

fn entry(i: usize) -> AuditEntry {
    AuditEntry {
        ts: format!("2026-12-01T00:00:{:02}Z", i % 60),
        call_id: format!("call-{i}"),
        parent_call_id: None,
        caller: "test".into(),
        tool: "read_project_file".into(),
        args: json!({"filePath": format!("src/f{i}.rs")}),
        args_sha256: "ab".repeat(32),
        verdict: "ok".into(),
        rule: None,
        outcome: format!("result {i}"),
        output_sha256: None,
        duration_us: i as i64,
    }
}

/// A database with `n` keyed records written by the real writer, key and anchor beside it.
fn keyed_db(n: usize) -> (tempfile::TempDir, PathBuf, Connection) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let log = AuditLog::open(&path).unwrap();
    for i in 1..=n {
        log.record(entry(i));
    }
    log.flush().unwrap();
    drop(log);
    let conn = open_audit_db(&path).unwrap();
    (dir, path, conn)
}

fn broken(conn: &Connection) -> (i64, String) {
    let r = verify(conn).unwrap();
    let b = r.first_break.expect("verify must report a break");
    (b.seq, b.reason)
}

fn anchor_of(path: &Path) -> Anchor {
    read_anchor(&ChainFiles::for_db(path).anchor)
        .unwrap()
        .unwrap()
}

#[test]
fn an_untouched_keyed_log_verifies_and_is_anchored_at_its_end() {
    let (_d, path, conn) = keyed_db(10);
    let r = verify(&conn).unwrap();
    assert_eq!(
        (r.records, r.keyed, r.unkeyed, r.first_break),
        (10, 10, 0, None)
    );
    let a = anchor_of(&path);
    let last: String = conn
        .query_row("select hash from audit_log where seq = 10", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!((a.seq, a.hash, a.keyed_from), (10, last, 1));
}

#[test]
fn deleting_the_last_row_the_last_five_or_all_is_truncation() {
    for (keep, delete) in [(9, "seq = 10"), (5, "seq > 5"), (0, "1 = 1")] {
        let (_d, path, conn) = keyed_db(10);
        let a = anchor_of(&path);
        conn.execute(&format!("delete from audit_log where {delete}"), [])
            .unwrap();
        let (seq, reason) = broken(&conn);
        assert_eq!(seq, keep + 1, "{delete}");
        assert_eq!(
            reason,
            format!(
                "truncated: anchor says seq 10 hash {}, table ends at {keep}",
                a.hash
            ),
            "{delete}"
        );
    }
}

#[test]
fn truncating_then_letting_the_writer_refill_is_still_caught() {
    let (_d, path, conn) = keyed_db(10);
    conn.execute("delete from audit_log where seq > 7", [])
        .unwrap();
    drop(conn);
    let log = AuditLog::open(&path).unwrap();
    for i in 20..25 {
        log.record(entry(i));
    }
    log.flush().unwrap();
    drop(log);
    let conn = open_audit_db(&path).unwrap();
    // the anchor does not move once it stops matching the table: it still names record 10
    assert_eq!(anchor_of(&path).seq, 10);
    let (seq, reason) = broken(&conn);
    assert_eq!(seq, 10);
    assert!(reason.contains("(records rewritten)"), "{reason}");
}

#[test]
fn a_missing_anchor_or_key_on_a_keyed_log_is_a_break() {
    // the anchor removed, with and without the rows
    for delete_rows in [false, true] {
        let (_d, path, conn) = keyed_db(4);
        std::fs::remove_file(ChainFiles::for_db(&path).anchor).unwrap();
        if delete_rows {
            conn.execute("delete from audit_log", []).unwrap();
        }
        let (_, reason) = broken(&conn);
        assert!(
            reason.contains("is missing while the log is keyed"),
            "{reason}"
        );
        // reopening the writer does not re-create it, which would erase the evidence
        drop(conn);
        drop(AuditLog::open(&path).unwrap());
        let conn = open_audit_db(&path).unwrap();
        let (_, reason) = broken(&conn);
        assert!(
            reason.contains("is missing while the log is keyed"),
            "{reason}"
        );
    }
    // the key removed
    let (_d, path, conn) = keyed_db(4);
    std::fs::remove_file(ChainFiles::for_db(&path).key).unwrap();
    let (seq, reason) = broken(&conn);
    assert_eq!(seq, 1);
    assert!(reason.contains("no key, cannot prove it"), "{reason}");
}

#[test]
fn a_null_hash_on_a_committed_record_is_a_break() {
    for seq in [4, 6] {
        let (_d, _p, conn) = keyed_db(6);
        conn.execute(
            "update audit_log set hash = null where seq = ?1",
            params![seq],
        )
        .unwrap();
        let (at, reason) = broken(&conn);
        assert_eq!(at, seq);
        assert!(reason.starts_with("record has no hash"), "{reason}");
    }
}

/// The record as `alembic-audit-v*` hashes it: domain, prev and the sorted JSON of the columns.
fn preimage(domain: &str, r: &AuditRecord, prev: &str) -> Vec<u8> {
    let e = &r.entry;
    let body = json!({
        "seq": r.seq, "ts": e.ts, "call_id": e.call_id, "parent_call_id": e.parent_call_id,
        "caller": e.caller, "tool": e.tool, "args": e.args, "args_sha256": e.args_sha256,
        "verdict": e.verdict, "rule": e.rule, "outcome": e.outcome,
        "output_sha256": e.output_sha256, "duration_us": e.duration_us,
    });
    format!("{domain}\0{prev}\0{}", canonical_json(&body)).into_bytes()
}

fn hmac_hex(key: &[u8], bytes: &[u8]) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
    mac.update(bytes);
    hex::encode(mac.finalize().into_bytes())
}

/// Rewrites record `from`'s args, then recomputes every hash from there on with `hash`,
/// setting `chain` on the rewritten records (and on all records when `from` is 1).
fn forge(conn: &Connection, from: i64, chain: i64, hash: &dyn Fn(&AuditRecord, &str) -> String) {
    conn.execute(
        "update audit_log set args = ?1 where seq = ?2",
        params![canonical_json(&json!({"filePath": "forged.rs"})), from],
    )
    .unwrap();
    let rows = tail(conn, 1000).unwrap();
    let mut prev = "0".repeat(64);
    for r in &rows {
        if r.seq >= from {
            let h = hash(r, &prev);
            conn.execute(
                "update audit_log set prev_hash = ?1, hash = ?2, chain = ?3 where seq = ?4",
                params![prev, h, chain, r.seq],
            )
            .unwrap();
            prev = h;
        } else {
            prev = r.hash.clone().unwrap();
        }
    }
}

#[test]
fn a_rewritten_record_with_a_recomputed_chain_is_caught_without_the_key() {
    type Forger = Box<dyn Fn(&AuditRecord, &str) -> String>;
    let random_key: [u8; 32] = std::array::from_fn(|i| (i * 37 + 11) as u8);
    let cases: Vec<(&str, i64, i64, Forger)> = vec![
        (
            "plain SHA-256, v2 domain, kept keyed",
            3,
            2,
            Box::new(|r, p| sha256_hex(&preimage("alembic-audit-v2", r, p))),
        ),
        (
            "plain SHA-256, v1 domain, marked unkeyed from the record on",
            3,
            1,
            Box::new(|r, p| sha256_hex(&preimage("alembic-audit-v1", r, p))),
        ),
        (
            "plain SHA-256, v1 domain, the whole log downgraded",
            1,
            1,
            Box::new(|r, p| sha256_hex(&preimage("alembic-audit-v1", r, p))),
        ),
        (
            "HMAC with an all-zero key",
            3,
            2,
            Box::new(|r, p| hmac_hex(&[0u8; 32], &preimage("alembic-audit-v2", r, p))),
        ),
        (
            "HMAC with a guessed key",
            3,
            2,
            Box::new(move |r, p| hmac_hex(&random_key, &preimage("alembic-audit-v2", r, p))),
        ),
        (
            "HMAC with an empty key",
            3,
            2,
            Box::new(|r, p| hmac_hex(&[], &preimage("alembic-audit-v2", r, p))),
        ),
    ];
    for (what, from, chain, hash) in cases {
        let (_d, _p, conn) = keyed_db(6);
        forge(&conn, from, chain, &*hash);
        let (seq, reason) = broken(&conn);
        assert_eq!(seq, from, "{what}: {reason}");
    }
}

#[test]
fn with_the_key_a_forger_is_caught_by_the_anchor_and_only_rewriting_it_too_passes() {
    // What the key cannot do alone: the anchor still names the old end.
    let (_d, path, conn) = keyed_db(6);
    let files = ChainFiles::for_db(&path);
    let key = std::fs::read(&files.key).unwrap();
    forge(&conn, 3, 2, &|r, p| {
        hmac_hex(&key, &preimage("alembic-audit-v2", r, p))
    });
    let (seq, reason) = broken(&conn);
    assert_eq!(seq, 6);
    assert!(reason.contains("(records rewritten)"), "{reason}");
    // Someone who reads the key and writes the anchor rewrites history undetected: the
    // documented limit (the user alembic runs as, or root).
    let hash: String = conn
        .query_row("select hash from audit_log where seq = 6", [], |r| r.get(0))
        .unwrap();
    let text = std::fs::read_to_string(&files.anchor).unwrap();
    std::fs::write(&files.anchor, text.replace(&anchor_of(&path).hash, &hash)).unwrap();
    assert!(verify(&conn).unwrap().is_intact());
}

/// A database as the unkeyed writer left it: schema version 1 and `n` v1 records.
fn v1_db(n: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let conn = alembic_store::open(&path).unwrap();
    conn.execute_batch(
        "create table audit_log (seq integer primary key, ts text not null, call_id text not null,
             parent_call_id text, caller text not null, tool text not null, args text not null,
             args_sha256 text not null, verdict text not null, rule text, outcome text not null,
             output_sha256 text, duration_us integer not null, prev_hash text not null, hash text);
         create index audit_log_call on audit_log(call_id);
         insert into schema_migrations (component, version) values ('audit', 1);",
    )
    .unwrap();
    let mut prev = "0".repeat(64);
    for i in 1..=n {
        let e = entry(i);
        let rec = AuditRecord {
            seq: i as i64,
            entry: e.clone(),
            prev_hash: prev.clone(),
            hash: None,
        };
        let hash = sha256_hex(&preimage("alembic-audit-v1", &rec, &prev));
        conn.execute(
            "insert into audit_log (seq, ts, call_id, parent_call_id, caller, tool, args,
                 args_sha256, verdict, rule, outcome, output_sha256, duration_us, prev_hash, hash)
             values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            params![
                rec.seq,
                e.ts,
                e.call_id,
                e.parent_call_id,
                e.caller,
                e.tool,
                canonical_json(&e.args),
                e.args_sha256,
                e.verdict,
                e.rule,
                e.outcome,
                e.output_sha256,
                e.duration_us,
                prev,
                hash
            ],
        )
        .unwrap();
        prev = hash;
    }
    (dir, path)
}

#[test]
fn a_v1_log_migrates_with_a_message_and_verifies() {
    let (_d, path) = v1_db(4);
    // before a writer opens it: intact as v1, but nothing outside the table vouches for it
    let r = verify(&open_audit_db(&path).unwrap()).unwrap();
    assert_eq!((r.records, r.unkeyed, r.first_break), (4, 4, None));
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("no key/anchor: cannot prove")),
        "{:?}",
        r.notes
    );
    let log = AuditLog::open(&path).unwrap();
    for i in 5..=7 {
        log.record(entry(i));
    }
    log.flush().unwrap();
    drop(log);
    let conn = open_audit_db(&path).unwrap();
    let r = verify(&conn).unwrap();
    assert_eq!(
        (r.records, r.unkeyed, r.keyed, r.first_break),
        (7, 4, 3, None)
    );
    assert_eq!(
        r.notes,
        [format!(
            "records 1..4 use the unkeyed v1 chain (written before alembic {}); records 5.. are keyed",
            env!("CARGO_PKG_VERSION")
        )]
    );
    assert_eq!(anchor_of(&path).keyed_from, 5);
    // an unkeyed record after the keyed ones is a break
    let last = tail(&conn, 1).unwrap().remove(0);
    let forged = AuditRecord {
        seq: 8,
        entry: entry(8),
        prev_hash: last.hash.clone().unwrap(),
        hash: None,
    };
    let hash = sha256_hex(&preimage("alembic-audit-v1", &forged, &forged.prev_hash));
    let e = &forged.entry;
    conn.execute(
        "insert into audit_log (seq, ts, call_id, caller, tool, args, args_sha256, verdict,
             outcome, duration_us, prev_hash, hash, chain)
         values (8, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 1)",
        params![
            e.ts,
            e.call_id,
            e.caller,
            e.tool,
            canonical_json(&e.args),
            e.args_sha256,
            e.verdict,
            e.outcome,
            e.duration_us,
            forged.prev_hash,
            hash
        ],
    )
    .unwrap();
    let (seq, reason) = broken(&conn);
    assert_eq!(seq, 8);
    assert!(
        reason.starts_with("an unkeyed (v1) record after keyed records"),
        "{reason}"
    );
}

#[test]
fn concurrent_writers_keep_one_chain_and_the_anchor_at_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let handles: Vec<_> = (0..2)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let log = AuditLog::open(&path).unwrap();
                for i in 0..150 {
                    log.record(entry(w * 1000 + i));
                    if i % 13 == 0 {
                        log.flush().unwrap();
                    }
                }
                log.flush().unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let conn = open_audit_db(&path).unwrap();
    let r = verify(&conn).unwrap();
    assert_eq!((r.records, r.keyed, r.first_break), (300, 300, None));
    let last: String = conn
        .query_row("select hash from audit_log where seq = 300", [], |r| {
            r.get(0)
        })
        .unwrap();
    let a = anchor_of(&path);
    assert_eq!((a.seq, a.hash, a.keyed_from), (300, last, 1));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[cfg(unix)]
#[test]
fn the_key_is_32_bytes_mode_0600_and_a_looser_one_is_tightened() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, path, _conn) = keyed_db(1);
    let files = ChainFiles::for_db(&path);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(std::fs::read(&files.key).unwrap().len(), 32);
    assert_eq!(mode(&files.key), 0o600);
    assert_eq!(mode(&files.anchor), 0o600);
    std::fs::set_permissions(&files.key, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(AuditLog::open(&path).unwrap());
    assert_eq!(mode(&files.key), 0o600);
}

#[test]
fn a_bad_key_file_is_refused_by_name_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let files = ChainFiles::for_db(&path);
    std::fs::write(&files.key, b"short").unwrap();
    let err = AuditLog::open(&path).unwrap_err().to_string();
    assert!(
        err.contains("a.db-audit.key") && err.contains("exactly 32 random bytes"),
        "{err}"
    );
    assert_eq!(std::fs::read(&files.key).unwrap(), b"short");
    // a link in its place, even to a 32-byte file, is not read through
    std::fs::remove_file(&files.key).unwrap();
    let outside = dir.path().join("outside-32");
    std::fs::write(&outside, [7u8; 32]).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, &files.key).unwrap();
        let err = AuditLog::open(&path).unwrap_err().to_string();
        assert!(err.contains("is not a regular file"), "{err}");
    }
}

#[test]
fn a_damaged_anchor_is_a_break_and_the_writer_keeps_recording() {
    let (_d, path, conn) = keyed_db(3);
    let files = ChainFiles::for_db(&path);
    std::fs::write(&files.anchor, b"{\"seq\": 1}").unwrap();
    let (_, reason) = broken(&conn);
    assert!(reason.starts_with("the anchor cannot be read"), "{reason}");
    drop(conn);
    let log = AuditLog::open(&path).unwrap();
    log.record(entry(4));
    log.flush().unwrap();
    drop(log);
    let conn = open_audit_db(&path).unwrap();
    assert_eq!(tail(&conn, 10).unwrap().len(), 4);
    assert_eq!(std::fs::read(&files.anchor).unwrap(), b"{\"seq\": 1}");
}

#[test]
fn append_entries_needs_a_database_file() {
    let mut conn = alembic_store::open_in_memory().unwrap();
    conn.execute_batch("create table audit_log (seq integer primary key, chain integer)")
        .unwrap();
    let err = append_entries(&mut conn, &[entry(1)]).unwrap_err();
    assert!(err.to_string().contains("in-memory"), "{err}");
}
