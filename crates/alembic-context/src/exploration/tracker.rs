//! ExplorationTracker: the phase state machine of one loop.
//!
//! Protocol (one iteration):
//! 1. `tick()`, then `should_exit()`;
//! 2. `next_nudge(&mut active)` — at most one nudge per round, appended as a user message;
//! 3. `tool_choice()` and `phase_context()` for the request;
//! 4. tool round: `record_tool_call` per call (TrackerSignal middleware), then
//!    `end_round(&mut active)`; text-only round: `on_text_response(&active)`.
//!
//! Phase-transition nudges are queued and delivered by the next `next_nudge`, so a round never
//! carries two controller messages.

use serde::{Deserialize, Serialize};

use super::plan_tracker::PlanTracker;
use super::signal::{SEARCH_TOOLS, SignalDetector};
use super::{ExplorationBudget, Metrics, Nudge, NudgeKind, Phase, Strategy, ToolChoice, texts};
use crate::active::ActiveContext;
use crate::observation::{ToolObservation, is_submit_tool, str_field};

/// Periodic reflection interval (rounds).
pub const REFLECTION_INTERVAL: u32 = 5;
/// Minimum rounds between two reflections (the reference's stale reflection had no cooldown).
pub const MIN_REFLECTION_GAP: u32 = 3;
/// Rounds without new information before a stale reflection.
pub const STALE_THRESHOLD: u32 = 2;
/// Iterations before a stale reflection may fire.
pub const MIN_ITERS_FOR_STALE_REFLECTION: u32 = 4;
/// Explored rounds before convergence may fire.
pub const MIN_EXPLORE_ITERS: u32 = 10;
/// Rounds without new information for convergence.
pub const CONVERGENCE_STALE_THRESHOLD: u32 = 3;
/// Distilled lines carried by a transition nudge.
const TRANSITION_SUMMARY_LINES: usize = 12;

/// Why a run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// Two rounds in the terminal phase produced no final answer.
    GraceExhausted,
    /// Two rounds past the iteration limit.
    HardLimit,
}

/// Result of [`ExplorationTracker::should_exit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitDecision {
    Continue,
    Exit(ExitReason),
}

/// What a text-only reply means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextVerdict {
    /// The reply is the final answer; stop the loop.
    FinalAnswer,
    /// Keep going (a nudge may be queued for the next round).
    Continue,
}

#[derive(Debug, Clone, Default)]
struct RoundState {
    new_info: bool,
    submits: u32,
    search: bool,
}

/// See the module docs.
#[derive(Debug, Clone)]
pub struct ExplorationTracker {
    strategy: Strategy,
    budget: ExplorationBudget,
    phase_index: usize,
    metrics: Metrics,
    signals: SignalDetector,
    plan: PlanTracker,
    round: RoundState,
    pending: Option<Nudge>,
    ticked: bool,
    graceful_exit_round: Option<u32>,
    convergence_sent: bool,
    budget_warning_sent: bool,
    last_reflection: Option<u32>,
}

impl ExplorationTracker {
    pub fn new(strategy: Strategy, budget: ExplorationBudget) -> ExplorationTracker {
        ExplorationTracker {
            strategy,
            budget,
            phase_index: 0,
            metrics: Metrics::default(),
            signals: SignalDetector::default(),
            plan: PlanTracker::default(),
            round: RoundState::default(),
            pending: None,
            ticked: false,
            graceful_exit_round: None,
            convergence_sent: false,
            budget_warning_sent: false,
            last_reflection: None,
        }
    }

    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    pub fn budget(&self) -> &ExplorationBudget {
        &self.budget
    }

    pub fn phase(&self) -> Phase {
        self.strategy.chain()[self.phase_index]
    }

    pub fn is_terminal(&self) -> bool {
        self.phase_index + 1 == self.strategy.chain().len()
    }

    pub fn metrics(&self) -> Metrics {
        let mut m = self.metrics;
        m.unique_files = self.signals.unique_files();
        m.unique_patterns = self.signals.unique_patterns();
        m.unique_queries = self.signals.unique_queries();
        m
    }

    pub fn plan_tracker(&self) -> &PlanTracker {
        &self.plan
    }

    /// True once the iteration limit forced the terminal phase.
    pub fn is_graceful_exit(&self) -> bool {
        self.graceful_exit_round.is_some()
    }

    /// Starts an iteration.
    pub fn tick(&mut self) {
        self.metrics.iteration += 1;
        self.metrics.phase_rounds += 1;
        self.ticked = true;
        self.round = RoundState::default();
    }

