//! The stages of the pipeline: the [`Middleware`] trait, the [`MiddlewareSlot`] that fixes
//! where a stage runs, what a `before` hook may decide ([`BeforeVerdict`]), and the
//! [`PreparedCall`] every hook inspects.
//!
//! [`PreparedCall`] lives here rather than with the plain call values of [`crate::call`]: it
//! holds the tool's [`ToolDefinition`], whose handler sees a `ToolContext`, which makes nested
//! calls with those plain values; keeping it apart keeps the module graph free of cycles.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::call::{CallResult, Caller, ToolMetadata, ToolOutput};
use crate::definition::{EffectClass, ToolDefinition};

/// A call after name resolution and argument normalisation: what middlewares inspect.
#[derive(Debug, Clone)]
pub struct PreparedCall {
    pub id: String,
    pub parent_call_id: Option<String>,
    pub caller: Caller,
    pub definition: Arc<ToolDefinition>,
    /// Normalised and validated arguments (raw ones when the caller may not use the tool).
    pub args: Value,
    pub raw_args: Value,
}

impl PreparedCall {
    pub fn name(&self) -> &str {
        &self.definition.name
    }
    pub fn effect(&self) -> EffectClass {
        self.definition.effect
    }
}

/// What a `before` hook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeVerdict {
    Continue,
    Block {
        reason: String,
        rule: String,
    },
    /// Answer without running the handler (a cache hit). Later gates still ran before this.
    Respond(ToolOutput),
}

/// A middleware failed; in a `before` hook this blocks the call.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct MiddlewareError(pub String);

/// Where a middleware sits in the order contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MiddlewareSlot {
    AllowlistGate,
    SafetyGate,
    CacheCheck,
    SubmitDedup,
    ObservationRecord,
    TrackerSignal,
    TraceRecord,
}

/// A stage of the pipeline. Both hooks default to doing nothing.
#[async_trait]
pub trait Middleware: Send + Sync {
    fn name(&self) -> &str;
    fn slot(&self) -> MiddlewareSlot;

    async fn before(
        &self,
        _call: &PreparedCall,
        _meta: &mut ToolMetadata,
    ) -> Result<BeforeVerdict, MiddlewareError> {
        Ok(BeforeVerdict::Continue)
    }

    async fn after(
        &self,
        _call: &PreparedCall,
        _result: &CallResult,
        _meta: &mut ToolMetadata,
    ) -> Result<(), MiddlewareError> {
        Ok(())
    }
}
