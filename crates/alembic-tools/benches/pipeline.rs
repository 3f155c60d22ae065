#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Overhead of the whole pipeline against a direct handler call, in the same run.
//!
//! Three measurements on a no-op tool: the handler called directly; the pipeline with its
//! gates, argument validation and a no-op audit sink; and the pipeline with the real SQLite
//! audit log (records are written by a background thread); and the overhead itself, taken
//! as the difference of interleaved chunks so that outside load hits both sides. Run:
//! `cargo bench -p alembic-tools --bench pipeline`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alembic_tools::*;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

struct NullAudit;
impl AuditSink for NullAudit {
    fn record(&self, entry: AuditEntry) {
        std::hint::black_box(entry);
    }
    fn record_input(&self, input: AuditInput) {
        std::hint::black_box(input);
    }
}

fn noop_tool() -> ToolDefinition {
    ToolDefinition::new(
        "noop",
        "Does nothing.",
        json!({"type": "object", "properties": {"pattern": {"type": "string"}, "maxResults": {"type": "integer"}}}),
        ToolModule::Composite,
        EffectClass::ReadOnly,
        handler_fn(|_, _| async { Ok(ToolOutput::new(serde_json::Value::Null, "")) }),
    )
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = Arc::new(ToolRegistry::new());
    registry.register(noop_tool()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let null = Pipeline::builder(Arc::clone(&registry), dir.path())
        .audit(Arc::new(NullAudit))
        .build();
    let audit = Arc::new(AuditLog::open_project(dir.path()).unwrap());
    let audited = Pipeline::builder(Arc::clone(&registry), dir.path())
        .audit(audit.clone())
        .build();
    let caller = Caller::new("bench", Allowlist::only(["noop"]));
    let args = json!({"pattern": "x", "maxResults": 5});
    let tool = registry.get("noop").unwrap();

    let mut g = c.benchmark_group("noop_call");
    g.bench_function("direct_handler", |b| {
        b.iter(|| {
            // A direct call still needs a context; build it through a trivial pipeline call path.
            rt.block_on(async {
                let out = tool
                    .definition
                    .handler
                    .call(args.clone(), dummy_context(&null, &caller))
                    .await;
                std::hint::black_box(out)
            })
        })
    });
    g.bench_function("pipeline_null_audit", |b| {
        b.iter(|| rt.block_on(null.execute(ToolCall::new("noop", args.clone(), caller.clone()))))
    });
    g.bench_function("pipeline_sqlite_audit", |b| {
        b.iter(|| rt.block_on(audited.execute(ToolCall::new("noop", args.clone(), caller.clone()))))
    });
    // The difference itself, measured in interleaved chunks so that load from other
    // processes falls on both sides alike: time(pipeline) - time(direct) per call.
    g.bench_function("overhead_null_audit_interleaved", |b| {
        b.iter_custom(|iters| {
            let mut pipeline = Duration::ZERO;
            let mut direct = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let chunk = left.min(64);
                let t = Instant::now();
                for _ in 0..chunk {
                    std::hint::black_box(rt.block_on(null.execute(ToolCall::new(
                        "noop",
                        args.clone(),
                        caller.clone(),
                    ))));
                }
                pipeline += t.elapsed();
                let t = Instant::now();
                for _ in 0..chunk {
                    let _ = std::hint::black_box(
                        rt.block_on(
                            tool.definition
                                .handler
                                .call(args.clone(), dummy_context(&null, &caller)),
                        ),
                    );
                }
                direct += t.elapsed();
                left -= chunk;
            }
            // Criterion refuses a zero sample; a small sample can come out negative by noise.
            pipeline.saturating_sub(direct).max(Duration::from_nanos(1))
        })
    });
    g.finish();
    audit.flush().unwrap();
}

fn dummy_context(p: &Arc<Pipeline>, caller: &Caller) -> ToolContext {
    ToolContext::detached(Arc::clone(p), caller.clone())
}

criterion_group!(benches, bench);
criterion_main!(benches);
