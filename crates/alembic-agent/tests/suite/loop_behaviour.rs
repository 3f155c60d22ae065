//! Loop behaviour: errors, malformed calls, refusals, limits, rollback, summary, cancellation.

use std::sync::Arc;
use std::time::Duration;

use alembic_agent::{
    AgentError, AgentEvent, AgentPreset, EMPTY_REPLY_NUDGE, FORCED_SUMMARY_NUDGE, RunRequest,
    StageEnd, StageLimits,
};
use alembic_llm::fake::{FakeReply, FakeTurn};
use alembic_llm::{ProviderKind, ToolChoice};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{Harness, memory, user_messages};

#[tokio::test]
async fn a_429_is_retried_by_the_provider_and_the_run_succeeds() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    h.server
        .push(FakeReply::rate_limited("1"))
        .push(FakeTurn::text("Answer after the rate limit.").with_usage(100, 10));
    let report = h.ask("chat", "Anything").await;
    assert_eq!(report.answer, "Answer after the rate limit.");
    assert_eq!(report.rounds, 1);
    assert_eq!(h.requests().len(), 2, "the 429 and the retry");
}

#[tokio::test]
async fn malformed_tool_arguments_are_fed_back_and_the_loop_continues() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    h.server
        .push(FakeTurn::new().raw_tool_call("call_1", "search_project_code", "{\"pattern\": \"Pay"))
        .push(FakeTurn::new().tool_call(
            "call_2",
            "search_project_code",
            json!({"pattern": "Payment"}),
        ))
        .push(FakeTurn::text("Found it."));
    let report = h.ask("chat", "Find Payment").await;
    assert_eq!(report.answer, "Found it.");
    let statuses: Vec<&str> = report
        .tool_calls
        .iter()
        .map(|c| c.status.as_str())
        .collect();
    assert_eq!(statuses, vec!["malformed_arguments", "ok"]);
    let feedback = &h.requests()[1].tool_results()[0];
    assert!(feedback.contains("not a valid JSON object"), "{feedback}");
}

#[tokio::test]
async fn a_hallucinated_tool_is_refused_with_did_you_mean_and_the_loop_continues() {
    let h = Harness::new(ProviderKind::Anthropic).await;
    h.server
        .push(FakeTurn::new().tool_call(
            "toolu_1",
            "search_project_cod",
            json!({"pattern": "Payment"}),
        ))
        .push(FakeTurn::new().tool_call(
            "toolu_2",
            "search_project_code",
            json!({"pattern": "Payment"}),
        ))
        .push(FakeTurn::text("Payment has a coordinator."));
    let report = h.ask("chat", "Find Payment").await;
    assert_eq!(report.rounds, 3);
    assert_eq!(report.tool_calls[0].status, "unknown_tool");
    assert_eq!(
        report.tool_calls[0].suggestions,
        vec!["search_project_code"]
    );
    assert_eq!(report.tool_calls[1].status, "ok");
    let refusal = &h.requests()[1].tool_results()[0];
    assert!(
        refusal.contains("did you mean: search_project_code"),
        "{refusal}"
    );
}

#[tokio::test]
async fn a_tool_outside_the_preset_is_refused() {
    let h = Harness::new(ProviderKind::Gemini).await;
    // The ide preset has the code tools but not note_finding.
    h.server
        .push(FakeTurn::new().tool_call(
            "c1",
            "note_finding",
            json!({"finding": "x", "importance": 9}),
        ))
        .push(FakeTurn::text("Done."));
    let report = h.ask("ide", "Note something").await;
    assert_eq!(report.tool_calls[0].status, "blocked");
    assert!(
        !h.requests()[0]
            .offered_tools()
            .contains(&"note_finding".to_string())
    );
    let refusal = &h.requests()[1].tool_results()[0];
    assert!(refusal.contains("not available to caller"), "{refusal}");
    assert_eq!(
        report.memory.candidates,
        Vec::<String>::new(),
        "nothing was noted"
    );
}

#[tokio::test]
async fn at_most_eight_tool_calls_run_per_turn() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    let mut turn = FakeTurn::new();
    for i in 0..10 {
        turn = turn.tool_call(&format!("c{i}"), "list_project_structure", json!({}));
    }
    h.server.push(turn).push(FakeTurn::text("Enough."));
    let report = h.ask("chat", "List").await;
    let statuses: Vec<&str> = report
        .tool_calls
        .iter()
        .map(|c| c.status.as_str())
        .collect();
    assert_eq!(statuses[..8], ["ok"; 8]);
    assert_eq!(statuses[8..], ["over_turn_limit"; 2]);
    let results = h.requests()[1].tool_results();
    assert_eq!(results.len(), 10, "every call is answered");
    assert!(
        results[9].contains("at most 8 tool calls"),
        "{}",
        results[9]
    );
}

