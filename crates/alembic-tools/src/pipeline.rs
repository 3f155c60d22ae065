//! The ToolExecutionPipeline: every tool call, from any caller, passes through here.
//!
//! Order contract (fixed by [`MiddlewareSlot`], whatever order middlewares are added in):
//!
//! 1. resolve the name (unknown → refused with "did you mean")
//! 2. normalise + validate arguments (refused with the argument path on error)
//! 3. `before` hooks: AllowlistGate → SafetyGate → CacheCheck → SubmitDedup (any may block;
//!    a hook that errors blocks; CacheCheck may answer, which skips only the handler)
//! 4. the handler, with a timeout and a cancellation token; errors and panics become outcomes
//! 5. `after` hooks: ObservationRecord → TrackerSignal → TraceRecord (they also see blocked calls)
//! 6. the audit record and the finished event, for every attempted call

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::args::{self, Coercion, Rename};
use crate::audit::{AuditInput, AuditSink};
use crate::capability::Allowlist;
use crate::context::{Caller, Services, ToolContext};
use crate::definition::{EffectClass, ToolDefinition, ToolError, ToolOutput};
use crate::events::{EventBus, ToolEvent, ToolEventKind};
use crate::registry::ToolRegistry;

/// Default time limit of one call when the tool sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A request to run a tool.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub args: Value,
    pub caller: Caller,
    pub parent_call_id: Option<String>,
}

impl ToolCall {
    pub fn new(name: impl Into<String>, args: Value, caller: Caller) -> Self {
        ToolCall {
            id: uuid::Uuid::now_v7().to_string(),
            name: name.into(),
            args,
            caller,
            parent_call_id: None,
        }
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    pub fn with_parent(mut self, parent: &str) -> Self {
        self.parent_call_id = Some(parent.to_string());
        self
    }
}

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

/// Flags and measurements that middlewares read and write during one call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolMetadata {
    pub cache_hit: bool,
    pub blocked: bool,
    pub is_new: bool,
    #[serde(with = "duration_ms")]
    pub duration: Duration,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedup_message: Option<String>,
    pub is_submit: bool,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub renames: Vec<Rename>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub coercions: Vec<Coercion>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub unmatched: Vec<String>,
    /// Problems inside `after` hooks; they never change the outcome.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub hook_errors: Vec<String>,
}

mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Ok(Duration::from_secs_f64(ms.max(0.0) / 1000.0))
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    Ok,
    Error,
    Blocked,
    InvalidArguments,
    UnknownTool,
    TimedOut,
    Cancelled,
}

impl OutcomeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeStatus::Ok => "ok",
            OutcomeStatus::Error => "error",
            OutcomeStatus::Blocked => "blocked",
            OutcomeStatus::InvalidArguments => "invalid_arguments",
            OutcomeStatus::UnknownTool => "unknown_tool",
            OutcomeStatus::TimedOut => "timed_out",
            OutcomeStatus::Cancelled => "cancelled",
        }
    }

    /// CLI exit code: 0 ok, 1 tool error, 2 usage or validation error, 3 refused by policy.
    pub fn exit_code(self) -> i32 {
        match self {
            OutcomeStatus::Ok => 0,
            OutcomeStatus::Error | OutcomeStatus::TimedOut | OutcomeStatus::Cancelled => 1,
            OutcomeStatus::InvalidArguments | OutcomeStatus::UnknownTool => 2,
            OutcomeStatus::Blocked => 3,
        }
    }
}

/// What the handler (or a short-circuiting hook) produced, as `after` hooks see it.
#[derive(Debug, Clone, PartialEq)]
pub enum CallResult {
    Ok(ToolOutput),
    Failed {
        status: OutcomeStatus,
        error: String,
        rule: Option<String>,
    },
}

/// The result of one call as its caller receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    pub call_id: String,
    pub tool: String,
    pub status: OutcomeStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<ToolOutput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rule that decided a refusal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// "Did you mean" names for an unknown tool.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub suggestions: Vec<String>,
    pub metadata: ToolMetadata,
}

