//! The model-aware history cap bites on a 1M-token model (issue 38, must-show 4).
//!
//! A chat run on `gpt-4.1` (1,000,000 tokens: the window's budget is 997,000) reads two new
//! files of ~2,800 characters per round and writes ~1,800 characters of its own each turn, for
//! far more rounds than the seed's cap holds: a user run there has a 64,000-token history cap
//! (`budget_for_context`). Below 60 % of the cap every request carries the whole history; past
//! it L1 and L2 run, the requests shrink, L2 asks the model for one summary per round range,
//! and the history of every request stays under the cap although the budget is 15 times more.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use alembic_agent::{
    AgentEvent, AgentPreset, MEMORY_EXTRACTION_SYSTEM_PROMPT, RunReport, RunRequest, StageLimits,
};
use alembic_context::{RunKind, TokenMeter, budget_for_context, context_size};
use alembic_llm::ProviderKind;
use alembic_llm::fake::{FakeReply, FakeTurn, RecordedRequest};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::l2_summary::{assert_units_whole, is_summary_call};
use super::support::{Harness, body_tokens, user_messages};

const MODEL: &str = "gpt-4.1";
const QUESTION: &str = "Read every Page file and tell me what they hold.";
/// Rounds the scripted model reads files in before it answers.
const ROUNDS: usize = 120;
const READS_PER_ROUND: usize = 2;
const SUMMARY: &str = "Pages read so far declare PageEntry values; nothing else was found.";

fn add_page_files(h: &Harness) {
    let dir = h.project.path().join("Pages");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..ROUNDS * READS_PER_ROUND {
        let body: String = (0..40)
            .map(|k| {
                format!(
                    "    let entry{k} = PageEntry{i}(index: {k}, total: {})\n",
                    k * i
                )
            })
            .collect();
        let text = format!("final class Page{i} {{\n{body}}}\n");
        std::fs::write(dir.join(format!("Page{i}.swift")), text).unwrap();
    }
}

/// Round `round` of the loop (0-based): some thinking and two new files, then the answer.
fn loop_reply(request: &RecordedRequest, round: usize) -> FakeReply {
    let turn = if round < ROUNDS {
        let thought =
            format!("Round {round}: the pages so far declare entries; next two. ").repeat(30);
        let mut turn = FakeTurn::text(&thought);
        for k in 0..READS_PER_ROUND {
            let file = round * READS_PER_ROUND + k;
            turn = turn.tool_call(
                &format!("c{file}"),
                "read_project_file",
                json!({"filePath": format!("Pages/Page{file}.swift")}),
            );
        }
        turn
    } else {
        FakeTurn::text("Every Page file declares PageEntry values.")
    };
    turn.with_usage(body_tokens(request), 400).into()
}