    /// Undoes the last tick (the model call failed and will be retried).
    pub fn rollback_tick(&mut self) {
        if self.ticked {
            self.metrics.iteration = self.metrics.iteration.saturating_sub(1);
            self.metrics.phase_rounds = self.metrics.phase_rounds.saturating_sub(1);
            self.ticked = false;
        }
    }

    /// Whether to stop before calling the model; past the limit it forces the terminal phase.
    pub fn should_exit(&mut self) -> ExitDecision {
        let m = &self.metrics;
        if self.is_terminal() && m.phase_rounds >= 3 {
            return ExitDecision::Exit(ExitReason::GraceExhausted);
        }
        if m.iteration >= self.budget.max_iterations + 2 {
            return ExitDecision::Exit(ExitReason::HardLimit);
        }
        if m.iteration >= self.budget.max_iterations && !self.is_terminal() {
            self.enter_phase(self.strategy.chain().len() - 1);
            // A forced exit has its own nudge (force_exit); no transition nudge.
            self.pending = None;
            self.metrics.phase_rounds = 1;
            self.graceful_exit_round = Some(self.metrics.iteration);
        }
        ExitDecision::Continue
    }

    /// A plan recorded with `plan_task` was adopted by the working memory: planning nudges
    /// follow it from now on.
    pub fn plan_recorded(&mut self, active: &ActiveContext) {
        self.plan.plan_recorded(active);
    }

    /// Records one tool call (TrackerSignal); returns whether it brought new information.
    pub fn record_tool_call(&mut self, obs: &ToolObservation) -> bool {
        self.metrics.total_tool_calls += 1;
        let is_new = self.signals.observe(obs);
        self.round.new_info |= is_new;
        self.round.search |= SEARCH_TOOLS.contains(&obs.tool.as_str());
        if is_submit_tool(&obs.tool) && submit_succeeded(obs) {
            self.metrics.submit_count += 1;
            self.round.submits += 1;
        }
        is_new
    }

    /// Closes a round that had tool calls: updates metrics, plan progress and the phase.
    pub fn end_round(&mut self, active: &mut ActiveContext) {
        self.ticked = false;
        if self.strategy.planning_enabled() {
            self.plan.update_progress(active);
        }
        let round = std::mem::take(&mut self.round);
        self.count_round(round.new_info, round.submits, round.search);
        self.check_transition(false, active);
    }

    /// Handles a text-only reply. Text rounds count as rounds without new information or
    /// submits, so the idle exits work (the reference skipped them).
    pub fn on_text_response(&mut self, active: &ActiveContext) -> TextVerdict {
        self.ticked = false;
        if self.is_terminal() || self.strategy.text_is_final() {
            return TextVerdict::FinalAnswer;
        }
        if self.check_transition(true, active) {
            return TextVerdict::Continue;
        }
        self.count_round(false, 0, false);
        if !self.check_transition(false, active) && self.phase() == Phase::Produce {
            self.pending = Some(Nudge {
                kind: NudgeKind::ContinueProducing,
                text: texts::continue_producing(&self.budget.submit_tool),
            });
        }
        TextVerdict::Continue
    }

    fn count_round(&mut self, new_info: bool, submits: u32, search: bool) {
        let m = &mut self.metrics;
        m.rounds_since_new_info = if new_info {
            0
        } else {
            m.rounds_since_new_info + 1
        };
        m.rounds_since_submit = if submits > 0 {
            0
        } else {
            m.rounds_since_submit + 1
        };
        m.search_rounds_in_phase += u32::from(search);
        let idle = !new_info && submits == 0;
        m.consecutive_idle_rounds = if idle {
            m.consecutive_idle_rounds + 1
        } else {
            0
        };
    }

    /// Checks the edge to the next phase (text or metric rule); queues the transition nudge.
    fn check_transition(&mut self, text: bool, active: &ActiveContext) -> bool {
        if self.is_terminal() {
            return false;
        }
        let from = self.phase();
        let m = self.metrics();
        let fire = if text {
            self.strategy.text_transition(from, &m, &self.budget)
        } else {
            self.strategy.metric_transition(from, &m, &self.budget)
        };
        if !fire {
            return false;
        }
        self.enter_phase(self.phase_index + 1);
        let distilled = active.distill().render(TRANSITION_SUMMARY_LINES);
        let to = self.phase();
        self.pending = Some(Nudge {
            kind: NudgeKind::PhaseTransition,
            text: texts::transition(
                self.strategy,
                from,
                to,
                &m,
                &self.budget.submit_tool,
                &distilled,
            ),
        });
        true
    }

