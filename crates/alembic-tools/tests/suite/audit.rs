//! Audit log tamper tests (anchors §7.6, cases 1–5 and 9–12).

use std::sync::Arc;

use alembic_store::rusqlite::{Connection, params};
use alembic_tools::audit::{self, append_entries, open_audit_db, tail, verify};
use alembic_tools::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn entry(i: usize) -> AuditEntry {
    AuditEntry {
        ts: format!("2026-11-30T00:00:{:02}Z", i % 60),
        call_id: format!("call-{i}"),
        parent_call_id: None,
        caller: "test".into(),
        tool: "echo_args".into(),
        args: json!({"pattern": format!("p{i}"), "n": i}),
        args_sha256: "x".into(),
        verdict: "ok".into(),
        rule: None,
        outcome: format!("result {i}"),
        output_sha256: None,
        duration_us: i as i64,
    }
}

fn db_with(n: usize) -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = open_audit_db(&dir.path().join("a.db")).unwrap();
    let entries: Vec<_> = (1..=n).map(entry).collect();
    append_entries(&mut conn, &entries).unwrap();
    (dir, conn)
}

fn first_break(conn: &Connection) -> Option<i64> {
    verify(conn).unwrap().first_break.map(|b| b.seq)
}

#[test]
fn an_untouched_chain_verifies() {
    let (_d, conn) = db_with(10);
    let r = verify(&conn).unwrap();
    assert_eq!((r.records, r.first_break, r.keyed), (10, None, 10));
}

#[test]
fn case_1_one_changed_byte_breaks_at_that_record() {
    let (_d, conn) = db_with(10);
    conn.execute(
        "update audit_log set outcome = 'result X' where seq = 4",
        [],
    )
    .unwrap();
    assert_eq!(first_break(&conn), Some(4));
}

#[test]
fn case_2_a_deleted_record_breaks_at_the_next() {
    let (_d, conn) = db_with(10);
    conn.execute("delete from audit_log where seq = 5", [])
        .unwrap();
    assert_eq!(first_break(&conn), Some(6));
}

#[test]
fn case_3_swapped_records_break() {
    let (_d, conn) = db_with(10);
    conn.execute_batch(
        "update audit_log set seq = -1 where seq = 3;
         update audit_log set seq = 3 where seq = 4;
         update audit_log set seq = 4 where seq = -1;",
    )
    .unwrap();
    assert_eq!(first_break(&conn), Some(3));
}

#[test]
fn case_4_a_forged_record_with_a_plausible_prev_breaks_at_the_next() {
    let (_d, mut conn) = db_with(6);
    let _d = _d;
    // make room after record 3 and insert a record that links correctly to record 3
    conn.execute("update audit_log set seq = seq + 100 where seq > 3", [])
        .unwrap();
    conn.execute("update audit_log set seq = seq - 99 where seq > 100", [])
        .unwrap();
    let prev: String = conn
        .query_row("select hash from audit_log where seq = 3", [], |r| r.get(0))
        .unwrap();
    // write the forgery through a scratch database so its hash is computed by the real code,
    // under the same key (a forger holding the key: only the sequence gives it away)
    let scratch_dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        _d.path().join("a.db-audit.key"),
        scratch_dir.path().join("s.db-audit.key"),
    )
    .unwrap();
    let mut scratch = open_audit_db(&scratch_dir.path().join("s.db")).unwrap();
    append_entries(&mut scratch, &(1..=3).map(entry).collect::<Vec<_>>()).unwrap();
    let mut forged = entry(99);
    forged.outcome = "forged".into();
    append_entries(&mut scratch, &[forged]).unwrap();
    let (hash, scratch_prev): (String, String) = scratch
        .query_row(
            "select hash, prev_hash from audit_log where seq = 4",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        scratch_prev, prev,
        "same first three records give the same chain"
    );
    let e = entry(99);
    conn.execute(
        "insert into audit_log (seq, ts, call_id, caller, tool, args, args_sha256, verdict, outcome, duration_us, prev_hash, hash, chain)
         values (4, ?1, ?2, ?3, ?4, ?5, ?6, ?7, 'forged', ?8, ?9, ?10, 2)",
        params![e.ts, e.call_id, e.caller, e.tool, alembic_tools::canonical::canonical_json(&e.args), e.args_sha256, e.verdict, e.duration_us, prev, hash],
    )
    .unwrap();
    let _ = &mut conn;
    assert_eq!(first_break(&conn), Some(5));
}

