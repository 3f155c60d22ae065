//! `query_audit_log` through the pipeline: filters, stats, paging, refusal by the allowlist,
//! and it never writes the log it reads (the chain still verifies and only the pipeline's
//! own records are added).

use std::sync::Arc;

use alembic_tools::audit::{self, AuditReader};
use alembic_tools::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::suite::support::tool_with;

struct Project {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    log: Arc<AuditLog>,
    pipeline: Arc<Pipeline>,
}

fn project() -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(tool_with(
            "ok_tool",
            EffectClass::ReadOnly,
            handler_fn(|_, _| async { Ok(ToolOutput::new(json!({}), "fine")) }),
        ))
        .unwrap();
    registry
        .register(tool_with(
            "failing_tool",
            EffectClass::ReadOnly,
            handler_fn(|_, _| async { Err(ToolError::failed("disk on fire")) }),
        ))
        .unwrap();
    audit::register_tools(&registry, Arc::new(AuditReader::for_project(&root))).unwrap();
    let log = Arc::new(AuditLog::open_project(&root).unwrap());
    let pipeline = Pipeline::builder(registry, root.clone())
        .audit(log.clone() as Arc<dyn AuditSink>)
        .build();
    Project {
        _dir: dir,
        root,
        log,
        pipeline,
    }
}

impl Project {
    async fn call(&self, caller: &str, allow: &[&str], tool: &str, args: Value) -> ToolOutcome {
        let caller = Caller::new(caller, Allowlist::only(allow.iter().copied()));
        self.pipeline
            .execute(ToolCall::new(tool, args, caller))
            .await
    }

    async fn query(&self, args: Value) -> Value {
        self.log.flush().unwrap();
        let out = self
            .call("auditor", &["query_audit_log"], "query_audit_log", args)
            .await;
        assert_eq!(out.status, OutcomeStatus::Ok, "{}", out.text_for_model());
        out.output.unwrap().data
    }

    /// Three ok calls by "alice", one failed call, and two calls refused by the allowlist.
    async fn seed(&self) {
        for _ in 0..3 {
            self.call("alice", &["ok_tool"], "ok_tool", json!({})).await;
        }
        self.call("bob", &["failing_tool"], "failing_tool", json!({}))
            .await;
        for _ in 0..2 {
            self.call("mallory", &[], "ok_tool", json!({})).await;
        }
    }
}

fn verdicts(data: &Value) -> Vec<(String, String, String)> {
    data["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["caller"].as_str().unwrap().to_string(),
                r["tool"].as_str().unwrap().to_string(),
                r["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn stats_count_refused_and_failed_calls() {
    let p = project();
    p.seed().await;
    let data = p.query(json!({})).await;
    let stats = &data["stats"];
    assert_eq!(
        (&stats["total"], &stats["refused"], &stats["failed"]),
        (&json!(6), &json!(2), &json!(1))
    );
    assert_eq!(
        stats["byVerdict"],
        json!({"ok": 3, "error": 1, "blocked": 2})
    );
    assert!(stats["p50Ms"].as_f64().unwrap() >= 0.0);
    assert!(stats["p95Ms"].as_f64().unwrap() >= stats["p50Ms"].as_f64().unwrap());
    // Newest first.
    assert_eq!(
        verdicts(&data)[0],
        ("mallory".into(), "ok_tool".into(), "blocked".into())
    );
}

#[tokio::test]
async fn filters_by_caller_tool_verdict_and_outcome() {
    let p = project();
    p.seed().await;
    let by_caller = p.query(json!({"caller": "alice"})).await;
    assert_eq!(by_caller["stats"]["total"], json!(3));
    assert!(verdicts(&by_caller).iter().all(|v| v.0 == "alice"));
    let refused = p.query(json!({"verdict": "blocked"})).await;
    assert_eq!(refused["stats"]["total"], json!(2));
    assert_eq!(refused["records"][0]["rule"], json!("allowlist"));
    let failing = p
        .query(json!({"tool": "failing_tool", "outcome": "disk on fire"}))
        .await;
    assert_eq!(
        verdicts(&failing),
        vec![("bob".into(), "failing_tool".into(), "error".into())]
    );
    let none = p.query(json!({"outcome": "no such text"})).await;
    assert_eq!(none["stats"]["total"], json!(0));
    assert_eq!(none["stats"]["p50Ms"], Value::Null);
}

#[tokio::test]
async fn time_range_filters_by_timestamp() {
    let p = project();
    p.seed().await;
    let future = p.query(json!({"since": "2999-01-01"})).await;
    assert_eq!(future["stats"]["total"], json!(0));
    let past = p
        .query(json!({"since": "2000-01-01T00:00:00Z", "until": "2999-12-31"}))
        .await;
    // The six seeded calls and the first query's own record.
    assert_eq!(past["stats"]["total"], json!(7));
    let bad = p
        .call(
            "auditor",
            &["query_audit_log"],
            "query_audit_log",
            json!({"since": "last tuesday"}),
        )
        .await;
    assert_eq!(bad.status, OutcomeStatus::InvalidArguments);
    assert!(
        bad.text_for_model()
            .contains("argument \"since\": expected an RFC 3339 UTC time"),
        "{}",
        bad.text_for_model()
    );
}

#[tokio::test]
async fn pages_continue_with_before_seq() {
    let p = project();
    p.seed().await;
    let first = p.query(json!({"caller": "alice", "limit": 2})).await;
    assert_eq!(first["records"].as_array().unwrap().len(), 2);
    let next = first["nextBeforeSeq"].clone();
    assert!(next.is_i64(), "{first}");
    let second = p
        .query(json!({"caller": "alice", "limit": 2, "beforeSeq": next}))
        .await;
    assert_eq!(second["records"].as_array().unwrap().len(), 1);
    assert_eq!(second["nextBeforeSeq"], Value::Null);
    // Stats cover the whole match, not the page.
    assert_eq!(second["stats"]["total"], json!(3));
    let seqs: Vec<i64> = [&first, &second]
        .iter()
        .flat_map(|d| d["records"].as_array().unwrap().clone())
        .map(|r| r["seq"].as_i64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] > w[1]), "{seqs:?}");
}

#[tokio::test]
async fn a_caller_without_the_tool_is_refused_and_audited() {
    let p = project();
    let out = p
        .call("agent", &["ok_tool"], "query_audit_log", json!({}))
        .await;
    assert_eq!(out.status, OutcomeStatus::Blocked);
    let data = p.query(json!({"tool": "query_audit_log"})).await;
    assert_eq!(
        verdicts(&data),
        vec![("agent".into(), "query_audit_log".into(), "blocked".into())]
    );
}

#[tokio::test]
async fn reading_never_writes_the_log() {
    let p = project();
    p.seed().await;
    for _ in 0..3 {
        p.query(json!({"verdict": "ok"})).await;
    }
    p.log.flush().unwrap();
    let conn = audit::open_audit_db(&alembic_store::project_db_path(&p.root)).unwrap();
    let report = audit::verify(&conn).unwrap();
    // Six seeded calls plus the three queries' own pipeline records, nothing else.
    assert_eq!((report.records, report.first_break), (9, None));
}

#[tokio::test]
async fn a_project_without_a_log_reads_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let reader = AuditReader::for_project(dir.path());
    let page = reader.query(&audit::AuditQuery::default()).unwrap();
    assert_eq!((page.stats.total, page.records.len()), (0, 0));
    assert!(!alembic_store::project_db_path(dir.path()).exists());
}
