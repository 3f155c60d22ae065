//! `enrich_candidate` and `refine_bootstrap_candidates` through a pipeline with an audit log,
//! against the fake OpenAI server, and without a provider.

use std::sync::Arc;

use alembic_knowledge::tools::{ANALYSIS_TOOL_NAMES, ProviderSlot, register_analysis_tools};
use alembic_knowledge::{KnowledgeService, NewEntry, Status, register_tools};
use alembic_llm::fake::{FakeServer, FakeTurn};
use alembic_llm::{ConfigError, ProviderKind};
use alembic_safety::tools::SafetyServices;
use alembic_tools::{Allowlist, AuditLog, Caller, Pipeline, ToolCall, ToolOutcome, ToolRegistry};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::store;

struct Setup {
    dir: tempfile::TempDir,
    kb: Arc<KnowledgeService>,
    pipeline: Arc<Pipeline>,
    audit: Arc<AuditLog>,
}

fn setup(llm: ProviderSlot) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let kb = Arc::new(KnowledgeService::from_store(dir.path(), store()));
    let safety = Arc::new(SafetyServices::for_root(dir.path()).unwrap());
    register_tools(&registry, Arc::clone(&kb), safety).unwrap();
    register_analysis_tools(&registry, Arc::clone(&kb), llm).unwrap();
    let audit = Arc::new(AuditLog::open(&dir.path().join("audit.db")).unwrap());
    let policy = alembic_safety::PolicySafetyCheck::for_root(dir.path()).unwrap();
    let pipeline = Pipeline::builder(registry, dir.path())
        .safety(Arc::new(policy))
        .audit(Arc::clone(&audit) as Arc<dyn alembic_tools::AuditSink>)
        .build();
    Setup {
        dir,
        kb,
        pipeline,
        audit,
    }
}

impl Setup {
    fn bootstrap_candidate(&self, title: &str, dimension: &str) -> String {
        let mut extra = serde_json::Map::new();
        extra.insert("source".into(), json!("bootstrap"));
        extra.insert("dimensionId".into(), json!(dimension));
        let new = NewEntry {
            title: title.into(),
            description: "measured".into(),
            content: format!("{title}: found in src/lib.rs:3"),
            rationale: "Measured by the deterministic bootstrap.".into(),
            tags: vec!["bootstrap".into(), format!("dimension:{dimension}")],
            sources: vec!["src/lib.rs".into()],
            extra,
            ..NewEntry::default()
        };
        self.kb
            .with(|kb| kb.create(&new, Status::Submitted, "bootstrap", None))
            .unwrap()
            .id
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        let caller = Caller::new(
            "agent:test",
            Allowlist::only(ANALYSIS_TOOL_NAMES.iter().copied()),
        );
        self.pipeline
            .execute(ToolCall::new(tool, args, caller))
            .await
    }

    fn audited(&self) -> Vec<(String, String)> {
        self.audit.flush().unwrap();
        let conn = rusqlite::Connection::open(self.dir.path().join("audit.db")).unwrap();
        alembic_tools::audit::tail(&conn, 20)
            .unwrap()
            .into_iter()
            .map(|r| (r.entry.tool, r.entry.verdict))
            .collect()
    }
}

fn answer(summary: &str, tags: &[&str]) -> FakeTurn {
    let body = json!({"summary": summary, "rationale": "Keeps layers apart.", "tags": tags});
    FakeTurn::text(format!("```json\n{body}\n```"))
}