#[test]
fn case_5_a_replayed_record_is_detected() {
    let (_d, conn) = db_with(5);
    conn.execute(
        "insert into audit_log select 6, ts, call_id, parent_call_id, caller, tool, args, args_sha256, verdict, rule,
             outcome, output_sha256, duration_us, prev_hash, hash, chain from audit_log where seq = 2",
        [],
    )
    .unwrap();
    assert_eq!(first_break(&conn), Some(6));
}

#[test]
fn case_9_a_record_without_a_hash_is_a_break_not_a_torn_write() {
    let (_d, mut conn) = db_with(3);
    conn.execute(
        "insert into audit_log (seq, ts, call_id, caller, tool, args, args_sha256, verdict, outcome, duration_us, prev_hash, hash)
         select 4, ts, 'torn', caller, tool, args, args_sha256, verdict, outcome, 0, hash, null from audit_log where seq = 3",
        [],
    )
    .unwrap();
    // the writer inserts a record and its hash in one statement: a NULL is never committed
    assert_eq!(first_break(&conn), Some(4));
    append_entries(&mut conn, &[entry(5)]).unwrap();
    assert_eq!(first_break(&conn), Some(4));
}

#[test]
fn case_10_reformatting_or_a_value_change_breaks() {
    // verify hashes the stored text, so an equivalent reformatting is a change too
    let (_d, conn) = db_with(4);
    conn.execute(
        "update audit_log set args = '{ \"n\" : 2,\n \"pattern\" : \"p2\" }' where seq = 2",
        [],
    )
    .unwrap();
    assert_eq!(first_break(&conn), Some(2));
    let (_d, conn) = db_with(4);
    conn.execute(
        "update audit_log set args = '{\"n\":3,\"pattern\":\"p2\"}' where seq = 2",
        [],
    )
    .unwrap();
    assert_eq!(first_break(&conn), Some(2));
}

#[test]
fn whitespace_appended_to_the_stored_args_breaks_that_record() {
    let (_d, conn) = db_with(4);
    conn.execute("update audit_log set args = args || ' ' where seq = 3", [])
        .unwrap();
    let b = verify(&conn).unwrap().first_break.unwrap();
    assert_eq!(
        (b.seq, b.reason.as_str()),
        (3, "record contents do not match its hash (modified)")
    );
}

/// Five records whose nullable columns all hold text, so that every column has bytes.
fn full_db() -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = open_audit_db(&dir.path().join("a.db")).unwrap();
    let entries: Vec<_> = (1..=5)
        .map(|i| AuditEntry {
            parent_call_id: Some(format!("parent-{i}")),
            rule: Some("path.escape".into()),
            output_sha256: Some("cd".repeat(32)),
            ..entry(i)
        })
        .collect();
    append_entries(&mut conn, &entries).unwrap();
    (dir, conn)
}

