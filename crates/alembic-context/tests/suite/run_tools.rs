//! `review_my_output` and `collect_scan_recipe` through the pipeline with the memory
//! middlewares: the review is fed the run's real submissions (the reference never supplied
//! them), collected recipes stay in their own run, and every problem is named.

use std::sync::Arc;

use alembic_context::{
    ActiveContextOptions, BudgetProfile, LoopDirectory, LoopMemory, MemoryCoordinator, ScopeId,
    memory_middlewares,
};
use alembic_tools::{
    Allowlist, Caller, EffectClass, OutcomeStatus, Pipeline, PreparedCall, SafetyCheck,
    SafetyDecision, ToolCall, ToolDefinition, ToolModule, ToolOutcome, ToolOutput, ToolRegistry,
    handler_fn,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The project policy lets memory and knowledge writes through; so does this test's.
struct AllowAll;

impl SafetyCheck for AllowAll {
    fn check(&self, _: &PreparedCall) -> SafetyDecision {
        SafetyDecision::Allow
    }
}

struct Fixture {
    pipeline: Arc<Pipeline>,
    runs: [Arc<LoopMemory>; 2],
    _dir: tempfile::TempDir,
}

/// A stand-in for the knowledge crate's submit tool: accepts every candidate.
fn submit_tool() -> ToolDefinition {
    ToolDefinition::new(
        "submit_knowledge",
        "Submit.",
        json!({"type": "object", "properties": {"title": {"type": "string"}}}),
        ToolModule::Lifecycle,
        EffectClass::WritesKnowledge,
        handler_fn(|args: Value, _ctx| async move {
            Ok(ToolOutput::new(
                json!({"status": "submitted", "title": args["title"]}),
                "submitted",
            ))
        }),
    )
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let registry = Arc::new(ToolRegistry::new());
    registry.register(submit_tool()).unwrap();
    let directory = Arc::new(LoopDirectory::default());
    alembic_context::tools::register_tools(&registry, Arc::clone(&directory)).unwrap();
    let runs = ["agent:a", "agent:b"].map(|id| {
        let coordinator = Arc::new(MemoryCoordinator::default());
        let scope = ScopeId::new(format!("{id}:producer"));
        coordinator.open_scope(
            scope.clone(),
            BudgetProfile::Producer,
            ActiveContextOptions::default(),
        );
        let clock: alembic_context::MillisClock = Arc::new(alembic_base::ManualClock::new(1_000));
        let memory = Arc::new(LoopMemory::new(coordinator, scope, None, dir.path(), clock));
        directory.attach(id, Arc::clone(&memory));
        memory
    });
    let mut builder = Pipeline::builder(registry, dir.path()).safety(Arc::new(AllowAll));
    for m in memory_middlewares(directory) {
        builder = builder.middleware(m);
    }
    Fixture {
        pipeline: builder.build(),
        runs,
        _dir: dir,
    }
}

impl Fixture {
    async fn call(&self, who: &str, tool: &str, args: Value) -> ToolOutcome {
        let caller = Caller::new(who, Allowlist::All);
        self.pipeline
            .execute(ToolCall::new(tool, args, caller))
            .await
    }

    async fn data(&self, who: &str, tool: &str, args: Value) -> Value {
        let out = self.call(who, tool, args).await;
        assert_eq!(out.status, OutcomeStatus::Ok, "{}", out.text_for_model());
        out.output.unwrap().data
    }
}

const GOOD_MARKDOWN: &str = "## Retrying requests\n\nEvery request goes through `APIClient.send`, which retries transient failures three times with exponential backoff before it reports an error to the caller (Net/APIClient.swift:42).\n\n```swift\ntry await retry(times: 3) { try await session.data(for: request) }\n```\n";

fn good_candidate() -> Value {
    json!({
        "title": "APIClient retries with exponential backoff",
        "description": "APIClient.send retries transient network failures three times",
        "content": {"markdown": GOOD_MARKDOWN,
                    "pattern": "try await retry(times: 3) { try await session.data(for: request) }"},
        "trigger": "@api-retry",
        "doClause": "Send requests through APIClient.send",
        "kind": "pattern",
    })
}

fn weak_candidate() -> Value {
    json!({
        "title": "Networking helper",
        "description": "This module",
        "content": {"markdown": "Use the helper.", "pattern": "helper.run()"},
        "kind": "pattern",
    })
}

fn recipe(title: &str, trigger: &str, core_code: &str) -> Value {
    json!({
        "title": title,
        "language": "swift",
        "description": "APIClient.send retries transient network failures",
        "content": {"markdown": GOOD_MARKDOWN, "rationale": "flaky mobile networks"},
        "kind": "pattern",
        "trigger": trigger,
        "doClause": "Send requests through APIClient.send",
        "coreCode": core_code,
        "reasoning": {"whyStandard": "every call site uses it", "sources": ["Net/APIClient.swift"]},
    })
}

/// (title, rule ids) of each reviewed submission.
fn issues(data: &Value) -> Vec<(String, Vec<String>)> {
    data["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let rules = d["issues"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["rule"].as_str().unwrap().to_string())
                .collect();
            (d["title"].as_str().unwrap().to_string(), rules)
        })
        .collect()
}

