//! Issue 36, hole 2: a generated tool that calls itself (or a partner that calls it back) used
//! to overflow the stack and abort the process. Nested calls now have a depth limit and a
//! budget per top-level call, decided by the pipeline before any handler runs; each top-level
//! call ends with a clear refusal and the process lives on.
//!
//! Variants: direct self-recursion (sync and async handlers), a mutually recursive pair, a
//! recursion that catches each refusal and returns normally, a recursion through a composed
//! tool (generated → composed → generated …) and through an alias, a branching recursion
//! through a parallel composition, a fan-out of 100 calls in one run, a fan-out spread over
//! runs with the default per-run quota, and legitimate nesting 3 and 8 deep.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alembic_forge::generate::{GeneratedTool, generated_tool_definition};
use alembic_forge::sandbox::SandboxLimits;
use alembic_forge::{AliasSpec, CompositionSpec, alias_tool, composed_tool};
use alembic_tools::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Harness, data, harness};

fn generated(name: &str, code: &str, limits: SandboxLimits) -> ToolDefinition {
    let tool = GeneratedTool {
        name: name.into(),
        description: format!("generated test tool {name}"),
        parameters: json!({"type": "object", "properties": {"d": {"type": "integer"}}}),
        code: code.into(),
        test_cases: vec![],
    };
    generated_tool_definition(&tool, limits)
}