#[test]
fn a_changed_byte_in_any_stored_column_breaks_that_record() {
    let text_columns = [
        "ts",
        "call_id",
        "parent_call_id",
        "caller",
        "tool",
        "args",
        "args_sha256",
        "verdict",
        "rule",
        "outcome",
        "output_sha256",
        "prev_hash",
        "hash",
    ];
    for column in text_columns {
        for (what, sql) in [
            // the first byte and the last byte, each replaced by another one
            (
                "first byte",
                format!(
                    "update audit_log set {column} = (case when substr({column}, 1, 1) = 'x' then 'y' else 'x' end) || substr({column}, 2) where seq = 3"
                ),
            ),
            (
                "last byte",
                format!(
                    "update audit_log set {column} = substr({column}, 1, length({column}) - 1) || (case when substr({column}, -1) = 'x' then 'y' else 'x' end) where seq = 3"
                ),
            ),
            // the same bytes stored as a blob, and bytes that are not UTF-8
            (
                "blob",
                format!("update audit_log set {column} = cast({column} as blob) where seq = 3"),
            ),
            (
                "not utf-8",
                format!("update audit_log set {column} = cast(x'ff' as text) where seq = 3"),
            ),
        ] {
            let (_d, conn) = full_db();
            assert_eq!(conn.execute(&sql, []).unwrap(), 1);
            assert_eq!(first_break(&conn), Some(3), "{what} of {column}");
        }
    }
    let (_d, conn) = full_db();
    conn.execute(
        "update audit_log set duration_us = duration_us + 1 where seq = 3",
        [],
    )
    .unwrap();
    assert_eq!(first_break(&conn), Some(3), "duration_us");
    let (_d, conn) = full_db();
    conn.execute(
        "update audit_log set duration_us = duration_us + 0.5 where seq = 3",
        [],
    )
    .unwrap();
    assert_eq!(first_break(&conn), Some(3), "duration_us as a real");
    let (_d, conn) = full_db();
    conn.execute("update audit_log set seq = 6 where seq = 5", [])
        .unwrap();
    assert_eq!(first_break(&conn), Some(6), "seq");
}

#[test]
fn case_11_hostile_arguments_stay_inside_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = open_audit_db(&dir.path().join("a.db")).unwrap();
    let hostile = "line1\nline2\u{1b}[31mred\u{1b}[0m\",\"verdict\":\"ok\"}\n{\"seq\":99";
    let mut e = entry(1);
    e.args = json!({"pattern": hostile});
    append_entries(&mut conn, &[e, entry(2)]).unwrap();
    let rows = tail(&conn, 10).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].entry.args["pattern"], hostile);
    assert_eq!(rows[1].entry.verdict, "ok");
    assert!(verify(&conn).unwrap().is_intact());
}

#[test]
fn case_12_concurrent_writers_keep_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    open_audit_db(&path).unwrap();
    let handles: Vec<_> = (0..2)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let log = AuditLog::open(&path).unwrap();
                for i in 0..200 {
                    log.record(entry(w * 1000 + i));
                    if i % 17 == 0 {
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
    assert_eq!((r.records, r.first_break), (400, None));
    let seqs: Vec<i64> = tail(&conn, 400).unwrap().iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=400).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_pipeline_writes_redacted_records_for_every_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(AuditLog::open_project(dir.path()).unwrap());
    let registry = Arc::new(ToolRegistry::new());
    meta::register_tools(&registry).unwrap();
    let p = Pipeline::builder(registry, dir.path())
        .audit(log.clone())
        .build();
    let caller = trusted_caller("cli");
    p.execute(ToolCall::new(
        "get_tool_details",
        json!({"toolName": "plan_task", "api_key": "sk-abcdefghijklmnopqrstu"}),
        caller.clone(),
    ))
    .await;
    p.execute(ToolCall::new("no_such_tool", json!({}), caller.clone()))
        .await;
    p.execute(ToolCall::new("plan_task", json!({"goal": ""}), caller))
        .await;
    log.flush().unwrap();
    let conn = open_audit_db(&alembic_store::project_db_path(dir.path())).unwrap();
    let rows = audit::tail(&conn, 10).unwrap();
    let verdicts: Vec<&str> = rows.iter().map(|r| r.entry.verdict.as_str()).collect();
    assert_eq!(verdicts, ["ok", "unknown_tool", "invalid_arguments"]);
    assert_eq!(rows[0].entry.args["api_key"], "[REDACTED]");
    assert!(rows[0].entry.output_sha256.is_some());
    assert!(verify(&conn).unwrap().is_intact());
}