#[tokio::test]
async fn the_review_names_the_submission_that_breaks_the_rules() {
    let f = fixture();
    f.data("agent:a", "submit_knowledge", good_candidate())
        .await;
    f.data("agent:a", "submit_knowledge", weak_candidate())
        .await;
    let out = f.call("agent:a", "review_my_output", json!({})).await;
    let text = out.text_for_model();
    let data = out.output.unwrap().data;
    assert_eq!(data["status"], json!("issues_found"));
    assert_eq!(
        issues(&data),
        vec![
            (
                "APIClient retries with exponential backoff".to_string(),
                vec![]
            ),
            (
                "Networking helper".to_string(),
                [
                    "code_block",
                    "prose_length",
                    "markdown_length",
                    "description_length",
                    "generic_description",
                    "source_annotation",
                    "delivery_fields"
                ]
                .map(String::from)
                .to_vec()
            ),
        ]
    );
    assert!(
        text.contains("1 with issues")
            && text.contains("- \"Networking helper\" (submit_knowledge)"),
        "{text}"
    );
    assert!(!text.contains("- \"APIClient"), "{text}");
    assert!(text.contains("missing trigger, doClause"), "{text}");
}

#[tokio::test]
async fn check_rules_selects_the_rules_and_unknown_ones_are_refused() {
    let f = fixture();
    f.data("agent:a", "submit_knowledge", weak_candidate())
        .await;
    let data = f
        .data(
            "agent:a",
            "review_my_output",
            json!({"check_rules": ["description_length", "code_block"]}),
        )
        .await;
    assert_eq!(
        issues(&data),
        vec![(
            "Networking helper".to_string(),
            vec!["description_length".to_string(), "code_block".to_string()]
        )]
    );
    let out = f
        .call(
            "agent:a",
            "review_my_output",
            json!({"checkRules": ["be_nice"]}),
        )
        .await;
    assert_eq!(out.status, OutcomeStatus::InvalidArguments);
    assert!(
        out.text_for_model().contains("checkRules"),
        "{}",
        out.text_for_model()
    );
}

#[tokio::test]
async fn a_run_without_submissions_and_a_caller_without_a_run() {
    let f = fixture();
    f.data("agent:a", "submit_knowledge", weak_candidate())
        .await;
    // Run b submitted nothing: run a's submissions are not its own.
    let data = f.data("agent:b", "review_my_output", json!({})).await;
    assert_eq!(data["status"], json!("no_submissions"));
    let out = f.call("mcp:ide", "review_my_output", json!({})).await;
    assert_eq!(out.status, OutcomeStatus::Error);
    assert!(
        out.text_for_model()
            .contains("review_my_output works only inside an agent run"),
        "{}",
        out.text_for_model()
    );
}

