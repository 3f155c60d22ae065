//! The LLM path of bootstrap, scripted against the fake OpenAI server on loopback: requests,
//! tokens and cache hits per dimension, with one SessionStore shared by every dimension of the
//! run and, as the baseline in the same run, with a fresh SessionStore per dimension (no
//! shared cache, no results of earlier dimensions, no tier reflections). Counts, not timings.
//!
//! The scripted model behaves the same in both modes. Each dimension runs the Bootstrap
//! strategy: in EXPLORE it searches the project for "Repository", notes a finding, reads
//! `Payment/PaymentRepository.swift` and says it is done; in PRODUCE (after the hand-over) it
//! submits one candidate of its own; in SUMMARIZE it answers its digest. Input tokens follow the size of each request body
//! (bytes / 4), so a prompt that carries earlier dimensions' results costs what it weighs.

use std::sync::Arc;

use alembic_agent::bootstrap::{DimensionBrief, DimensionRun, finish_tier, new_session};
use alembic_agent::{AgentOptions, AgentRuntime, AgentTools, StageLimits};
use alembic_context::LoopDirectory;
use alembic_knowledge::{KnowledgeService, KnowledgeStore};
use alembic_llm::fake::{FakeReply, FakeServer, FakeTurn, RecordedRequest};
use alembic_llm::{LlmProvider, ProviderKind};
use alembic_tools::{Pipeline, PresetCatalog, ToolRegistry};
use anyhow::{Context as _, Result};
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The dimensions run, by tier.
const PLAN: &[(usize, &str)] = &[
    (1, "architecture"),
    (1, "coding-standards"),
    (2, "design-patterns"),
    (2, "error-handling"),
    (3, "testing-quality"),
];

/// One dimension's figures.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DimensionFigures {
    pub dimension: String,
    pub tier: usize,
    pub requests: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_hits: u64,
    pub tool_calls: usize,
    pub candidates: usize,
}

/// Both modes.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapLlmReport {
    pub shared: Vec<DimensionFigures>,
    pub separate: Vec<DimensionFigures>,
}

/// Runs the plan in both modes.
pub fn run() -> Result<BootstrapLlmReport> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async {
        Ok(BootstrapLlmReport {
            shared: run_mode(true).await?,
            separate: run_mode(false).await?,
        })
    })
}

async fn run_mode(shared: bool) -> Result<Vec<DimensionFigures>> {
    let project = fixture()?;
    let server = FakeServer::start(ProviderKind::OpenAi).await?;
    server.respond_with(script);
    let agent = agent(&server, project.path())?;
    let cancel = CancellationToken::new();
    let session = new_session();
    let mut figures = Vec::new();
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
                .await?;
            figures.push(figures_of(&run, tier));
        }
        if shared {
            finish_tier(&session, tier, &dims);
        }
    }
    Ok(figures)
}

fn figures_of(run: &DimensionRun, tier: usize) -> DimensionFigures {
    DimensionFigures {
        dimension: run.dimension.clone(),
        tier,
        requests: run.usage.requests,
        input_tokens: run.usage.input_tokens,
        output_tokens: run.usage.output_tokens,
        cache_hits: run.cache_hits,
        tool_calls: run.tool_calls,
        candidates: run.candidates.len(),
    }
}

fn brief(id: &str, tier: usize) -> DimensionBrief {
    DimensionBrief {
        id: id.into(),
        label: id.replace('-', " "),
        guide: format!("Find the {id} of the Payment module and cite file:line evidence."),
        knowledge_types: vec!["code-pattern".into(), "best-practice".into()],
        tier,
    }
}

/// A small Swift project with a Payment module.
fn fixture() -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    let payment = dir.path().join("Payment");
    std::fs::create_dir_all(&payment)?;
    std::fs::write(
        payment.join("PaymentCoordinator.swift"),
        "final class PaymentCoordinator {\n    private let repository: PaymentRepository\n    init(repository: PaymentRepository) { self.repository = repository }\n    func start() { repository.load() }\n}\n",
    )?;
    std::fs::write(
        payment.join("PaymentRepository.swift"),
        "protocol PaymentRepository {\n    func load()\n}\n\nfinal class RemotePaymentRepository: PaymentRepository {\n    func load() {}\n}\n",
    )?;
    Ok(dir)
}