fn register(h: &Harness, name: &str, code: &str) {
    h.registry
        .register(generated(name, code, SandboxLimits::default()))
        .unwrap();
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn top_level(h: &Harness, rt: &tokio::runtime::Runtime, name: &str) -> ToolOutcome {
    let caller = Caller::new("test", Allowlist::All);
    rt.block_on(h.pipeline.execute(ToolCall::new(name, json!({}), caller)))
}

/// The refusal every recursion must end with at its top.
fn assert_refused(outcome: &ToolOutcome, rule: &str, chain_end: &str) {
    assert_eq!(outcome.status, OutcomeStatus::Blocked, "{outcome:?}");
    assert_eq!(outcome.rule.as_deref(), Some(rule), "{outcome:?}");
    let error = outcome.error.as_deref().unwrap();
    assert!(error.len() < 1_500, "the message is bounded: {error}");
    assert!(error.ends_with(chain_end), "{error}");
}

const SELF_CALL: &str = "function toolHandler(p, tools) { return tools.call('self_call', {}); }";
const PING_A: &str = "function toolHandler(p, tools) { return {a: tools.call('ping_b', {})}; }";
const PING_B: &str =
    "async function toolHandler(p, tools) { return {b: await tools.call('ping_a', {})}; }";

#[test]
fn a_self_calling_generated_tool_ends_with_nesting_depth_and_an_audited_chain() {
    let h = harness();
    register(&h, "self_call", SELF_CALL);
    let rt = rt();
    let out = top_level(&h, &rt, "self_call");
    assert_refused(
        &out,
        "nesting.depth",
        "depth 9 is over the limit of 8 (a top-level call and 7 levels of tools calling tools); \
         chain: self_call → self_call → self_call → …(1 more)… → self_call → self_call → \
         self_call → self_call → self_call",
    );
    // Eight runs, then the ninth call refused before its handler: each record names its parent.
    let entries = h.audit.entries();
    let calls: Vec<_> = entries.iter().filter(|e| e.tool == "self_call").collect();
    assert_eq!(calls.len(), 9);
    let refused = calls.iter().filter(|e| e.verdict == "blocked").count();
    assert_eq!(refused, 9, "each level passes the refusal up as its own");
    let top = calls.iter().find(|e| e.parent_call_id.is_none()).unwrap();
    let mut depth = 1;
    let mut current = top.call_id.clone();
    while let Some(child) = calls
        .iter()
        .find(|e| e.parent_call_id.as_deref() == Some(current.as_str()))
    {
        depth += 1;
        current = child.call_id.clone();
    }
    assert_eq!(
        depth, 9,
        "one chain of parent ids from the top-level call down"
    );
    // The same pipeline serves the next call at once.
    let next = top_level(&h, &rt, "self_call");
    assert_eq!(next.rule.as_deref(), Some("nesting.depth"));
    let ok = data(&h.call("get_module_classes", json!({"module": "NetworkKit"})));
    assert_eq!(ok["module"], "NetworkKit");
}

#[test]
fn a_mutually_recursive_pair_ends_with_nesting_depth() {
    let h = harness();
    register(&h, "ping_a", PING_A);
    register(&h, "ping_b", PING_B);
    let rt = rt();
    assert_refused(
        &top_level(&h, &rt, "ping_a"),
        "nesting.depth",
        "chain: ping_a → ping_b → ping_a → …(1 more)… → ping_a → ping_b → ping_a → ping_b → ping_a",
    );
    assert_refused(
        &top_level(&h, &rt, "ping_b"),
        "nesting.depth",
        "→ ping_a → ping_b → ping_a → ping_b",
    );
}

#[test]
fn a_recursion_that_catches_the_refusal_finishes_normally() {
    let h = harness();
    register(
        &h,
        "self_catch",
        "function toolHandler(p, tools) { const d = p.d || 1; \
         try { return tools.call('self_catch', {d: d + 1}); } \
         catch (e) { return {deepest: d, error: e.message}; } }",
    );
    let out = data(&top_level(&h, &rt(), "self_catch"));
    assert_eq!(out["deepest"], 8, "{out}");
    let error = out["error"].as_str().unwrap();
    assert!(
        error.starts_with("tool \"self_catch\" failed: refused by nesting.depth: "),
        "{error}"
    );
}

#[test]
fn a_recursion_through_a_composed_tool_keeps_its_chain() {
    // generated → composed → generated …: the chain crosses both kinds of handler.
    let h = harness();
    register(
        &h,
        "via_compose",
        "function toolHandler(p, tools) { return tools.call('composed_loop', {}); }",
    );
    let spec = CompositionSpec::from_json(
        r#"{"name": "composed_loop", "description": "calls the generated tool",
            "steps": [{"tool": "via_compose", "args": {}}]}"#,
    )
    .unwrap();
    h.registry
        .register(composed_tool(spec, &h.registry))
        .unwrap();
    for top in ["via_compose", "composed_loop"] {
        let out = top_level(&h, &rt(), top);
        assert_eq!(out.status, OutcomeStatus::Blocked, "{top}: {out:?}");
        assert_eq!(out.rule.as_deref(), Some("nesting.depth"), "{top}");
        let error = out.error.unwrap();
        assert!(
            error.contains("via_compose → composed_loop → via_compose"),
            "{error}"
        );
    }
}

#[test]
fn a_recursion_through_an_alias_keeps_its_chain() {
    let h = harness();
    register(
        &h,
        "via_alias",
        "function toolHandler(p, tools) { return tools.call('alias_loop', {}); }",
    );
    let spec = AliasSpec {
        name: "alias_loop".into(),
        tool: "via_alias".into(),
        preset_args: Default::default(),
        description: None,
    };
    h.registry
        .register(alias_tool(&spec, &h.registry).unwrap())
        .unwrap();
    let out = top_level(&h, &rt(), "via_alias");
    assert_eq!(out.rule.as_deref(), Some("nesting.depth"), "{out:?}");
    let error = out.error.unwrap();
    assert!(
        error.contains("via_alias → alias_loop → via_alias"),
        "{error}"
    );
}