#[tokio::test]
async fn a_valid_recipe_is_collected_into_its_run_with_defaults() {
    let f = fixture();
    let core = "try await retry(times: 3) { try await send(request) }";
    let data = f
        .data(
            "agent:a",
            "collect_scan_recipe",
            recipe("APIClient retry", "@api-retry", core),
        )
        .await;
    assert_eq!(
        (&data["status"], &data["collected"]),
        (&json!("collected"), &json!(1))
    );
    let collected = f.runs[0].results.recipes();
    assert_eq!(collected.len(), 1);
    let r = &collected[0];
    assert_eq!(
        (
            &r["category"],
            &r["knowledgeType"],
            &r["complexity"],
            &r["scope"]
        ),
        (
            &json!("Utility"),
            &json!("code-pattern"),
            &json!("intermediate"),
            &json!("project-specific")
        )
    );
    assert_eq!(r["reasoning"]["confidence"], json!(0.8));
    assert!(
        f.runs[1].results.recipes().is_empty(),
        "run b collected nothing"
    );
    // The same recipe in another run is that run's own.
    f.data(
        "agent:b",
        "collect_scan_recipe",
        recipe("APIClient retry", "@api-retry", core),
    )
    .await;
    assert_eq!(f.runs[1].results.recipes().len(), 1);
    // A collected recipe is a submission of the run, so the review sees it.
    let review = f.data("agent:a", "review_my_output", json!({})).await;
    assert_eq!(review["checked"], json!(1));
}

#[tokio::test]
async fn invalid_and_duplicate_recipes_are_rejected_with_every_problem() {
    let f = fixture();
    let mut bad = recipe("  ", "api-retry", "x()");
    bad["reasoning"]["sources"] = json!(["/etc/passwd"]);
    let data = f.data("agent:a", "collect_scan_recipe", bad).await;
    assert_eq!(
        (&data["status"], &data["reason"]),
        (&json!("rejected"), &json!("validation_failed"))
    );
    assert_eq!(
        data["errors"],
        json!([
            "title is empty",
            "trigger \"api-retry\" must start with '@' and name the recipe, e.g. @retry-policy",
            "coreCode has 3 non-blank characters; at least 10 are needed",
            "source \"/etc/passwd\" is not a project-relative path (no leading '/', no '..')"
        ])
    );
    let core = "try await retry(times: 3) { try await send(request) }";
    f.data(
        "agent:a",
        "collect_scan_recipe",
        recipe("APIClient retry", "@api-retry", core),
    )
    .await;
    // Another title and code, the same trigger: the run refuses it.
    let dup = f
        .data(
            "agent:a",
            "collect_scan_recipe",
            recipe(
                "Upload retry",
                "@api-retry",
                "uploader.retry(times: 5, backoff: .linear)",
            ),
        )
        .await;
    assert_eq!(
        (&dup["status"], &dup["reason"]),
        (&json!("rejected"), &json!("duplicate"))
    );
    assert!(
        dup["error"]
            .as_str()
            .unwrap()
            .contains("same trigger (\"APIClient retry\")")
    );
    // A missing required field is refused by the schema, naming it.
    let out = f
        .call("agent:a", "collect_scan_recipe", json!({"title": "x"}))
        .await;
    assert_eq!(out.status, OutcomeStatus::InvalidArguments);
    assert_eq!(f.runs[0].results.recipes().len(), 1);
}

#[tokio::test]
async fn collecting_needs_a_run() {
    let f = fixture();
    let out = f
        .call(
            "mcp:ide",
            "collect_scan_recipe",
            recipe("APIClient retry", "@api-retry", "try await retry(times: 3)"),
        )
        .await;
    assert_eq!(out.status, OutcomeStatus::Error);
    assert!(
        out.text_for_model()
            .contains("works only inside an agent run")
    );
}
