//! The memory middlewares inside the real alembic-tools pipeline: the order contract, the
//! cache (after the safety gate, keyed on content hashes), submit dedup before execution, and
//! the after-hooks feeding working memory and the tracker.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use alembic_context::{
    ActiveContextOptions, BudgetProfile, ExplorationBudget, ExplorationTracker, IsNew, IsSubmit,
    LoopDirectory, LoopMemory, MemoryCoordinator, ScopeId, SessionStore, Strategy,
    memory_middlewares,
};
use alembic_tools::{
    Allowlist, Caller, EffectClass, OutcomeStatus, Pipeline, PreparedCall, SafetyCheck,
    SafetyDecision, ToolCall, ToolDefinition, ToolModule, ToolOutput, ToolRegistry, handler_fn,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Allows everything unless `deny_search` is set.
#[derive(Default)]
struct Switch {
    deny_search: AtomicBool,
}

impl SafetyCheck for Switch {
    fn check(&self, call: &PreparedCall) -> SafetyDecision {
        if self.deny_search.load(Ordering::SeqCst) && call.name() == "search_project_code" {
            return SafetyDecision::Deny {
                reason: "search disabled".into(),
                rule: "test.switch".into(),
            };
        }
        SafetyDecision::Allow
    }
}

struct Fixture {
    pipeline: Arc<Pipeline>,
    coordinator: Arc<MemoryCoordinator>,
    tracker: Arc<Mutex<ExplorationTracker>>,
    scope: ScopeId,
    safety: Arc<Switch>,
    searches: Arc<AtomicUsize>,
    reads: Arc<AtomicUsize>,
    written: Arc<Mutex<Vec<String>>>,
    dir: tempfile::TempDir,
}

fn tool(
    name: &str,
    effect: EffectClass,
    handler: Arc<dyn alembic_tools::ToolHandler>,
) -> ToolDefinition {
    let schema = json!({"type": "object", "properties": {
        "pattern": {"type": "string"}, "filePath": {"type": "string"}, "title": {"type": "string"},
        "content": {"type": "object"}, "finding": {"type": "string"}
    }});
    ToolDefinition::new(
        name,
        format!("test tool {name}"),
        schema,
        ToolModule::Query,
        effect,
        handler,
    )
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.swift"), "let a = 1\n").unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let searches = Arc::new(AtomicUsize::new(0));
    let reads = Arc::new(AtomicUsize::new(0));
    let written = Arc::new(Mutex::new(Vec::new()));
    let s = searches.clone();
    registry
        .register(tool(
            "search_project_code",
            EffectClass::ReadOnly,
            handler_fn(move |args: Value, _ctx| {
                let s = s.clone();
                async move {
                    s.fetch_add(1, Ordering::SeqCst);
                    let p = args["pattern"].as_str().unwrap_or("").to_string();
                    Ok(ToolOutput::new(
                        json!({"matches": [{"file": format!("{p}.swift"), "line": 1}]}),
                        format!("1 match for {p}"),
                    ))
                }
            }),
        ))
        .unwrap();
    let r = reads.clone();
    let root = dir.path().to_path_buf();
    registry
        .register(tool(
            "read_project_file",
            EffectClass::ReadsProjectFiles,
            handler_fn(move |args: Value, _ctx| {
                let r = r.clone();
                let root = root.clone();
                async move {
                    r.fetch_add(1, Ordering::SeqCst);
                    let path = args["filePath"].as_str().unwrap_or("").to_string();
                    let content = std::fs::read_to_string(root.join(&path)).unwrap_or_default();
                    Ok(ToolOutput::new(
                        json!({"path": path, "content": content}),
                        content,
                    ))
                }
            }),
        ))
        .unwrap();
    let w = written.clone();
    registry
        .register(tool(
            "submit_knowledge",
            EffectClass::WritesKnowledge,
            handler_fn(move |args: Value, _ctx| {
                let w = w.clone();
                async move {
                    let title = args["title"].as_str().unwrap_or("").to_string();
                    w.lock().unwrap().push(title.clone());
                    Ok(ToolOutput::new(
                        json!({"status": "created"}),
                        format!("created {title}"),
                    ))
                }
            }),
        ))
        .unwrap();
    registry
        .register(tool(
            "write_project_file",
            EffectClass::WritesProjectFiles,
            handler_fn(|_args: Value, _ctx| async move {
                Ok(ToolOutput::new(json!({"ok": true}), "written"))
            }),
        ))
        .unwrap();

    let coordinator = Arc::new(
        MemoryCoordinator::default().with_session(Arc::new(Mutex::new(SessionStore::new()))),
    );
    let scope = ScopeId::new("networking:bootstrap");
    coordinator.open_scope(
        scope.clone(),
        BudgetProfile::Analyst,
        ActiveContextOptions::default(),
    );
    coordinator
        .with_active(&scope, |ac| ac.start_round(1))
        .unwrap();
    let tracker = Arc::new(Mutex::new(ExplorationTracker::new(
        Strategy::Bootstrap,
        ExplorationBudget::default(),
    )));
    let directory = Arc::new(LoopDirectory::default());
    alembic_context::tools::register_tools(&registry, Arc::clone(&directory)).unwrap();
    let clock: alembic_context::MillisClock = Arc::new(alembic_base::ManualClock::new(1_000));
    let memory = LoopMemory::new(
        coordinator.clone(),
        scope.clone(),
        Some(tracker.clone()),
        dir.path(),
        clock,
    );
    directory.attach("agent:networking", Arc::new(memory));
    let safety = Arc::new(Switch::default());
    let mut builder = Pipeline::builder(registry, dir.path()).safety(safety.clone());
    // Added in reverse on purpose: the slots decide the order.
    for m in memory_middlewares(directory).into_iter().rev() {
        builder = builder.middleware(m);
    }
    Fixture {
        pipeline: builder.build(),
        coordinator,
        tracker,
        scope,
        safety,
        searches,
        reads,
        written,
        dir,
    }
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::new(name, args, Caller::new("agent:networking", Allowlist::All))
}

fn run(f: &Fixture, name: &str, args: Value) -> alembic_tools::ToolOutcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(f.pipeline.execute(call(name, args)))
}

