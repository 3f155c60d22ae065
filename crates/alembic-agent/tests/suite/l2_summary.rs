//! L2 distillation with the model, against the OpenAI fake server: a chat run that reads one
//! large file per round fills a small window until L2 folds old rounds. With a model that
//! summarises, the record carries its summary (one call per round range); when the summary
//! call fails (an error status, no answer in time, an open circuit breaker) or is switched
//! off, the record keeps the rule-based lines. On both paths every request
//! keeps the task as its first message and every tool call with its result, and the window's
//! usage stays within its budget after each compaction.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use std::sync::Arc;

use alembic_agent::{
    AgentEvent, AgentPreset, L2_SUMMARY_SYSTEM_PROMPT, RunReport, RunRequest, StageLimits,
};
use alembic_llm::fake::{FakeReply, FakeTurn, RecordedRequest};
use alembic_llm::{
    BreakerPhase, BreakerPolicy, ChatRequest, ChatResponse, ChatStream, CircuitBreaker,
    HttpProvider, LlmError, LlmProvider, ManualClock, ProviderKind,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::support::{Harness, body_tokens};

const QUESTION: &str = "Walk me through the Ledger files one by one.";
const FILES: usize = 16;
const BUDGET: usize = 5_000;
/// A catalog preset with `read_project_file` only.
const PRESET: &str = "ledger";
const SUMMARY: &str = "Rounds folded by the model: Ledger0 to Ledger3 hold LedgerEntry types.";

/// Sixteen Swift files of about 4,000 characters each, added to the harness project.
fn add_ledger_files(h: &Harness) {
    let dir = h.project.path().join("Ledger");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..FILES {
        let body: String = (0..60)
            .map(|k| format!("    let entry{k}: LedgerEntry{i} = LedgerEntry{i}(amount: {k})\n"))
            .collect();
        let text = format!("final class Ledger{i} {{\n{body}}}\n");
        std::fs::write(dir.join(format!("Ledger{i}.swift")), text).unwrap();
    }
}

pub(super) fn is_summary_call(request: &RecordedRequest) -> bool {
    let first = L2_SUMMARY_SYSTEM_PROMPT.lines().next().unwrap();
    request.system_prompt().starts_with(first)
}

/// Reads the next Ledger file each round (the `read`-th loop request reads file `read`, as
/// compaction removes old results from the requests), then answers.
fn loop_reply(request: &RecordedRequest, read: usize) -> FakeReply {
    let turn = if read < FILES {
        let path = format!("Ledger/Ledger{read}.swift");
        FakeTurn::new().tool_call(
            &format!("c{read}"),
            "read_project_file",
            json!({"filePath": path}),
        )
    } else {
        FakeTurn::text("Every Ledger file declares LedgerEntry values.")
    };
    turn.with_usage(body_tokens(request), 20).into()
}

async fn run(summary: fn(&RecordedRequest) -> FakeReply) -> (Harness, RunReport) {
    run_with(summary, |_| {}).await
}

async fn run_with(
    summary: fn(&RecordedRequest) -> FakeReply,
    adjust: fn(&mut Harness),
) -> (Harness, RunReport) {
    let mut h = setup(summary).await;
    adjust(&mut h);
    let report = h.ask(PRESET, QUESTION).await;
    (h, report)
}

/// The harness: a small window, the Ledger files, and the scripted server.
async fn setup(summary: fn(&RecordedRequest) -> FakeReply) -> Harness {
    let mut h = Harness::new(ProviderKind::OpenAi)
        .await
        .limits(StageLimits {
            chat_iterations: 20,
            ..StageLimits::default()
        });
    h.options.context_budget = Some(BUDGET);
    // One tool only, so the schemas' share of the window does not move with the catalog.
    h.presets
        .apply_toml("[presets.ledger]\ndescription = \"read files\"\ncapabilities = []\nadd_tools = [\"read_project_file\"]\n")
        .unwrap();
    add_ledger_files(&h);
    let loop_requests = AtomicUsize::new(0);
    h.server.respond_with(move |request| {
        if is_summary_call(request) {
            summary(request)
        } else {
            loop_reply(request, loop_requests.fetch_add(1, Ordering::SeqCst))
        }
    });
    h
}

/// The fake server's provider, except that summary calls meet an open circuit breaker and are
/// refused without a request, as `HttpProvider` refuses while its breaker is open.
#[derive(Debug)]
struct BreakerOpenForSummaries {
    inner: HttpProvider,
    breaker: CircuitBreaker,
}

#[async_trait::async_trait]
impl LlmProvider for BreakerOpenForSummaries {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        if request.system.starts_with(L2_SUMMARY_SYSTEM_PROMPT) {
            self.breaker
                .try_acquire()
                .map_err(|refusal| LlmError::CircuitOpen {
                    provider: "fake".into(),
                    failures: refusal.failures,
                    retry_in: refusal.retry_in,
                })?;
        }
        self.inner.chat(request, cancel).await
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatStream, LlmError> {
        self.inner.chat_stream(request, cancel).await
    }
}

fn events_of(h: &Harness) -> Vec<AgentEvent> {
    h.events.lock().unwrap().clone()
}

/// The window's invariants, checked on every loop request and every compaction; returns the
/// number of L2 compactions and the highest usage after a compaction.
fn assert_invariants(h: &Harness) -> (usize, usize) {
    let loop_requests: Vec<RecordedRequest> = h
        .requests()
        .into_iter()
        .filter(|r| !is_summary_call(r))
        .collect();
    for (i, request) in loop_requests.iter().enumerate() {
        let messages = request.body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system", "request {i}");
        assert_eq!(messages[1]["role"], "user", "request {i}");
        assert_eq!(messages[1]["content"], QUESTION, "request {i}: task first");
        assert_units_whole(messages, i);
    }
    let compactions: Vec<(String, usize, usize)> = events_of(h)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ContextCompacted {
                level,
                tokens_after,
                budget,
                ..
            } => Some((level, tokens_after, budget)),
            _ => None,
        })
        .collect();
    assert!(
        compactions.iter().any(|(level, ..)| level == "L2"),
        "{compactions:?}"
    );
    for (level, after, budget) in &compactions {
        assert_eq!(*budget, BUDGET);
        assert!(after <= budget, "{level}: {after} > {budget}");
    }
    let l2 = compactions.iter().filter(|(l, ..)| l == "L2").count();
    (l2, compactions.iter().map(|c| c.1).max().unwrap_or(0))
}

