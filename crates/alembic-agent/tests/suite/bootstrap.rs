//! The LLM path of bootstrap dimensions against the fake OpenAI server: two tiers in one
//! shared SessionStore. Tier 2 sees what tier 1 found, a duplicate submission in the second
//! dimension is refused by SubmitDedup, and the session cache serves a repeated search.

use std::sync::Arc;

use alembic_agent::bootstrap::{
    DimensionBrief, DimensionRun, SharedSession, finish_tier, new_session,
};
use alembic_agent::{AgentRuntime, AgentTools, StageLimits};
use alembic_context::LoopDirectory;
use alembic_knowledge::{KnowledgeService, KnowledgeStore};
use alembic_llm::fake::{FakeReply, FakeServer, FakeTurn, RecordedRequest};
use alembic_llm::{LlmProvider, ProviderKind};
use alembic_tools::{Pipeline, PresetCatalog, ToolRegistry};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{options, project, user_messages};

pub const TITLE: &str = "Payment data goes through a repository protocol";
const TIER1_FINDING: &str = "PaymentCoordinator owns a PaymentRepository";

/// Code, context, meta and knowledge tools over `root`, with the project's safety policy.
fn tools(root: &std::path::Path) -> AgentTools {
    let registry = Arc::new(ToolRegistry::new());
    let code = Arc::new(alembic_code::CodeService::new(root).unwrap());
    alembic_code::register_tools(&registry, code).unwrap();
    let loops = Arc::new(LoopDirectory::default());
    alembic_context::tools::register_tools(&registry, Arc::clone(&loops)).unwrap();
    alembic_tools::meta::register_tools(&registry).unwrap();
    let kb = Arc::new(KnowledgeService::from_store(
        root,
        KnowledgeStore::open_in_memory().unwrap(),
    ));
    let safety = Arc::new(alembic_safety::tools::SafetyServices::for_root(root).unwrap());
    alembic_knowledge::register_tools(&registry, kb, safety).unwrap();
    let policy = Arc::new(alembic_safety::PolicySafetyCheck::for_root(root).unwrap());
    AgentTools::build(
        Pipeline::builder(registry, root),
        loops,
        policy,
        PresetCatalog::builtin(),
    )
    .unwrap()
}

/// The scripted model: every analyst searches for "Repository" first (the same call in each
/// dimension) and notes a finding of its own dimension; then the first dimension reads a file
/// and the second asks for the evidence earlier dimensions recorded. Every producer submits
/// the same title once; requests without tools get a report.
pub fn script(req: &RecordedRequest) -> FakeReply {
    let tools = req.offered_tools();
    let task = user_messages(req).first().cloned().unwrap_or_default();
    let results = req.tool_results();
    if tools.is_empty() {
        return FakeTurn::text("## Report\nPayment keeps its data behind a repository.").into();
    }
    if tools.iter().any(|t| t == "note_finding") {
        let finding = if task.contains("(architecture)") {
            TIER1_FINDING
        } else {
            "RemotePaymentRepository implements PaymentRepository"
        };
        let turn = match results.len() {
            0 => FakeTurn::new().tool_call("s1", "search_project_code", json!({"pattern": "Repository"})),
            1 => FakeTurn::new().tool_call("n1", "note_finding", json!({"finding": finding, "evidence": "Payment/PaymentCoordinator.swift:2", "importance": 8})),
            _ if !task.contains("(architecture)") => FakeTurn::new().tool_call("e1", "get_previous_evidence", json!({"query": "PaymentCoordinator"})),
            _ => FakeTurn::new().tool_call("r1", "read_project_file", json!({"filePath": "Payment/PaymentRepository.swift"})),
        };
        return turn.with_usage(100, 10).into();
    }
    if results.is_empty() {
        let args = json!({"title": TITLE, "content": {"markdown": "Coordinators reach payment data only through the PaymentRepository protocol.", "pattern": "protocol PaymentRepository { func load() }"}, "sources": ["Payment/PaymentRepository.swift"]});
        return FakeTurn::new()
            .tool_call("k1", "submit_knowledge", args)
            .with_usage(100, 10)
            .into();
    }
    FakeTurn::text("Submitted what this dimension found.").into()
}

pub fn brief(id: &str, tier: usize) -> DimensionBrief {
    DimensionBrief {
        id: id.into(),
        label: id.replace('-', " "),
        guide: format!("Find the {id} of the Payment module."),
        knowledge_types: vec!["code-pattern".into(), "architecture".into()],
        tier,
    }
}

