//! ToolForge latencies: forging by reuse (goal < 1 ms) and by composition (goal < 10 ms), calling
//! a composed tool against calling its steps directly, sandbox cold start, and the cost of one
//! `tools.call` from inside the sandbox. Each group has a baseline in the same run.
//!
//! Run: `cargo bench -p alembic-forge --bench forge`
//!
//! Measured 2026-11-30 (release, 2 shared cores under load from other builds; medians):
//! - forge/baseline_list_definitions 175 µs; reuse_match_and_register_alias 369 µs (goal < 1 ms);
//!   compose_parse_validate_register 23 µs (goal < 10 ms)
//! - compose_call: three direct pipeline calls 26 µs; analyze_networkkit as one call 56 µs
//!   (the composed call adds one pipeline pass plus templating: ~2.1x)
//! - sandbox: native tool call 8.7 µs; cold start of a trivial handler (fresh runtime, context
//!   and thread) 1.0 ms; a handler making ten tools.call 1.68 ms, so one nested call from the
//!   sandbox costs ~68 µs (about 60 µs over a direct pipeline call: thread hop and channels)

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use alembic_forge::reuse::{ForgeRequest, alias_name, find_reuse};
use alembic_forge::sandbox::{self, SandboxLimits};
use alembic_forge::{
    AliasSpec, CompositionSpec, ForgeMode, TemporaryToolRegistry, alias_tool, composed_tool,
    generate::context_bridge,
};
use alembic_tools::{
    Allowlist, Caller, EffectClass, Pipeline, ToolCall, ToolDefinition, ToolModule, ToolOutput,
    ToolRegistry, handler_fn,
};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

fn tool(name: &str, description: &str, schema: Value) -> ToolDefinition {
    ToolDefinition::new(
        name,
        description,
        schema,
        ToolModule::AstGraph,
        EffectClass::ReadOnly,
        handler_fn(|args, _| async move {
            let classes = args
                .get("classes")
                .cloned()
                .unwrap_or(json!(["APIClient", "RequestBuilder"]));
            Ok(ToolOutput::json(
                json!({"classes": classes, "callGraph": [], "patterns": []}),
            ))
        }),
    )
}

/// About 60 tools, as many as the built-in catalogue, with realistic schemas.
fn registry() -> Arc<ToolRegistry> {
    let r = Arc::new(ToolRegistry::new());
    let module = json!({"type": "object", "properties": {"module": {"type": "string", "description": "module name"}}});
    let classes = json!({"type": "object", "properties": {"classes": {"type": "array", "items": {"type": "string"}}}});
    r.register(tool(
        "get_module_classes",
        "Get the class hierarchy of a module.",
        module.clone(),
    ))
    .ok();
    r.register(tool(
        "query_class_calls",
        "Query callers and callees.",
        classes.clone(),
    ))
    .ok();
    r.register(tool(
        "detect_class_patterns",
        "Detect design patterns.",
        classes.clone(),
    ))
    .ok();
    r.register(tool("search_recipes", "Search knowledge recipes by keyword and category.", json!({"type": "object", "properties": {
        "keyword": {"type": "string"}, "category": {"type": "string", "description": "recipe category"}, "limit": {"type": "integer"}}}))).ok();
    let verbs = [
        "get", "list", "search", "check", "submit", "update", "analyze", "read",
    ];
    let nouns = [
        "file",
        "symbol",
        "guard_rule",
        "candidate",
        "skill",
        "memory",
        "edge",
    ];
    for v in verbs {
        for n in nouns {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string", "description": format!("{n} name")}, "limit": {"type": "integer"}}});
            r.register(tool(
                &format!("{v}_{n}"),
                &format!("{v} a {n} of the project"),
                schema,
            ))
            .ok();
        }
    }
    r
}

const NETWORKKIT: &str = r#"{
  "name": "analyze_networkkit", "description": "Analyse NetworkKit.",
  "steps": [
    {"tool": "get_module_classes", "args": {"module": "NetworkKit"}, "extract_key": "classes"},
    {"tool": "query_class_calls", "args": {"classes": "${steps.0.classes}"}, "extract_key": "callGraph"},
    {"tool": "detect_class_patterns", "args": {"classes": "${steps.0.classes}"}, "extract_key": "patterns"}
  ]
}"#;