#[tokio::test]
async fn enrich_rewrites_summary_rationale_and_tags_and_keeps_the_rest() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    let s = setup(Ok(Arc::new(server.provider().unwrap())));
    let id = s.bootstrap_candidate("Three module layers", "architecture");
    server.push(answer(
        "Modules form three layers: cli, runtime, core.",
        &["Layers", "modules"],
    ));

    let out = s.call("enrich_candidate", json!({"candidateId": id})).await;
    assert!(out.is_ok(), "{}", out.text_for_model());
    let e = s.kb.with(|kb| kb.get(&id)).unwrap();
    assert_eq!(
        e.description,
        "Modules form three layers: cli, runtime, core."
    );
    assert_eq!(e.rationale, "Keeps layers apart.");
    assert_eq!(
        e.tags,
        ["bootstrap", "dimension:architecture", "layers", "modules"]
    );
    assert_eq!(e.content, "Three module layers: found in src/lib.rs:3");
    assert_eq!(e.sources, ["src/lib.rs"]);
    assert_eq!(e.status, Status::Submitted);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].body["max_tokens"]
            .as_u64()
            .or(requests[0].body["max_completion_tokens"].as_u64()),
        Some(600)
    );
    assert!(requests[0].body.to_string().contains("Three module layers"));
    assert_eq!(
        s.audited(),
        [("enrich_candidate".to_string(), "ok".to_string())]
    );
}

#[tokio::test]
async fn an_invalid_answer_changes_nothing_and_says_why() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    let s = setup(Ok(Arc::new(server.provider().unwrap())));
    let id = s.bootstrap_candidate("Errors are enums", "error-handling");
    let before = s.kb.with(|kb| kb.get(&id)).unwrap();
    server.push(FakeTurn::text(
        "{\"summary\": \"ok\", \"rationale\": \"ok\", \"tags\": []}",
    ));
    let out = s.call("enrich_candidate", json!({"candidateId": id})).await;
    assert!(!out.is_ok());
    assert!(
        out.text_for_model()
            .contains("was not used: \"tags\" is empty: 1 to 8 tags are accepted"),
        "{}",
        out.text_for_model()
    );
    assert_eq!(s.kb.with(|kb| kb.get(&id)).unwrap(), before);
}

#[tokio::test]
async fn refine_rewrites_only_the_bootstrap_candidates_of_the_dimension() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    let s = setup(Ok(Arc::new(server.provider().unwrap())));
    let a1 = s.bootstrap_candidate("Layered modules", "architecture");
    let a2 = s.bootstrap_candidate("Entry point in main", "architecture");
    let t = s.bootstrap_candidate("Tests beside code", "testing");
    let person =
        s.kb.with(|kb| {
            kb.create(
                &NewEntry {
                    title: "Hand written".into(),
                    ..NewEntry::default()
                },
                Status::Submitted,
                "agent",
                None,
            )
        })
        .unwrap()
        .id;
    server.push(answer("first", &["a"]));
    server.push(FakeTurn::text("no json here"));

    let out = s
        .call(
            "refine_bootstrap_candidates",
            json!({"dimension": "architecture"}),
        )
        .await;
    assert!(out.is_ok(), "{}", out.text_for_model());
    let data = out.output.unwrap().data;
    assert_eq!(data["considered"], 2);
    assert_eq!(data["refined"].as_array().unwrap().len(), 1);
    assert_eq!(data["failed"].as_array().unwrap().len(), 1);
    assert_eq!(server.requests().len(), 2);
    let described: Vec<String> = [&a1, &a2, &t, &person]
        .iter()
        .map(|id| s.kb.with(|kb| kb.get(id)).unwrap().description)
        .collect();
    assert_eq!(described.iter().filter(|d| *d == "first").count(), 1);
    assert_eq!(described[2], "measured");
    assert_eq!(described[3], "");
}

#[tokio::test]
async fn without_a_provider_both_tools_say_how_to_configure_one() {
    let why = ConfigError::NothingConfigured { config_path: None }.to_string();
    let s = setup(Err(why));
    let id = s.bootstrap_candidate("Layered modules", "architecture");
    for (tool, args) in [
        ("enrich_candidate", json!({"candidateId": id})),
        ("refine_bootstrap_candidates", json!({})),
    ] {
        let out = s.call(tool, args).await;
        assert!(!out.is_ok());
        let text = out.text_for_model();
        assert!(
            text.contains("this tool needs an llm provider: no llm provider is configured"),
            "{text}"
        );
        assert!(text.contains("OPENAI_API_KEY"), "{text}");
    }
    assert_eq!(s.kb.with(|kb| kb.get(&id)).unwrap().description, "measured");
    let audited = s.audited();
    assert_eq!(audited.len(), 2, "{audited:?}");
}
