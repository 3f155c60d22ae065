//! The texts of nudges and phase hints. They are read by models (and by people reading
//! traces), so every text is snapshot-tested. Each ends with a request not to quote it,
//! because models tend to echo controller messages into their answers.

use std::fmt::Write as _;

use super::{Metrics, Phase, Strategy};
use crate::active::RecentSummary;

const DO_NOT_QUOTE: &str = "(Controller note — do not quote it in your answer.)";

fn digest_template(candidate_count: u32) -> String {
    format!(
        "```json\n{{\"dimensionDigest\": {{\"summary\": \"100-200 characters\", \"candidateCount\": {candidate_count}, \"keyFindings\": [\"...\"], \"crossRefs\": {{\"other-dimension\": \"what it should look at\"}}, \"gaps\": [\"...\"], \"remainingTasks\": [{{\"signal\": \"...\", \"reason\": \"...\", \"priority\": \"high\", \"searchHints\": [\"...\"]}}]}}}}\n```\nLeave remainingTasks empty when everything is covered. Output only the JSON."
    )
}

fn analyst_report_request() -> &'static str {
    "Stop calling tools and write your complete analysis report in Markdown: `##`/`###` headings, concrete file paths, classes, methods and patterns, the evidence for each finding, at least 3 findings, and a `## Not yet explored` section for the gaps."
}

/// Iterations are used up: finish now.
pub(super) fn force_exit(strategy: Strategy, m: &Metrics, max: u32) -> String {
    let head = format!(
        "⏹ Round budget exhausted ({}/{max}). Stop calling tools now.",
        m.iteration
    );
    let body = if strategy.submits() {
        format!(
            "You submitted {} candidates. Output the dimension digest:\n{}",
            m.submit_count,
            digest_template(m.submit_count)
        )
    } else {
        analyst_report_request().to_string()
    };
    format!("{head}\n{body}\n{DO_NOT_QUOTE}")
}

/// A metric- or text-driven phase change; carries the distilled summary of the scope.
pub(super) fn transition(
    strategy: Strategy,
    from: Phase,
    to: Phase,
    m: &Metrics,
    submit_tool: &str,
    distilled: &str,
) -> String {
    let mut text = match (from, to) {
        (_, Phase::Produce) => format!(
            "Exploration is over ({from} → {to}). Based on the findings below, call {submit_tool} to submit knowledge candidates now; stop searching."
        ),
        (_, Phase::Summarize) if strategy == Strategy::Chat => format!(
            "The tools bring nothing new any more ({from} → {to}). Stop calling tools and answer the question from what you found."
        ),
        (_, Phase::Summarize) if strategy.submits() => format!(
            "Production is over ({from} → {to}; {} candidates submitted). Stop calling tools and output the dimension digest:\n{}",
            m.submit_count,
            digest_template(m.submit_count)
        ),
        (_, Phase::Summarize) => format!("Analysis is over ({from} → {to}). {}", analyst_report_request()),
        (Phase::Scan, Phase::Explore) => {
            "The global scan is done (SCAN → EXPLORE). Now search specifically for the key patterns and classes.".to_string()
        }
        (_, Phase::Verify) => format!(
            "Search is saturated ({from} → VERIFY). Read the most important source files to confirm the details of your findings."
        ),
        _ => format!("Phase change: {from} → {to}."),
    };
    if !distilled.is_empty() {
        let _ = write!(text, "\n\nWhat you have established so far:\n{distilled}");
    }
    let _ = write!(text, "\n{DO_NOT_QUOTE}");
    text
}

/// The last rounds found nothing new: start wrapping up.
pub(super) fn convergence(m: &Metrics, remaining: u32) -> String {
    format!(
        "Search results are saturating: you have seen {} files with {} distinct searches and {} structured queries, and the last {} rounds found nothing new. Start organising your findings into results now; keep exploring only if an important aspect is clearly uncovered ({remaining} rounds left).\n{DO_NOT_QUOTE}",
        m.unique_files, m.unique_patterns, m.unique_queries, m.rounds_since_new_info
    )
}

/// Three quarters of the rounds are used.
pub(super) fn budget_warning(iteration: u32, max: u32) -> String {
    let pct = iteration * 100 / max.max(1);
    format!(
        "📌 Progress: round {iteration}/{max} ({pct}%). Make sure the core aspects are covered and start preparing your results; {} rounds left — use them for the most important gaps.\n{DO_NOT_QUOTE}",
        max.saturating_sub(iteration)
    )
}

