//! Oversized arguments and names are stored and echoed as bounded prefixes (issue 36, hole 7).

use std::sync::Arc;

use alembic_tools::audit::bound::{MAX_ARGS_BYTES, MAX_NAME_BYTES, MAX_STRING_BYTES};
use alembic_tools::audit::{open_audit_db, tail};
use alembic_tools::canonical::{canonical_json, sha256_hex};
use alembic_tools::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn state_bytes(root: &std::path::Path) -> u64 {
    std::fs::read_dir(root.join(".alembic"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

/// A pipeline over the meta tools that audits into a fresh project's log.
fn audited_pipeline() -> (tempfile::TempDir, Arc<AuditLog>, Arc<Pipeline>) {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(AuditLog::open_project(dir.path()).unwrap());
    let registry = Arc::new(ToolRegistry::new());
    meta::register_tools(&registry).unwrap();
    let p = Pipeline::builder(registry, dir.path())
        .audit(log.clone())
        .build();
    (dir, log, p)
}

#[tokio::test]
async fn refused_and_invalid_calls_store_a_bounded_prefix_with_size_and_hash() {
    let (dir, log, p) = audited_pipeline();
    let huge = "a/".repeat(2 << 20); // 4 MiB
    let before = state_bytes(dir.path());
    let trusted = trusted_caller("cli");
    let outsider = Caller::new("outsider", Allowlist::only(["plan_task"]));
    for i in 0..20 {
        let (name, caller) = match i % 3 {
            0 => ("no_such_tool", &trusted),      // unknown tool
            1 => ("get_tool_details", &trusted),  // invalid: toolName missing
            _ => ("get_tool_details", &outsider), // blocked by the allowlist
        };
        let o = p
            .execute(ToolCall::new(
                name,
                json!({"filePath": huge}),
                caller.clone(),
            ))
            .await;
        assert_ne!(o.status, OutcomeStatus::Ok);
        assert!(o.error.as_deref().unwrap_or_default().len() < 2_000);
    }
    log.flush().unwrap();
    let grown = state_bytes(dir.path()) - before;
    // measured on main: 88 MB; now 20 records of about 4 KiB each
    assert!(grown < 1 << 20, "the audit log grew by {grown} bytes");

    let conn = open_audit_db(&alembic_store::project_db_path(dir.path())).unwrap();
    let rows = tail(&conn, 20).unwrap();
    let verdicts: Vec<&str> = rows[..3].iter().map(|r| r.entry.verdict.as_str()).collect();
    assert_eq!(verdicts, ["unknown_tool", "invalid_arguments", "blocked"]);
    let expected = format!(
        "{}…[cut: {} bytes, sha256 {}]",
        &huge[..MAX_STRING_BYTES],
        huge.len(),
        sha256_hex(huge.as_bytes())
    );
    for r in &rows {
        assert_eq!(r.entry.args["filePath"], expected.as_str());
        // the hash of the whole unredacted arguments is kept, so the caller can prove them
        assert_eq!(
            r.entry.args_sha256,
            sha256_hex(canonical_json(&json!({"filePath": huge})).as_bytes())
        );
    }
}

#[tokio::test]
async fn an_unknown_tool_with_a_huge_name_is_named_by_a_bounded_prefix() {
    let (dir, log, p) = audited_pipeline();
    let name = format!("{}é", "x".repeat(3 << 20)); // 3 MiB, a multi-byte character at the end
    let o = p
        .execute(ToolCall::new(
            name.clone(),
            json!({}),
            trusted_caller("cli"),
        ))
        .await;
    assert_eq!(o.status, OutcomeStatus::UnknownTool);
    let error = o.error.clone().unwrap();
    assert!(error.len() < MAX_NAME_BYTES + 200, "{} bytes", error.len());
    assert!(error.starts_with(&format!(
        "unknown tool \"{}…[cut: {} bytes",
        "x".repeat(MAX_NAME_BYTES),
        name.len()
    )));
    assert!(o.tool.len() < MAX_NAME_BYTES + 200);
    assert!(serde_json::to_string(&o.text_for_model()).unwrap().len() < 2_000);
    log.flush().unwrap();
    let conn = open_audit_db(&alembic_store::project_db_path(dir.path())).unwrap();
    let row = &tail(&conn, 1).unwrap()[0];
    assert!(row.entry.tool.len() < MAX_NAME_BYTES + 200);
    assert!(
        row.entry
            .tool
            .ends_with(&format!("sha256 {}]", sha256_hex(name.as_bytes())))
    );
}

#[test]
fn a_record_of_many_keys_is_capped_as_a_whole() {
    let many: serde_json::Map<String, serde_json::Value> =
        (0..50_000).map(|i| (format!("k{i}"), json!(i))).collect();
    let input = AuditInput {
        ts: std::time::SystemTime::UNIX_EPOCH,
        call_id: "c".into(),
        parent_call_id: None,
        caller: "cli".into(),
        tool: "t".into(),
        args: serde_json::Value::Object(many),
        verdict: "blocked",
        rule: None,
        summary: String::new(),
        output: None,
        duration_us: 0,
    };
    let e = input.into_entry();
    let stored = canonical_json(&e.args);
    assert!(stored.len() <= MAX_ARGS_BYTES, "{}", stored.len());
    assert!(e.args["_cut"]["bytes"].as_u64().unwrap() > MAX_ARGS_BYTES as u64);
}
