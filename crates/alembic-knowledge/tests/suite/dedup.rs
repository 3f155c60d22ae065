//! The knowledge tools under alembic-context's SubmitDedup middleware, as in an insight
//! producer loop: the arguments it reads (`title`, `content.pattern`) and the `status` it
//! checks are the ones the submit tools use, so a duplicate is refused before it is written
//! and a rejected submission may be corrected and sent again.

use std::sync::Arc;

use alembic_context::middleware::{IsSubmit, SubmitDedup};
use alembic_context::{LoopDirectory, LoopMemory, MemoryCoordinator, ScopeId};
use alembic_knowledge::tools::TOOL_NAMES;
use alembic_tools::{
    Allowlist, Caller, OutcomeStatus, Pipeline, ToolCall, ToolOutcome, ToolRegistry,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::register_with_store;

struct Loop {
    _dir: tempfile::TempDir,
    pipeline: Arc<Pipeline>,
}

impl Loop {
    fn new() -> Loop {
        let dir = tempfile::tempdir().unwrap();
        let registry = Arc::new(ToolRegistry::new());
        register_with_store(&registry, dir.path());
        let directory = Arc::new(LoopDirectory::default());
        let memory = LoopMemory::new(
            Arc::new(MemoryCoordinator::default()),
            ScopeId::new("networking:produce"),
            None,
            dir.path(),
            Arc::new(alembic_base::ManualClock::new(1_000)),
        );
        directory.attach("agent:producer", Arc::new(memory));
        let safety = alembic_safety::PolicySafetyCheck::for_root(dir.path()).unwrap();
        let pipeline = Pipeline::builder(registry, dir.path())
            .safety(Arc::new(safety))
            .middleware(Arc::new(SubmitDedup(directory)))
            .build();
        Loop {
            _dir: dir,
            pipeline,
        }
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        let caller = Caller::new(
            "agent:producer",
            Allowlist::only(TOOL_NAMES.iter().copied()),
        );
        self.pipeline
            .execute(ToolCall::new(tool, args, caller))
            .await
    }

    async fn total(&self) -> Value {
        let out = self.call("get_project_stats", json!({})).await;
        out.output.unwrap().data["knowledge"]["total"].clone()
    }
}

fn submission(title: &str, pattern: &str) -> Value {
    json!({"title": title, "content": {"markdown": "How requests are retried.", "pattern": pattern}})
}

const PATTERN: &str =
    "func send(_ r: Request) async throws {\n  try await retry(3) { try await client.data(r) }\n}";

#[tokio::test]
async fn a_repeated_title_or_pattern_is_refused_before_it_is_written() {
    let l = Loop::new();
    let first = l
        .call("submit_knowledge", submission("Retry requests", PATTERN))
        .await;
    assert!(
        first.is_ok() && first.metadata.extensions.get::<IsSubmit>() == Some(&IsSubmit(true)),
        "{}",
        first.text_for_model()
    );

    let same_title = l
        .call(
            "submit_knowledge",
            submission("retry requests", "other code entirely, long enough"),
        )
        .await;
    assert_eq!(same_title.status, OutcomeStatus::Blocked);
    let same_code = l
        .call(
            "submit_with_check",
            submission("A different title", PATTERN),
        )
        .await;
    assert_eq!(same_code.status, OutcomeStatus::Blocked);
    assert!(
        same_code.text_for_model().contains("code pattern"),
        "{}",
        same_code.text_for_model()
    );
    assert_eq!(l.total().await, 1, "nothing was written for the duplicates");
}

#[tokio::test]
async fn a_rejected_submission_can_be_corrected_and_resubmitted() {
    let l = Loop::new();
    let bad = l
        .call(
            "submit_knowledge",
            json!({"title": "Timeouts", "content": {"markdown": " "}}),
        )
        .await;
    assert!(bad.is_ok());
    assert_eq!(bad.output.as_ref().unwrap().data["status"], "rejected");
    assert_eq!(bad.metadata.extensions.get::<IsSubmit>(), None);
    let fixed = l
        .call("submit_knowledge", json!({"title": "Timeouts", "content": {"markdown": "Every request times out after 30 s."}}))
        .await;
    assert_eq!(fixed.output.unwrap().data["status"], "submitted");
    assert_eq!(l.total().await, 1);
}