/// Periodic or stale reflection.
pub(super) fn reflection(
    stale: bool,
    phase: Phase,
    m: &Metrics,
    max: u32,
    recent: &RecentSummary,
    plan_progress: Option<(usize, usize)>,
) -> String {
    let mut text = if stale {
        format!(
            "📊 Stalled ({}/{max}, {} rounds without new information)",
            m.iteration, m.rounds_since_new_info
        )
    } else {
        format!(
            "📊 Mid-run reflection ({}/{max}, {}% of the budget)",
            m.iteration,
            m.iteration * 100 / max.max(1)
        )
    };
    for (i, t) in recent.thoughts.iter().enumerate() {
        let _ = write!(text, "\n{}. {t}", i + 1);
    }
    let _ = write!(
        text,
        "\nEfficiency: {:.0}% of the last {} rounds brought new information.\nSo far: {} files, {} patterns, {} tool calls.",
        recent.new_info_ratio * 100.0,
        recent.round_count,
        m.unique_files,
        m.unique_patterns,
        m.total_tool_calls
    );
    if let Some((done, total)) = plan_progress {
        let _ = write!(text, "\n📋 Plan progress: {done}/{total} steps done.");
    }
    let remaining = max.saturating_sub(m.iteration);
    let questions = if phase == Phase::Produce {
        "Answer for yourself: do your submissions cover the core findings? Is a high-value item still missing?".to_string()
    } else {
        format!(
            "Answer for yourself: what is the most important finding so far? What is still uncovered? What is the best next step with {remaining} rounds left?"
        )
    };
    let _ = write!(text, "\n{questions}\n{DO_NOT_QUOTE}");
    text
}

/// Iteration 1: ask for a plan.
pub(super) fn plan_elicitation(max: u32) -> String {
    format!(
        "Before exploring, write a short plan. You have {max} rounds. List 3–6 numbered steps, each naming concrete targets (classes, patterns, paths), from the overall structure down to details, and make the last step \"summarise the findings\". For example:\nPlan:\n1. Get the project overview and directory structure\n2. Search for `URLSession` and `Alamofire` usage\n3. Read APIClient to see how requests are built\n4. Check the retry and error handling paths\n5. Summarise the findings\nThen start step 1 right away (the plan and a tool call may be in the same turn).\n{DO_NOT_QUOTE}"
    )
}

/// Plan review: progress or deviation.
pub(super) fn plan_review(
    deviating: Option<u32>,
    iteration: u32,
    max: u32,
    done: &[String],
    pending: &[String],
    unplanned: u32,
) -> String {
    let mut text = match deviating {
        Some(rounds) => format!(
            "📋 Plan check ({iteration}/{max}): the last {rounds} rounds did not follow the plan."
        ),
        None => format!("📋 Plan review ({iteration}/{max})"),
    };
    let total = done.len() + pending.len();
    let _ = write!(text, "\n✅ Done ({}/{total}):", done.len());
    for s in done {
        let _ = write!(text, "\n- {s}");
    }
    let _ = write!(text, "\n⏳ Pending ({}/{total}):", pending.len());
    for s in pending {
        let _ = write!(text, "\n- {s}");
    }
    let _ = write!(
        text,
        "\n⚡ Actions outside the plan: {unplanned}\n{} rounds left. Are the pending steps still relevant? Should the plan change given what you found? If so, write the updated plan as a numbered list.\n{DO_NOT_QUOTE}",
        max.saturating_sub(iteration)
    );
    text
}

/// Reply to a text-only answer in PRODUCE.
pub(super) fn continue_producing(submit_tool: &str) -> String {
    format!(
        "Good analysis. Keep calling {submit_tool} to submit the knowledge candidates you found; when you have nothing left to submit, say so in one sentence.\n{DO_NOT_QUOTE}"
    )
}

/// The per-round status appended to the system prompt.
pub(super) fn phase_context(
    phase: Phase,
    m: &Metrics,
    max: u32,
    search_budget: u32,
    submit_tool: &str,
) -> String {
    let remaining = max.saturating_sub(m.iteration);
    if remaining > 0 && remaining <= 2 && phase != Phase::Summarize {
        return format!(
            "\n\n## Current status\n⚠️ Only {remaining} rounds left: finish the current work and prepare your results."
        );
    }
    let hint = match phase {
        Phase::Explore if m.search_rounds_in_phase + 2 >= search_budget => Some(format!(
            "Search budget almost used ({}/{search_budget}): prepare to submit or summarise.",
            m.search_rounds_in_phase
        )),
        Phase::Produce if m.submit_count == 0 && m.phase_rounds >= 1 => {
            Some(format!("Exploration is over: call {submit_tool} now."))
        }
        Phase::Scan => {
            Some("Global scan: get the overview and the directory structure first.".to_string())
        }
        Phase::Verify => Some("Verification: read the key source files.".to_string()),
        _ => None,
    };
    match hint {
        Some(h) => format!("\n\n## Current status\n{h}"),
        None => {
            let label = match phase {
                Phase::Scan => "scanning",
                Phase::Explore => "exploring",
                Phase::Produce => "submitting",
                Phase::Verify => "verifying",
                Phase::Summarize => "summarising — stop calling tools and write the answer",
            };
            format!(
                "\n\n## Progress\nRound {}/{max} | {label} | {remaining} rounds left",
                m.iteration
            )
        }
    }
}