#[test]
fn a_branching_recursion_through_a_parallel_composition_stays_bounded() {
    // Two parallel steps per level, each calling back: 2^8 calls within the depth limit, so the
    // budget (or the depth, whichever a branch meets first) ends it.
    let h = harness();
    register(
        &h,
        "branch",
        "function toolHandler(p, tools) { return tools.call('both_branches', {}); }",
    );
    let spec = CompositionSpec::from_json(
        r#"{"name": "both_branches", "description": "calls branch twice at once",
            "merge_strategy": "parallel",
            "steps": [{"tool": "branch", "args": {}}, {"tool": "branch", "args": {}}]}"#,
    )
    .unwrap();
    h.registry
        .register(composed_tool(spec, &h.registry))
        .unwrap();
    let out = top_level(&h, &rt(), "both_branches");
    assert_eq!(out.status, OutcomeStatus::Blocked, "{out:?}");
    let rule = out.rule.as_deref().unwrap();
    assert!(pipeline::nesting::is_nesting_rule(rule), "{rule}");
    let records = h.audit.entries().len();
    // One top-level call and its counted nested calls; no branch runs past the budget.
    assert!(
        records <= 1 + 2 * MAX_NESTED_CALLS as usize,
        "{records} records"
    );
}

#[test]
fn a_fan_out_of_100_calls_gets_64_and_then_nesting_budget() {
    let h = harness();
    // A run quota above the budget, so the budget is what stops it.
    let limits = SandboxLimits {
        max_tool_calls: 200,
        ..SandboxLimits::default()
    };
    h.registry
        .register(generated(
            "fan_out",
            "function toolHandler(p, tools) { let ok = 0; const refused = []; \
             for (let i = 0; i < 100; i++) { \
               try { tools.call('get_module_classes', {module: 'M' + i}); ok++; } \
               catch (e) { refused.push(e.message); } } \
             return {ok: ok, refused: refused.length, first: refused[0]}; }",
            limits,
        ))
        .unwrap();
    let rt = rt();
    let out = data(&top_level(&h, &rt, "fan_out"));
    assert_eq!((&out["ok"], &out["refused"]), (&json!(64), &json!(36)));
    assert_eq!(
        out["first"],
        "tool \"get_module_classes\" failed: refused by nesting.budget: nested call to \
         \"get_module_classes\": nested call refused: call 65 is over the budget of 64 nested \
         calls per top-level call; chain: fan_out → get_module_classes"
    );
    // The budget belongs to one top-level call: the next one gets its own.
    let again = data(&top_level(&h, &rt, "fan_out"));
    assert_eq!(again["ok"], 64);
}

#[test]
fn a_fan_out_over_runs_with_the_default_quota_ends_with_nesting_budget() {
    // 20 calls of a tool that makes 5 calls each: 120 nested calls, under every run's quota.
    let h = harness();
    register(
        &h,
        "fan_outer",
        "function toolHandler(p, tools) { for (let i = 0; i < 20; i++) tools.call('fan_inner', {}); return 'done'; }",
    );
    register(
        &h,
        "fan_inner",
        "function toolHandler(p, tools) { for (let i = 0; i < 5; i++) tools.call('get_module_classes', {module: 'M'}); return 1; }",
    );
    let out = top_level(&h, &rt(), "fan_outer");
    assert_refused(
        &out,
        "nesting.budget",
        "call 65 is over the budget of 64 nested calls per top-level call; chain: fan_outer → \
         fan_inner → get_module_classes",
    );
    // Ten inner runs of 6 calls, then the 11th inner run and 3 of its calls: 53 leaf calls ran.
    let entries = h.audit.entries();
    let leaf_ok = entries
        .iter()
        .filter(|e| e.tool == "get_module_classes" && e.verdict == "ok")
        .count();
    assert_eq!(leaf_ok, 53);
}

#[test]
fn legitimate_nesting_3_and_8_deep_still_works() {
    let h = harness();
    register(
        &h,
        "outer3",
        "function toolHandler(p, tools) { return {outer: tools.call('middle3', {})}; }",
    );
    let spec = CompositionSpec::from_json(
        r#"{"name": "middle3", "description": "calls inner3",
            "steps": [{"tool": "inner3", "args": {}}]}"#,
    )
    .unwrap();
    h.registry
        .register(composed_tool(spec, &h.registry))
        .unwrap();
    register(
        &h,
        "inner3",
        "function toolHandler(p, tools) { return tools.call('get_module_classes', {module: 'NetworkKit'}).classes; }",
    );
    let out = data(&top_level(&h, &rt(), "outer3"));
    assert_eq!(
        out,
        json!({"outer": {"inner3": ["APIClient", "RequestBuilder"]}})
    );
    // A chain of exactly eight levels: level 8 is the cheap tool itself.
    for level in 1..=7 {
        let next = if level == 7 {
            "get_module_classes".to_string()
        } else {
            format!("level{}", level + 1)
        };
        register(
            &h,
            &format!("level{level}"),
            &format!(
                "function toolHandler(p, tools) {{ return tools.call('{next}', {{module: 'NetworkKit'}}); }}"
            ),
        );
    }
    let out = data(&top_level(&h, &rt(), "level1"));
    assert_eq!(out["module"], "NetworkKit");
}