pub fn agent(server: &FakeServer, root: &std::path::Path) -> AgentRuntime {
    let provider: Arc<dyn LlmProvider> = Arc::new(server.provider().unwrap());
    let mut opts = options();
    opts.limits = StageLimits {
        analyst_iterations: 3,
        producer_iterations: 2,
        ..StageLimits::default()
    };
    AgentRuntime::new(provider, tools(root), None, opts)
}

async fn two_tiers(shared: bool) -> (FakeServer, Vec<DimensionRun>) {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.respond_with(script);
    let dir = project();
    let agent = agent(&server, dir.path());
    let cancel = CancellationToken::new();
    let first: SharedSession = new_session();
    let tier1 = agent
        .run_dimension(&first, &brief("architecture", 1), &[], &cancel)
        .await
        .unwrap();
    let reflection = finish_tier(&first, 1, &["architecture"]);
    let second = if shared {
        Arc::clone(&first)
    } else {
        new_session()
    };
    let prior = if shared { vec![reflection] } else { Vec::new() };
    let tier2 = agent
        .run_dimension(&second, &brief("design-patterns", 2), &prior, &cancel)
        .await
        .unwrap();
    (server, vec![tier1, tier2])
}

#[tokio::test]
async fn tier_two_builds_on_tier_one_in_one_session() {
    let (server, runs) = two_tiers(true).await;
    let (tier1, tier2) = (&runs[0], &runs[1]);
    assert_eq!(tier1.candidates, vec![TITLE.to_string()]);
    assert_eq!(tier1.findings[0].finding, TIER1_FINDING);

    // What tier 1 found reaches tier 2: in its task (the reflection) and in its system prompt
    // (the session's results of earlier dimensions).
    let requests = server.requests();
    let tier2_first = requests
        .iter()
        .find(|r| {
            user_messages(r)
                .first()
                .is_some_and(|t| t.contains("(design-patterns)"))
        })
        .unwrap();
    let task = &user_messages(tier2_first)[0];
    assert!(
        task.contains("## What tier 1 found (architecture)"),
        "{task}"
    );
    assert!(
        task.contains(&format!(
            "- [architecture] {TIER1_FINDING} (Payment/PaymentCoordinator.swift:2)"
        )),
        "{task}"
    );
    let system = tier2_first.system_prompt();
    assert!(system.contains("Results of earlier dimensions"), "{system}");
    assert!(system.contains(TIER1_FINDING), "{system}");

    // The same title in the second dimension is refused before it reaches the knowledge base.
    assert_eq!(tier2.candidates, Vec::<String>::new());
    assert_eq!(tier2.duplicates_refused, 1);
    let refusal = requests
        .iter()
        .flat_map(|r| r.tool_results())
        .find(|t| t.contains("duplicate submission"))
        .unwrap();
    assert!(
        refusal.contains(
            "dimension \"architecture\" of this bootstrap already submitted a candidate titled"
        ),
        "{refusal}"
    );

    // get_previous_evidence in tier 2 returns tier 1's real evidence.
    let tier2_results: Vec<String> = requests
        .iter()
        .filter(|r| {
            user_messages(r)
                .first()
                .is_some_and(|t| t.contains("(design-patterns)"))
        })
        .flat_map(|r| r.tool_results())
        .collect();
    let evidence = tier2_results
        .iter()
        .find(|t| t.contains(TIER1_FINDING))
        .unwrap_or_else(|| panic!("{tier2_results:#?}"));
    assert!(evidence.contains(TIER1_FINDING), "{evidence}");

    // Tier 2's search is the call tier 1 made: the session cache answers it, although tier 1
    // submitted (a knowledge write) in between.
    assert_eq!(tier1.cache_hits, 0);
    assert_eq!(tier2.cache_hits, 1);
    assert!(tier2.usage.requests > 0 && tier2.usage.input_tokens > 0);
}

#[tokio::test]
async fn without_a_shared_session_nothing_is_shared() {
    let (_server, runs) = two_tiers(false).await;
    assert_eq!(runs[1].cache_hits, 0);
    // Alone, the second dimension does not know the first submitted the same title: the
    // duplicate gets into the knowledge base as a second submitted candidate.
    assert_eq!(runs[1].duplicates_refused, 0);
    assert_eq!(runs[1].candidates, vec![TITLE.to_string()]);
}
