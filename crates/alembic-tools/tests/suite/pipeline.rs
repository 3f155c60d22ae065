//! Pipeline invariants (anchors §7.5, 1–5 and 9) with spy middlewares.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alembic_tools::*;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::*;

struct Fixture {
    pipeline: Arc<Pipeline>,
    journal: Journal,
    audit: Arc<MemoryAudit>,
}

fn fixture(spies: Vec<(&str, MiddlewareSlot, SpyMode)>, effect: EffectClass) -> Fixture {
    let journal = Journal::default();
    let registry = Arc::new(ToolRegistry::new());
    registry.register(echo_tool(&journal, effect)).unwrap();
    let audit = Arc::new(MemoryAudit::default());
    let mut b = Pipeline::builder(registry, "/project").audit(audit.clone());
    // Added in reverse on purpose: the slot decides the order, not insertion.
    for (name, slot, mode) in spies.into_iter().rev() {
        b = b.middleware(Spy::new(name, slot, mode, &journal));
    }
    Fixture {
        pipeline: b.build(),
        journal,
        audit,
    }
}

fn all_slots(
    mode_at: impl Fn(MiddlewareSlot) -> SpyMode,
) -> Vec<(&'static str, MiddlewareSlot, SpyMode)> {
    use MiddlewareSlot::*;
    [
        ("allow", AllowlistGate),
        ("safety", SafetyGate),
        ("cache", CacheCheck),
        ("dedup", SubmitDedup),
        ("observe", ObservationRecord),
        ("tracker", TrackerSignal),
        ("trace", TraceRecord),
    ]
    .into_iter()
    .map(|(n, s)| (n, s, mode_at(s)))
    .collect()
}

fn call(args: serde_json::Value) -> ToolCall {
    ToolCall::new("echo_args", args, trusted_caller("test"))
}

#[tokio::test]
async fn order_is_fixed_for_an_allowed_call() {
    let f = fixture(all_slots(|_| SpyMode::Pass), EffectClass::ReadOnly);
    let o = f.pipeline.execute(call(json!({"pattern": "x"}))).await;
    assert_eq!(o.status, OutcomeStatus::Ok);
    assert_eq!(
        f.journal.take(),
        [
            "before:allow",
            "before:safety",
            "before:cache",
            "before:dedup",
            "before:observe",
            "before:tracker",
            "before:trace",
            "handler",
            "after:allow:ok",
            "after:safety:ok",
            "after:cache:ok",
            "after:dedup:ok",
            "after:observe:ok",
            "after:tracker:ok",
            "after:trace:ok"
        ]
    );
    assert_eq!(
        f.pipeline.middleware_names(),
        [
            "allowlist_gate",
            "allow",
            "safety_gate",
            "safety",
            "cache",
            "dedup",
            "observe",
            "tracker",
            "trace"
        ]
    );
}

#[tokio::test]
async fn a_blocked_call_never_reaches_its_handler_and_is_audited_with_the_rule() {
    let f = fixture(
        all_slots(|s| {
            if s == MiddlewareSlot::SafetyGate {
                SpyMode::Block
            } else {
                SpyMode::Pass
            }
        }),
        EffectClass::ReadOnly,
    );
    let o = f.pipeline.execute(call(json!({}))).await;
    assert_eq!(o.status, OutcomeStatus::Blocked);
    assert_eq!(o.rule.as_deref(), Some("spy.safety"));
    assert!(o.metadata.blocked);
    let j = f.journal.take();
    assert!(!j.contains(&"handler".to_string()), "{j:?}");
    assert_eq!(&j[..2], ["before:allow", "before:safety"]);
    // after hooks still see the blocked call, in order
    assert!(j.ends_with(&[
        "after:observe:blocked".into(),
        "after:tracker:blocked".into(),
        "after:trace:blocked".into()
    ]));
    let audit = f.audit.0.lock().unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].verdict, "blocked");
    assert_eq!(audit[0].rule.as_deref(), Some("spy.safety"));
}