/// Every assistant tool call is answered before the next assistant turn, and every tool
/// result answers a call of the assistant turn before it.
pub(super) fn assert_units_whole(messages: &[Value], request: usize) {
    let mut open: HashSet<String> = HashSet::new();
    let mut seen_assistant = false;
    for m in messages {
        match m["role"].as_str().unwrap() {
            "assistant" => {
                assert!(open.is_empty(), "request {request}: unanswered {open:?}");
                seen_assistant = true;
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    open.insert(c["id"].as_str().unwrap().to_string());
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap();
                assert!(
                    seen_assistant && open.remove(id),
                    "request {request}: result {id} without its call"
                );
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "request {request}: unanswered {open:?}");
}

/// The record message (the compacted history) of the last loop request.
fn last_record(h: &Harness) -> String {
    let last = h
        .requests()
        .into_iter()
        .rfind(|r| !is_summary_call(r))
        .unwrap();
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("[context compacted]"))
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn l2_uses_the_models_summary_once_per_round_range() {
    let (h, report) = run(|request| {
        FakeTurn::text(SUMMARY)
            .with_usage(body_tokens(request), 30)
            .into()
    })
    .await;
    let (l2, peak) = assert_invariants(&h);
    let summary_calls: Vec<RecordedRequest> =
        h.requests().into_iter().filter(is_summary_call).collect();
    assert!(!summary_calls.is_empty());
    // Bounded: no tools, a token cap; one call per range of rounds.
    let mut ranges: HashMap<String, usize> = HashMap::new();
    for call in &summary_calls {
        assert_eq!(call.offered_tools(), Vec::<String>::new());
        assert_eq!(call.body["max_completion_tokens"], 400);
        let prompt = super::support::user_messages(call).join("\n");
        let range = prompt.lines().next().unwrap().to_string();
        assert!(range.starts_with("Transcript of rounds "), "{range}");
        *ranges.entry(range).or_default() += 1;
    }
    assert!(ranges.values().all(|n| *n == 1), "{ranges:?}");
    let used = events_of(&h)
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::ContextCompacted {
                    llm_summary: true,
                    ..
                }
            )
        })
        .count();
    assert_eq!(
        used,
        summary_calls.len(),
        "every summary was used by its L2"
    );
    let record = last_record(&h);
    assert!(
        record.contains(&format!("(summary): {SUMMARY}")),
        "{record}"
    );
    // The summary calls count in the run's usage.
    assert_eq!(report.usage.summary_requests as usize, summary_calls.len());
    assert_eq!(report.usage.requests as usize, h.requests().len());
    assert_eq!(
        report.answer,
        "Every Ledger file declares LedgerEntry values."
    );
    println!(
        "L2 with the model: {l2} L2 compactions, peak {peak}/{BUDGET} tokens, {} summary calls, {} requests, {} tokens in / {} out",
        summary_calls.len(),
        report.usage.requests,
        report.usage.input_tokens,
        report.usage.output_tokens
    );
}

