//! Plans written by the model: extraction from free text, steps and their keywords.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Texts shorter than this are never a plan.
const MIN_PLAN_TEXT: usize = 30;
/// Only the start of a reply is searched for a plan.
const SEARCH_WINDOW_CHARS: usize = 2000;

/// Status of one plan step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Pending,
    Done,
}

/// One step of a plan, with the identifiers it names (used to match tool calls to steps).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub description: String,
    pub status: StepStatus,
    pub keywords: Vec<String>,
    /// The tool the step will use, when the plan named one (`plan_task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// The model's current plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub text: String,
    pub steps: Vec<PlanStep>,
    pub created_at_iteration: u32,
    pub last_updated_at_iteration: u32,
}

impl Plan {
    /// Number of steps marked done.
    pub fn done_count(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.status == StepStatus::Done)
            .count()
    }
}

#[expect(
    clippy::expect_used,
    reason = "constant patterns, checked by the unit tests"
)]
static PLAN_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)((探索|分析)?计划|\b(my )?plan|步骤)\s*[:：]|以下是[^\n]{0,20}(计划|步骤)")
        .expect("valid plan marker regex")
});
#[expect(
    clippy::expect_used,
    reason = "constant patterns, checked by the unit tests"
)]
static LIST_ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:\d{1,2}[.)、]|[-*•])\s+(.*)$").expect("valid list item regex")
});
#[expect(
    clippy::expect_used,
    reason = "constant patterns, checked by the unit tests"
)]
static QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"[`'"]([A-Za-z_][\w.]{2,})[`'"]"#).expect("valid quoted regex"));
#[expect(
    clippy::expect_used,
    reason = "constant patterns, checked by the unit tests"
)]
static CAMEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:[A-Z][a-z0-9]+){2,}\b|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b")
        .expect("valid camel regex")
});

/// Finds a numbered or bulleted plan in `text`, or `None` when there is none.
///
/// The plan starts after a marker ("Plan:", "计划：", "步骤:") or, failing that, at the first
/// line numbered `1.`; it is the run of consecutive list lines from there. Lists of questions
/// (an echoed reflection prompt) are not plans.
pub fn extract_plan(text: &str, iteration: u32) -> Option<Plan> {
    if text.chars().count() < MIN_PLAN_TEXT {
        return None;
    }
    let window = crate::text::cut_chars(text, SEARCH_WINDOW_CHARS);
    let start = match PLAN_MARKER.find(window) {
        Some(m) => m.end(),
        None => window.find("\n1.").or_else(|| window.find("\n1)"))?,
    };
    let lines = list_lines(&window[start..]);
    if lines.len() < 2 {
        return None;
    }
    let questions = lines
        .iter()
        .filter(|l| l.ends_with('?') || l.ends_with('？'))
        .count();
    if questions * 2 > lines.len() {
        return None;
    }
    let steps: Vec<PlanStep> = lines
        .iter()
        .filter(|l| l.chars().count() > 5)
        .map(|l| PlanStep {
            description: l.to_string(),
            status: StepStatus::Pending,
            keywords: step_keywords(l),
            tool: None,
        })
        .collect();
    if steps.len() < 2 {
        return None;
    }
    Some(Plan {
        text: lines.join("\n"),
        steps,
        created_at_iteration: iteration,
        last_updated_at_iteration: iteration,
    })
}

/// The plan recorded by the `plan_task` tool, from its result data
/// (`{"goal", "steps": [{"description", "tool"?}]}`); `None` when the data has no steps.
pub fn recorded_plan(data: &serde_json::Value, iteration: u32) -> Option<Plan> {
    let steps: Vec<PlanStep> = data
        .get("steps")?
        .as_array()?
        .iter()
        .filter_map(|s| {
            let description = s.get("description")?.as_str()?.trim().to_string();
            Some(PlanStep {
                keywords: step_keywords(&description),
                tool: s.get("tool").and_then(|t| t.as_str()).map(str::to_string),
                status: StepStatus::Pending,
                description,
            })
        })
        .filter(|s| !s.description.is_empty())
        .collect();
    if steps.is_empty() {
        return None;
    }
    let goal = data.get("goal").and_then(|g| g.as_str()).unwrap_or("");
    let mut text = format!("{goal}\n");
    for (i, s) in steps.iter().enumerate() {
        text.push_str(&format!("{}. {}\n", i + 1, s.description));
    }
    Some(Plan {
        text: text.trim().to_string(),
        steps,
        created_at_iteration: iteration,
        last_updated_at_iteration: iteration,
    })
}

/// The item texts of the first run of list lines (blank lines before the list are skipped).
fn list_lines(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    for line in text.lines() {
        match LIST_ITEM.captures(line) {
            Some(c) => items.push(c.get(1).map_or("", |m| m.as_str()).trim().to_string()),
            None if items.is_empty() && line.trim().is_empty() => continue,
            None if items.is_empty() => continue,
            None => break,
        }
    }
    items
}

/// Identifiers named by a step: quoted identifiers and CamelCase or acronym-led words.
pub fn step_keywords(step: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let quoted = QUOTED.captures_iter(step).filter_map(|c| c.get(1));
    for m in quoted.chain(CAMEL.find_iter(step)) {
        let word = m.as_str().to_string();
        if !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn extracts_a_numbered_plan_after_a_marker() {
        let text = "Let me start.\nPlan:\n1. Survey `URLSession` usage in NetworkKit\n2. Read APIClient to confirm retries\n3. Summarise findings\nNow searching.";
        let plan = extract_plan(text, 1).unwrap();
        assert_eq!(plan.steps.len(), 3);
        assert_eq!(plan.steps[0].keywords, vec!["URLSession", "NetworkKit"]);
        assert_eq!(plan.steps[1].keywords, vec!["APIClient"]);
        assert!(plan.steps[2].keywords.is_empty());
    }

    #[test]
    fn rejects_short_texts_single_items_and_question_lists() {
        assert_eq!(extract_plan("Plan:\n1. a\n2. b", 1), None);
        assert_eq!(
            extract_plan("Plan: only one line here, nothing else to see", 1),
            None
        );
        let questions = "Reflection answer follows:\n1. What did we find so far?\n2. What is missing here?\n3. Next step is reading";
        assert_eq!(extract_plan(questions, 2), None);
    }

    #[test]
    fn a_recorded_plan_keeps_its_tools() {
        let data = serde_json::json!({"goal": "Payment", "steps": [
            {"description": "Search `PaymentCoordinator`", "tool": "search_project_code"},
            {"description": "Summarise"}
        ]});
        let plan = recorded_plan(&data, 2).unwrap();
        assert_eq!(plan.steps[0].tool.as_deref(), Some("search_project_code"));
        assert_eq!(plan.steps[0].keywords, vec!["PaymentCoordinator"]);
        assert_eq!(plan.steps[1].tool, None);
        assert_eq!(plan.created_at_iteration, 2);
        assert_eq!(recorded_plan(&serde_json::json!({"goal": "x"}), 1), None);
    }

    #[test]
    fn falls_back_to_the_first_numbered_line() {
        let text =
            "I will proceed as follows\n1. list the project structure\n2. search for HttpClient\n";
        let plan = extract_plan(text, 3).unwrap();
        assert_eq!(plan.steps.len(), 2);
        assert_eq!(plan.created_at_iteration, 3);
    }
}