#[tokio::test]
async fn a_gate_that_errors_denies() {
    let f = fixture(
        all_slots(|s| {
            if s == MiddlewareSlot::AllowlistGate {
                SpyMode::Fail
            } else {
                SpyMode::Pass
            }
        }),
        EffectClass::ReadOnly,
    );
    let o = f.pipeline.execute(call(json!({}))).await;
    assert_eq!(o.status, OutcomeStatus::Blocked);
    assert_eq!(o.rule.as_deref(), Some("middleware_error.allow"));
    assert!(!f.journal.take().contains(&"handler".to_string()));
}

#[tokio::test]
async fn handler_errors_and_panics_become_outcomes() {
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(tool_with(
            "fails",
            EffectClass::ReadOnly,
            handler_fn(|_, _| async { Err(ToolError::failed("disk on fire")) }),
        ))
        .unwrap();
    registry
        .register(tool_with(
            "panics",
            EffectClass::ReadOnly,
            handler_fn(|_, _| async {
                let v: Vec<u8> = Vec::new();
                #[allow(clippy::indexing_slicing)]
                let _ = v[3];
                Ok(ToolOutput::json(json!({})))
            }),
        ))
        .unwrap();
    let journal = Journal::default();
    let p = Pipeline::builder(registry, ".")
        .middleware(Spy::new(
            "trace",
            MiddlewareSlot::TraceRecord,
            SpyMode::Pass,
            &journal,
        ))
        .build();
    let o = p
        .execute(ToolCall::new("fails", json!({}), trusted_caller("t")))
        .await;
    assert_eq!(
        (o.status, o.error.as_deref()),
        (OutcomeStatus::Error, Some("disk on fire"))
    );
    let o = p
        .execute(ToolCall::new("panics", json!({}), trusted_caller("t")))
        .await;
    assert_eq!(o.status, OutcomeStatus::Error);
    assert!(
        o.error
            .as_deref()
            .unwrap()
            .starts_with("tool \"panics\" panicked: index out of bounds"),
        "{:?}",
        o.error
    );
    assert_eq!(
        journal.take(),
        [
            "before:trace",
            "after:trace:error",
            "before:trace",
            "after:trace:error"
        ]
    );
}

#[tokio::test]
async fn a_cache_hit_still_passes_the_gates_and_skips_only_the_handler() {
    let f = fixture(
        all_slots(|s| {
            if s == MiddlewareSlot::CacheCheck {
                SpyMode::Respond(json!({"cached": true}))
            } else {
                SpyMode::Pass
            }
        }),
        EffectClass::ReadOnly,
    );
    let o = f.pipeline.execute(call(json!({}))).await;
    assert!(o.metadata.cache_hit);
    assert_eq!(o.output.unwrap().data, json!({"cached": true}));
    let j = f.journal.take();
    assert_eq!(&j[..3], ["before:allow", "before:safety", "before:cache"]);
    assert!(!j.contains(&"handler".to_string()));
}

/// A policy that can be flipped between calls.
struct Switch(AtomicBool);
impl SafetyCheck for Switch {
    fn check(&self, _call: &PreparedCall) -> SafetyDecision {
        if self.0.load(Ordering::SeqCst) {
            SafetyDecision::Allow
        } else {
            SafetyDecision::Deny {
                reason: "switched off".into(),
                rule: "switch".into(),
            }
        }
    }
}

#[tokio::test]
async fn changing_the_policy_between_identical_calls_is_seen_despite_the_cache() {
    let journal = Journal::default();
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(echo_tool(&journal, EffectClass::ReadOnly))
        .unwrap();
    let switch = Arc::new(Switch(AtomicBool::new(true)));
    let cache = Arc::new(ResultCache::new("/p", "policy-1"));
    let p = Pipeline::builder(registry, "/p")
        .safety(switch.clone())
        .middleware(cache.clone())
        .build();
    let args = json!({"pattern": "a"});
    assert_eq!(
        p.execute(call(args.clone())).await.status,
        OutcomeStatus::Ok
    );
    let second = p.execute(call(args.clone())).await;
    assert!(second.metadata.cache_hit);
    switch.0.store(false, Ordering::SeqCst);
    let third = p.execute(call(args)).await;
    assert_eq!(
        (third.status, third.rule.as_deref()),
        (OutcomeStatus::Blocked, Some("switch"))
    );
    assert_eq!(journal.take(), ["handler"]);
}