#[test]
fn middlewares_run_in_the_slot_order() {
    let f = fixture();
    assert_eq!(
        f.pipeline.middleware_names(),
        vec![
            "allowlist_gate",
            "safety_gate",
            "cache_check",
            "submit_dedup",
            "observation_record",
            "tracker_signal",
            "trace_record"
        ]
    );
}

#[test]
fn the_cache_answers_only_after_the_safety_gate_allowed_the_call() {
    let f = fixture();
    let first = run(&f, "search_project_code", json!({"pattern": "URLSession"}));
    assert!(!first.metadata.cache_hit);
    let second = run(&f, "search_project_code", json!({"pattern": "URLSession"}));
    assert!(second.metadata.cache_hit);
    assert_eq!(second.text_for_model(), "1 match for URLSession");
    assert_eq!(f.searches.load(Ordering::SeqCst), 1);
    f.safety.deny_search.store(true, Ordering::SeqCst);
    let denied = run(&f, "search_project_code", json!({"pattern": "URLSession"}));
    assert_eq!(
        (denied.status, denied.metadata.cache_hit),
        (OutcomeStatus::Blocked, false)
    );
}

#[test]
fn reads_are_cached_by_content_hash_and_side_effects_clear_the_cache() {
    let f = fixture();
    run(&f, "read_project_file", json!({"filePath": "a.swift"}));
    assert!(
        run(&f, "read_project_file", json!({"filePath": "a.swift"}))
            .metadata
            .cache_hit
    );
    std::fs::write(f.dir.path().join("a.swift"), "let a = 2\n").unwrap();
    let changed = run(&f, "read_project_file", json!({"filePath": "a.swift"}));
    assert!(!changed.metadata.cache_hit);
    assert_eq!(changed.text_for_model(), "let a = 2\n");
    assert_eq!(f.reads.load(Ordering::SeqCst), 2);
    run(&f, "search_project_code", json!({"pattern": "x"}));
    run(&f, "write_project_file", json!({}));
    assert!(
        !run(&f, "search_project_code", json!({"pattern": "x"}))
            .metadata
            .cache_hit
    );
}

