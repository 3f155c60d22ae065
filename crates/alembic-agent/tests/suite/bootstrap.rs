//! The LLM cold start against the fake OpenAI server (the real wire format), over four
//! dimensions in three tiers sharing one SessionStore, as the bootstrap runner drives it
//! (`run_dimension` per dimension, `finish_tier` after each tier). Asserted on the recorded
//! requests: every dimension runs EXPLORE → PRODUCE → SUMMARIZE; the producer's memory
//! sections are sized by the producer profile, the analyst's by the analyst profile; each
//! tier's reflection appears exactly once, under its own number; a cross-dimension reference
//! appears once a dimension's digest reports it; the producer gets the distilled analysis.
//! Also: SubmitDedup across dimensions and the shared tool cache.

use std::sync::Arc;

use alembic_agent::bootstrap::{
    DimensionBrief, DimensionRun, SharedSession, finish_tier, new_session,
};
use alembic_agent::{AgentRuntime, AgentTools, StageLimits};
use alembic_context::{Allocation, BudgetProfile, LoopDirectory, TokenMeter};
use alembic_knowledge::{KnowledgeService, KnowledgeStore};
use alembic_llm::fake::{FakeReply, FakeServer, FakeTurn, RecordedRequest};
use alembic_llm::{LlmProvider, ProviderKind};
use alembic_tools::{Pipeline, PresetCatalog, ToolRegistry};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{options, project, user_messages};

pub const TITLE: &str = "Payment data goes through a repository protocol";
const TIER1_FINDING: &str = "PaymentCoordinator owns a PaymentRepository";
/// The dimensions of the run by tier; design-patterns submits architecture's title again.
const PLAN: &[(usize, &str)] = &[
    (1, "architecture"),
    (2, "design-patterns"),
    (2, "networking"),
    (3, "error-handling"),
];
const HANDOFF: &str = "## Hand-over from the analysis phase";
const ARCH_SUGGESTION: &str = "check whether PaymentRepository.load is retried";
const PATTERN_SUGGESTION: &str = "check how repository failures reach the coordinator";

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

/// The dimension a request belongs to (its task names it).
fn dimension_of(req: &RecordedRequest) -> String {
    let task = user_messages(req).first().cloned().unwrap_or_default();
    PLAN.iter()
        .map(|(_, d)| *d)
        .find(|d| task.contains(&format!("({d}), tier")))
        .unwrap_or("?")
        .to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Explore,
    Produce,
    Summarize,
}

/// The phase a request was made in: no tools is SUMMARIZE (tool_choice none), the hand-over
/// message marks PRODUCE, anything before it is EXPLORE.
fn phase_of(req: &RecordedRequest) -> Seen {
    if req.offered_tools().is_empty() {
        Seen::Summarize
    } else if user_messages(req).iter().any(|m| m.starts_with(HANDOFF)) {
        Seen::Produce
    } else {
        Seen::Explore
    }
}

fn finding_of(dim: &str) -> String {
    if dim == "architecture" {
        TIER1_FINDING.to_string()
    } else {
        format!(
            "In {dim}, RemotePaymentRepository implements PaymentRepository and every caller goes through the protocol"
        )
    }
}

