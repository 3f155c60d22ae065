use super::*;
use crate::message::ToolCallRequest;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;

/// A window whose budget is counted with the estimate (1 token ≈ 4 ASCII chars).
fn window(budget: usize) -> ContextWindow {
    ContextWindow::new(
        "Analyse the networking dimension.",
        budget,
        TokenMeter::default(),
    )
}

fn push_round(w: &mut ContextWindow, n: usize, tool: &str, result_chars: usize) {
    let id = format!("c{n}");
    let args = if tool.starts_with("submit_") {
        json!({"title": format!("Candidate {n}")})
    } else {
        json!({"pattern": format!("p{n}")})
    };
    w.push_assistant(Message::assistant_with_calls(
        format!("round {n}"),
        vec![ToolCallRequest {
            id: id.clone(),
            name: tool.to_string(),
            args,
        }],
    ));
    let line = format!("result line of round {n}\n");
    let body = line.repeat(result_chars / line.len() + 1);
    w.push_tool_result_exact(&id, &body[..result_chars.min(body.len())], false);
}

#[test]
fn below_sixty_percent_nothing_happens() {
    let mut w = window(100_000);
    push_round(&mut w, 1, "search_project_code", 3000);
    let before = w.messages().to_vec();
    let r = w.compact();
    assert_eq!(r.level, CompactionLevel::None);
    assert_eq!(w.messages(), before.as_slice());
}

#[test]
fn l1_truncates_results_older_than_the_last_four_rounds() {
    let mut w = window(10_000);
    for n in 1..=6 {
        push_round(&mut w, n, "search_project_code", 5000);
    }
    // 6 results of ~1250 tokens: ~75 % of 10k.
    let ratio = w.usage_ratio();
    assert!((0.6..0.8).contains(&ratio), "{ratio}");
    let r = w.compact();
    assert_eq!(r.level, CompactionLevel::L1);
    assert_eq!(r.truncated, 2);
    assert_eq!(r.removed_messages, 0);
    assert!(
        w.messages()[2]
            .content
            .ends_with("[truncated from 5000 chars]")
    );
    assert_eq!(w.messages()[12].content.chars().count(), 5000);
}

#[test]
fn l2_keeps_two_rounds_and_summarises_the_rest() {
    let mut w = window(10_000);
    for n in 1..=8 {
        let tool = if n == 2 {
            "submit_knowledge"
        } else {
            "search_project_code"
        };
        push_round(&mut w, n, tool, 4400);
    }
    let ratio = w.usage_ratio();
    assert!((0.8..0.95).contains(&ratio), "{ratio}");
    let r = w.compact();
    assert_eq!(r.level, CompactionLevel::L2);
    assert_eq!(r.removed_messages, 12);
    assert_eq!(w.messages().len(), 1 + 1 + 4);
    insta::assert_snapshot!("l2_record", w.messages()[1].content);
    assert_eq!(w.submitted_titles(), ["Candidate 2"]);
}

#[test]
fn l2_uses_an_offered_llm_summary_of_exactly_the_removed_rounds() {
    let mut w = window(10_000);
    for n in 1..=8 {
        push_round(&mut w, n, "search_project_code", 4400);
    }
    let batch = w.pending_l2().unwrap();
    assert_eq!((batch.first_round, batch.last_round), (1, 6));
    assert!(
        batch
            .transcript
            .starts_with("assistant: round 1 [call search_project_code(")
    );
    assert!(!w.has_summary_for(1, 6));
    // A summary for other rounds is not used; this one is cut to the token cap.
    w.offer_summary(1, 5, "wrong range");
    w.offer_summary(1, 6, &"URLSession is wrapped by APIClient. ".repeat(200));
    assert!(w.has_summary_for(1, 6));
    let r = w.compact();
    assert_eq!(r.level, CompactionLevel::L2);
    let record = &w.messages()[1].content;
    assert!(record.contains("- rounds 1–6 (summary): URLSession is wrapped by APIClient."));
    assert!(!record.contains("- round 1:"), "{record}");
    let line = record.lines().last().unwrap();
    assert!(
        TokenMeter::default().count(line) <= L2_SUMMARY_MAX_TOKENS + 12,
        "{line}"
    );
    assert!(w.usage_tokens() <= w.budget());
    // Below L2 there is nothing to summarise.
    assert_eq!(window(100_000).pending_l2(), None);
}

#[test]
fn l3_keeps_prompt_submissions_and_the_last_round() {
    let mut w = window(10_000);
    for n in 1..=9 {
        let tool = if n % 4 == 0 {
            "submit_knowledge"
        } else {
            "search_project_code"
        };
        push_round(&mut w, n, tool, 4400);
    }
    assert!(w.usage_ratio() >= 0.95);
    let r = w.compact();
    assert_eq!(r.level, CompactionLevel::L3);
    assert_eq!(w.messages().len(), 4);
    assert_eq!(w.messages()[2].content, "round 9");
    insta::assert_snapshot!("l3_record", w.messages()[1].content);
    assert!(!r.over_budget);
}