#[tokio::test]
async fn calls_with_different_arguments_never_share_a_cache_entry() {
    let journal = Journal::default();
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(echo_tool(&journal, EffectClass::ReadOnly))
        .unwrap();
    let cache = Arc::new(ResultCache::new("/p", "x"));
    let p = Pipeline::builder(registry, "/p")
        .middleware(cache.clone())
        .build();
    let a = p
        .execute(call(json!({"pattern": "a", "maxResults": 5})))
        .await;
    let b = p
        .execute(call(json!({"pattern": "a", "maxResults": 6})))
        .await;
    // same call with keys in another order and an alias: same entry
    let c = p
        .execute(call(json!({"max_results": "5", "query": "a"})))
        .await;
    assert!(!a.metadata.cache_hit && !b.metadata.cache_hit && c.metadata.cache_hit);
    assert_eq!(b.output.unwrap().data["maxResults"], 6);
    assert_eq!(cache.len(), 2);
    assert_eq!(journal.take(), ["handler", "handler"]);
}

#[tokio::test]
async fn side_effecting_tools_are_never_cached() {
    let journal = Journal::default();
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(echo_tool(&journal, EffectClass::WritesMemory))
        .unwrap();
    let cache = Arc::new(ResultCache::new("/p", "x"));
    struct AllowAll;
    impl SafetyCheck for AllowAll {
        fn check(&self, _: &PreparedCall) -> SafetyDecision {
            SafetyDecision::Allow
        }
    }
    let p = Pipeline::builder(registry, "/p")
        .safety(Arc::new(AllowAll))
        .middleware(cache.clone())
        .build();
    for _ in 0..3 {
        let o = p.execute(call(json!({"pattern": "a"}))).await;
        assert!(!o.metadata.cache_hit);
    }
    assert_eq!(cache.len(), 0);
    assert_eq!(journal.take(), ["handler", "handler", "handler"]);
}

#[tokio::test]
async fn a_successful_write_empties_the_result_cache() {
    let journal = Journal::default();
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(echo_tool(&journal, EffectClass::ReadOnly))
        .unwrap();
    registry
        .register(tool_with(
            "write_something",
            EffectClass::WritesProjectFiles,
            handler_fn(|_, _| async { Ok(ToolOutput::json(json!({"written": true}))) }),
        ))
        .unwrap();
    struct AllowAll;
    impl SafetyCheck for AllowAll {
        fn check(&self, _: &PreparedCall) -> SafetyDecision {
            SafetyDecision::Allow
        }
    }
    let cache = Arc::new(ResultCache::new("/p", "x"));
    let p = Pipeline::builder(registry, "/p")
        .safety(Arc::new(AllowAll))
        .middleware(cache.clone())
        .build();
    let read = || call(json!({"pattern": "a"}));
    assert!(!p.execute(read()).await.metadata.cache_hit);
    assert!(p.execute(read()).await.metadata.cache_hit);
    let write = p
        .execute(ToolCall::new(
            "write_something",
            json!({}),
            trusted_caller("test"),
        ))
        .await;
    assert_eq!(write.status, OutcomeStatus::Ok);
    assert!(cache.is_empty());
    assert!(!p.execute(read()).await.metadata.cache_hit);
    assert_eq!(journal.take(), ["handler", "handler"]);
}

#[tokio::test]
async fn the_default_safety_allows_only_read_only_tools() {
    let f = fixture(vec![], EffectClass::WritesProjectFiles);
    let o = f.pipeline.execute(call(json!({}))).await;
    assert_eq!(
        (o.status, o.rule.as_deref()),
        (OutcomeStatus::Blocked, Some("safety.default_read_only"))
    );
}

#[tokio::test]
async fn the_allowlist_is_enforced_and_hides_the_schema() {
    let f = fixture(vec![], EffectClass::ReadOnly);
    let caller = Caller::new("agent:chat", Allowlist::only(["other_tool"]));
    // invalid arguments, but the caller learns only that it may not use the tool
    let o = f
        .pipeline
        .execute(ToolCall::new(
            "echo_args",
            json!({"maxResults": "many"}),
            caller,
        ))
        .await;
    assert_eq!(
        (o.status, o.rule.as_deref()),
        (OutcomeStatus::Blocked, Some("allowlist"))
    );
    assert_eq!(
        o.error.as_deref(),
        Some("tool \"echo_args\" is not available to caller \"agent:chat\"")
    );
    assert!(f.journal.take().is_empty());
}

