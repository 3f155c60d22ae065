//! `rebuild_index` and `query_audit_log` in a real project runtime, and the allowlist and
//! audit trail of every tool issue 15 item 1–2 adds on this branch.

use std::path::Path;

use alembic_runtime::ProjectRuntime;
use alembic_runtime::store::rusqlite::Connection;
use alembic_tools::{Caller, OutcomeStatus, ToolCall, ToolEventKind, ToolOutcome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn project() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::absolute(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/a.rs"),
        "pub struct Client;\nimpl Client { pub fn send(&self) {} }\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/b.py"),
        "class Store:\n    def save(self):\n        pass\n",
    )
    .unwrap();
    (dir, root)
}

async fn ok(rt: &ProjectRuntime, tool: &str, args: Value) -> Value {
    let out = rt.call_as_cli(tool, args).await;
    assert_eq!(
        out.status,
        OutcomeStatus::Ok,
        "{tool}: {}",
        out.text_for_model()
    );
    out.output.unwrap().data
}

fn counts(data: &Value) -> (u64, u64, u64) {
    let c = &data["code"];
    let n = |k: &str| c[k]["count"].as_u64().unwrap();
    (n("added"), n("changed"), n("removed"))
}

fn db(root: &Path) -> Connection {
    Connection::open(alembic_runtime::store::project_db_path(root)).unwrap()
}

#[tokio::test]
async fn a_dry_run_reports_file_changes_and_writes_nothing() {
    let (_dir, root) = project();
    let rt = ProjectRuntime::open(&root).unwrap();
    let first = ok(&rt, "rebuild_index", json!({})).await;
    assert_eq!(
        (
            &first["code"]["report"]["files"],
            &first["code"]["report"]["parsed"]
        ),
        (&json!(2), &json!(2))
    );
    std::fs::write(root.join("src/c.rs"), "pub fn helper() {}\n").unwrap();
    std::fs::write(
        root.join("src/a.rs"),
        "pub struct Client { retries: u32 }\n",
    )
    .unwrap();
    std::fs::remove_file(root.join("src/b.py")).unwrap();
    let plan = ok(&rt, "rebuild_index", json!({"dryRun": true})).await;
    assert_eq!(counts(&plan), (1, 1, 1));
    assert_eq!(plan["code"]["added"]["paths"], json!(["src/c.rs"]));
    assert_eq!(plan["code"]["changed"]["paths"], json!(["src/a.rs"]));
    assert_eq!(plan["code"]["removed"]["paths"], json!(["src/b.py"]));
    // Nothing was written: the same plan again.
    let again = ok(&rt, "rebuild_index", json!({"dryRun": true})).await;
    assert_eq!(again["code"], plan["code"]);
    let done = ok(&rt, "rebuild_index", json!({})).await;
    assert_eq!(
        (
            &done["code"]["report"]["parsed"],
            &done["code"]["report"]["removed"]
        ),
        (&json!(2), &json!(1))
    );
    let after = ok(&rt, "rebuild_index", json!({"dryRun": true})).await;
    assert_eq!(counts(&after), (0, 0, 0));
    let forced = ok(&rt, "rebuild_index", json!({"dryRun": true, "force": true})).await;
    assert_eq!(forced["code"]["wouldRead"], json!(2));
}

#[tokio::test]
async fn a_dry_run_on_a_fresh_project_creates_no_database() {
    let (_dir, root) = project();
    let rt = ProjectRuntime::inspect(&root).unwrap();
    let caller = Caller::new("cli", alembic_tools::Allowlist::All);
    let out = rt
        .pipeline()
        .execute(ToolCall::new(
            "rebuild_index",
            json!({"dryRun": true}),
            caller,
        ))
        .await;
    assert_eq!(out.status, OutcomeStatus::Ok, "{}", out.text_for_model());
    let data = out.output.unwrap().data;
    assert_eq!(counts(&data), (2, 0, 0));
    assert!(!alembic_runtime::store::project_db_path(&root).exists());
}

