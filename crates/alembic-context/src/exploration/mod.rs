//! Exploration control: phases, strategies, metrics, the new-information signal, nudges and
//! plan tracking for one agent loop.
//!
//! The tracker is per loop (one scope): it owns its metrics and is driven by the runtime —
//! `tick` at the start of an iteration, `record_tool_call` per call (through the TrackerSignal
//! middleware), `end_round` after a tool round, `on_text_response` after a text-only reply.

mod plan_tracker;
mod signal;
mod texts;
mod tracker;

use serde::{Deserialize, Serialize};

pub use plan_tracker::{PlanProgress, PlanTracker};
pub use signal::{SEARCH_TOOLS, SignalDetector, canonical_args};
pub use tracker::{ExitDecision, ExitReason, ExplorationTracker, TextVerdict};

/// Phases of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Phase {
    Scan,
    Explore,
    Produce,
    Verify,
    Summarize,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Scan => "SCAN",
            Phase::Explore => "EXPLORE",
            Phase::Produce => "PRODUCE",
            Phase::Verify => "VERIFY",
            Phase::Summarize => "SUMMARIZE",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the model may, must or must not call tools in the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    Auto,
    Required,
    None,
}

/// The phase chain and rules of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Cold-start extraction: EXPLORE → PRODUCE → SUMMARIZE. (The reference's skill-only
    /// variant, EXPLORE → SUMMARIZE, is not kept: every dimension, shipped or configured, is
    /// `candidate-only`, so no run could select it.)
    Bootstrap,
    /// Pure analysis: SCAN → EXPLORE → VERIFY → SUMMARIZE.
    Analyst,
    /// Formatting and submitting: PRODUCE → SUMMARIZE.
    Producer,
    /// A question in chat (analyst-like, without submits): EXPLORE → SUMMARIZE. Any text
    /// reply is the answer; the stage's own round limit ends the loop (a forced summary).
    Chat,
}

impl Strategy {
    /// The phases in order; the last one is terminal.
    pub fn chain(self) -> &'static [Phase] {
        match self {
            Strategy::Bootstrap => &[Phase::Explore, Phase::Produce, Phase::Summarize],
            Strategy::Analyst => &[Phase::Scan, Phase::Explore, Phase::Verify, Phase::Summarize],
            Strategy::Producer => &[Phase::Produce, Phase::Summarize],
            Strategy::Chat => &[Phase::Explore, Phase::Summarize],
        }
    }

    /// Does a text reply end the run in every phase (chat: the model decides it has answered)?
    pub fn text_is_final(self) -> bool {
        self == Strategy::Chat
    }

    /// Does the tracker end the stage (iteration limit, grace exit)? A chat stage ends by its
    /// own round limit instead, with a forced summary.
    pub fn tracker_ends_stage(self) -> bool {
        self != Strategy::Chat
    }

    /// Ask for a plan on the first round? Chat questions are often answered in one round
    /// (from memory), so chat does not ask; a plan it records is followed all the same.
    pub fn elicits_plan(self) -> bool {
        self.planning_enabled() && self != Strategy::Chat
    }

    /// Periodic and stale reflection nudges.
    pub fn reflection_enabled(self) -> bool {
        self != Strategy::Producer
    }

    /// Plan elicitation and plan review nudges.
    pub fn planning_enabled(self) -> bool {
        self != Strategy::Producer
    }

    /// Does the run submit knowledge (bootstrap and producer) or only analyse?
    pub fn submits(self) -> bool {
        matches!(self, Strategy::Bootstrap | Strategy::Producer)
    }

    /// Metric rule of the edge `from → next`, checked after every round.
    fn metric_transition(self, from: Phase, m: &Metrics, b: &ExplorationBudget) -> bool {
        match (self, from) {
            (Strategy::Analyst, Phase::Scan) => m.iteration >= 2,
            (Strategy::Analyst, Phase::Explore) => {
                m.search_rounds_in_phase >= b.max_iterations * 3 / 5 || m.rounds_since_new_info >= 3
            }
            (Strategy::Analyst, Phase::Verify) => {
                m.iteration >= b.max_iterations * 4 / 5 || m.rounds_since_new_info >= 2
            }
            // Chat has its own round limit; only saturation ends its exploration early.
            (Strategy::Chat, Phase::Explore) => m.rounds_since_new_info >= 3,
            (_, Phase::Explore) => {
                m.submit_count > 0 || m.search_rounds_in_phase >= b.search_budget
            }
            (_, Phase::Produce) => {
                m.submit_count >= b.max_submits
                    || (m.submit_count > 0 && m.rounds_since_submit >= b.idle_rounds_to_exit)
                    || (m.submit_count == 0 && m.consecutive_idle_rounds >= b.search_budget_grace)
            }
            _ => false,
        }
    }

    /// Text rule of the edge `from → next`, checked when the model answers without tools.
    fn text_transition(self, from: Phase, m: &Metrics, b: &ExplorationBudget) -> bool {
        match (self, from) {
            (Strategy::Analyst, Phase::Verify) => true,
            (Strategy::Analyst, _) => false,
            (_, Phase::Explore) => true,
            (_, Phase::Produce) => b.soft_submit_limit > 0 && m.submit_count >= b.soft_submit_limit,
            _ => false,
        }
    }

    /// `auto` in SCAN, EXPLORE, VERIFY and PRODUCE, as the seed says; `none` in SUMMARIZE.
    ///
    /// EXPLORE used to force `required`. That took the model's way to answer away while the
    /// text rule of EXPLORE (a text reply ends exploration) could never fire, and in chat it
    /// made a question answered by memory cost a needless tool round.
    fn tool_choice(self, phase: Phase) -> ToolChoice {
        match phase {
            Phase::Summarize => ToolChoice::None,
            _ => ToolChoice::Auto,
        }
    }
}

