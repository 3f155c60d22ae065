//! A project directory, in-memory knowledge and memory, and a pipeline over the skill tools
//! with the project's safety policy and a recording audit sink.

use std::sync::{Arc, Mutex};

use alembic_knowledge::{KnowledgeService, KnowledgeStore};
use alembic_memory::{ManualClock, MemoryConfig, MemoryService, PersistentMemory};
use alembic_skills::{SkillService, register_tools};
use alembic_tools::{
    Allowlist, AuditEntry, AuditSink, Caller, Pipeline, SafetyCheck, ToolCall, ToolOutcome,
    ToolRegistry,
};
use serde_json::Value;

pub const TOOLS: [&str; 3] = ["load_skill", "create_skill", "suggest_skills"];

/// Keeps every audit entry in memory.
#[derive(Default)]
pub struct Audit(Mutex<Vec<AuditEntry>>);

impl AuditSink for Audit {
    fn record(&self, entry: AuditEntry) {
        self.0.lock().unwrap().push(entry);
    }
}

impl Audit {
    pub fn entries(&self) -> Vec<AuditEntry> {
        self.0.lock().unwrap().clone()
    }
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub audit: Arc<Audit>,
    pub knowledge: Arc<KnowledgeService>,
    pub memory: Arc<MemoryService>,
    registry: Arc<ToolRegistry>,
    pipeline: Arc<Pipeline>,
}

impl Harness {
    /// The skill tools under the project's policy (`PolicySafetyCheck`).
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let safety = alembic_safety::PolicySafetyCheck::for_root(dir.path()).unwrap();
        Self::with_safety(dir, Some(Arc::new(safety)))
    }

    /// As [`Harness::new`] with `safety` (`None`: the pipeline's default, read-only).
    pub fn with_safety(dir: tempfile::TempDir, safety: Option<Arc<dyn SafetyCheck>>) -> Self {
        let registry = Arc::new(ToolRegistry::new());
        let knowledge = Arc::new(KnowledgeService::from_store(
            dir.path(),
            KnowledgeStore::open_in_memory().unwrap(),
        ));
        let memory = Arc::new(MemoryService::from_store(
            PersistentMemory::open_in_memory(
                MemoryConfig::default(),
                Arc::new(ManualClock::new(1_700_000_000_000)),
            )
            .unwrap(),
        ));
        register_tools(
            &registry,
            Arc::new(SkillService::for_project(dir.path())),
            Arc::clone(&knowledge),
            Arc::clone(&memory),
        )
        .unwrap();
        let audit = Arc::new(Audit::default());
        let mut builder = Pipeline::builder(Arc::clone(&registry), dir.path())
            .audit(Arc::clone(&audit) as Arc<dyn AuditSink>);
        if let Some(safety) = safety {
            builder = builder.safety(safety);
        }
        Harness {
            dir,
            audit,
            knowledge,
            memory,
            registry,
            pipeline: builder.build(),
        }
    }

    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    pub fn root(&self) -> &std::path::Path {
        self.dir.path()
    }

    pub async fn call_with(&self, caller: Caller, tool: &str, args: Value) -> ToolOutcome {
        self.pipeline
            .execute(ToolCall::new(tool, args, caller))
            .await
    }

    /// A call by `agent:test`, allowed the three skill tools.
    pub async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        let caller = Caller::new("agent:test", Allowlist::only(TOOLS));
        self.call_with(caller, tool, args).await
    }

    /// The data of a successful call (panics with the error otherwise).
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        let out = self.call(tool, args).await;
        assert!(out.is_ok(), "{tool} failed: {}", out.text_for_model());
        out.output.unwrap().data
    }
}
