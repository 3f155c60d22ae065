//! Prompt assembly and compaction over a 200-round synthetic history.
//!
//! `round/memory` runs what the memory layer adds to every round of an agent loop: record two
//! tool calls through working memory and the tracker, build the dynamic memory prompt and the
//! phase context, append the round to the context window and compact it. `round/baseline`
//! does only what a loop without memory does anyway: append the messages and render the
//! history for the provider. Both run 200 rounds per iteration, so time / 200 = µs per round,
//! and the ratio memory/baseline is the overhead of the memory layer.

use std::hint::black_box;
use std::sync::{Arc, Mutex};

use alembic_context::{
    ActiveContextOptions, BudgetProfile, ContextWindow, DimensionReport, ExplorationBudget,
    ExplorationTracker, MemoryCoordinator, Message, ScopeId, SessionFinding, SessionStore,
    StaticPromptRequest, Strategy, TokenMeter, ToolCallRequest, ToolObservation,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

const ROUNDS: u32 = 200;

fn search(round: u32) -> ToolObservation {
    let matches: Vec<Value> = (0..12)
        .map(|i| json!({"file": format!("Sources/Module{}/File{}.swift", round % 17, i), "line": i * 7 + 1}))
        .collect();
    let text = (0..12)
        .map(|i| {
            format!(
                "Sources/Module{}/File{i}.swift:{}: let value = service.fetch(request)",
                round % 17,
                i * 7 + 1
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    ToolObservation::ok(
        "search_project_code",
        json!({"pattern": format!("pattern{round}")}),
        json!({"matches": matches}),
        text,
    )
}

fn read(round: u32) -> ToolObservation {
    let content = "import Foundation\nfinal class Client {\n    func send() {}\n}\n".repeat(30);
    let path = format!("Sources/Module{}/File{}.swift", round % 17, round % 12);
    ToolObservation::ok(
        "read_project_file",
        json!({"filePath": path}),
        json!({"path": path, "content": content}),
        content,
    )
}

fn session() -> Arc<Mutex<SessionStore>> {
    let mut s = SessionStore::new();
    for d in 0..6 {
        s.store_report(DimensionReport {
            dim_id: format!("dimension-{d}"),
            completed_at_ms: d + 1,
            analysis_text: "Layered architecture with a shared network client. ".repeat(8),
            findings: (0..8)
                .map(|i| SessionFinding {
                    finding: format!("Finding {i} of dimension {d} about APIClient"),
                    evidence: format!("Sources/F{i}.swift:{i}"),
                    importance: (i % 10) as u8 + 1,
                })
                .collect(),
            referenced_files: (0..20).map(|i| format!("Sources/F{i}.swift")).collect(),
            ..DimensionReport::default()
        });
    }
    Arc::new(Mutex::new(s))
}

/// One synthetic run of ROUNDS rounds through the memory layer.
fn memory_run(meter: TokenMeter) -> usize {
    let coordinator = MemoryCoordinator::new(meter.clone()).with_session(session());
    let scope = ScopeId::new("networking:analyst");
    coordinator.open_scope(
        scope.clone(),
        BudgetProfile::Analyst,
        ActiveContextOptions::default(),
    );
    let request = StaticPromptRequest {
        dimension: Some("networking"),
        ..StaticPromptRequest::default()
    };
    let static_prompt = coordinator
        .static_prompt(&scope, &request)
        .unwrap_or_default();
    let budget = ExplorationBudget {
        max_iterations: ROUNDS + 10,
        search_budget: ROUNDS,
        ..ExplorationBudget::default()
    };
    let mut tracker = ExplorationTracker::new(Strategy::Analyst, budget);
    let mut window = ContextWindow::new(
        "Analyse the networking dimension of this project.",
        32_000,
        meter,
    );
    let mut total = 0;
    for round in 1..=ROUNDS {
        tracker.tick();
        let _ = coordinator.with_active(&scope, |ac| {
            ac.start_round(round);
            if let Some(n) = tracker.next_nudge(ac) {
                window.push_user(n.text);
            }
            for obs in [search(round), read(round)] {
                ac.record_observation(obs.clone());
                let new = tracker.record_tool_call(&obs);
                ac.record_action(&obs, new);
            }
            if round % 5 == 0 {
                ac.note_finding(
                    &format!("finding of round {round}"),
                    "Sources/F1.swift:3",
                    f64::from(round % 10),
                );
            }
            tracker.end_round(ac);
        });
        let dynamic = coordinator.dynamic_prompt(&scope).unwrap_or_default();
        window.set_system_prompt(format!(
            "You are an analyst.\n\n{static_prompt}\n\n{dynamic}{}",
            tracker.phase_context()
        ));
        push_round(&mut window, round);
        window.compact();
        total += window.render().len();
    }
    total
}

fn push_round(window: &mut ContextWindow, round: u32) {
    let calls = vec![
        ToolCallRequest {
            id: format!("s{round}"),
            name: "search_project_code".into(),
            args: json!({"pattern": format!("pattern{round}")}),
        },
        ToolCallRequest {
            id: format!("r{round}"),
            name: "read_project_file".into(),
            args: json!({"filePath": "a.swift"}),
        },
    ];
    window.push_assistant(Message::assistant_with_calls("Looking further.", calls));
    window.push_tool_result(&format!("s{round}"), &search(round).text, false);
    window.push_tool_result(&format!("r{round}"), &read(round).text, false);
}

/// The same rounds without memory: append the messages and render them.
fn baseline_run() -> usize {
    let mut messages = vec![Message::user(
        "Analyse the networking dimension of this project.",
    )];
    let mut total = 0;
    for round in 1..=ROUNDS {
        messages.push(Message::assistant("Looking further."));
        messages.push(Message::tool_result(
            format!("s{round}"),
            search(round).text,
        ));
        messages.push(Message::tool_result(format!("r{round}"), read(round).text));
        total += black_box(messages.clone()).len();
    }
    total
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("round");
    g.throughput(Throughput::Elements(u64::from(ROUNDS)));
    g.sample_size(10);
    g.bench_function("baseline", |b| b.iter(baseline_run));
    g.bench_function("memory_estimate", |b| {
        b.iter(|| memory_run(TokenMeter::default()))
    });
    g.bench_function("memory_exact_gpt4o", |b| {
        b.iter(|| memory_run(TokenMeter::for_model("gpt-4o")))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
