//! What a handler sees besides its arguments: who called, where, shared services, and a way
//! to make nested calls that go through the same pipeline.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::capability::Allowlist;
use crate::pipeline::{Pipeline, ToolCall, ToolOutcome};

/// Who is calling, and which tools that caller may use.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    /// Stable identity for the audit log, e.g. `cli`, `mcp:claude-code`, `agent:chat`.
    pub id: String,
    /// The tools this caller may invoke. Enforced by the AllowlistGate.
    pub allowlist: Allowlist,
    /// Whether a person is present to approve calls; non-interactive callers refuse instead.
    pub interactive: bool,
}

impl Caller {
    pub fn new(id: impl Into<String>, allowlist: Allowlist) -> Self {
        Caller {
            id: id.into(),
            allowlist,
            interactive: false,
        }
    }
}

/// Typed, shared services handed to every handler (the reference's DI container).
///
/// Built once per pipeline; handlers look up what they need by type.
#[derive(Clone, Default)]
pub struct Services {
    map: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl fmt::Debug for Services {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Services({} entries)", self.map.len())
    }
}

impl Services {
    pub fn builder() -> ServicesBuilder {
        ServicesBuilder::default()
    }

    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|s| Arc::clone(s).downcast::<T>().ok())
    }
}

/// Collects services before the pipeline is built.
#[derive(Default)]
pub struct ServicesBuilder {
    map: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for ServicesBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServicesBuilder({} entries)", self.map.len())
    }
}

impl ServicesBuilder {
    pub fn insert<T: Any + Send + Sync>(mut self, service: Arc<T>) -> Self {
        self.map.insert(TypeId::of::<T>(), service);
        self
    }

    pub fn add<T: Any + Send + Sync>(&mut self, service: Arc<T>) {
        self.map.insert(TypeId::of::<T>(), service);
    }

    pub fn build(self) -> Services {
        Services {
            map: Arc::new(self.map),
        }
    }
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
    pub services: Services,
    pipeline: Arc<Pipeline>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("project_root", &self.project_root)
            .field("caller", &self.caller.id)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    pub(crate) fn new(
        pipeline: Arc<Pipeline>,
        caller: Caller,
        call_id: String,
        parent_call_id: Option<String>,
        cancel: CancellationToken,
    ) -> Self {
        ToolContext {
            project_root: pipeline.project_root().to_path_buf(),
            services: pipeline.services().clone(),
            caller,
            call_id,
            parent_call_id,
            cancel,
            pipeline,
        }
    }

    /// A context outside any pipeline call, for calling a handler directly (benchmarks,
    /// handler unit tests). Nested calls made through it are still full pipeline calls.
    pub fn detached(pipeline: Arc<Pipeline>, caller: Caller) -> Self {
        let id = uuid::Uuid::now_v7().to_string();
        Self::new(pipeline, caller, id, None, CancellationToken::new())
    }

    /// Looks up a shared service by type.
    pub fn service<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.services.get::<T>()
    }

    /// The pipeline this call runs in (for registry lookups by meta tools).
    pub fn pipeline(&self) -> &Arc<Pipeline> {
        &self.pipeline
    }

    /// Reports progress of a long call (forwarded to MCP progress notifications and the CLI).
    pub fn progress(&self, message: impl Into<String>, fraction: Option<f64>) {
        self.pipeline.events().send_with(|| {
            crate::events::ToolEvent::new(
                &self.call_id,
                "",
                crate::events::ToolEventKind::Progress {
                    message: message.into(),
                    fraction,
                },
            )
        });
    }

    /// Calls another tool as a nested call: same caller and capability, this call as parent,
    /// and every gate, middleware and audit record of a top-level call.
    pub async fn call_tool(&self, name: &str, args: Value) -> ToolOutcome {
        let call = ToolCall::new(name, args, self.caller.clone()).with_parent(&self.call_id);
        self.pipeline
            .execute_with_cancel(call, self.cancel.child_token())
            .await
    }
}