#[tokio::test]
async fn stale_search_rows_are_reindexed_and_found_again() {
    let (_dir, root) = project();
    let rt = ProjectRuntime::open(&root).unwrap();
    ok(
        &rt,
        "submit_knowledge",
        json!({
            "title": "Client retries with backoff",
            "content": {"markdown": "`Client.send` retries three times (src/a.rs:2)."},
        }),
    )
    .await;
    ok(
        &rt,
        "memory_remember",
        json!({"content": "The team ships on Thursdays"}),
    )
    .await;
    // Simulate index text written by an older tokenizer.
    let conn = db(&root);
    conn.execute("update knowledge_entries set search_text = 'zzz'", [])
        .unwrap();
    conn.execute("update semantic_memories set search_text = 'zzz'", [])
        .unwrap();
    conn.execute(
        "insert into knowledge_fts (knowledge_fts) values ('rebuild')",
        [],
    )
    .unwrap();
    conn.execute(
        "insert into semantic_memories_fts (semantic_memories_fts) values ('rebuild')",
        [],
    )
    .unwrap();
    let found = |data: &Value| data["results"].as_array().map_or(0, Vec::len);
    let before = ok(&rt, "search_knowledge", json!({"query": "backoff"})).await;
    assert_eq!(found(&before), 0);
    let plan = ok(&rt, "rebuild_index", json!({"dryRun": true})).await;
    assert_eq!(
        (&plan["knowledge"], &plan["memory"]["stale"]),
        (&json!({"rows": 1, "stale": 1}), &json!(1))
    );
    let done = ok(&rt, "rebuild_index", json!({})).await;
    assert_eq!(done["knowledge"], json!({"rows": 1, "reindexed": 1}));
    assert_eq!(done["memory"]["reindexed"], json!(1));
    let after = ok(&rt, "search_knowledge", json!({"query": "backoff"})).await;
    assert_eq!(found(&after), 1);
    let recalled = ok(&rt, "memory_recall", json!({"query": "Thursdays"})).await;
    assert!(
        recalled.to_string().contains("ships on Thursdays"),
        "{recalled}"
    );
}

#[tokio::test]
async fn progress_is_reported_while_rebuilding() {
    let (_dir, root) = project();
    let rt = ProjectRuntime::open(&root).unwrap();
    let pipeline = rt.pipeline();
    let mut events = pipeline.events().subscribe();
    let caller = Caller::new("cli", alembic_tools::Allowlist::All);
    let out = pipeline
        .execute(ToolCall::new("rebuild_index", json!({}), caller))
        .await;
    assert_eq!(out.status, OutcomeStatus::Ok, "{}", out.text_for_model());
    let mut progress = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let ToolEventKind::Progress { message, fraction } = e.kind {
            progress.push((message, fraction));
        }
    }
    let messages: Vec<&str> = progress.iter().map(|p| p.0.as_str()).collect();
    assert!(
        messages.contains(&"code index: 2/2 files read"),
        "{messages:?}"
    );
    assert!(messages.contains(&"knowledge search index"), "{messages:?}");
    assert_eq!(progress.last().unwrap(), &("done".to_string(), Some(1.0)));
    // Files are read in parallel, so per-file events may arrive out of order; every
    // fraction is still within the whole.
    assert!(
        progress
            .iter()
            .all(|p| p.1.is_some_and(|f| (0.0..=1.0).contains(&f))),
        "{progress:?}"
    );
}

/// The tools this branch adds that a chat agent may not use: each is refused by the
/// allowlist before it runs, and every attempt is in the audit log.
#[tokio::test]
async fn new_tools_are_refused_outside_their_preset_and_audited() {
    let (_dir, root) = project();
    let rt = ProjectRuntime::open(&root).unwrap();
    let tools = [
        ("rebuild_index", json!({})),
        ("query_audit_log", json!({})),
        ("graph_impact_analysis", json!({"recipeId": "x"})),
        ("analyze_code", json!({"code": "x"})),
        ("review_my_output", json!({})),
        ("collect_scan_recipe", json!({"title": "x"})),
    ];
    let caller = rt.caller("agent:chat", Some("chat")).unwrap();
    for (tool, args) in &tools {
        let out: ToolOutcome = rt
            .pipeline()
            .execute(ToolCall::new(*tool, args.clone(), caller.clone()))
            .await;
        assert_eq!(out.status, OutcomeStatus::Blocked, "{tool}");
        assert_eq!(out.rule.as_deref(), Some("allowlist"), "{tool}");
    }
    rt.flush_audit().unwrap();
    let log = ok(
        &rt,
        "query_audit_log",
        json!({"caller": "agent:chat", "limit": 50}),
    )
    .await;
    assert_eq!(
        (&log["stats"]["total"], &log["stats"]["refused"]),
        (&json!(6), &json!(6))
    );
    let mut audited: Vec<String> = log["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tool"].as_str().unwrap().to_string())
        .collect();
    audited.sort();
    let mut expected: Vec<String> = tools.iter().map(|t| t.0.to_string()).collect();
    expected.sort();
    assert_eq!(audited, expected);
}

#[tokio::test]
async fn analyze_code_refuses_a_path_outside_the_project() {
    let (_dir, root) = project();
    let rt = ProjectRuntime::open(&root).unwrap();
    let out = rt
        .call_as_cli("analyze_code", json!({"filePath": "../../etc/passwd"}))
        .await;
    assert_eq!(
        out.status,
        OutcomeStatus::Blocked,
        "{}",
        out.text_for_model()
    );
    let ok_out = ok(&rt, "analyze_code", json!({"filePath": "src/a.rs"})).await;
    assert_eq!(ok_out["language"], json!("rust"));
}
