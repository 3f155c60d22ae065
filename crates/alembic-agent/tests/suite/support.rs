//! A temp project, the real tool pipeline over it, and an agent talking to a fake server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alembic_agent::{
    AgentEvent, AgentOptions, AgentPreset, AgentRuntime, AgentTools, RunReport, RunRequest,
    SharedMemory, StageLimits,
};
use alembic_context::LoopDirectory;
use alembic_llm::fake::{FakeServer, RecordedRequest};
use alembic_llm::{LlmProvider, ProviderKind};
use alembic_memory::{ManualClock, MemoryConfig, PersistentMemory};
use alembic_tools::{Pipeline, PresetCatalog, ReadOnlySafety, ToolRegistry};
use tokio_util::sync::CancellationToken;

pub const FACT: &str = "The Payment module uses the Coordinator + Repository pattern";

/// A small Swift project with a Payment module.
pub fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let payment = dir.path().join("Payment");
    std::fs::create_dir_all(&payment).unwrap();
    std::fs::write(
        payment.join("PaymentCoordinator.swift"),
        "final class PaymentCoordinator {\n    private let repository: PaymentRepository\n    init(repository: PaymentRepository) { self.repository = repository }\n    func start() { repository.load() }\n}\n",
    )
    .unwrap();
    std::fs::write(
        payment.join("PaymentRepository.swift"),
        "protocol PaymentRepository {\n    func load()\n}\n\nfinal class RemotePaymentRepository: PaymentRepository {\n    func load() {}\n}\n",
    )
    .unwrap();
    dir
}

/// The real pipeline (code tools, memory tools, meta tools) with the memory middlewares.
pub fn agent_tools(root: &std::path::Path, presets: PresetCatalog) -> AgentTools {
    let registry = Arc::new(ToolRegistry::new());
    let code = Arc::new(alembic_code::CodeService::new(root).unwrap());
    alembic_code::register_tools(&registry, code).unwrap();
    let loops = Arc::new(LoopDirectory::default());
    alembic_context::tools::register_tools(&registry, Arc::clone(&loops)).unwrap();
    alembic_tools::meta::register_tools(&registry).unwrap();
    let builder = Pipeline::builder(registry, root);
    AgentTools::build(builder, loops, Arc::new(ReadOnlySafety), presets).unwrap()
}

pub fn memory() -> Arc<SharedMemory> {
    let clock = Arc::new(ManualClock::new(1_780_000_000_000));
    let store = PersistentMemory::open_in_memory(MemoryConfig::default(), clock).unwrap();
    Arc::new(SharedMemory::from_store(store))
}

pub fn options() -> AgentOptions {
    AgentOptions {
        strike_pause: Duration::ZERO,
        ..AgentOptions::default()
    }
}

/// A test agent: one fake server, the tools over one project, optional memory.
pub struct Harness {
    pub server: FakeServer,
    pub project: tempfile::TempDir,
    pub memory: Option<Arc<SharedMemory>>,
    pub options: AgentOptions,
    pub presets: PresetCatalog,
    pub events: Arc<Mutex<Vec<AgentEvent>>>,
}

impl Harness {
    pub async fn new(kind: ProviderKind) -> Harness {
        Harness {
            server: FakeServer::start(kind).await.unwrap(),
            project: project(),
            memory: None,
            options: options(),
            presets: PresetCatalog::builtin(),
            events: Arc::default(),
        }
    }

    pub fn limits(mut self, limits: StageLimits) -> Harness {
        self.options.limits = limits;
        self
    }

    pub fn agent(&self) -> AgentRuntime {
        let provider: Arc<dyn LlmProvider> = Arc::new(self.server.provider().unwrap());
        self.agent_with(provider)
    }

    /// An agent whose model is called `model` (the fake server answers for any name), so the
    /// model's context size applies.
    pub fn agent_for(&self, model: &str) -> AgentRuntime {
        let mut config = self.server.provider_config();
        config.model = model.to_string();
        self.agent_with(Arc::new(alembic_llm::HttpProvider::new(config).unwrap()))
    }

    pub fn agent_with(&self, provider: Arc<dyn LlmProvider>) -> AgentRuntime {
        let tools = agent_tools(self.project.path(), self.presets.clone());
        let events = Arc::clone(&self.events);
        AgentRuntime::new(provider, tools, self.memory.clone(), self.options.clone())
            .with_events(Arc::new(move |e| events.lock().unwrap().push(e.clone())))
    }

    pub async fn ask(&self, preset: &str, question: &str) -> RunReport {
        let request = RunRequest::new(question, AgentPreset::from_name(preset));
        self.agent()
            .run(&request, &CancellationToken::new())
            .await
            .unwrap()
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// The system prompt of request `i` with the temp project path replaced by `[ROOT]`.
    pub fn system_prompt(&self, i: usize) -> String {
        let root = self.project.path().display().to_string();
        self.requests()[i].system_prompt().replace(&root, "[ROOT]")
    }
}

/// Contents of the user messages of an OpenAI-format request, in order.
pub fn user_messages(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

/// Rough input tokens of a request (JSON body length / 4), so fake usage follows its size.
pub fn body_tokens(request: &RecordedRequest) -> u64 {
    (serde_json::to_string(&request.body).unwrap().len() / 4) as u64
}