    fn enter_phase(&mut self, index: usize) {
        self.phase_index = index;
        let m = &mut self.metrics;
        m.phase_rounds = 0;
        m.search_rounds_in_phase = 0;
        m.rounds_since_new_info = 0;
        m.rounds_since_submit = 0;
        m.consecutive_idle_rounds = 0;
    }

    /// `tool_choice` for the next request.
    pub fn tool_choice(&self) -> ToolChoice {
        if self.is_graceful_exit() {
            return ToolChoice::None;
        }
        self.strategy.tool_choice(self.phase())
    }

    /// Status text appended to the system prompt every round.
    pub fn phase_context(&self) -> String {
        texts::phase_context(
            self.phase(),
            &self.metrics,
            self.budget.max_iterations,
            self.budget.search_budget,
            &self.budget.submit_tool,
        )
    }

    /// The nudge for this round, if any. Priority: force_exit > queued transition (or
    /// follow-up) > convergence > budget_warning > reflection > planning.
    pub fn next_nudge(&mut self, active: &mut ActiveContext) -> Option<Nudge> {
        let m = self.metrics();
        let max = self.budget.max_iterations;
        if self.graceful_exit_round.is_some_and(|g| m.iteration >= g) {
            return Some(nudge(
                NudgeKind::ForceExit,
                texts::force_exit(self.strategy, &m, max),
            ));
        }
        if let Some(p) = self.pending.take() {
            return Some(p);
        }
        if self.is_terminal() {
            return None;
        }
        if !self.convergence_sent
            && m.rounds_since_new_info >= CONVERGENCE_STALE_THRESHOLD
            && m.iteration >= MIN_EXPLORE_ITERS
        {
            self.convergence_sent = true;
            let remaining = max.saturating_sub(m.iteration);
            return Some(nudge(
                NudgeKind::Convergence,
                texts::convergence(&m, remaining),
            ));
        }
        if !self.budget_warning_sent && m.iteration >= max * 3 / 4 {
            self.budget_warning_sent = true;
            return Some(nudge(
                NudgeKind::BudgetWarning,
                texts::budget_warning(m.iteration, max),
            ));
        }
        if let Some(text) = self.reflection(&m, active) {
            active.record_reflection(&text);
            return Some(nudge(NudgeKind::Reflection, text));
        }
        // Plans are exploration plans: once the run produces, reviewing them is noise.
        if self.strategy.planning_enabled() && self.phase() != Phase::Produce {
            let elicit = self.strategy.elicits_plan();
            return self
                .plan
                .check(m.iteration, max, active, elicit)
                .map(|t| nudge(NudgeKind::Planning, t));
        }
        None
    }

    fn reflection(&mut self, m: &super::Metrics, active: &ActiveContext) -> Option<String> {
        if !self.strategy.reflection_enabled() {
            return None;
        }
        if self
            .last_reflection
            .is_some_and(|l| m.iteration.saturating_sub(l) < MIN_REFLECTION_GAP)
        {
            return None;
        }
        let periodic = m.iteration > 1 && m.iteration.is_multiple_of(REFLECTION_INTERVAL);
        // In PRODUCE submits are the progress measure; stale reflection there would fire every
        // round, because submits never bring "new information".
        let stale = self.phase() != Phase::Produce
            && m.rounds_since_new_info >= STALE_THRESHOLD
            && m.iteration >= MIN_ITERS_FOR_STALE_REFLECTION;
        if !periodic && !stale {
            return None;
        }
        let recent = active.recent_summary(REFLECTION_INTERVAL as usize)?;
        let progress = self.plan.progress();
        let plan = (self.strategy.planning_enabled() && active.plan().is_some())
            .then_some((progress.covered_steps, progress.total_steps));
        self.last_reflection = Some(m.iteration);
        Some(texts::reflection(
            stale,
            self.phase(),
            m,
            self.budget.max_iterations,
            &recent,
            plan,
        ))
    }
}

fn nudge(kind: NudgeKind, text: String) -> Nudge {
    Nudge { kind, text }
}

/// A submit counts unless it failed or the tool said it was rejected.
fn submit_succeeded(obs: &ToolObservation) -> bool {
    if obs.failed {
        return false;
    }
    !matches!(
        str_field(&obs.data, &["status"]),
        Some("rejected" | "error" | "duplicate" | "duplicate_blocked")
    )
}