#[tokio::test]
async fn an_empty_reply_is_retried_once_with_a_nudge() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    h.server
        .push(FakeTurn::new())
        .push(FakeTurn::text("Now an answer."));
    let report = h.ask("chat", "Question").await;
    assert_eq!(report.answer, "Now an answer.");
    assert_eq!(report.rounds, 1);
    assert_eq!(
        user_messages(&h.requests()[1]),
        vec!["Question".to_string(), EMPTY_REPLY_NUDGE.to_string()]
    );
}

#[tokio::test]
async fn running_out_of_rounds_forces_a_summary_without_tools() {
    let h = Harness::new(ProviderKind::OpenAi)
        .await
        .limits(StageLimits {
            chat_iterations: 2,
            ..StageLimits::default()
        });
    h.server.respond_with(|req| {
        if req.offered_tools().is_empty() {
            FakeTurn::text("Summary: Payment has a coordinator.").into()
        } else {
            FakeTurn::new()
                .tool_call(
                    "c",
                    "search_project_code",
                    json!({"pattern": format!("p{}", req.turn_count())}),
                )
                .into()
        }
    });
    let report = h.ask("chat", "Explore forever").await;
    assert_eq!(report.answer, "Summary: Payment has a coordinator.");
    assert_eq!(report.stages[0].end, StageEnd::ForcedSummary);
    assert_eq!(report.rounds, 2);
    let last = h.requests().last().cloned().unwrap();
    assert_eq!(last.offered_tools(), Vec::<String>::new());
    assert_eq!(
        last.tool_choice(),
        None,
        "no tools, so no tool_choice either"
    );
    assert_eq!(user_messages(&last).last().unwrap(), FORCED_SUMMARY_NUDGE);
}

#[tokio::test]
async fn one_model_error_retries_the_round_and_two_end_the_run() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    h.server
        .push(FakeReply::error(400, "bad request once"))
        .push(FakeTurn::text("Recovered."));
    assert_eq!(h.ask("chat", "Q").await.answer, "Recovered.");

    let h = Harness::new(ProviderKind::OpenAi).await;
    h.server
        .push(FakeReply::error(400, "bad request"))
        .push(FakeReply::error(400, "bad request again"));
    let request = RunRequest::new("Q", AgentPreset::from_name("chat"));
    let err = h
        .agent()
        .run(&request, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentError::Model { ref stage, rounds: 0, .. } if stage == "chat"),
        "{err}"
    );
    assert_eq!(h.requests().len(), 2);
}

#[tokio::test]
async fn cancellation_stops_the_run() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    h.server.respond_with(|_| {
        FakeTurn::new()
            .tool_call("c", "list_project_structure", json!({}))
            .into()
    });
    let cancel = CancellationToken::new();
    let on_round = cancel.clone();
    let agent = h.agent().with_events(Arc::new(move |e| {
        if matches!(e, AgentEvent::RoundStarted { round: 2, .. }) {
            on_round.cancel();
        }
    }));
    let request = RunRequest::new("Q", AgentPreset::from_name("chat"));
    let err = agent.run(&request, &cancel).await.unwrap_err();
    assert!(matches!(err, AgentError::Cancelled), "{err}");
    assert!(h.requests().len() <= 2);
}

#[tokio::test]
async fn a_run_over_its_time_limit_is_stopped_and_says_so() {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    h.options.run_timeout = Some(Duration::from_millis(150));
    h.server.push(FakeReply::Hang);
    let request = RunRequest::new("Q", AgentPreset::from_name("chat"));
    let err = h
        .agent()
        .run(&request, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentError::TimedOut { limit } if limit == Duration::from_millis(150)),
        "{err}"
    );
    assert!(err.to_string().contains("limit of 0.15 s"), "{err}");
}

#[tokio::test]
async fn a_run_inside_its_time_limit_is_unaffected() {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    h.options.run_timeout = Some(Duration::from_secs(60));
    h.server.push(FakeTurn::text("done"));
    let report = h.ask("chat", "Q").await;
    assert_eq!(report.answer, "done");
}

#[tokio::test]
async fn an_unknown_preset_is_an_error_before_any_request() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    let request = RunRequest::new("Q", AgentPreset::from_name("nope"));
    let err = h
        .agent()
        .run(&request, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::Preset(_)), "{err}");
    assert_eq!(h.requests().len(), 0);
}