#[tokio::test]
async fn unknown_tools_get_suggestions_and_an_audit_record() {
    let f = fixture(vec![], EffectClass::ReadOnly);
    let o = f
        .pipeline
        .execute(ToolCall::new("echo_arg", json!({}), trusted_caller("t")))
        .await;
    assert_eq!(o.status, OutcomeStatus::UnknownTool);
    assert_eq!(o.suggestions, ["echo_args"]);
    assert_eq!(
        o.error.as_deref(),
        Some("unknown tool \"echo_arg\"; did you mean: echo_args?")
    );
    let audit = f.audit.0.lock().unwrap();
    assert_eq!(
        (audit.len(), audit[0].verdict.as_str()),
        (1, "unknown_tool")
    );
}

#[tokio::test]
async fn invalid_arguments_are_audited() {
    let f = fixture(vec![], EffectClass::ReadOnly);
    let o = f.pipeline.execute(call(json!({"maxResults": 0}))).await;
    assert_eq!(o.status, OutcomeStatus::InvalidArguments);
    assert_eq!(f.audit.0.lock().unwrap()[0].verdict, "invalid_arguments");
}

#[tokio::test]
async fn safety_reads_normalised_arguments() {
    struct NoSecrets(Mutex<Vec<serde_json::Value>>);
    impl SafetyCheck for NoSecrets {
        fn check(&self, call: &PreparedCall) -> SafetyDecision {
            self.0.lock().unwrap().push(call.args.clone());
            if call.args["filePath"]
                .as_str()
                .is_some_and(|p| p.contains("secret"))
            {
                SafetyDecision::Deny {
                    reason: "secret".into(),
                    rule: "no_secrets".into(),
                }
            } else {
                SafetyDecision::Allow
            }
        }
    }
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(echo_tool(&Journal::default(), EffectClass::ReadOnly))
        .unwrap();
    let check = Arc::new(NoSecrets(Mutex::new(Vec::new())));
    let p = Pipeline::builder(registry, ".")
        .safety(check.clone())
        .build();
    // the alias "path" must not slip past the check (the reference's bypass)
    let o = p.execute(call(json!({"path": "secret.txt"}))).await;
    assert_eq!(o.rule.as_deref(), Some("no_secrets"));
    assert_eq!(
        check.0.lock().unwrap()[0],
        json!({"filePath": "secret.txt"})
    );
}

#[tokio::test]
async fn timeouts_and_cancellation_end_the_call() {
    let registry = Arc::new(ToolRegistry::new());
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    registry
        .register(
            tool_with(
                "sleepy",
                EffectClass::ReadOnly,
                handler_fn(move |_, _| {
                    s.fetch_add(1, Ordering::SeqCst);
                    async {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        Ok(ToolOutput::json(json!({})))
                    }
                }),
            )
            .with_timeout(Duration::from_millis(20)),
        )
        .unwrap();
    let p = Pipeline::builder(registry, ".").build();
    let o = p
        .execute(ToolCall::new("sleepy", json!({}), trusted_caller("t")))
        .await;
    assert_eq!(o.status, OutcomeStatus::TimedOut);
    let token = tokio_util::sync::CancellationToken::new();
    token.cancel();
    let o = p
        .execute_with_cancel(
            ToolCall::new("sleepy", json!({}), trusted_caller("t")),
            token,
        )
        .await;
    assert_eq!(o.status, OutcomeStatus::Cancelled);
    // A call cancelled before it starts never reaches its handler.
    assert_eq!(started.load(Ordering::SeqCst), 1);
    let token = tokio_util::sync::CancellationToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        canceller.cancel();
    });
    let o = p
        .execute_with_cancel(
            ToolCall::new("sleepy", json!({}), trusted_caller("t")),
            token,
        )
        .await;
    assert_eq!(o.status, OutcomeStatus::Cancelled);
    assert_eq!(started.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_handler_sees_its_cancellation_and_the_call_still_ends_cancelled() {
    let registry = Arc::new(ToolRegistry::new());
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let saw = saw_cancel.clone();
    registry
        .register(tool_with(
            "watchful",
            EffectClass::ReadOnly,
            handler_fn(move |_, ctx| {
                let saw = saw.clone();
                async move {
                    ctx.cancel.cancelled().await;
                    saw.fetch_add(1, Ordering::SeqCst);
                    Ok(ToolOutput::json(json!({"partial": true})))
                }
            }),
        ))
        .unwrap();
    let p = Pipeline::builder(registry, ".").build();
    for _ in 0..20 {
        let token = tokio_util::sync::CancellationToken::new();
        let canceller = token.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            canceller.cancel();
        });
        let o = p
            .execute_with_cancel(
                ToolCall::new("watchful", json!({}), trusted_caller("t")),
                token,
            )
            .await;
        assert_eq!(o.status, OutcomeStatus::Cancelled);
    }
    // Every handler was polled after its token fired, so each one saw it.
    assert_eq!(saw_cancel.load(Ordering::SeqCst), 20);
}

