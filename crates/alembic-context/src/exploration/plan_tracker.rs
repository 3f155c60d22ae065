//! PlanTracker: asks for a plan, follows its progress and asks for a review when the run
//! drifts — without the reference's replan spam.
//!
//! The reference measured "deviation" as `1 − done/total`, which is above 0.6 for every fresh
//! plan, so reviews fired from iteration 2 and then every 3 rounds. Here a review fires when
//! the plan is 8 rounds old (periodic) or when 3 rounds in a row matched no step (drift), and
//! never within 3 rounds of the previous review. A step matches an action when one of its
//! keywords appears in the arguments; only steps without keywords fall back to a tool-type
//! heuristic.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::texts;
use crate::active::{ActiveContext, StepStatus};

/// Rounds between periodic plan reviews.
pub const REPLAN_INTERVAL: u32 = 8;
/// Minimum rounds between two reviews.
pub const MIN_REPLAN_GAP: u32 = 3;
/// Rounds without a plan match that count as drift.
pub const OFF_PLAN_ROUNDS: u32 = 3;

/// Progress of the current plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PlanProgress {
    pub covered_steps: usize,
    pub total_steps: usize,
    pub unplanned_actions: u32,
    pub consecutive_off_plan: u32,
    pub last_review_iteration: Option<u32>,
}

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct PlanTracker {
    progress: PlanProgress,
    pending_review: bool,
}

impl PlanTracker {
    pub fn progress(&self) -> PlanProgress {
        self.progress
    }

    /// The planning nudge of this iteration, if any (`elicit`: ask for a plan on the first).
    pub fn check(
        &mut self,
        iteration: u32,
        max: u32,
        active: &mut ActiveContext,
        elicit: bool,
    ) -> Option<String> {
        if iteration == 1 && elicit && active.plan().is_none() {
            active.expect_plan();
            return Some(texts::plan_elicitation(max));
        }
        let plan = active.plan()?;
        let base = self
            .progress
            .last_review_iteration
            .unwrap_or(plan.created_at_iteration);
        let periodic = iteration > 1 && iteration.saturating_sub(base) >= REPLAN_INTERVAL;
        let drifting = self.progress.consecutive_off_plan >= OFF_PLAN_ROUNDS;
        if !periodic && !drifting {
            return None;
        }
        if let Some(last) = self.progress.last_review_iteration
            && iteration.saturating_sub(last) < MIN_REPLAN_GAP
        {
            return None;
        }
        let (done, pending): (Vec<_>, Vec<_>) = plan
            .steps
            .iter()
            .partition(|s| s.status == StepStatus::Done);
        let text = texts::plan_review(
            drifting.then_some(self.progress.consecutive_off_plan),
            iteration,
            max,
            &done
                .iter()
                .map(|s| s.description.clone())
                .collect::<Vec<_>>(),
            &pending
                .iter()
                .map(|s| s.description.clone())
                .collect::<Vec<_>>(),
            self.progress.unplanned_actions,
        );
        self.progress.last_review_iteration = Some(iteration);
        self.progress.consecutive_off_plan = 0;
        self.pending_review = true;
        active.expect_plan();
        Some(text)
    }

    /// The model recorded a new plan (`plan_task`): it answers any pending review, drift
    /// starts over and progress is counted against the new steps.
    pub fn plan_recorded(&mut self, active: &ActiveContext) {
        self.pending_review = false;
        self.progress.unplanned_actions = 0;
        self.progress.consecutive_off_plan = 0;
        if let Some(plan) = active.plan() {
            self.progress.covered_steps = plan.done_count();
            self.progress.total_steps = plan.steps.len();
        }
    }

    /// Matches the actions of the open round against pending steps (after each tool round).
    pub fn update_progress(&mut self, active: &mut ActiveContext) {
        if self.pending_review {
            self.pending_review = false;
            self.progress.unplanned_actions = 0;
        }
        // Recording the plan is not a step of it.
        let actions: Vec<(String, Value)> = active
            .current_actions()
            .iter()
            .filter(|(tool, _)| tool != "plan_task")
            .cloned()
            .collect();
        let Some(plan) = active.plan_mut() else {
            return;
        };
        let mut matched_any = false;
        for (tool, args) in &actions {
            let args_text = args.to_string().to_lowercase();
            let step = plan
                .steps
                .iter_mut()
                .find(|s| s.status == StepStatus::Pending && step_matches(s, tool, &args_text));
            match step {
                Some(s) => {
                    s.status = StepStatus::Done;
                    matched_any = true;
                }
                None => self.progress.unplanned_actions += 1,
            }
        }
        if matched_any {
            self.progress.consecutive_off_plan = 0;
        } else if !actions.is_empty() {
            self.progress.consecutive_off_plan += 1;
        }
        self.progress.covered_steps = plan.done_count();
        self.progress.total_steps = plan.steps.len();
    }
}

