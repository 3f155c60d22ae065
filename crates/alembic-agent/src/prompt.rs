//! The texts the loop sends to the model (system prompts, nudges, handoff, forced summary).

use std::path::Path;

use crate::preset::StageSpec;

/// Sent, once, after a reply with neither text nor tool calls.
pub const EMPTY_REPLY_NUDGE: &str = "Your last reply was empty. Continue: call a tool if you need more information, otherwise answer the question in text.";

/// Sent with the last request of a run whose rounds ran out.
pub const FORCED_SUMMARY_NUDGE: &str = "You have used all your rounds. Do not call tools. Answer now from what you have found so far: name concrete files and types, and say what remains unverified.";

/// The fixed part of a stage's system prompt.
pub fn base_system_prompt(stage: &StageSpec, root: &Path, tool_names: &[String]) -> String {
    let mut parts = vec![format!(
        "You are Alembic, an assistant that studies the software project at {} and answers questions about it.",
        root.display()
    )];
    parts.push(match stage.name.as_str() {
        "analyst" => "Stage: analysis. Explore the code with the tools (overview, structure, search, read, class and call graphs), verify what you find, and finish with a Markdown analysis report: headings, concrete file paths, at least three findings.".to_string(),
        "bootstrap" => "Stage: bootstrap. Explore the code with the tools until you understand the subject, then submit each piece of knowledge worth keeping with the submit tool (cite files as path:line), then summarise what you submitted.".to_string(),
        "producer" => "Stage: production. Turn the analysis below into knowledge candidates and submit each with the submit tool; prefer submitting to polishing. When you are done, list what you submitted.".to_string(),
        _ => "Look at the code with the tools before you answer when the answer is not already known; cite files as path:line. When you know enough, answer in plain text without calling tools. Answer in the language of the question.".to_string(),
    });
    if tool_names.iter().any(|n| n == "note_finding") {
        parts.push("Record conclusions worth keeping with note_finding (importance 1-10; 7 or more for facts about the project's design that later sessions should know). Facts listed under \"Long-term memory\" are already known from earlier sessions: use them instead of searching again.".to_string());
    }
    parts.join("\n\n")
}

/// Progress line for stages without exploration control.
pub fn round_progress(round: u32, max: u32) -> String {
    format!(
        "## Progress\nround {round} of {max}; {} left",
        max.saturating_sub(round)
    )
}

/// The producer stage's task: the question and the analyst's distilled findings and report.
pub fn producer_prompt(question: &str, distilled: &str, analysis: &str) -> String {
    let mut text = format!("Task: {question}\n\n## Findings of the analysis stage\n");
    text.push_str(if distilled.trim().is_empty() {
        "(none noted)"
    } else {
        distilled
    });
    if !analysis.trim().is_empty() {
        text.push_str("\n\n## Analysis report\n");
        text.push_str(analysis.trim());
    }
    text.push_str("\n\nSubmit knowledge candidates for what is worth keeping, then summarise what you submitted.");
    text
}

/// The answer of last resort when even the forced summary failed: what the run saw.
pub fn fallback_summary(distilled: &str) -> String {
    if distilled.trim().is_empty() {
        "The model did not produce an answer and no findings were recorded.".to_string()
    } else {
        format!(
            "The model did not produce an answer. What the run found:\n{}",
            distilled.trim()
        )
    }
}