async fn long_run() -> (Harness, RunReport) {
    let mut h = Harness::new(ProviderKind::OpenAi)
        .await
        .limits(StageLimits {
            chat_iterations: ROUNDS as u32 + 5,
            ..StageLimits::default()
        });
    h.presets
        .apply_toml("[presets.pages]\ndescription = \"read files\"\ncapabilities = []\nadd_tools = [\"read_project_file\"]\n")
        .unwrap();
    add_page_files(&h);
    let rounds = AtomicUsize::new(0);
    h.server.respond_with(move |request| {
        if is_summary_call(request) {
            FakeTurn::text(SUMMARY)
                .with_usage(body_tokens(request), 40)
                .into()
        } else if request.system_prompt() == MEMORY_EXTRACTION_SYSTEM_PROMPT {
            FakeTurn::text(r#"{"memories": []}"#).into()
        } else {
            loop_reply(request, rounds.fetch_add(1, Ordering::SeqCst))
        }
    });
    let request = RunRequest::new(QUESTION, AgentPreset::from_name("pages"));
    let report = h
        .agent_for(MODEL)
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    (h, report)
}

/// Tokens of a request's messages after the system prompt, counted as the window counts them
/// (content, tool calls as JSON, 4 per message) with the model's tokenizer.
fn history_tokens(meter: &TokenMeter, request: &RecordedRequest) -> usize {
    let messages = request.body["messages"].as_array().unwrap();
    messages
        .iter()
        .skip(1)
        .map(|m| {
            let content = m["content"].as_str().unwrap_or_default();
            let calls = match &m["tool_calls"] {
                Value::Array(calls) if !calls.is_empty() => {
                    meter.count(&m["tool_calls"].to_string())
                }
                _ => 0,
            };
            meter.count(content) + calls + 4
        })
        .sum()
}

struct Compaction {
    level: String,
    tokens_before: usize,
    tokens_after: usize,
    budget: usize,
    history_after: usize,
    history_cap: Option<usize>,
    llm_summary: bool,
}

fn compactions(h: &Harness) -> Vec<Compaction> {
    h.events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ContextCompacted {
                level,
                tokens_before,
                tokens_after,
                budget,
                history_tokens_after,
                history_cap,
                llm_summary,
            } => Some(Compaction {
                level: level.clone(),
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
                budget: *budget,
                history_after: *history_tokens_after,
                history_cap: *history_cap,
                llm_summary: *llm_summary,
            }),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_long_run_on_a_1m_model_compacts_past_the_seeds_cap() {
    let cap = budget_for_context(context_size(MODEL), RunKind::User);
    assert_eq!((context_size(MODEL), cap), (1_000_000, 64_000));
    let (h, report) = long_run().await;
    assert_eq!(report.answer, "Every Page file declares PageEntry values.");
    let meter = TokenMeter::for_model(MODEL);
    let loop_requests: Vec<RecordedRequest> = h
        .requests()
        .into_iter()
        .filter(|r| r.body["messages"][1]["content"] == QUESTION)
        .collect();
    assert_eq!(loop_requests.len(), ROUNDS + 1);
    let history: Vec<usize> = loop_requests
        .iter()
        .map(|r| history_tokens(&meter, r))
        .collect();
    for (i, r) in loop_requests.iter().enumerate() {
        assert_units_whole(r.body["messages"].as_array().unwrap(), i);
    }

    // Before the cap: every request carries the whole history, so it only grows, and it
    // grows well past what the first compaction level is for before anything shrinks.
    let first_shrink = (1..history.len())
        .find(|&i| history[i] < history[i - 1])
        .expect("the requests never shrank");
    assert!(history[..first_shrink].windows(2).all(|w| w[0] < w[1]));
    let peak_before = history[first_shrink - 1];
    assert!(
        peak_before * 2 > cap && peak_before < cap,
        "first shrink after {peak_before} of {cap} tokens"
    );

    // Past it: L1 and L2 ran, each shrinking the window, and the history stayed under the cap
    // while the budget of the whole request is the 1M context less the margin.
    let events = compactions(&h);
    let levels: Vec<&str> = events.iter().map(|c| c.level.as_str()).collect();
    assert!(
        levels.contains(&"L1") && levels.contains(&"L2"),
        "{levels:?}"
    );
    assert!(!levels.contains(&"L3"), "{levels:?}");
    for c in &events {
        assert_eq!((c.budget, c.history_cap), (997_000, Some(cap)));
        assert!(
            c.history_after <= cap * 95 / 100,
            "{}: {}",
            c.level,
            c.history_after
        );
        if c.level == "L2" {
            assert!(c.tokens_after * 4 < c.tokens_before, "L2 kept too much");
        }
    }
    // The first compaction is L1, once the history passed 60 % of the cap (the system prompt
    // and the one tool's schema are a few hundred tokens of `tokens_before`).
    assert_eq!(events[0].level, "L1");
    assert!((cap * 6 / 10..cap * 7 / 10).contains(&events[0].tokens_before));
    assert!(
        events
            .iter()
            .any(|c| c.level == "L1" && c.tokens_after < c.tokens_before),
        "L1 never truncated"
    );
    let l2_count = levels.iter().filter(|l| **l == "L2").count();
    assert!(l2_count >= 2, "{levels:?}");
    // With no long-term memory the system prompt is a few hundred tokens, so the whole request
    // (system prompt, tool schema, messages) stays under the cap too.
    for (r, h) in loop_requests.iter().zip(&history) {
        let whole = meter.count(&r.system_prompt()) + meter.count(&r.body["tools"].to_string()) + h;
        assert!(whole <= cap, "a request of {whole} tokens is over {cap}");
    }
    let peak = *history.iter().max().unwrap();
    assert!(
        peak <= cap,
        "a request's history of {peak} tokens is over {cap}"
    );

    // The L2 summary: one call per round range, each one used by its L2.
    let summary_calls: Vec<RecordedRequest> =
        h.requests().into_iter().filter(is_summary_call).collect();
    let mut ranges: HashMap<String, usize> = HashMap::new();
    for call in &summary_calls {
        let prompt = user_messages(call).join("\n");
        let range = prompt.lines().next().unwrap().to_string();
        *ranges.entry(range).or_default() += 1;
    }
    assert!(ranges.len() >= 2, "{ranges:?}");
    assert!(ranges.values().all(|n| *n == 1), "{ranges:?}");
    let used = events.iter().filter(|c| c.llm_summary).count();
    assert_eq!(used, summary_calls.len());
    assert_eq!(report.usage.summary_requests as usize, summary_calls.len());
    let last = loop_requests.last().unwrap();
    let record = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("[context compacted]"))
        .unwrap_or_default();
    assert!(
        record.contains(&format!("(summary): {SUMMARY}")),
        "{record}"
    );

    let system = meter.count(&last.system_prompt());
    println!(
        "1M model, cap {cap}: first shrink at request {first_shrink} ({peak_before} tokens); \
         peak history {peak}; levels {levels:?}; {} summary calls; last request: history {}, \
         system prompt {system}; {} requests, {} input tokens",
        summary_calls.len(),
        history.last().unwrap(),
        report.usage.requests,
        report.usage.input_tokens,
    );
}