fn forging(c: &mut Criterion) {
    let registry = registry();
    let temporary = TemporaryToolRegistry::new(Arc::clone(&registry));
    let request = ForgeRequest::new("搜索 Network 分类的 Recipe", "search", "Network");
    let mut g = c.benchmark_group("forge");
    g.bench_function("baseline_list_definitions", |b| {
        b.iter(|| black_box(registry.definitions(&Allowlist::All).len()))
    });
    g.bench_function("reuse_match_and_register_alias", |b| {
        b.iter(|| {
            let m = find_reuse(&registry, &Allowlist::All, &request).map(|m| m.preset_args);
            let spec = AliasSpec {
                name: alias_name("search_recipes", "Network"),
                tool: "search_recipes".into(),
                preset_args: m.unwrap_or_default(),
                description: None,
            };
            let def = alias_tool(&spec, &registry);
            temporary
                .register(def.unwrap_or_else(unreachable_tool), ForgeMode::Reuse, None)
                .ok();
        })
    });
    g.bench_function("compose_parse_validate_register", |b| {
        b.iter(|| {
            let spec = CompositionSpec::from_json(NETWORKKIT).ok();
            if let Some(spec) = spec
                && spec
                    .validate(&|n| registry.contains(n), &BTreeMap::new())
                    .is_ok()
            {
                temporary
                    .register(composed_tool(spec, &registry), ForgeMode::Compose, None)
                    .ok();
            }
        })
    });
    g.finish();
}

fn unreachable_tool() -> ToolDefinition {
    tool(
        "never_used",
        "placeholder when the alias cannot be built",
        json!({"type": "object"}),
    )
}

fn calling(c: &mut Criterion) {
    let registry = registry();
    if let Ok(spec) = CompositionSpec::from_json(NETWORKKIT) {
        registry.register(composed_tool(spec, &registry)).ok();
    }
    let pipeline = Pipeline::builder(Arc::clone(&registry), ".").build();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .ok();
    let Some(rt) = rt else { return };
    let caller = Caller::new("bench", Allowlist::All);
    let call = |name: &str, args: Value| {
        rt.block_on(pipeline.execute(ToolCall::new(name, args, caller.clone())))
    };
    let mut g = c.benchmark_group("compose_call");
    g.bench_function("baseline_three_direct_calls", |b| {
        b.iter(|| {
            call("get_module_classes", json!({"module": "NetworkKit"}));
            call("query_class_calls", json!({"classes": ["APIClient"]}));
            call("detect_class_patterns", json!({"classes": ["APIClient"]}))
        })
    });
    g.bench_function("analyze_networkkit_one_call", |b| {
        b.iter(|| call("analyze_networkkit", json!({})))
    });
    g.finish();
}

fn sandboxing(c: &mut Criterion) {
    let registry = registry();
    let limits = SandboxLimits::default();
    let trivial = "function toolHandler(p) { return p.n + 1; }";
    let ten_calls = "function toolHandler(p, tools) { let n = 0; for (let i = 0; i < 10; i++) n += tools.call('get_module_classes', {module: 'M'}).classes.length; return n; }";
    for (name, code) in [("trivial", trivial), ("ten_calls", ten_calls)] {
        let def = ToolDefinition::new(
            format!("js_{name}"),
            "bench",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            ToolModule::Composite,
            EffectClass::ReadOnly,
            {
                let code = code.to_string();
                let limits = limits.clone();
                handler_fn(move |args, ctx| {
                    let code = code.clone();
                    let limits = limits.clone();
                    async move {
                        let r = sandbox::run(&code, &args, context_bridge(ctx), &limits)
                            .await
                            .map_err(|e| alembic_tools::ToolError::Failed(e.to_string()))?;
                        Ok(ToolOutput::json(r.output))
                    }
                })
            },
        );
        registry.register(def).ok();
    }
    let pipeline = Pipeline::builder(Arc::clone(&registry), ".").build();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .ok();
    let Some(rt) = rt else { return };
    let caller = Caller::new("bench", Allowlist::All);
    let call = |name: &str, args: Value| {
        rt.block_on(pipeline.execute(ToolCall::new(name, args, caller.clone())))
    };
    let mut g = c.benchmark_group("sandbox");
    g.bench_function("baseline_native_tool_call", |b| {
        b.iter(|| call("get_module_classes", json!({"module": "M"})))
    });
    g.bench_function("cold_start_trivial_handler", |b| {
        b.iter(|| call("js_trivial", json!({"n": 1})))
    });
    g.bench_function("handler_with_ten_tool_calls", |b| {
        b.iter(|| call("js_ten_calls", json!({})))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = forging, calling, sandboxing
}
criterion_main!(benches);
