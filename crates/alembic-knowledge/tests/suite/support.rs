//! A project directory, a knowledge base with a fixed clock, and a pipeline over the tools.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use alembic_base::{Clock, Sleep};

use alembic_knowledge::tools::TOOL_NAMES;
use alembic_knowledge::{KnowledgeService, KnowledgeStore, NewEntry, register_tools};
use alembic_safety::tools::SafetyServices;
use alembic_tools::{Allowlist, Caller, Pipeline, ToolCall, ToolOutcome, ToolRegistry};
use serde_json::Value;

/// A store whose clock advances by one second per reading, starting at 1_000_000.
pub fn store() -> KnowledgeStore {
    KnowledgeStore::open_in_memory()
        .unwrap()
        .with_clock(Arc::new(TickingClock(AtomicI64::new(1_000_000))))
}

/// Advances by one second each time it is read.
#[derive(Debug)]
struct TickingClock(AtomicI64);

impl Clock for TickingClock {
    fn system_time(&self) -> SystemTime {
        let ms = self.0.load(Ordering::SeqCst);
        UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
    }
    fn instant(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, duration: Duration) -> Sleep {
        self.0.fetch_add(
            i64::try_from(duration.as_millis()).unwrap(),
            Ordering::SeqCst,
        );
        Box::pin(std::future::ready(()))
    }
    fn now_ms(&self) -> i64 {
        self.0.fetch_add(1000, Ordering::SeqCst)
    }
}

pub fn entry(title: &str, content: &str) -> NewEntry {
    NewEntry {
        title: title.into(),
        content: content.into(),
        ..NewEntry::default()
    }
}

/// Registers the knowledge tools over a fresh in-memory store, confined to `root`.
pub fn register_with_store(registry: &ToolRegistry, root: &std::path::Path) {
    let kb = Arc::new(KnowledgeService::from_store(root, store()));
    let safety = Arc::new(SafetyServices::for_root(root).unwrap());
    register_tools(registry, kb, safety).unwrap();
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pipeline: Arc<Pipeline>,
}

impl Harness {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        let registry = Arc::new(ToolRegistry::new());
        register_with_store(&registry, dir.path());
        let safety = alembic_safety::PolicySafetyCheck::for_root(dir.path()).unwrap();
        let pipeline = Pipeline::builder(registry, dir.path())
            .safety(Arc::new(safety))
            .build();
        Harness { dir, pipeline }
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub async fn call_as(&self, who: &str, tool: &str, args: Value) -> ToolOutcome {
        let caller = Caller::new(who, Allowlist::only(TOOL_NAMES.iter().copied()));
        self.pipeline
            .execute(ToolCall::new(tool, args, caller))
            .await
    }

    pub async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        self.call_as("agent:test", tool, args).await
    }

    /// The data of a successful call (panics with the error otherwise).
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        let out = self.call(tool, args).await;
        assert!(out.is_ok(), "{tool} failed: {}", out.text_for_model());
        out.output.unwrap().data
    }

    /// The error text of a failed call (panics when it succeeded).
    pub async fn err(&self, tool: &str, args: Value) -> String {
        let out = self.call(tool, args).await;
        assert!(
            !out.is_ok(),
            "{tool} unexpectedly succeeded: {}",
            out.text_for_model()
        );
        out.text_for_model()
    }
}
