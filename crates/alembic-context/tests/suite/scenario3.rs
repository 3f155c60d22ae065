//! Seed scenario 3 ("ExplorationTracker guides convergence"), driven through the tracker and
//! the working memory exactly as the runtime and the pipeline middlewares drive them.
//!
//! The seed's narration fires the convergence nudge at iteration 9 and moves to PRODUCE there;
//! the rule table (convergence after ≥ 3 rounds without new information and ≥ 10 explored
//! rounds) cannot fire at 9. We follow the rules (see DECISIONS.md, "Scenario 3"), and this
//! test asserts the trace they produce, iteration by iteration.

use alembic_context::{
    ActiveContext, ActiveContextOptions, ExplorationBudget, ExplorationTracker, NudgeKind, Phase,
    ScopeId, Strategy, TextVerdict, ToolChoice, ToolObservation,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

enum Act {
    Calls(Vec<ToolObservation>),
    Text(&'static str),
}

fn search(pattern: &str, files: &[&str]) -> ToolObservation {
    let matches: Vec<Value> = files
        .iter()
        .enumerate()
        .map(|(i, f)| json!({"file": f, "line": 10 * (i + 1)}))
        .collect();
    ToolObservation::ok(
        "search_project_code",
        json!({"pattern": pattern}),
        json!({"matches": matches}),
        format!("{} matches", files.len()),
    )
}

fn read(path: &str) -> ToolObservation {
    ToolObservation::ok(
        "read_project_file",
        json!({"filePath": path}),
        json!({"path": path, "content": "import Foundation\nfinal class X {}\n"}),
        "import Foundation\nfinal class X {}\n",
    )
}

fn submit(title: &str) -> ToolObservation {
    ToolObservation::ok(
        "submit_knowledge",
        json!({"title": title}),
        json!({"status": "created", "id": title.to_lowercase().replace(' ', "-")}),
        format!("created candidate {title}"),
    )
}

fn dedup_refusal(title: &str) -> ToolObservation {
    ToolObservation::failed(
        "submit_knowledge",
        json!({"title": title}),
        format!("refused: a candidate titled \"{title}\" was already submitted in this run"),
    )
}

fn note(finding: &str, evidence: &str, importance: f64) -> ToolObservation {
    ToolObservation::ok(
        "note_finding",
        json!({"finding": finding, "evidence": evidence, "importance": importance}),
        Value::Null,
        "noted",
    )
}

const PLAN: &str = "Plan:\n1. Search `URLSession` and `Alamofire` usage\n2. Inspect the NetworkKit class hierarchy\n3. Read APIClient to see how requests are built\n4. Summarise the findings";

/// The 15-iteration script: searches with the stated new/known files, three submits and one
/// dedup refusal, then two text rounds.
fn script() -> Vec<(Option<&'static str>, Act)> {
    vec![
        (
            Some(PLAN),
            Act::Calls(vec![search(
                "URLSession",
                &[
                    "Net/URLSessionClient.swift",
                    "Net/SessionConfig.swift",
                    "Net/Reachability.swift",
                ],
            )]),
        ),
        (
            None,
            Act::Calls(vec![search(
                "Alamofire",
                &["Net/AlamofireAdapter.swift", "Net/RetryPolicy.swift"],
            )]),
        ),
        (
            None,
            Act::Calls(vec![ToolObservation::ok(
                "get_class_hierarchy",
                json!({"className": "NetworkKit"}),
                json!({"classes": ["NetworkKit", "APIClient", "URLSessionClient"]}),
                "NetworkKit\n  APIClient\n  URLSessionClient",
            )]),
        ),
        (
            None,
            Act::Calls(vec![
                read("Net/APIClient.swift"),
                note(
                    "Requests are built by APIClient on top of URLSessionClient",
                    "Net/APIClient.swift:40",
                    8.0,
                ),
            ]),
        ),
        (
            None,
            Act::Calls(vec![search(
                "HTTP",
                &["Net/HTTPHeaders.swift", "Net/URLSessionClient.swift"],
            )]),
        ),
        (
            None,
            Act::Calls(vec![search(
                "request",
                &["Net/APIClient.swift", "Net/URLSessionClient.swift"],
            )]),
        ),
        (
            None,
            Act::Calls(vec![
                search(
                    "response",
                    &["Net/ResponseDecoder.swift", "Net/APIClient.swift"],
                ),
                note(
                    "Responses are decoded by one generic ResponseDecoder",
                    "Net/ResponseDecoder.swift:12",
                    7.0,
                ),
            ]),
        ),
        (
            None,
            Act::Calls(vec![search(
                "network",
                &["Net/Reachability.swift", "Net/APIClient.swift"],
            )]),
        ),
        (
            None,
            Act::Calls(vec![search(
                "URLSession",
                &["Net/URLSessionClient.swift", "Net/SessionConfig.swift"],
            )]),
        ),
        (
            None,
            Act::Calls(vec![
                submit("URLSession client wrapper"),
                submit("Alamofire retry adapter"),
            ]),
        ),
        (
            None,
            Act::Calls(vec![
                dedup_refusal("Alamofire retry adapter"),
                submit("Generic response decoding"),
            ]),
        ),
        (None, Act::Calls(vec![read("Net/ResponseDecoder.swift")])),
        (
            None,
            Act::Calls(vec![search("decode", &["Net/ResponseDecoder.swift"])]),
        ),
        (
            None,
            Act::Text("I have submitted the main networking patterns."),
        ),
        (
            None,
            Act::Text(
                "```json\n{\"dimensionDigest\": {\"summary\": \"...\", \"candidateCount\": 3}}\n```",
            ),
        ),
    ]
}

#[derive(Debug, PartialEq)]
struct Row {
    iteration: u32,
    phase_during: Phase,
    nudge: Option<NudgeKind>,
    tool_choice: ToolChoice,
    phase_after: Phase,
    final_answer: bool,
}

/// Runs a script the way the runtime does and returns the trace and the nudge texts.
fn drive(script: Vec<(Option<&'static str>, Act)>) -> (Vec<Row>, Vec<(u32, NudgeKind, String)>) {
    let mut tracker = ExplorationTracker::new(Strategy::Bootstrap, ExplorationBudget::default());
    let mut active = ActiveContext::new(
        ScopeId::new("networking:bootstrap"),
        ActiveContextOptions::default(),
    );
    let mut rows = Vec::new();
    let mut texts = Vec::new();
    for (thought, act) in script {
        tracker.tick();
        let iteration = tracker.metrics().iteration;
        active.start_round(iteration);
        let phase_during = tracker.phase();
        let nudge = tracker.next_nudge(&mut active);
        if let Some(n) = &nudge {
            texts.push((iteration, n.kind, n.text.clone()));
        }
        let tool_choice = tracker.tool_choice();
        if let Some(t) = thought {
            active.record_thought(t);
        }
        let mut final_answer = false;
        match act {
            Act::Calls(calls) => {
                for obs in calls {
                    // ObservationRecord → TrackerSignal → TraceRecord, as in the pipeline.
                    if obs.tool == "note_finding" && !obs.failed {
                        let f = obs.args["finding"].as_str().unwrap_or_default();
                        let e = obs.args["evidence"].as_str().unwrap_or_default();
                        active.note_finding(f, e, obs.args["importance"].as_f64().unwrap_or(5.0));
                    }
                    active.record_observation(obs.clone());
                    let is_new = tracker.record_tool_call(&obs);
                    active.record_action(&obs, is_new);
                }
                tracker.end_round(&mut active);
            }
            Act::Text(text) => {
                active.record_thought(text);
                final_answer = tracker.on_text_response(&active) == TextVerdict::FinalAnswer;
            }
        }
        rows.push(Row {
            iteration,
            phase_during,
            nudge: nudge.map(|n| n.kind),
            tool_choice,
            phase_after: tracker.phase(),
            final_answer,
        });
    }
    (rows, texts)
}

fn row(
    iteration: u32,
    during: Phase,
    nudge: Option<NudgeKind>,
    tool_choice: ToolChoice,
    after: Phase,
) -> Row {
    Row {
        iteration,
        phase_during: during,
        nudge,
        tool_choice,
        phase_after: after,
        final_answer: false,
    }
}

#[test]
fn scenario_3_follows_the_rule_table_iteration_by_iteration() {
    use NudgeKind::*;
    use Phase::*;
    // EXPLORE is `auto`, as the seed's table says (it used to force `required`).
    use ToolChoice::{Auto, None as NoTools};
    let (rows, texts) = drive(script());
    let mut last = row(15, Summarize, Some(PhaseTransition), NoTools, Summarize);
    last.final_answer = true;
    let expected = vec![
        row(1, Explore, Some(Planning), Auto, Explore),
        row(2, Explore, None, Auto, Explore),
        row(3, Explore, None, Auto, Explore),
        row(4, Explore, None, Auto, Explore),
        // periodic reflection (every 5 rounds)
        row(5, Explore, Some(Reflection), Auto, Explore),
        row(6, Explore, None, Auto, Explore),
        row(7, Explore, None, Auto, Explore),
        // rounds 5-7 matched no pending plan step: drift review
        row(8, Explore, Some(Planning), Auto, Explore),
        // the narration's convergence point: only 1 round without new information so far
        row(9, Explore, None, Auto, Explore),
        // 2 stale rounds and round 10: a (stale) reflection; convergence needs 3 stale rounds.
        // The first submits end EXPLORE.
        row(10, Explore, Some(Reflection), Auto, Produce),
        // the transition nudge carries the distilled findings
        row(11, Produce, Some(PhaseTransition), Auto, Produce),
        row(12, Produce, None, Auto, Produce),
        row(13, Produce, None, Auto, Produce),
        // a text-only round counts as the third round without a submit: PRODUCE → SUMMARIZE
        row(14, Produce, None, Auto, Summarize),
        // digest request, no tools; the reply is the final answer
        last,
    ];
    assert_eq!(rows, expected);
    let rendered: Vec<String> = texts
        .iter()
        .map(|(i, kind, text)| format!("=== iteration {i}: {kind:?} ===\n{text}"))
        .collect();
    insta::assert_snapshot!("scenario3_nudges", rendered.join("\n\n"));
}

#[test]
fn scenario_3_with_continued_stale_searches_converges_at_iteration_11() {
    // The same run, but the agent keeps searching known files instead of submitting at 10:
    // the third stale round is 10, so convergence fires at the start of 11 (then, with
    // convergence spent and a reflection two rounds ago, the plan-drift review at 12).
    let mut s = script();
    s.truncate(9);
    s.push((
        None,
        Act::Calls(vec![search("client", &["Net/APIClient.swift"])]),
    ));
    s.push((
        None,
        Act::Calls(vec![search("session", &["Net/SessionConfig.swift"])]),
    ));
    s.push((None, Act::Calls(vec![submit("URLSession client wrapper")])));
    let (rows, texts) = drive(s);
    let kinds: Vec<(u32, Option<NudgeKind>, Phase)> = rows
        .iter()
        .map(|r| (r.iteration, r.nudge, r.phase_after))
        .collect();
    assert_eq!(
        kinds[9..],
        [
            (10, Some(NudgeKind::Reflection), Phase::Explore),
            (11, Some(NudgeKind::Convergence), Phase::Explore),
            (12, Some(NudgeKind::Planning), Phase::Produce),
        ]
    );
    let convergence = texts
        .iter()
        .find(|t| t.1 == NudgeKind::Convergence)
        .map(|t| t.2.clone())
        .unwrap_or_default();
    insta::assert_snapshot!("scenario3_convergence", convergence);
}
