use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn search(pattern: &str, files: &[&str]) -> ToolObservation {
    let matches: Vec<Value> = files
        .iter()
        .enumerate()
        .map(|(i, f)| json!({"file": f, "line": i + 1}))
        .collect();
    ToolObservation::ok(
        "search_project_code",
        json!({"pattern": pattern}),
        json!({"matches": matches}),
        format!("{} matches", files.len()),
    )
}

fn ctx() -> ActiveContext {
    ActiveContext::new(
        ScopeId::new("networking:analyst"),
        ActiveContextOptions::default(),
    )
}

#[test]
fn the_raw_window_is_counted_in_rounds_not_calls() {
    let mut ac = ctx();
    for round in 1..=5 {
        ac.start_round(round);
        for call in 0..5 {
            ac.record_observation(search(&format!("p{round}-{call}"), &["a.swift"]));
        }
    }
    // Round 5 is open: rounds 2..=5 stay raw (current + 3 before it), round 1 is compressed.
    let raw_rounds: Vec<u32> = ac.raw_observations().map(|(r, _)| r).collect();
    assert_eq!(raw_rounds.len(), 20);
    assert_eq!(raw_rounds.first(), Some(&2));
    assert_eq!(ac.compressed_observations().len(), 5);
    assert!(ac.compressed_observations().iter().all(|c| c.round == 1));
    assert_eq!(ac.total_observations(), 25);
}

#[test]
fn the_scratchpad_is_never_compacted_and_importance_is_clamped() {
    let mut ac = ctx();
    ac.start_round(1);
    assert_eq!(
        ac.note_finding("Singleton APIClient", "APIClient.swift:12", 14.0),
        1
    );
    for round in 2..=30 {
        ac.start_round(round);
        ac.record_observation(search("x", &["a.swift"]));
    }
    assert_eq!(ac.findings().len(), 1);
    assert_eq!(ac.findings()[0].importance, 10);
    assert_eq!(ac.findings()[0].round, 1);
    ac.note_finding("minor", "", -3.0);
    assert_eq!(ac.findings()[1].importance, 1);
}

#[test]
fn build_context_renders_findings_then_compressed_observations_then_plan() {
    let mut ac = ctx();
    ac.start_round(1);
    ac.record_thought("Plan:\n1. Search `URLSession` usage\n2. Read APIClient for retry logic\n3. Summarise the findings");
    ac.record_observation(search(
        "URLSession",
        &["Net/APIClient.swift", "Net/Session.swift"],
    ));
    ac.note_finding(
        "Requests go through one APIClient",
        "Net/APIClient.swift:40",
        8.0,
    );
    ac.note_finding("Retries use exponential backoff", "", 6.0);
    ac.start_round(2);
    ac.record_observation(ToolObservation::ok(
        "read_project_file",
        json!({"filePath": "Net/APIClient.swift"}),
        json!({"path": "Net/APIClient.swift", "content": "a\nb\nc\nd"}),
        "a\nb\nc\nd",
    ));
    ac.start_round(6);
    let text = ac.build_context(&TokenMeter::default(), 10_000);
    insta::assert_snapshot!("build_context_full", text);
}

#[test]
fn build_context_includes_findings_partially_by_importance() {
    let mut ac = ctx();
    ac.start_round(1);
    ac.note_finding(
        "low importance finding with quite a long text to cost tokens",
        "",
        2.0,
    );
    ac.note_finding("high", "", 9.0);
    let meter = TokenMeter::default();
    let header = meter.count("## Key findings (noted with note_finding)") + 1;
    let high = meter.count("- [9/10] high") + 1;
    let text = ac.build_context(&meter, header + high);
    assert_eq!(
        text,
        "## Key findings (noted with note_finding)\n- [9/10] high"
    );
    assert!(meter.count(&text) <= header + high);
    assert_eq!(ac.build_context(&meter, 3), "");
}

#[test]
fn build_context_respects_any_budget() {
    let mut ac = ctx();
    for round in 1..=40 {
        ac.start_round(round);
        ac.note_finding(
            &format!("finding number {round}"),
            "f.rs:1",
            f64::from(round % 10),
        );
        ac.record_observation(search(&format!("p{round}"), &["a.rs", "b.rs"]));
    }
    let meter = TokenMeter::default();
    for budget in [0, 10, 50, 120, 400, 2000] {
        let text = ac.build_context(&meter, budget);
        assert!(
            meter.count(&text) <= budget,
            "budget {budget}: {}",
            meter.count(&text)
        );
    }
}

#[test]
fn distill_includes_observations_that_are_still_raw() {
    let mut ac = ctx();
    ac.start_round(1);
    ac.record_observation(search("old", &["a.rs"]));
    ac.start_round(9);
    ac.record_observation(search("fresh", &["b.rs"]));
    let d = ac.distill();
    assert_eq!(
        d.tool_call_summary,
        vec![
            "[search_project_code] search \"old\": 1 match in 1 file; a.rs: 1 match (L1)",
            "[search_project_code] search \"fresh\": 1 match in 1 file; b.rs: 1 match (L1)",
        ]
    );
    assert_eq!(d.compressed_count, 1);
    assert_eq!(d.total_observations, 2);
}

#[test]
fn recent_summary_reports_the_new_information_ratio() {
    let mut ac = ctx();
    assert_eq!(ac.recent_summary(3), None);
    for (round, new) in [(1, true), (2, false), (3, false), (4, true)] {
        ac.start_round(round);
        ac.record_thought(&format!("thinking in round {round}"));
        ac.record_action(&search("p", &["a"]), new);
    }
    ac.end_round();
    let s = ac.recent_summary(3).unwrap();
    assert_eq!(s.round_count, 3);
    assert_eq!(s.last_iteration, 4);
    assert!((s.new_info_ratio - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(s.thoughts.len(), 3);
}

#[test]
fn a_second_plan_replaces_the_first_only_when_expected() {
    let mut ac = ctx();
    ac.start_round(1);
    ac.record_thought("Plan:\n1. Search NetworkKit types\n2. Read APIClient source\n");
    ac.start_round(2);
    ac.record_thought("Plan:\n1. Something else entirely\n2. And another thing here\n");
    assert_eq!(
        ac.plan().unwrap().steps[0].description,
        "Search NetworkKit types"
    );
    ac.expect_plan();
    ac.start_round(3);
    ac.record_thought("Plan:\n1. Something else entirely\n2. And another thing here\n");
    assert_eq!(
        ac.plan().unwrap().steps[0].description,
        "Something else entirely"
    );
    assert_eq!(ac.plan().unwrap().created_at_iteration, 1);
    assert_eq!(ac.plan().unwrap().last_updated_at_iteration, 3);
    assert_eq!(ac.plan_history().len(), 1);
}

#[test]
fn lightweight_mode_keeps_no_observations_and_renders_nothing() {
    let mut ac = ActiveContext::new(
        ScopeId::new("chat"),
        ActiveContextOptions {
            lightweight: true,
            ..ActiveContextOptions::default()
        },
    );
    ac.start_round(1);
    ac.record_observation(search("x", &["a"]));
    ac.note_finding("f", "", 5.0);
    assert_eq!(ac.total_observations(), 0);
    assert_eq!(ac.build_context(&TokenMeter::default(), 1000), "");
}