/// Threads of this process: all of them, and the sandbox's.
fn threads() -> (usize, usize) {
    let mut all = 0;
    let mut sandbox = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let comm = std::fs::read_to_string(task.unwrap().path().join("comm")).unwrap_or_default();
        all += 1;
        if comm.trim() == "forge-sandbox" {
            sandbox += 1;
        }
    }
    (all, sandbox)
}

/// Waits (bounded) until no sandbox thread is left and the count is back to `baseline`; a
/// finished run's thread exits just after it hands back its result.
fn wait_for_threads(baseline: usize) -> (usize, usize) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let now = threads();
        if (now.0 <= baseline && now.1 == 0) || Instant::now() > until {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

const CHILD_ENV: &str = "ALEMBIC_RECURSION_CHILD";
const CHILD_DONE: &str = "recursion child: all checks passed";

/// Run in a process of its own (thread counts of a test binary that runs tests in parallel
/// mean nothing; and an abort, the old failure, must fail this test rather than kill the
/// binary): recursions end, one sandbox thread per level is alive at most, and the thread
/// count is back to normal afterwards.
#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test runs itself in a child process, which needs no sandboxing"
)]
fn recursion_leaves_the_process_alive_with_its_threads_back_to_normal() {
    if std::env::var_os(CHILD_ENV).is_some() {
        recursion_in_this_process();
        println!("{CHILD_DONE}");
        return;
    }
    let name =
        "suite::recursion::recursion_leaves_the_process_alive_with_its_threads_back_to_normal";
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            child.kill().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(CHILD_DONE),
        "the child process ended {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
}

fn recursion_in_this_process() {
    let h = harness();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    h.registry
        .register(ToolDefinition::new(
            "sandbox_threads",
            "Counts the sandbox threads alive.",
            json!({"type": "object", "properties": {}}),
            ToolModule::Composite,
            EffectClass::ReadOnly,
            handler_fn(move |_, _| {
                let n = threads().1;
                record.lock().unwrap().push(n);
                async move { Ok(ToolOutput::json(json!(n))) }
            }),
        ))
        .unwrap();
    // Level 7 (the deepest that may still make two calls) counts the threads, then recurses.
    register(
        &h,
        "self_call",
        "function toolHandler(p, tools) { const d = p.d || 1; \
         if (d === 7) tools.call('sandbox_threads', {}); \
         return tools.call('self_call', {d: d + 1}); }",
    );
    register(&h, "ping_a", PING_A);
    register(&h, "ping_b", PING_B);
    let rt = rt();
    let baseline = threads().0;
    for round in 0..5 {
        for top in ["self_call", "ping_a"] {
            let out = top_level(&h, &rt, top);
            assert_eq!(
                out.rule.as_deref(),
                Some("nesting.depth"),
                "{top} {round}: {out:?}"
            );
        }
    }
    assert_eq!(
        *seen.lock().unwrap(),
        vec![7; 5],
        "one sandbox thread per level while the recursion runs"
    );
    let (all, sandbox) = wait_for_threads(baseline);
    assert_eq!(sandbox, 0, "no sandbox thread is left");
    assert!(all <= baseline, "{all} threads after, {baseline} before");
    let ok: Value = data(&top_level(&h, &rt, "sandbox_threads"));
    assert_eq!(ok, json!(0));
}