#[tokio::test]
async fn a_failed_summary_call_falls_back_to_the_rule_based_lines() {
    let (h, report) = run(|_| FakeReply::error(400, "summaries are not available")).await;
    let (l2, peak) = assert_invariants(&h);
    let failures: Vec<(usize, usize)> = events_of(&h)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::L2SummaryFailed {
                first_round,
                last_round,
                error,
            } => {
                assert!(error.contains("summaries are not available"), "{error}");
                Some((first_round, last_round))
            }
            _ => None,
        })
        .collect();
    assert!(!failures.is_empty());
    let distinct: HashSet<&(usize, usize)> = failures.iter().collect();
    assert_eq!(distinct.len(), failures.len(), "one call per range");
    assert!(!events_of(&h).iter().any(|e| matches!(
        e,
        AgentEvent::ContextCompacted {
            llm_summary: true,
            ..
        }
    )));
    let record = last_record(&h);
    assert!(
        record.contains("- round 1: read_project_file(Ledger/Ledger0.swift) → "),
        "{record}"
    );
    assert!(!record.contains("(summary)"), "{record}");
    assert_eq!(report.usage.summary_requests, 0);
    assert_eq!(
        report.answer,
        "Every Ledger file declares LedgerEntry values."
    );
    println!(
        "L2 fallback: {l2} L2 compactions, peak {peak}/{BUDGET} tokens, {} failed summary calls, {} requests answered, {} tokens in / {} out",
        failures.len(),
        report.usage.requests,
        report.usage.input_tokens,
        report.usage.output_tokens
    );
}

#[tokio::test]
async fn a_summary_call_that_does_not_answer_in_time_falls_back() {
    let (h, report) = run_with(
        |_| FakeReply::Hang,
        |h| h.options.side_call_timeout = std::time::Duration::from_millis(200),
    )
    .await;
    assert_invariants(&h);
    let errors: Vec<String> = events_of(&h)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::L2SummaryFailed { error, .. } => Some(error),
            _ => None,
        })
        .collect();
    assert!(!errors.is_empty());
    assert!(
        errors.iter().all(|e| e == "no answer within 0.2 s"),
        "{errors:?}"
    );
    assert!(last_record(&h).contains("- round 1: read_project_file("));
    assert_eq!(
        report.answer,
        "Every Ledger file declares LedgerEntry values."
    );
}

#[tokio::test]
async fn switched_off_no_summary_call_is_made() {
    let (h, _) = run_with(
        |_| FakeTurn::text(SUMMARY).into(),
        |h| h.options.l2_summary = false,
    )
    .await;
    assert_invariants(&h);
    assert_eq!(
        h.requests().iter().filter(|r| is_summary_call(r)).count(),
        0
    );
    assert!(last_record(&h).contains("- round 1: read_project_file("));
}

#[tokio::test]
async fn an_open_circuit_breaker_falls_back_without_a_request() {
    let h = setup(|_| FakeTurn::text(SUMMARY).into()).await;
    let breaker = CircuitBreaker::new(
        BreakerPolicy {
            failure_threshold: 1,
            ..BreakerPolicy::default()
        },
        Arc::new(ManualClock::default()),
    );
    breaker.record_failure();
    assert_eq!(breaker.phase(), BreakerPhase::Open);
    let provider = BreakerOpenForSummaries {
        inner: h.server.provider().unwrap(),
        breaker,
    };
    let request = RunRequest::new(QUESTION, AgentPreset::from_name(PRESET));
    let report = h
        .agent_with(Arc::new(provider))
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_invariants(&h);
    let errors: Vec<String> = events_of(&h)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::L2SummaryFailed { error, .. } => Some(error),
            _ => None,
        })
        .collect();
    assert!(!errors.is_empty());
    assert!(
        errors
            .iter()
            .all(|e| e.starts_with("circuit breaker open: ")),
        "{errors:?}"
    );
    assert_eq!(
        h.requests().iter().filter(|r| is_summary_call(r)).count(),
        0
    );
    assert!(last_record(&h).contains("- round 1: read_project_file("));
    assert_eq!(
        report.answer,
        "Every Ledger file declares LedgerEntry values."
    );
}
