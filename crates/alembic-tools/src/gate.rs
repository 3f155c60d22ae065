//! The two gates every pipeline has: the caller's allowlist and the safety check.

use std::sync::Arc;

use async_trait::async_trait;

use crate::call::{Caller, ToolMetadata};
use crate::capability::Allowlist;
use crate::middleware::{BeforeVerdict, Middleware, MiddlewareError, MiddlewareSlot, PreparedCall};

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

/// Convenience for tests and simple callers: an allow-all caller.
pub fn trusted_caller(id: &str) -> Caller {
    Caller::new(id, Allowlist::All)
}