impl ToolOutcome {
    pub fn is_ok(&self) -> bool {
        self.status == OutcomeStatus::Ok
    }

    /// The text a model should see: the compact rendering, or the error with its rule.
    pub fn text_for_model(&self) -> String {
        if let Some(msg) = &self.metadata.dedup_message {
            return msg.clone();
        }
        match (&self.output, &self.error) {
            (Some(out), _) if self.is_ok() => out.text.clone(),
            (_, Some(err)) => format!("error ({}): {err}", self.status.as_str()),
            _ => format!("error ({})", self.status.as_str()),
        }
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

/// The safety verdict on one prepared call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SafetyDecision {
    Allow,
    NeedsApproval { reason: String },
    Deny { reason: String, rule: String },
}

/// Decides whether a call is safe to run; implemented by the safety crate's policy.
pub trait SafetyCheck: Send + Sync {
    fn check(&self, call: &PreparedCall) -> SafetyDecision;
}

/// The default until a real policy is plugged in: only tools that change nothing may run.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadOnlySafety;

impl SafetyCheck for ReadOnlySafety {
    fn check(&self, call: &PreparedCall) -> SafetyDecision {
        if call.effect().is_side_effect_free() {
            SafetyDecision::Allow
        } else {
            SafetyDecision::Deny {
                reason: format!(
                    "tool \"{}\" has effect {} and only read-only tools are allowed without a safety policy",
                    call.name(),
                    call.effect()
                ),
                rule: "safety.default_read_only".into(),
            }
        }
    }
}

/// Refuses tools outside the caller's allowlist (the reference only filtered what it advertised).
#[derive(Debug, Default)]
pub struct AllowlistGate;

#[async_trait]
impl Middleware for AllowlistGate {
    fn name(&self) -> &str {
        "allowlist_gate"
    }
    fn slot(&self) -> MiddlewareSlot {
        MiddlewareSlot::AllowlistGate
    }
    async fn before(
        &self,
        call: &PreparedCall,
        _meta: &mut ToolMetadata,
    ) -> Result<BeforeVerdict, MiddlewareError> {
        if call.caller.allowlist.allows(call.name()) {
            return Ok(BeforeVerdict::Continue);
        }
        Ok(BeforeVerdict::Block {
            reason: format!(
                "tool \"{}\" is not available to caller \"{}\"",
                call.name(),
                call.caller.id
            ),
            rule: "allowlist".into(),
        })
    }
}

/// Asks the [`SafetyCheck`] about the normalised arguments.
pub struct SafetyGate {
    check: Arc<dyn SafetyCheck>,
}

impl SafetyGate {
    pub fn new(check: Arc<dyn SafetyCheck>) -> Self {
        SafetyGate { check }
    }
}

#[async_trait]
impl Middleware for SafetyGate {
    fn name(&self) -> &str {
        "safety_gate"
    }
    fn slot(&self) -> MiddlewareSlot {
        MiddlewareSlot::SafetyGate
    }
    async fn before(
        &self,
        call: &PreparedCall,
        _meta: &mut ToolMetadata,
    ) -> Result<BeforeVerdict, MiddlewareError> {
        Ok(match self.check.check(call) {
            SafetyDecision::Allow => BeforeVerdict::Continue,
            SafetyDecision::Deny { reason, rule } => BeforeVerdict::Block { reason, rule },
            // There is no approval channel inside the pipeline: a call that needs a person's
            // approval is refused, and says so.
            SafetyDecision::NeedsApproval { reason } => BeforeVerdict::Block {
                reason: format!("needs approval: {reason}"),
                rule: "needs_approval".into(),
            },
        })
    }
}

/// Builds a [`Pipeline`].
pub struct PipelineBuilder {
    registry: Arc<ToolRegistry>,
    project_root: PathBuf,
    services: Services,
    middlewares: Vec<Arc<dyn Middleware>>,
    safety: Arc<dyn SafetyCheck>,
    audit: Option<Arc<dyn AuditSink>>,
    events: EventBus,
    timeout: Duration,
}

impl PipelineBuilder {
    pub fn services(mut self, services: Services) -> Self {
        self.services = services;
        self
    }
    pub fn safety(mut self, safety: Arc<dyn SafetyCheck>) -> Self {
        self.safety = safety;
        self
    }
    pub fn middleware(mut self, m: Arc<dyn Middleware>) -> Self {
        self.middlewares.push(m);
        self
    }
    pub fn audit(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(sink);
        self
    }
    pub fn events(mut self, bus: EventBus) -> Self {
        self.events = bus;
        self
    }
    pub fn default_timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    pub fn build(self) -> Arc<Pipeline> {
        // The built-in gates come first within their slots.
        let mut middlewares: Vec<Arc<dyn Middleware>> = vec![
            Arc::new(AllowlistGate),
            Arc::new(SafetyGate::new(self.safety)),
        ];
        middlewares.extend(self.middlewares);
        // Stable sort: the order contract comes from the slot, ties keep insertion order.
        middlewares.sort_by_key(|m| m.slot());
        Arc::new(Pipeline {
            registry: self.registry,
            project_root: self.project_root,
            services: self.services,
            middlewares,
            audit: self.audit,
            events: self.events,
            default_timeout: self.timeout,
        })
    }
}

/// The one path from a caller to a handler.
pub struct Pipeline {
    registry: Arc<ToolRegistry>,
    project_root: PathBuf,
    services: Services,
    middlewares: Vec<Arc<dyn Middleware>>,
    audit: Option<Arc<dyn AuditSink>>,
    events: EventBus,
    default_timeout: Duration,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("project_root", &self.project_root)
            .field(
                "middlewares",
                &self
                    .middlewares
                    .iter()
                    .map(|m| m.name().to_string())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Pipeline {
    pub fn builder(
        registry: Arc<ToolRegistry>,
        project_root: impl Into<PathBuf>,
    ) -> PipelineBuilder {
        PipelineBuilder {
            registry,
            project_root: project_root.into(),
            services: Services::default(),
            middlewares: Vec::new(),
            safety: Arc::new(ReadOnlySafety),
            audit: None,
            events: EventBus::default(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }
    pub fn project_root(&self) -> &Path {
        &self.project_root
    }
    pub fn services(&self) -> &Services {
        &self.services
    }
    pub fn events(&self) -> &EventBus {
        &self.events
    }
    /// Names of the installed middlewares, in execution order.
    pub fn middleware_names(&self) -> Vec<String> {
        self.middlewares
            .iter()
            .map(|m| m.name().to_string())
            .collect()
    }

    /// Runs one call to completion. Never panics, whatever the handler does.
    pub async fn execute(self: &Arc<Self>, call: ToolCall) -> ToolOutcome {
        self.execute_with_cancel(call, CancellationToken::new())
            .await
    }

    /// Like [`Pipeline::execute`], with a token the caller can cancel.
    pub async fn execute_with_cancel(
        self: &Arc<Self>,
        call: ToolCall,
        cancel: CancellationToken,
    ) -> ToolOutcome {
        let started = Instant::now();
        self.events
            .send_with(|| ToolEvent::new(&call.id, &call.name, ToolEventKind::Started));
        // The raw arguments move into the prepared call instead of being copied.
        let mut call = call;
        let raw_args = std::mem::take(&mut call.args);
        let (outcome, args_for_audit) = self.run(&call, raw_args, cancel).await;
        let mut outcome = outcome;
        outcome.metadata.duration = started.elapsed();
        self.finish(&call, &outcome, args_for_audit);
        outcome
    }

    async fn run(
        self: &Arc<Self>,
        call: &ToolCall,
        raw_args: Value,
        cancel: CancellationToken,
    ) -> (ToolOutcome, Value) {
        let mut meta = ToolMetadata::default();
        let Some(tool) = self.registry.get(&call.name) else {
            let suggestions = self.registry.suggest(&call.name, &call.caller.allowlist);
            let outcome = refusal(
                call,
                OutcomeStatus::UnknownTool,
                unknown_message(&call.name, &suggestions),
                None,
                meta,
            )
            .with_suggestions(suggestions);
            return (outcome, raw_args);
        };
        // A caller that may not use the tool learns nothing about its schema: validation is
        // skipped and the AllowlistGate refuses below.
        let args = if call.caller.allowlist.allows(&call.name) {
            match args::prepare(
                raw_args.clone(),
                &tool.definition.parameters,
                &tool.validator,
            ) {
                Ok(p) => {
                    meta.renames = p.renames;
                    meta.coercions = p.coercions;
                    meta.unmatched = p.unmatched;
                    p.args
                }
                Err(e) => {
                    let o = refusal(
                        call,
                        OutcomeStatus::InvalidArguments,
                        e.to_string(),
                        None,
                        meta,
                    );
                    return (o, raw_args);
                }
            }
        } else {
            raw_args.clone()
        };
        let prepared = PreparedCall {
            id: call.id.clone(),
            parent_call_id: call.parent_call_id.clone(),
            caller: call.caller.clone(),
            definition: Arc::clone(&tool.definition),
            args,
            raw_args,
        };
        let result = match self.run_before(&prepared, &mut meta).await {
            Some(short) => short,
            None => self.run_handler(&prepared, cancel).await,
        };
        self.run_after(&prepared, &result, &mut meta).await;
        let outcome = outcome_from(&prepared, result, meta);
        (outcome, prepared.args)
    }

    /// Runs the `before` hooks; returns a result when one of them decided the call.
    async fn run_before(&self, call: &PreparedCall, meta: &mut ToolMetadata) -> Option<CallResult> {
        for m in &self.middlewares {
            let verdict = m
                .before(call, meta)
                .await
                .unwrap_or_else(|e| BeforeVerdict::Block {
                    reason: format!("middleware {} failed: {e}", m.name()),
                    rule: format!("middleware_error.{}", m.name()),
                });
            match verdict {
                BeforeVerdict::Continue => {}
                BeforeVerdict::Block { reason, rule } => {
                    meta.blocked = true;
                    return Some(CallResult::Failed {
                        status: OutcomeStatus::Blocked,
                        error: reason,
                        rule: Some(rule),
                    });
                }
                BeforeVerdict::Respond(out) => {
                    meta.cache_hit = true;
                    return Some(CallResult::Ok(out));
                }
            }
        }
        None
    }

    async fn run_handler(
        self: &Arc<Self>,
        call: &PreparedCall,
        cancel: CancellationToken,
    ) -> CallResult {
        let token = cancel.child_token();
        let ctx = ToolContext::new(
            Arc::clone(self),
            call.caller.clone(),
            call.id.clone(),
            call.parent_call_id.clone(),
            token.clone(),
        );
        if cancel.is_cancelled() {
            return cancelled_result();
        }
        let limit = call.definition.timeout.unwrap_or(self.default_timeout);
        let fut =
            std::panic::AssertUnwindSafe(call.definition.handler.call(call.args.clone(), ctx))
                .catch_unwind();
        let mut fut = std::pin::pin!(fut);
        // Most handlers finish on their first poll. Arming the timer only when one does not
        // keeps a timer registration (and the driver wake-up it costs) off the common path.
        let first = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
        let result = match first {
            Poll::Ready(r) => r,
            // Biased, handler first: a handler that watches its token gets to finish (and
            // report) on the poll that sees the cancellation, instead of being dropped by a
            // random branch choice.
            Poll::Pending => tokio::select! {
                biased;
                r = fut => {
                    // What a handler returns once its caller has cancelled is still a
                    // cancellation.
                    if cancel.is_cancelled() {
                        return cancelled_result();
                    }
                    r
                }
                _ = tokio::time::sleep(limit) => {
                    token.cancel();
                    return failed(OutcomeStatus::TimedOut, format!("tool \"{}\" timed out after {} s", call.name(), limit.as_secs_f64()), None);
                }
                _ = cancel.cancelled() => return cancelled_result(),
            },
        };
        match result {
            Ok(Ok(out)) => CallResult::Ok(out),
            Ok(Err(e)) => from_tool_error(e),
            Err(panic) => failed(
                OutcomeStatus::Error,
                format!(
                    "tool \"{}\" panicked: {}",
                    call.name(),
                    panic_message(panic.as_ref())
                ),
                None,
            ),
        }
    }

    async fn run_after(&self, call: &PreparedCall, result: &CallResult, meta: &mut ToolMetadata) {
        for m in &self.middlewares {
            let r = std::panic::AssertUnwindSafe(m.after(call, result, meta))
                .catch_unwind()
                .await;
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => meta.hook_errors.push(format!("{}: {e}", m.name())),
                Err(p) => meta.hook_errors.push(format!(
                    "{}: panicked: {}",
                    m.name(),
                    panic_message(p.as_ref())
                )),
            }
        }
    }

    fn finish(&self, call: &ToolCall, outcome: &ToolOutcome, args: Value) {
        if let Some(sink) = &self.audit {
            sink.record_input(AuditInput::from_outcome(call, outcome, args));
        }
        self.events.send_with(|| {
            ToolEvent::new(
                &call.id,
                &call.name,
                ToolEventKind::Finished {
                    status: outcome.status,
                    duration_ms: outcome.metadata.duration.as_secs_f64() * 1000.0,
                },
            )
        });
    }
}

fn unknown_message(name: &str, suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        format!("unknown tool \"{name}\"")
    } else {
        format!(
            "unknown tool \"{name}\"; did you mean: {}?",
            suggestions.join(", ")
        )
    }
}

fn failed(status: OutcomeStatus, error: String, rule: Option<String>) -> CallResult {
    CallResult::Failed {
        status,
        error,
        rule,
    }
}

fn cancelled_result() -> CallResult {
    failed(
        OutcomeStatus::Cancelled,
        "cancelled by the caller".into(),
        None,
    )
}

fn from_tool_error(e: ToolError) -> CallResult {
    match e {
        ToolError::Refused { reason, rule } => failed(OutcomeStatus::Blocked, reason, Some(rule)),
        ToolError::Invalid(m) => failed(OutcomeStatus::InvalidArguments, m, None),
        ToolError::Cancelled => failed(OutcomeStatus::Cancelled, "cancelled".into(), None),
        e @ (ToolError::Failed(_) | ToolError::NotFound(_)) => {
            failed(OutcomeStatus::Error, e.to_string(), None)
        }
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn refusal(
    call: &ToolCall,
    status: OutcomeStatus,
    error: String,
    rule: Option<String>,
    metadata: ToolMetadata,
) -> ToolOutcome {
    ToolOutcome {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        status,
        output: None,
        error: Some(error),
        rule,
        suggestions: Vec::new(),
        metadata,
    }
}

impl ToolOutcome {
    fn with_suggestions(mut self, s: Vec<String>) -> Self {
        self.suggestions = s;
        self
    }
}

fn outcome_from(call: &PreparedCall, result: CallResult, metadata: ToolMetadata) -> ToolOutcome {
    let (status, output, error, rule) = match result {
        CallResult::Ok(out) => (OutcomeStatus::Ok, Some(out), None, None),
        CallResult::Failed {
            status,
            error,
            rule,
        } => (status, None, Some(error), rule),
    };
    ToolOutcome {
        call_id: call.id.clone(),
        tool: call.name().to_string(),
        status,
        output,
        error,
        rule,
        suggestions: Vec::new(),
        metadata,
    }
}

/// Convenience for tests and simple callers: an allow-all caller.
pub fn trusted_caller(id: &str) -> Caller {
    Caller::new(id, Allowlist::All)
}