#[test]
fn refused_submissions_are_not_recorded() {
    let mut w = window(1_000);
    w.push_assistant(Message::assistant_with_calls(
        "",
        vec![ToolCallRequest {
            id: "s1".into(),
            name: "submit_knowledge".into(),
            args: json!({"title": "Dup"}),
        }],
    ));
    w.push_tool_result("s1", "refused: duplicate title", true);
    push_round(&mut w, 2, "search_project_code", 6000);
    w.compact();
    assert!(w.submitted_titles().is_empty());
}

#[test]
fn the_system_prompt_and_schemas_count_towards_usage() {
    let mut w = window(1_000);
    let base = w.usage_tokens();
    w.set_system_prompt("x".repeat(400));
    w.set_tool_schema_tokens(300);
    assert_eq!(w.usage_tokens(), base + 100 + 300);
    // sections are counted apart (and cached between rounds), a separator as one token
    w.set_system_prompt(format!("{}\n\n{}", "x".repeat(400), "y".repeat(40)));
    assert_eq!(w.usage_tokens(), base + 100 + 1 + 10 + 300);
}

#[test]
fn tool_results_get_smaller_quotas_as_the_window_fills() {
    let mut w = window(10_000);
    assert_eq!(w.tool_result_quota(), 6000);
    w.push_assistant(Message::assistant_with_calls(
        "",
        vec![ToolCallRequest {
            id: "c1".into(),
            name: "read_project_file".into(),
            args: json!({}),
        }],
    ));
    w.push_tool_result("c1", &"line of text\n".repeat(2000), false);
    let kept = &w.messages()[2].content;
    assert!(kept.ends_with("… [truncated]"));
    assert!(kept.chars().count() <= 6000 + 13);
    push_round(&mut w, 2, "search_project_code", 12_000);
    assert!((0.4..0.6).contains(&w.usage_ratio()), "{}", w.usage_ratio());
    assert_eq!(w.tool_result_quota(), 3000);
}

#[test]
fn resets_keep_the_prompt_and_submissions() {
    let mut w = window(100_000);
    push_round(&mut w, 1, "submit_knowledge", 100);
    push_round(&mut w, 2, "search_project_code", 100);
    w.reset_to_prompt_only();
    assert_eq!(w.messages().len(), 2);
    assert_eq!(w.messages()[0].content, "Analyse the networking dimension.");
    assert!(
        w.messages()[1]
            .content
            .contains("Submitted so far: Candidate 1")
    );
    w.reset_for_new_stage("Produce candidates.");
    assert_eq!(w.messages()[0].content, "Produce candidates.");
    assert_eq!(w.submitted_titles(), ["Candidate 1"]);
}

#[test]
fn for_model_uses_the_table_and_exact_counts() {
    let w = ContextWindow::for_model("task", "gpt-4o", RunKind::System);
    assert_eq!((w.budget(), w.history_cap()), (128_000, Some(24_000)));
    let w = ContextWindow::for_model("task", "claude-opus-4-6", RunKind::User);
    assert_eq!((w.budget(), w.history_cap()), (1_000_000, Some(64_000)));
}

/// A window as the agent builds it on a 1M-token model: a budget near the whole context, the
/// seed's cap on the history, and a system prompt that the cap does not count.
fn capped(cap: usize) -> ContextWindow {
    let mut w = window(997_000).with_history_cap(cap);
    w.set_system_prompt("You analyse a project.\n\n".to_string() + &"memory line\n".repeat(2_000));
    w
}

#[test]
fn the_history_cap_sets_the_levels_when_it_is_tighter_than_the_budget() {
    let mut w = capped(10_000);
    push_round(&mut w, 1, "search_project_code", 3000);
    // Far below both limits: nothing happens.
    assert_eq!(w.compact().level, CompactionLevel::None);
    for n in 2..=6 {
        push_round(&mut w, n, "search_project_code", 5000);
    }
    // ~1 % of the budget, but ~70 % of the cap: L1 runs.
    assert!(w.usage_tokens() * 50 < w.budget());
    let ratio = w.history_tokens() as f64 / 10_000.0;
    assert!((0.6..0.8).contains(&ratio), "{ratio}");
    let r = w.compact();
    // Rounds 1 and 2 are older than the last four; both results are over 2,000 chars.
    assert_eq!((r.level, r.truncated), (CompactionLevel::L1, 2));
    for n in 7..=9 {
        push_round(&mut w, n, "search_project_code", 4400);
    }
    let ratio = w.history_tokens() as f64 / 10_000.0;
    assert!((0.8..0.95).contains(&ratio), "{ratio}");
    assert_eq!(w.usage_ratio(), ratio);
    let r = w.compact();
    assert_eq!(r.level, CompactionLevel::L2);
    assert_eq!(r.history_tokens_after, w.history_tokens());
    assert!(w.history_tokens() <= 10_000 && !r.over_budget, "{r:?}");
    // The system prompt (~6k tokens) is outside the cap: the history alone is limited.
    assert!(w.usage_tokens() > w.history_tokens() + 5_000);
    assert_rounds_whole(w.messages());
}