fn step_matches(step: &crate::active::PlanStep, tool: &str, args_text: &str) -> bool {
    // A step that names its tool (plan_task) matches only calls of that tool.
    if let Some(planned) = &step.tool {
        return planned == tool
            && (step.keywords.is_empty()
                || step
                    .keywords
                    .iter()
                    .any(|k| args_text.contains(&k.to_lowercase())));
    }
    if !step.keywords.is_empty() {
        return step
            .keywords
            .iter()
            .any(|k| args_text.contains(&k.to_lowercase()));
    }
    let d = step.description.to_lowercase();
    let words: &[&str] = match tool {
        "get_project_overview" => &["overview", "structure", "概览", "结构"],
        "list_project_structure" => &["director", "structure", "目录", "结构"],
        "get_class_info" | "get_class_hierarchy" => &["class", "hierarch", "inherit", "类", "继承"],
        "read_project_file" => &["read", "open", "inspect", "阅读", "查看"],
        "query_code_graph" | "query_call_graph" => &["graph", "call", "depend", "调用", "依赖"],
        _ => &[],
    };
    words.iter().any(|w| d.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::active::{ActiveContextOptions, ScopeId};
    use crate::observation::ToolObservation;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn with_plan() -> ActiveContext {
        let mut ac = ActiveContext::new(ScopeId::new("d:analyst"), ActiveContextOptions::default());
        ac.start_round(1);
        ac.record_thought("Plan:\n1. Search `URLSession` usage\n2. Read APIClient internals\n3. Summarise the findings");
        ac
    }

    fn act(ac: &mut ActiveContext, tracker: &mut PlanTracker, round: u32, args: Value) {
        ac.start_round(round);
        ac.record_action(
            &ToolObservation::ok("search_project_code", args, Value::Null, ""),
            false,
        );
        tracker.update_progress(ac);
    }

    #[test]
    fn asks_for_a_plan_on_the_first_iteration_only() {
        let mut ac = ActiveContext::new(ScopeId::new("d"), ActiveContextOptions::default());
        let mut t = PlanTracker::default();
        assert!(t.check(1, 24, &mut ac, true).is_some());
        assert_eq!(t.check(2, 24, &mut ac, true), None);
        let mut chat = ActiveContext::new(ScopeId::new("c"), ActiveContextOptions::default());
        assert_eq!(t.check(1, 8, &mut chat, false), None, "chat does not ask");
    }

    #[test]
    fn a_fresh_plan_is_not_reviewed_every_few_rounds() {
        let mut ac = with_plan();
        let mut t = PlanTracker::default();
        let mut reviews = Vec::new();
        for round in 2..=20 {
            // One on-plan action, then rounds that match nothing in particular but are not
            // off-plan for three rounds in a row.
            let args = if round % 2 == 0 {
                json!({"pattern": "URLSession"})
            } else {
                json!({"pattern": "APIClient"})
            };
            act(&mut ac, &mut t, round, args);
            if t.check(round + 1, 24, &mut ac, true).is_some() {
                reviews.push(round + 1);
            }
        }
        // Both keyworded steps were done by round 3; after that every action is unplanned, so
        // drift is detected after 3 rounds and reviews come at most every MIN_REPLAN_GAP rounds.
        assert_eq!(t.progress().covered_steps, 2);
        for pair in reviews.windows(2) {
            assert!(pair[1] - pair[0] >= MIN_REPLAN_GAP, "{reviews:?}");
        }
        assert!(!reviews.contains(&3), "{reviews:?}");
    }

    #[test]
    fn steps_are_matched_by_keywords() {
        let mut ac = with_plan();
        let mut t = PlanTracker::default();
        act(&mut ac, &mut t, 2, json!({"pattern": "urlsession"}));
        assert_eq!(t.progress().covered_steps, 1);
        assert_eq!(t.progress().consecutive_off_plan, 0);
        act(&mut ac, &mut t, 3, json!({"pattern": "unrelated"}));
        assert_eq!(t.progress().consecutive_off_plan, 1);
        assert_eq!(t.progress().unplanned_actions, 1);
    }
}