#[test]
fn a_duplicate_submission_is_refused_before_it_is_written() {
    let f = fixture();
    let code = json!({"pattern": "let client = APIClient.shared\nclient.send(request)"});
    assert!(
        run(
            &f,
            "submit_knowledge",
            json!({"title": "Shared client", "content": code})
        )
        .metadata
        .extensions
        .get::<IsSubmit>()
            == Some(&IsSubmit(true))
    );
    let dup = run(
        &f,
        "submit_knowledge",
        json!({"title": "shared client ", "content": {}}),
    );
    assert_eq!(dup.status, OutcomeStatus::Blocked);
    assert_eq!(dup.rule.as_deref(), Some("submit_dedup.title"));
    assert!(dup.text_for_model().starts_with("⚠ duplicate submission"));
    let same_code = run(
        &f,
        "submit_knowledge",
        json!({"title": "Other", "content": {"pattern": "let client = apiclient.shared // again\nclient.send(request)"}}),
    );
    assert_eq!(same_code.rule.as_deref(), Some("submit_dedup.pattern"));
    assert_eq!(*f.written.lock().unwrap(), vec!["Shared client"]);
    // the tracker counted one submit, not three
    assert_eq!(f.tracker.lock().unwrap().metrics().submit_count, 1);
}

#[test]
fn after_hooks_feed_working_memory_then_the_tracker_then_the_trace() {
    let f = fixture();
    let out = run(&f, "search_project_code", json!({"pattern": "Alamofire"}));
    assert_eq!(out.metadata.extensions.get::<IsNew>(), Some(&IsNew(true)));
    let again = run(&f, "search_project_code", json!({"pattern": "Alamofire"}));
    assert_eq!(
        again.metadata.extensions.get::<IsNew>(),
        Some(&IsNew(false)),
        "a cached repeat brings nothing new"
    );
    f.coordinator
        .with_active(&f.scope, |ac| {
            assert_eq!(ac.total_observations(), 2);
            ac.end_round();
            let round = &ac.rounds()[0];
            let flags: Vec<bool> = round.observations.iter().map(|o| o.got_new_info).collect();
            // TraceRecord saw the is_new flag TrackerSignal set
            assert_eq!(flags, vec![true, false]);
        })
        .unwrap();
    assert_eq!(f.tracker.lock().unwrap().metrics().total_tool_calls, 2);
}

#[test]
fn memory_tools_work_through_the_pipeline() {
    let f = fixture();
    let noted = run(
        &f,
        "note_finding",
        json!({"finding": "Retries use backoff", "evidence": ["Net/Retry.swift:9"], "importance": 8}),
    );
    assert_eq!(
        noted.text_for_model(),
        "📌 noted [8/10]: \"Retries use backoff\" — 1 key findings in working memory"
    );
    let none = run(&f, "get_previous_analysis", json!({}));
    assert_eq!(
        none.text_for_model(),
        "No previous analysis in this session."
    );
    let report = alembic_context::DimensionReport {
        dim_id: "architecture".into(),
        completed_at_ms: 1,
        findings: vec![alembic_context::SessionFinding {
            finding: "APIClient is shared".into(),
            evidence: "Net/APIClient.swift:3".into(),
            importance: 8,
        }],
        ..Default::default()
    };
    f.coordinator
        .session()
        .unwrap()
        .lock()
        .unwrap()
        .store_report(report);
    let analysis = run(&f, "get_previous_analysis", json!({}));
    assert!(
        analysis.text_for_model().contains("### architecture"),
        "{}",
        analysis.text_for_model()
    );
    let evidence = run(&f, "get_previous_evidence", json!({"query": "apiclient"}));
    insta::assert_snapshot!("previous_evidence", evidence.text_for_model());
    // outside an agent loop, note_finding explains itself
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cli = rt.block_on(f.pipeline.execute(ToolCall::new(
        "note_finding",
        json!({"finding": "x"}),
        Caller::new("cli", Allowlist::All),
    )));
    assert_eq!(
        cli.text_for_model(),
        "error (error): working memory is not available: note_finding works only inside an agent run"
    );
}