#[tokio::test]
async fn nested_calls_pass_the_gates_with_the_parent_id() {
    let journal = Journal::default();
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(echo_tool(&journal, EffectClass::ReadOnly))
        .unwrap();
    registry
        .register(tool_with(
            "outer",
            EffectClass::ReadOnly,
            handler_fn(|_, ctx| async move {
                let inner = ctx.call_tool("echo_args", json!({"pattern": "p"})).await;
                let denied = ctx.call_tool("echo_args_forbidden", json!({})).await;
                Ok(ToolOutput::json(
                    json!({"inner": inner.status, "denied": denied.status}),
                ))
            }),
        ))
        .unwrap();
    let audit = Arc::new(MemoryAudit::default());
    let p = Pipeline::builder(registry, ".")
        .audit(audit.clone())
        .build();
    let caller = Caller::new("agent", Allowlist::only(["outer"]));
    let o = p
        .execute(ToolCall::new("outer", json!({}), caller).with_id("parent-1"))
        .await;
    // the nested call runs under the caller's allowlist, which does not include echo_args
    assert_eq!(
        o.output.unwrap().data,
        json!({"inner": "blocked", "denied": "unknown_tool"})
    );
    let audit = audit.0.lock().unwrap();
    let nested: Vec<_> = audit
        .iter()
        .filter(|e| e.parent_call_id.as_deref() == Some("parent-1"))
        .collect();
    assert_eq!(nested.len(), 2);
    assert_eq!(nested[0].rule.as_deref(), Some("allowlist"));
    assert!(journal.take().is_empty());
}

#[tokio::test]
async fn meta_tools_see_only_the_callers_capability() {
    let registry = Arc::new(ToolRegistry::new());
    meta::register_tools(&registry).unwrap();
    registry
        .register(echo_tool(&Journal::default(), EffectClass::ReadOnly))
        .unwrap();
    let p = Pipeline::builder(registry, ".").build();
    let caller = Caller::new("agent", Allowlist::only(["get_tool_details", "plan_task"]));
    let o = p
        .execute(ToolCall::new(
            "get_tool_details",
            json!({"toolName": "echo_args"}),
            caller.clone(),
        ))
        .await;
    assert_eq!(o.status, OutcomeStatus::Error);
    assert_eq!(
        o.error.as_deref(),
        Some("not found: no tool \"echo_args\" is available")
    );
    let o = p
        .execute(ToolCall::new(
            "get_tool_details",
            json!({"tool_name": "plan_task"}),
            caller.clone(),
        ))
        .await;
    assert_eq!(o.output.unwrap().data["name"], "plan_task");
    let o = p
        .execute(ToolCall::new(
            "plan_task",
            json!({"goal": "g", "steps": [{"description": "look", "tool": "echo_args"}]}),
            caller.clone(),
        ))
        .await;
    assert_eq!(o.status, OutcomeStatus::InvalidArguments);
    let o = p
        .execute(ToolCall::new(
            "plan_task",
            json!({"goal": "g", "steps": [{"description": "look", "tool": "get_tool_details"}]}),
            caller,
        ))
        .await;
    assert_eq!(
        o.output.unwrap().text,
        "plan: g\n1. look [get_tool_details]"
    );
}