#[tokio::test]
async fn insight_runs_an_analyst_then_a_producer_with_the_distilled_findings() {
    let mut h = Harness::new(ProviderKind::OpenAi)
        .await
        .limits(StageLimits {
            analyst_iterations: 3,
            producer_iterations: 2,
            ..StageLimits::default()
        });
    h.memory = Some(memory());
    h.server.respond_with(|req| {
        let tools = req.offered_tools();
        let noted = req.tool_results().iter().any(|r| r.contains("noted"));
        if tools.is_empty() {
            FakeTurn::text("## Report\nPayment uses a coordinator over a repository.").into()
        } else if tools.contains(&"note_finding".to_string()) && !noted {
            FakeTurn::new()
                .tool_call("n1", "note_finding", json!({"finding": "PaymentCoordinator owns a PaymentRepository", "evidence": "Payment/PaymentCoordinator.swift:2", "importance": 8}))
                .into()
        } else {
            FakeTurn::new()
                .tool_call("r1", "read_project_file", json!({"filePath": "Payment/PaymentRepository.swift"}))
                .into()
        }
    });
    let report = h.ask("insight", "Analyse the Payment module").await;
    let stages: Vec<&str> = report.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(stages, vec!["analyst", "producer"]);
    let requests = h.requests();
    insta::assert_snapshot!("insight_analyst_round_1_system_prompt", h.system_prompt(0));
    assert_eq!(
        requests[0].tool_choice(),
        Some(ToolChoice::Auto),
        "analyst SCAN leaves the choice to the model, as the seed says"
    );
    assert!(
        requests[0]
            .offered_tools()
            .contains(&"get_class_hierarchy".to_string())
    );
    let producer_first = requests
        .iter()
        .find(|r| r.offered_tools() == vec!["read_project_file".to_string()])
        .expect("a producer request with the knowledge_production tools that exist");
    let task = &user_messages(producer_first)[0];
    assert!(task.contains("Findings of the analysis stage"), "{task}");
    assert!(
        task.contains("PaymentCoordinator owns a PaymentRepository"),
        "{task}"
    );
    assert!(task.contains("## Report"), "{task}");
    assert_eq!(
        report.memory.candidates,
        vec!["PaymentCoordinator owns a PaymentRepository"]
    );
}

#[tokio::test]
async fn the_window_is_compacted_before_requests_and_keeps_the_question_first() {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    // Tight enough that six 60-line reads overflow the window next to the 21 chat schemas.
    h.options.context_budget = Some(8000);
    let big: String = (0..400)
        .map(|i| {
            format!("    func step{i}() {{ repository.load(); /* padding padding padding */ }}\n")
        })
        .collect();
    std::fs::write(h.project.path().join("Payment/Big.swift"), big).unwrap();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = calls.clone();
    h.server.respond_with(move |_| {
        let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n < 6 {
            FakeTurn::new()
                .tool_call(&format!("r{n}"), "read_project_file", json!({"filePath": "Payment/Big.swift", "startLine": 1 + n * 60, "maxLines": 60}))
                .into()
        } else {
            FakeTurn::text("Big.swift is a long list of steps.").into()
        }
    });
    let report = h.ask("chat", "What is in Big.swift?").await;
    assert_eq!(report.answer, "Big.swift is a long list of steps.");
    assert_eq!(report.tool_calls.len(), 6);
    let requests = h.requests();
    let last = requests.last().cloned().unwrap();
    assert_eq!(
        user_messages(&last)[0],
        "What is in Big.swift?",
        "messages[0] stays the task"
    );
    // The first read went out whole, then L1 cut it once the window filled up; later reads
    // got smaller quotas as usage grew.
    let first_read_then = requests[1].tool_results()[0].chars().count();
    let first_read_now = last.tool_results()[0].chars().count();
    assert!(first_read_then > 2000, "{first_read_then}");
    assert!(
        first_read_now < 1000,
        "L1 truncated the oldest result: {first_read_now}"
    );
    let quotas: Vec<usize> = last
        .tool_results()
        .iter()
        .map(|r| r.chars().count())
        .collect();
    assert!(
        quotas[3] < quotas[2],
        "quota shrinks with usage: {quotas:?}"
    );
}

#[tokio::test]
async fn gemini_thought_signatures_are_sent_back_with_their_calls() {
    let h = Harness::new(ProviderKind::Gemini).await;
    h.server
        .push(
            FakeTurn::new()
                .tool_call("g1", "list_project_structure", json!({}))
                .with_thought_signature("sig-abc"),
        )
        .push(FakeTurn::text("Done."));
    h.ask("chat", "List").await;
    let body = serde_json::to_string(&h.requests()[1].body).unwrap();
    assert!(body.contains("\"thoughtSignature\":\"sig-abc\""), "{body}");
}
