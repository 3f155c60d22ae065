//! Exploration control: strategies, transitions, exits, nudge priorities and cooldowns.

use alembic_context::{
    ActiveContext, ActiveContextOptions, ExitDecision, ExitReason, ExplorationBudget,
    ExplorationTracker, NudgeKind, Phase, ScopeId, Strategy, TextVerdict, ToolChoice,
    ToolObservation,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn active() -> ActiveContext {
    ActiveContext::new(ScopeId::new("dim:test"), ActiveContextOptions::default())
}

fn known_search() -> ToolObservation {
    ToolObservation::ok(
        "search_project_code",
        json!({"pattern": "same"}),
        json!({"matches": [{"file": "a.rs"}]}),
        "",
    )
}

/// One tool round with `calls`; returns the nudge shown at the start of the round.
fn tool_round(
    t: &mut ExplorationTracker,
    ac: &mut ActiveContext,
    calls: &[ToolObservation],
) -> Option<NudgeKind> {
    t.tick();
    ac.start_round(t.metrics().iteration);
    let nudge = t.next_nudge(ac).map(|n| n.kind);
    for c in calls {
        let new = t.record_tool_call(c);
        ac.record_action(c, new);
    }
    t.end_round(ac);
    nudge
}

fn text_round(
    t: &mut ExplorationTracker,
    ac: &mut ActiveContext,
) -> (Option<NudgeKind>, TextVerdict) {
    t.tick();
    ac.start_round(t.metrics().iteration);
    let nudge = t.next_nudge(ac).map(|n| n.kind);
    (nudge, t.on_text_response(ac))
}

#[test]
fn analyst_runs_scan_explore_verify_summarize_with_its_tool_choices() {
    let mut t = ExplorationTracker::new(Strategy::Analyst, ExplorationBudget::default());
    let mut ac = active();
    assert_eq!(
        (t.phase(), t.tool_choice()),
        (Phase::Scan, ToolChoice::Auto)
    );
    let overview = ToolObservation::ok("get_project_overview", json!({}), Value::Null, "");
    tool_round(&mut t, &mut ac, std::slice::from_ref(&overview));
    assert_eq!(t.phase(), Phase::Scan);
    tool_round(&mut t, &mut ac, &[overview]);
    assert_eq!(
        (t.phase(), t.tool_choice()),
        (Phase::Explore, ToolChoice::Auto)
    );
    tool_round(&mut t, &mut ac, &[known_search()]);
    for _ in 0..3 {
        tool_round(&mut t, &mut ac, &[known_search()]);
    }
    assert_eq!(
        (t.phase(), t.tool_choice()),
        (Phase::Verify, ToolChoice::Auto)
    );
    let (nudge, verdict) = text_round(&mut t, &mut ac);
    assert_eq!(nudge, Some(NudgeKind::PhaseTransition));
    assert_eq!(
        (verdict, t.phase(), t.tool_choice()),
        (TextVerdict::Continue, Phase::Summarize, ToolChoice::None)
    );
    let (nudge, verdict) = text_round(&mut t, &mut ac);
    assert_eq!(
        (nudge, verdict),
        (Some(NudgeKind::PhaseTransition), TextVerdict::FinalAnswer)
    );
}

#[test]
fn produce_without_submits_exits_after_the_idle_grace() {
    // Reference bug: consecutiveIdleRounds was only updated on tool rounds and reset there, so
    // this exit never fired. Text-only rounds now count as idle.
    let mut t = ExplorationTracker::new(Strategy::Producer, ExplorationBudget::default());
    let mut ac = active();
    let mut nudges = Vec::new();
    for _ in 0..10 {
        let (nudge, verdict) = text_round(&mut t, &mut ac);
        assert_eq!(verdict, TextVerdict::Continue);
        nudges.push(nudge);
    }
    assert_eq!(t.phase(), Phase::Summarize);
    assert_eq!(t.metrics().submit_count, 0);
    assert_eq!(nudges[0], None);
    assert!(
        nudges[1..]
            .iter()
            .all(|n| *n == Some(NudgeKind::ContinueProducing)),
        "{nudges:?}"
    );
}

#[test]
fn idle_tool_rounds_count_too() {
    let mut t = ExplorationTracker::new(
        Strategy::Producer,
        ExplorationBudget {
            search_budget_grace: 4,
            ..ExplorationBudget::default()
        },
    );
    let mut ac = active();
    tool_round(&mut t, &mut ac, &[known_search()]);
    for _ in 0..3 {
        assert_eq!(t.phase(), Phase::Produce);
        tool_round(&mut t, &mut ac, &[known_search()]);
    }
    // the first search was new; 4 idle rounds follow it... the 4th idle round is the 5th round
    assert_eq!(t.metrics().consecutive_idle_rounds, 3);
    tool_round(&mut t, &mut ac, &[known_search()]);
    assert_eq!(t.phase(), Phase::Summarize);
}

#[test]
fn rejected_and_refused_submits_do_not_count() {
    let mut t = ExplorationTracker::new(Strategy::Producer, ExplorationBudget::default());
    let mut ac = active();
    let rejected = ToolObservation::ok(
        "submit_knowledge",
        json!({"title": "a"}),
        json!({"status": "rejected"}),
        "",
    );
    let refused = ToolObservation::failed("submit_knowledge", json!({"title": "a"}), "duplicate");
    let ok = ToolObservation::ok(
        "submit_knowledge",
        json!({"title": "b"}),
        json!({"status": "created"}),
        "",
    );
    tool_round(&mut t, &mut ac, &[rejected, refused, ok]);
    assert_eq!(t.metrics().submit_count, 1);
}

#[test]
fn max_submits_ends_production() {
    let budget = ExplorationBudget {
        max_submits: 2,
        ..ExplorationBudget::default()
    };
    let mut t = ExplorationTracker::new(Strategy::Producer, budget);
    let mut ac = active();
    let s = |n: u32| ToolObservation::ok("submit_knowledge", json!({"title": n}), Value::Null, "");
    tool_round(&mut t, &mut ac, &[s(1)]);
    assert_eq!(t.phase(), Phase::Produce);
    tool_round(&mut t, &mut ac, &[s(2)]);
    assert_eq!(t.phase(), Phase::Summarize);
}

#[test]
fn the_iteration_limit_forces_the_terminal_phase_then_exits() {
    let budget = ExplorationBudget {
        max_iterations: 6,
        ..ExplorationBudget::default()
    };
    let mut t = ExplorationTracker::new(Strategy::Analyst, budget);
    let mut ac = active();
    let mut seen = Vec::new();
    for i in 0..10 {
        t.tick();
        if let ExitDecision::Exit(reason) = t.should_exit() {
            seen.push(format!("exit {reason:?}"));
            break;
        }
        ac.start_round(t.metrics().iteration);
        let nudge = t.next_nudge(&mut ac).map(|n| n.kind);
        seen.push(format!(
            "{} {:?} {:?} {:?}",
            i + 1,
            t.phase(),
            t.tool_choice(),
            nudge
        ));
        let q = ToolObservation::ok(
            "get_class_info",
            json!({"className": format!("C{i}")}),
            Value::Null,
            "",
        );
        t.record_tool_call(&q);
        t.end_round(&mut ac);
    }
    assert_eq!(
        seen,
        vec![
            "1 Scan Auto Some(Planning)",
            "2 Scan Auto None",
            "3 Explore Auto Some(PhaseTransition)",
            "4 Explore Auto Some(BudgetWarning)",
            "5 Explore Auto Some(Reflection)",
            "6 Summarize None Some(ForceExit)",
            "7 Summarize None Some(ForceExit)",
            "exit GraceExhausted",
        ]
    );
    assert!(t.is_graceful_exit());
    assert_eq!(ExitReason::GraceExhausted, ExitReason::GraceExhausted);
}

#[test]
fn budget_warning_fires_once_at_three_quarters() {
    let mut t = ExplorationTracker::new(
        Strategy::Bootstrap,
        ExplorationBudget {
            search_budget: 100,
            ..ExplorationBudget::default()
        },
    );
    let mut ac = active();
    let mut warnings = Vec::new();
    for i in 0..22u32 {
        let q = ToolObservation::ok(
            "get_class_info",
            json!({"className": format!("C{i}")}),
            Value::Null,
            "",
        );
        if tool_round(&mut t, &mut ac, &[q]) == Some(NudgeKind::BudgetWarning) {
            warnings.push(i + 1);
        }
    }
    assert_eq!(warnings, vec![18]);
}

#[test]
fn stale_reflections_have_a_cooldown() {
    let mut t = ExplorationTracker::new(
        Strategy::Analyst,
        ExplorationBudget {
            max_iterations: 100,
            ..ExplorationBudget::default()
        },
    );
    let mut ac = active();
    let mut reflections = Vec::new();
    // SCAN for two rounds, then EXPLORE where nothing is ever new (EXPLORE→VERIFY needs
    // 3 stale rounds, VERIFY→SUMMARIZE 2 more): count reflections across the whole run.
    for i in 0..12u32 {
        if tool_round(&mut t, &mut ac, &[known_search()]) == Some(NudgeKind::Reflection) {
            reflections.push(i + 1);
        }
    }
    for pair in reflections.windows(2) {
        assert!(pair[1] - pair[0] >= 3, "{reflections:?}");
    }
    assert!(!reflections.is_empty());
}

#[test]
fn explore_is_auto_as_the_seed_says_and_ends_at_the_search_budget() {
    let budget = ExplorationBudget {
        search_budget: 3,
        ..ExplorationBudget::default()
    };
    let mut t = ExplorationTracker::new(Strategy::Bootstrap, budget);
    let mut ac = active();
    for _ in 0..2 {
        assert_eq!(
            (t.phase(), t.tool_choice()),
            (Phase::Explore, ToolChoice::Auto)
        );
        tool_round(&mut t, &mut ac, &[known_search()]);
    }
    tool_round(&mut t, &mut ac, &[known_search()]);
    assert_eq!(
        (t.phase(), t.tool_choice()),
        (Phase::Produce, ToolChoice::Auto)
    );
}

#[test]
fn chat_takes_any_text_as_the_answer_and_never_asks_for_a_plan() {
    let mut t = ExplorationTracker::new(Strategy::Chat, ExplorationBudget::default());
    let mut ac = active();
    let (nudge, verdict) = text_round(&mut t, &mut ac);
    assert_eq!((nudge, verdict), (None, TextVerdict::FinalAnswer));
    assert_eq!(
        (t.phase(), t.tool_choice()),
        (Phase::Explore, ToolChoice::Auto)
    );
    // Three rounds without new information: saturated, tools off, a nudge to answer.
    let mut t = ExplorationTracker::new(Strategy::Chat, ExplorationBudget::default());
    tool_round(&mut t, &mut ac, &[known_search()]);
    for _ in 0..3 {
        tool_round(&mut t, &mut ac, &[known_search()]);
    }
    assert_eq!(
        (t.phase(), t.tool_choice()),
        (Phase::Summarize, ToolChoice::None)
    );
    t.tick();
    let nudge = t.next_nudge(&mut ac).unwrap();
    assert_eq!(nudge.kind, NudgeKind::PhaseTransition);
    assert!(nudge.text.contains("answer the question"), "{}", nudge.text);
}

#[test]
fn a_text_reply_in_explore_moves_bootstrap_to_produce() {
    let mut t = ExplorationTracker::new(Strategy::Bootstrap, ExplorationBudget::default());
    let mut ac = active();
    let (_, verdict) = text_round(&mut t, &mut ac);
    assert_eq!(
        (verdict, t.phase()),
        (TextVerdict::Continue, Phase::Produce)
    );
}

#[test]
fn phase_context_texts() {
    let mut t = ExplorationTracker::new(
        Strategy::Bootstrap,
        ExplorationBudget {
            max_iterations: 5,
            ..ExplorationBudget::default()
        },
    );
    let mut ac = active();
    let mut out = vec![t.phase_context()];
    for _ in 0..3 {
        tool_round(&mut t, &mut ac, &[known_search()]);
        out.push(t.phase_context());
    }
    insta::assert_snapshot!("phase_context", out.join("\n----"));
}

/// Every nudge text a short analyst run and a short bootstrap run produce, for review.
#[test]
fn nudge_texts_of_short_runs() {
    let mut out = Vec::new();
    for strategy in [Strategy::Analyst, Strategy::Bootstrap, Strategy::Producer] {
        let budget = ExplorationBudget {
            max_iterations: 6,
            ..ExplorationBudget::default()
        };
        let mut t = ExplorationTracker::new(strategy, budget);
        let mut ac = active();
        for i in 0..8u32 {
            t.tick();
            if let ExitDecision::Exit(_) = t.should_exit() {
                break;
            }
            ac.start_round(t.metrics().iteration);
            if let Some(n) = t.next_nudge(&mut ac) {
                out.push(format!(
                    "=== {strategy:?} iteration {}: {:?} ===\n{}",
                    i + 1,
                    n.kind,
                    n.text
                ));
            }
            if strategy == Strategy::Producer && i < 2 {
                t.on_text_response(&ac);
                continue;
            }
            let q = ToolObservation::ok(
                "get_class_info",
                json!({"className": format!("C{}", i % 2)}),
                Value::Null,
                "",
            );
            let new = t.record_tool_call(&q);
            ac.record_action(&q, new);
            t.end_round(&mut ac);
        }
    }
    insta::assert_snapshot!("nudge_texts", out.join("\n\n"));
}
