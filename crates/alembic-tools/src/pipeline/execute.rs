//! Running one call: resolve, normalise, `before` hooks, handler (timeout, cancellation,
//! panics), `after` hooks, audit record and events.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Pipeline, nesting};
use crate::args;
use crate::audit::AuditInput;
use crate::audit::bound::{MAX_NAME_BYTES, bound_str};
use crate::call::{CallChain, CallResult, OutcomeStatus, ToolCall, ToolMetadata, ToolOutcome};
use crate::context::ToolContext;
use crate::definition::ToolError;
use crate::events::{ToolEvent, ToolEventKind};
use crate::middleware::{BeforeVerdict, PreparedCall};

impl Pipeline {
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
        // Before the name is resolved: a runaway recursion must cost nothing past this point.
        if let Some((rule, message)) = nesting::check(call) {
            meta.blocked = true;
            let outcome = refusal(
                call,
                OutcomeStatus::Blocked,
                message,
                Some(rule.to_string()),
                meta,
            );
            return (outcome, raw_args);
        }
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
                        bounded(e.to_string()),
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
            None => {
                let chain = call.chain.below(&call.name);
                self.run_handler(&prepared, chain, cancel).await
            }
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
        chain: CallChain,
        cancel: CancellationToken,
    ) -> CallResult {
        let token = cancel.child_token();
        let runner: Arc<Pipeline> = Arc::clone(self);
        let ctx = ToolContext::new(
            runner,
            call.caller.clone(),
            call.id.clone(),
            call.parent_call_id.clone(),
            token.clone(),
            chain,
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

/// Names only a bounded prefix of the name asked for: a 3 MiB name must not come back as a
/// 6 MB reply.
fn unknown_message(name: &str, suggestions: &[String]) -> String {
    let name = bound_str(name, MAX_NAME_BYTES);
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

/// Longest handler error text an outcome keeps. A handler that names its input in an error
/// (an id, a path) must not turn a megabyte argument into a megabyte error for the model, the
/// MCP client and the audit log (found by the MCP fuzz test). The middle is cut, so both the
/// start (what was wrong) and the end (often what is accepted) survive.
const MAX_ERROR_CHARS: usize = 1_000;

fn bounded(text: String) -> String {
    let chars = text.chars().count();
    if chars <= MAX_ERROR_CHARS {
        return text;
    }
    let head: String = text.chars().take(MAX_ERROR_CHARS / 2).collect();
    let tail: String = text.chars().skip(chars - MAX_ERROR_CHARS / 2).collect();
    let cut = text.len() - head.len() - tail.len();
    format!("{head} …({cut} bytes cut)… {tail}")
}

fn from_tool_error(e: ToolError) -> CallResult {
    match e {
        ToolError::Refused { reason, rule } => {
            failed(OutcomeStatus::Blocked, bounded(reason), Some(rule))
        }
        ToolError::Invalid(m) => failed(OutcomeStatus::InvalidArguments, bounded(m), None),
        ToolError::Cancelled => failed(OutcomeStatus::Cancelled, "cancelled".into(), None),
        e @ (ToolError::Failed(_) | ToolError::NotFound(_)) => {
            failed(OutcomeStatus::Error, bounded(e.to_string()), None)
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
        // An unknown or invalid call's name is the caller's text, echoed in the reply.
        tool: bound_str(&call.name, MAX_NAME_BYTES),
        status,
        output: None,
        error: Some(error),
        rule,
        suggestions: Vec::new(),
        metadata,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_errors_keep_their_start_and_end_and_say_how_much_was_cut() {
        assert_eq!(bounded("short".into()), "short");
        let long = format!(
            "unknown dimension \"{}\"; accepted: a, b",
            "é".repeat(5_000)
        );
        let cut = bounded(long.clone());
        assert!(cut.starts_with("unknown dimension \"ééé"), "{cut}");
        assert!(cut.ends_with("ééé\"; accepted: a, b"), "{cut}");
        assert!(cut.contains(" …(8072 bytes cut)… "), "{cut}");
        assert!(cut.chars().count() < MAX_ERROR_CHARS + 30);
    }
}