/// Limits of a run. Defaults: 24 iterations, 18 search rounds, 10 idle rounds of grace,
/// 10 submits (soft limit 8), exit 3 rounds after the last submit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplorationBudget {
    pub max_iterations: u32,
    pub search_budget: u32,
    pub search_budget_grace: u32,
    pub max_submits: u32,
    pub soft_submit_limit: u32,
    pub idle_rounds_to_exit: u32,
    /// Tool named in PRODUCE nudges.
    pub submit_tool: String,
}

impl Default for ExplorationBudget {
    fn default() -> Self {
        ExplorationBudget {
            max_iterations: 24,
            search_budget: 18,
            search_budget_grace: 10,
            max_submits: 10,
            soft_submit_limit: 8,
            idle_rounds_to_exit: 3,
            submit_tool: "submit_knowledge".to_string(),
        }
    }
}

/// Counters the transition rules and nudges read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Metrics {
    pub iteration: u32,
    pub phase_rounds: u32,
    pub submit_count: u32,
    pub search_rounds_in_phase: u32,
    pub rounds_since_new_info: u32,
    pub rounds_since_submit: u32,
    /// Rounds in a row that brought neither new information nor a submit (text-only rounds
    /// included — the reference only counted rounds with tool calls, so it never grew).
    pub consecutive_idle_rounds: u32,
    pub total_tool_calls: u32,
    pub unique_files: usize,
    pub unique_patterns: usize,
    pub unique_queries: usize,
}

/// Kinds of nudges, highest priority first (transitions and follow-ups sit after force_exit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NudgeKind {
    ForceExit,
    PhaseTransition,
    Convergence,
    BudgetWarning,
    Reflection,
    Planning,
    /// "Keep submitting": the reply to a text-only answer in PRODUCE.
    ContinueProducing,
}

/// A controller message for the model, appended as a user message before the next call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nudge {
    pub kind: NudgeKind,
    pub text: String,
}