/// Code, context, meta and knowledge tools over `root` with the project's safety policy.
fn agent(server: &FakeServer, root: &std::path::Path) -> Result<AgentRuntime> {
    let registry = Arc::new(ToolRegistry::new());
    let code = Arc::new(alembic_code::CodeService::new(root)?);
    alembic_code::register_tools(&registry, code)?;
    let loops = Arc::new(LoopDirectory::default());
    alembic_context::tools::register_tools(&registry, Arc::clone(&loops))?;
    alembic_tools::meta::register_tools(&registry)?;
    let kb = Arc::new(KnowledgeService::from_store(
        root,
        KnowledgeStore::open_in_memory()?,
    ));
    let safety = Arc::new(
        alembic_safety::tools::SafetyServices::for_root(root).map_err(anyhow::Error::msg)?,
    );
    alembic_knowledge::register_tools(&registry, kb, safety)?;
    let policy = alembic_safety::PolicySafetyCheck::for_root(root).map_err(anyhow::Error::msg)?;
    let tools = AgentTools::build(
        Pipeline::builder(registry, root),
        loops,
        Arc::new(policy),
        PresetCatalog::builtin(),
    )?;
    let provider: Arc<dyn LlmProvider> = Arc::new(server.provider()?);
    let options = AgentOptions {
        strike_pause: std::time::Duration::ZERO,
        limits: StageLimits {
            analyst_iterations: 7,
            ..StageLimits::default()
        },
        ..AgentOptions::default()
    };
    Ok(AgentRuntime::new(provider, tools, None, options))
}

fn first_user_message(req: &RecordedRequest) -> String {
    req.body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The scripted model (see the module docs).
fn script(req: &RecordedRequest) -> FakeReply {
    let input = u64::try_from(req.body.to_string().len() / 4).unwrap_or(0);
    let tools = req.offered_tools();
    let results = req.tool_results().len();
    let task = first_user_message(req);
    let dim = task
        .split('(')
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or("dimension");
    let producing = req.body["messages"].as_array().is_some_and(|m| {
        m.iter().any(|m| {
            m["role"] == "user"
                && m["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("## Hand-over from the analysis phase"))
        })
    });
    let turn = if tools.is_empty() {
        let digest = json!({"dimensionDigest": {"summary": format!("{dim}: Payment keeps its data behind a repository."), "candidateCount": 1}});
        FakeTurn::text(format!("```json\n{digest}\n```"))
    } else if !producing {
        match results {
            0 => FakeTurn::new().tool_call("s1", "search_project_code", json!({"pattern": "Repository"})),
            1 => FakeTurn::new().tool_call("n1", "note_finding", json!({"finding": format!("{dim}: PaymentCoordinator depends on the PaymentRepository protocol"), "evidence": "Payment/PaymentCoordinator.swift:2", "importance": 8})),
            2 => FakeTurn::new().tool_call("r1", "read_project_file", json!({"filePath": "Payment/PaymentRepository.swift"})),
            _ => FakeTurn::text(format!("{dim}: explored.")),
        }
    } else if results <= 3 {
        let args = json!({"title": format!("{dim}: payment data behind a repository"), "content": {"markdown": format!("In {dim}, coordinators reach payment data through PaymentRepository.")}, "sources": ["Payment/PaymentRepository.swift"]});
        FakeTurn::new().tool_call("k1", "submit_knowledge", args)
    } else {
        FakeTurn::text("Submitted.")
    };
    turn.with_usage(input, 20).into()
}

/// The table: one row per dimension and mode, then the totals and their ratio.
pub fn render(r: &BootstrapLlmReport) -> String {
    let mut out = String::from(
        "scripted LLM bootstrap (fake OpenAI server): per dimension, shared SessionStore vs one per dimension\n\
         dimension          tier | shared: req  in-tok  out-tok  cache-hits | separate: req  in-tok  out-tok  cache-hits\n",
    );
    for (s, p) in r.shared.iter().zip(&r.separate) {
        out.push_str(&format!(
            "{:<18} {:>4} | {:>11} {:>7} {:>8} {:>11} | {:>13} {:>7} {:>8} {:>11}\n",
            s.dimension,
            s.tier,
            s.requests,
            s.input_tokens,
            s.output_tokens,
            s.cache_hits,
            p.requests,
            p.input_tokens,
            p.output_tokens,
            p.cache_hits
        ));
    }
    let total = |v: &[DimensionFigures]| {
        v.iter().fold((0u32, 0u64, 0u64, 0u64), |a, f| {
            (
                a.0 + f.requests,
                a.1 + f.input_tokens,
                a.2 + f.output_tokens,
                a.3 + f.cache_hits,
            )
        })
    };
    let (s, p) = (total(&r.shared), total(&r.separate));
    out.push_str(&format!(
        "{:<23} | {:>11} {:>7} {:>8} {:>11} | {:>13} {:>7} {:>8} {:>11}\n",
        "total", s.0, s.1, s.2, s.3, p.0, p.1, p.2, p.3
    ));
    let ratio = if p.1 == 0 {
        0.0
    } else {
        s.1 as f64 / p.1 as f64
    };
    out.push_str(&format!("input tokens shared / separate: {ratio:.2}\n"));
    out
}
