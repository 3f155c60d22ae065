//! What a handler sees besides its arguments: who called, where, and a way
//! to make nested calls that go through the same pipeline.

use std::any::Any;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::call::Caller;
use crate::call::{CallChain, ToolCall, ToolOutcome};
use crate::events::{EventBus, ToolEvent, ToolEventKind};

/// What a [`ToolContext`] needs from the pipeline that runs its call: where, with which
/// events, and a way to run nested calls through the same pipeline.
///
/// Implemented by `Pipeline`. It is a trait so that this module (and the definitions whose
/// handlers receive a context) sit below the pipeline in the module graph instead of in a
/// cycle with it. `Any` lets code that knows the concrete runner get it back
/// (`ToolContext::pipeline`, for the meta tools' registry lookups).
pub trait CallRunner: Any + Send + Sync {
    fn project_root(&self) -> &Path;
    fn events(&self) -> &EventBus;
    /// Runs `call` with every gate, middleware and audit record of a top-level call.
    fn run_nested(
        self: Arc<Self>,
        call: ToolCall,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ToolOutcome>;
}

/// The context of one tool call.
#[derive(Clone)]
pub struct ToolContext {
    pub project_root: PathBuf,
    pub caller: Caller,
    pub call_id: String,
    pub parent_call_id: Option<String>,
    /// Cancelled when the caller gives up or the call times out; long handlers should poll it.
    pub cancel: CancellationToken,
    /// The chain every nested call of this call inherits: this call's ancestors and its name.
    chain: CallChain,
    runner: Arc<dyn CallRunner>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("project_root", &self.project_root)
            .field("caller", &self.caller.id)
            .field("call_id", &self.call_id)
            .field("depth", &self.chain.ancestors().len())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    pub(crate) fn new(
        runner: Arc<dyn CallRunner>,
        caller: Caller,
        call_id: String,
        parent_call_id: Option<String>,
        cancel: CancellationToken,
        chain: CallChain,
    ) -> Self {
        ToolContext {
            project_root: runner.project_root().to_path_buf(),
            caller,
            call_id,
            parent_call_id,
            cancel,
            chain,
            runner,
        }
    }

    /// A context outside any pipeline call, for calling a handler directly (benchmarks,
    /// handler unit tests). Nested calls made through it are still full pipeline calls.
    /// The handler counts as a top-level call (named `detached`), so its nested calls are
    /// bounded like any other.
    pub fn detached_with(runner: Arc<dyn CallRunner>, caller: Caller) -> Self {
        let id = uuid::Uuid::now_v7().to_string();
        let chain = CallChain::top_level().below("detached");
        Self::new(runner, caller, id, None, CancellationToken::new(), chain)
    }

    /// The chain this call's nested calls inherit (its ancestors, then this call's name).
    pub fn chain(&self) -> &CallChain {
        &self.chain
    }

    /// The runner of this call (the pipeline), as its concrete type when it is a `T`.
    pub fn runner_as<T: CallRunner>(&self) -> Option<&T> {
        let runner: &dyn Any = self.runner.as_ref();
        runner.downcast_ref::<T>()
    }

    /// Reports progress of a long call (forwarded to MCP progress notifications and the CLI).
    pub fn progress(&self, message: impl Into<String>, fraction: Option<f64>) {
        self.runner.events().send_with(|| {
            ToolEvent::new(
                &self.call_id,
                "",
                ToolEventKind::Progress {
                    message: message.into(),
                    fraction,
                },
            )
        });
    }

    /// Calls another tool as a nested call: same caller and capability, this call as parent,
    /// and every gate, middleware and audit record of a top-level call. The call inherits this
    /// call's chain, so the pipeline bounds its depth and the nested calls of the whole tree.
    pub async fn call_tool(&self, name: &str, args: Value) -> ToolOutcome {
        let call = ToolCall::new(name, args, self.caller.clone())
            .with_parent(&self.call_id)
            .with_chain(self.chain.clone());
        Arc::clone(&self.runner)
            .run_nested(call, self.cancel.child_token())
            .await
    }
}