/// The scripted model. EXPLORE: search for "Repository" (the same call in every dimension),
/// note a finding of the dimension, then say exploring is done (the tracker moves to PRODUCE).
/// PRODUCE: submit one candidate, then text. SUMMARIZE: the dimension digest; architecture's
/// suggests something to networking, design-patterns' to error-handling.
pub fn script(req: &RecordedRequest) -> FakeReply {
    let dim = dimension_of(req);
    let results = req.tool_results();
    match phase_of(req) {
        Seen::Summarize => {
            let refs = match dim.as_str() {
                "architecture" => json!({"networking": ARCH_SUGGESTION}),
                "design-patterns" => json!({"error-handling": PATTERN_SUGGESTION}),
                _ => json!({}),
            };
            let digest = json!({"dimensionDigest": {"summary": format!("{dim}: Payment keeps its data behind a repository protocol."), "candidateCount": 1, "keyFindings": [finding_of(&dim)], "crossRefs": refs, "gaps": [format!("{dim} did not look at persistence")]}});
            FakeTurn::text(format!("```json\n{digest}\n```")).into()
        }
        Seen::Produce if results.len() <= 2 => {
            let title = if dim == "design-patterns" || dim == "architecture" {
                TITLE.to_string()
            } else {
                format!("{dim}: callers depend on the PaymentRepository protocol")
            };
            let args = json!({"title": title, "content": {"markdown": "Coordinators reach payment data only through the PaymentRepository protocol.", "pattern": "protocol PaymentRepository { func load() }"}, "sources": ["Payment/PaymentRepository.swift"]});
            FakeTurn::new()
                .tool_call("k1", "submit_knowledge", args)
                .with_usage(100, 10)
                .into()
        }
        Seen::Produce => FakeTurn::text("Submitted what this dimension found.").into(),
        Seen::Explore => match results.len() {
            0 => FakeTurn::new()
                .tool_call("s1", "search_project_code", json!({"pattern": "Repository"}))
                .with_usage(100, 10)
                .into(),
            1 => FakeTurn::new()
                .tool_call("n1", "note_finding", json!({"finding": finding_of(&dim), "evidence": "Payment/PaymentCoordinator.swift:2", "importance": 8}))
                .with_usage(100, 10)
                .into(),
            _ => FakeTurn::text("Payment is split into a coordinator and a repository.").into(),
        },
    }
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

/// Memory budget of the test agent: small enough that the session section fills the
/// analyst's share by tier 3, so the producer's larger share shows.
const MEMORY_CAP: usize = 500;

pub fn agent(server: &FakeServer, root: &std::path::Path) -> AgentRuntime {
    let provider: Arc<dyn LlmProvider> = Arc::new(server.provider().unwrap());
    let mut opts = options();
    opts.limits = StageLimits {
        analyst_iterations: 6,
        ..StageLimits::default()
    };
    opts.memory_budget_cap = Some(MEMORY_CAP);
    AgentRuntime::new(provider, tools(root), None, opts)
}

async fn three_tiers(shared: bool) -> (FakeServer, AgentRuntime, Vec<DimensionRun>) {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.respond_with(script);
    let dir = project();
    let agent = agent(&server, dir.path());
    let cancel = CancellationToken::new();
    let session: SharedSession = new_session();
    let mut runs = Vec::new();
    for tier in 1..=3 {
        let dims: Vec<&str> = PLAN
            .iter()
            .filter(|(t, _)| *t == tier)
            .map(|(_, d)| *d)
            .collect();
        for dim in &dims {
            let session = if shared {
                Arc::clone(&session)
            } else {
                new_session()
            };
            let run = agent
                .run_dimension(&session, &brief(dim, tier), &cancel)
                .await
                .unwrap();
            runs.push(run);
        }
        finish_tier(&session, tier, &dims);
    }
    (server, agent, runs)
}

/// The session section of a system prompt (its lines have no blank line between them).
fn session_section(system: &str) -> String {
    match system.find("## Results of earlier dimensions") {
        Some(start) => {
            let rest = &system[start..];
            rest[..rest.find("\n\n").unwrap_or(rest.len())].to_string()
        }
        None => String::new(),
    }
}

fn of_dimension(requests: &[RecordedRequest], dim: &str) -> Vec<RecordedRequest> {
    requests
        .iter()
        .filter(|r| dimension_of(r) == dim)
        .cloned()
        .collect()
}

#[tokio::test]
async fn each_dimension_explores_produces_and_summarises() {
    let (server, _agent, runs) = three_tiers(true).await;
    let requests = server.requests();
    for (run, (_, dim)) in runs.iter().zip(PLAN) {
        let mut phases: Vec<Seen> = of_dimension(&requests, dim).iter().map(phase_of).collect();
        phases.dedup();
        assert_eq!(
            phases,
            [Seen::Explore, Seen::Produce, Seen::Summarize],
            "{dim}"
        );
        // The digest the SUMMARIZE phase asked for is the dimension's analysis.
        let digest = run
            .digest
            .as_ref()
            .unwrap_or_else(|| panic!("{dim}: no digest"));
        assert_eq!(run.analysis, digest.summary);
        assert!(
            run.analysis.starts_with(&format!("{dim}: ")),
            "{}",
            run.analysis
        );
    }
    assert_eq!(runs[0].candidates, vec![TITLE.to_string()]);
    assert_eq!(runs[0].findings[0].finding, TIER1_FINDING);
    // The same title in the second dimension is refused before it reaches the knowledge base.
    assert_eq!(runs[1].candidates, Vec::<String>::new());
    assert_eq!(runs[1].duplicates_refused, 1);
    assert_eq!(runs[2].candidates.len(), 1);
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
    // Every later dimension's search is the call architecture made: the session cache answers.
    assert_eq!(runs[0].cache_hits, 0);
    assert!(runs[1..].iter().all(|r| r.cache_hits == 1), "{runs:#?}");
}

#[tokio::test]
async fn the_producer_gets_the_distilled_analysis_under_its_own_shares() {
    let (server, agent, _runs) = three_tiers(true).await;
    let requests = server.requests();
    let model = agent.provider().model().to_string();
    let meter = TokenMeter::for_model(&model);
    let total = agent.context_split().memory;
    assert_eq!(total, MEMORY_CAP);
    let analyst_share = Allocation::of(BudgetProfile::Analyst, total).session;
    let producer_share = Allocation::of(BudgetProfile::Producer, total).session;
    assert!(analyst_share < producer_share);
    for (_, dim) in PLAN {
        let mine = of_dimension(&requests, dim);
        let analyst = mine.iter().find(|r| phase_of(r) == Seen::Explore).unwrap();
        let producer = mine.iter().find(|r| phase_of(r) == Seen::Produce).unwrap();
        let (a, p) = (
            session_section(&analyst.system_prompt()),
            session_section(&producer.system_prompt()),
        );
        assert!(meter.count(&a) <= analyst_share, "{dim}: {a}");
        assert!(meter.count(&p) <= producer_share, "{dim}: {p}");
        // The hand-over: the dimension's own noted finding with its evidence, what the tools
        // showed, and the files cited.
        let handoff = user_messages(producer)
            .into_iter()
            .find(|m| m.starts_with(HANDOFF))
            .unwrap();
        assert!(
            handoff.contains(&format!(
                "### Findings\n- [8/10] {} (Payment/PaymentCoordinator.swift:2)",
                finding_of(dim)
            )),
            "{dim}: {handoff}"
        );
        assert!(
            handoff.contains("### What the tools showed\n- "),
            "{handoff}"
        );
        assert!(
            handoff.contains("### Files cited\nPayment/PaymentCoordinator.swift"),
            "{handoff}"
        );
    }
    // By tier 3 the earlier dimensions fill the analyst's share: the producer, with 55 %
    // instead of 35 %, sees strictly more of them.
    let last = of_dimension(&requests, "error-handling");
    let a = session_section(
        &last
            .iter()
            .find(|r| phase_of(r) == Seen::Explore)
            .unwrap()
            .system_prompt(),
    );
    let p = session_section(
        &last
            .iter()
            .find(|r| phase_of(r) == Seen::Produce)
            .unwrap()
            .system_prompt(),
    );
    assert!(
        meter.count(&a) > analyst_share * 3 / 4,
        "analyst share not filled: {a}"
    );
    assert!(
        meter.count(&p) > meter.count(&a),
        "analyst:\n{a}\nproducer:\n{p}"
    );
    assert!(
        p.starts_with(&a[..a.rfind('\n').unwrap_or(0)]),
        "analyst:\n{a}\nproducer:\n{p}"
    );
}

#[tokio::test]
async fn reflections_appear_once_under_their_tier_and_cross_references_once_reported() {
    let (server, _agent, _runs) = three_tiers(true).await;
    let requests = server.requests();
    let count = |r: &RecordedRequest, needle: &str| {
        serde_json::to_string(&r.body)
            .unwrap()
            .matches(needle)
            .count()
    };
    for r in &requests {
        let dim = dimension_of(r);
        let tier = PLAN.iter().find(|(_, d)| *d == dim).unwrap().0;
        for earlier in 1..=3 {
            let heading = format!("### Tier {earlier} synthesis");
            let expected = usize::from(earlier < tier);
            assert_eq!(
                count(r, &heading),
                expected,
                "{dim} (tier {tier}): {heading}"
            );
        }
        // The task does not repeat them.
        assert!(!user_messages(r)[0].contains("found ("), "{dim}");
        // architecture's suggestion reaches networking only after architecture reported it;
        // design-patterns' reaches error-handling.
        let sees_arch = count(r, ARCH_SUGGESTION) > 0;
        let sees_pattern = count(r, PATTERN_SUGGESTION) > 0;
        match dim.as_str() {
            "architecture" => assert!(!sees_arch && !sees_pattern, "{dim}"),
            "design-patterns" => assert!(!sees_pattern, "{dim}"),
            "networking" => assert!(sees_arch, "{dim}: {}", r.system_prompt()),
            "error-handling" => assert!(sees_pattern, "{dim}: {}", r.system_prompt()),
            _ => panic!("unknown dimension {dim}"),
        }
    }
    // The suggestion is in networking's session section as addressed to it, and in its
    // hand-over to the producer.
    let networking = of_dimension(&requests, "networking");
    let system = networking[0].system_prompt();
    assert!(
        system.contains(&format!(
            "### Suggestions for networking from other dimensions\n- [from architecture] {ARCH_SUGGESTION}"
        )),
        "{system}"
    );
    let producer = networking
        .iter()
        .find(|r| phase_of(r) == Seen::Produce)
        .unwrap();
    let handoff = user_messages(producer)
        .into_iter()
        .find(|m| m.starts_with(HANDOFF))
        .unwrap();
    assert!(
        handoff.contains(&format!(
            "### Suggestions from other dimensions\n- [from architecture] {ARCH_SUGGESTION}"
        )),
        "{handoff}"
    );
}

#[tokio::test]
async fn without_a_shared_session_nothing_is_shared() {
    let (server, _agent, runs) = three_tiers(false).await;
    assert!(runs.iter().all(|r| r.cache_hits == 0));
    // Alone, design-patterns does not know architecture submitted the same title: the
    // duplicate gets into the knowledge base as a second submitted candidate.
    assert_eq!(runs[1].duplicates_refused, 0);
    assert_eq!(runs[1].candidates, vec![TITLE.to_string()]);
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .all(|r| !r.system_prompt().contains("Results of earlier dimensions"))
    );
}
