//! The tool side of the agent: a pipeline with the memory middlewares, the directory that
//! routes calls to their run, and the preset catalog.

use std::sync::Arc;

use alembic_context::{LoopDirectory, memory_middlewares};
use alembic_tools::{
    EffectClass, Pipeline, PipelineBuilder, PreparedCall, PresetCatalog, SafetyCheck,
    SafetyDecision, SessionGrants,
};

use crate::error::AgentError;

/// Tools whose only effect is on the calling run's working memory (its scratchpad, the
/// recipes it collected).
const WORKING_MEMORY_TOOLS: &[&str] = &["note_finding", "collect_scan_recipe"];

/// Lets working-memory tools run and asks the project's policy about everything else.
///
/// `note_finding` is classed `writes_memory`, which a read-only policy refuses; but what it
/// writes is the scratchpad of the run that calls it, which ends with the run.
pub struct WorkingMemorySafety {
    inner: Arc<dyn SafetyCheck>,
}

impl WorkingMemorySafety {
    pub fn new(inner: Arc<dyn SafetyCheck>) -> Self {
        WorkingMemorySafety { inner }
    }
}

impl SafetyCheck for WorkingMemorySafety {
    fn check(&self, call: &PreparedCall) -> SafetyDecision {
        if call.effect() == EffectClass::WritesMemory && WORKING_MEMORY_TOOLS.contains(&call.name())
        {
            return SafetyDecision::Allow;
        }
        self.inner.check(call)
    }
}

/// What the runtime needs from the tool runtime.
#[derive(Clone)]
pub struct AgentTools {
    pub pipeline: Arc<Pipeline>,
    pub loops: Arc<LoopDirectory>,
    pub presets: PresetCatalog,
    /// Tools forged for a run (`forge_tool`); each round's tool list adds the run's grants.
    pub grants: Arc<SessionGrants>,
}

impl std::fmt::Debug for AgentTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTools")
            .field("pipeline", &self.pipeline)
            .finish_non_exhaustive()
    }
}

impl AgentTools {
    /// Finishes `builder` with the memory middlewares over `loops` and the
    /// [`WorkingMemorySafety`] around `safety`.
    ///
    /// `loops` must be the directory the context tools (note_finding…) were registered with, so
    /// that they find this run; `ProjectRuntime::agent` wires both from one handle.
    pub fn build(
        builder: PipelineBuilder,
        loops: Arc<LoopDirectory>,
        safety: Arc<dyn SafetyCheck>,
        presets: PresetCatalog,
    ) -> Result<AgentTools, AgentError> {
        let mut builder = builder.safety(Arc::new(WorkingMemorySafety::new(safety)));
        for m in memory_middlewares(Arc::clone(&loops)) {
            builder = builder.middleware(m);
        }
        let pipeline = builder.build();
        Ok(AgentTools {
            pipeline,
            loops,
            presets,
            grants: Arc::default(),
        })
    }

    /// Uses `grants` (the forge service's, so `forge_tool` grants reach this agent's runs).
    pub fn with_grants(mut self, grants: Arc<SessionGrants>) -> AgentTools {
        self.grants = grants;
        self
    }
}