#[test]
fn l3_brings_the_history_under_its_cap() {
    let mut w = capped(6_000);
    for n in 1..=9 {
        push_round(&mut w, n, "search_project_code", 6000);
    }
    let r = w.compact();
    assert_eq!(r.level, CompactionLevel::L3);
    assert!(w.history_tokens() <= 6_000 && !r.over_budget, "{r:?}");
    assert_eq!(w.messages()[0].content, "Analyse the networking dimension.");
    assert_rounds_whole(w.messages());
}

#[test]
fn without_a_cap_the_same_history_is_left_alone() {
    let mut w = window(997_000);
    for n in 1..=9 {
        push_round(&mut w, n, "search_project_code", 6000);
    }
    assert_eq!(w.compact().level, CompactionLevel::None);
    assert_eq!(w.history_cap(), None);
}

/// Checks the structural invariants of a history.
fn assert_rounds_whole(messages: &[Message]) {
    for (i, m) in messages.iter().enumerate() {
        if m.role == Role::Tool {
            let id = m.tool_call_id.as_deref().unwrap();
            let owner = messages[..i]
                .iter()
                .rposition(|a| a.role == Role::Assistant)
                .unwrap_or_else(|| panic!("tool result {id} without an assistant turn"));
            assert!(
                messages[owner].tool_calls.iter().any(|c| c.id == id),
                "tool result {id} split from its call"
            );
        }
        if m.is_tool_call_turn() {
            for c in &m.tool_calls {
                assert!(
                    messages[i + 1..]
                        .iter()
                        .any(|r| r.tool_call_id.as_deref() == Some(c.id.as_str())),
                    "call {} lost its result",
                    c.id
                );
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Round {
        calls: usize,
        result_chars: usize,
        submit: bool,
    },
    Nudge(usize),
    Compact,
    /// Compaction after an LLM summary of this many characters was offered for the rounds
    /// L2 would remove.
    CompactWithSummary(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (1usize..4, 0usize..9000, any::<bool>())
            .prop_map(|(calls, result_chars, submit)| Step::Round { calls, result_chars, submit }),
        1 => (1usize..400).prop_map(Step::Nudge),
        2 => Just(Step::Compact),
        2 => (1usize..6_000).prop_map(Step::CompactWithSummary),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn compaction_keeps_the_invariants(
        budget in 2_000usize..40_000,
        system_chars in 0usize..2_000,
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let mut w = window(budget);
        w.set_system_prompt("s".repeat(system_chars));
        let first = w.messages()[0].clone();
        let mut n = 0;
        for s in steps {
            match s {
                Step::Round { calls, result_chars, submit } => {
                    let ids: Vec<ToolCallRequest> = (0..calls)
                        .map(|k| {
                            n += 1;
                            ToolCallRequest {
                                id: format!("c{n}"),
                                name: if submit && k == 0 { "submit_knowledge".into() } else { "search_project_code".into() },
                                args: json!({"title": format!("t{n}"), "pattern": "p"}),
                            }
                        })
                        .collect();
                    w.push_assistant(Message::assistant_with_calls("thinking", ids.clone()));
                    for c in ids {
                        w.push_tool_result_exact(&c.id, &"r".repeat(result_chars), false);
                    }
                }
                Step::Nudge(len) => w.push_user("n".repeat(len)),
                Step::Compact | Step::CompactWithSummary(_) => {
                    if let (Step::CompactWithSummary(chars), Some(batch)) = (&s, w.pending_l2()) {
                        w.offer_summary(batch.first_round, batch.last_round, &"summary ".repeat(chars / 8 + 1));
                    }
                    let report = w.compact();
                    prop_assert!(!report.over_budget);
                    prop_assert!(w.usage_tokens() <= w.budget(), "{} > {}", w.usage_tokens(), w.budget());
                }
            }
            prop_assert_eq!(&w.messages()[0], &first);
            prop_assert_eq!(w.usage_tokens(), w.recounted_tokens());
            assert_rounds_whole(w.messages());
        }
        w.compact();
        prop_assert!(w.usage_tokens() <= w.budget());
        prop_assert_eq!(&w.messages()[0], &first);
        assert_rounds_whole(w.messages());
    }
}
