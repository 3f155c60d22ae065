//! ActiveContext: the working memory of one scope (one dimension × stage, or one chat).
//!
//! Three regions: a **scratchpad** of findings the model noted explicitly (`note_finding`;
//! never compacted), an **observation log** (every tool result; raw for the last
//! `max_recent_rounds` rounds, then compressed per tool) and a **plan**. It also keeps the
//! reasoning trace (rounds with thoughts, actions, reflections) that the exploration
//! controller reads.
//!
//! There is no global "current scope": whoever owns a scope owns its ActiveContext, so
//! parallel dimensions cannot read each other's working memory.

pub mod compress;
pub mod plan;

use std::collections::VecDeque;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::observation::{ToolObservation, is_submit_tool};
use crate::text::{TokenMeter, cut_with_marker};
pub use compress::compress;
pub use plan::{Plan, PlanStep, StepStatus, extract_plan, recorded_plan};

/// Compressed observations kept before the oldest are dropped (keeps long runs bounded).
const MAX_COMPRESSED: usize = 200;
/// Compressed observations rendered by `build_context`.
const RENDERED_OBSERVATIONS: usize = 15;

/// The name of a working-memory scope, e.g. `networking:analyst`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ScopeId(pub String);

impl ScopeId {
    pub fn new(id: impl Into<String>) -> ScopeId {
        ScopeId(id.into())
    }

    /// The dimension part of `dimension:stage`.
    pub fn dimension(&self) -> &str {
        self.0.split(':').next().unwrap_or(&self.0)
    }
}

impl std::fmt::Display for ScopeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Options of an ActiveContext.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveContextOptions {
    /// Rounds whose observations stay raw (the current round plus this many before it).
    pub max_recent_rounds: u32,
    /// Chat mode: no observation log and no rendered context; rounds and plan still tracked.
    pub lightweight: bool,
}

impl Default for ActiveContextOptions {
    fn default() -> Self {
        ActiveContextOptions {
            max_recent_rounds: 3,
            lightweight: false,
        }
    }
}

/// A finding the model noted explicitly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub finding: String,
    #[serde(default)]
    pub evidence: String,
    pub importance: u8,
    #[serde(default)]
    pub round: u32,
}

/// Metadata of one observation in the reasoning trace (never shown to the model as is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservationMeta {
    pub tool: String,
    pub got_new_info: bool,
    pub result_size: usize,
}

/// One ReAct round of the reasoning trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub iteration: u32,
    pub thought: Option<String>,
    pub actions: Vec<(String, Value)>,
    pub observations: Vec<ObservationMeta>,
    pub reflection: Option<String>,
}

impl RoundRecord {
    fn new(iteration: u32) -> RoundRecord {
        RoundRecord {
            iteration,
            thought: None,
            actions: Vec::new(),
            observations: Vec::new(),
            reflection: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct RawObservation {
    round: u32,
    obs: ToolObservation,
}

/// A compressed observation: which tool, in which round, and its summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompressedObservation {
    pub tool: String,
    pub round: u32,
    pub summary: String,
}

/// Counters over the reasoning trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TraceStats {
    pub total_rounds: usize,
    pub thought_count: usize,
    pub total_actions: usize,
    pub reflection_count: usize,
}

/// What the last rounds looked like (input of reflection nudges).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecentSummary {
    pub round_count: usize,
    pub thoughts: Vec<String>,
    pub tool_calls: Vec<String>,
    pub new_info_ratio: f64,
    pub last_iteration: u32,
}

/// The distillate of a scope, handed to the session store and the producer stage.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DistilledContext {
    pub key_findings: Vec<Finding>,
    pub tool_call_summary: Vec<String>,
    pub stats: TraceStats,
    pub plan: Option<Plan>,
    pub total_observations: usize,
    pub compressed_count: usize,
}

impl DistilledContext {
    /// A compact rendering: findings by importance, then what the tools showed.
    pub fn render(&self, max_lines: usize) -> String {
        let mut findings = self.key_findings.clone();
        findings.sort_by_key(|f| std::cmp::Reverse(f.importance));
        let mut lines: Vec<String> = findings
            .iter()
            .take(max_lines)
            .map(render_finding)
            .collect();
        let slots = max_lines.saturating_sub(lines.len());
        let calls = &self.tool_call_summary;
        // The most recent tool calls matter most at a phase change: show the tail.
        let shown = calls.len().min(slots);
        if shown < calls.len() {
            lines.push(format!("- …{} earlier tool calls", calls.len() - shown));
        }
        lines.extend(
            calls[calls.len() - shown..]
                .iter()
                .map(|s| format!("- {s}")),
        );
        lines.join("\n")
    }
}

/// A multi-line summary as one line: trimmed lines joined with "; ".
pub(crate) fn one_line(summary: &str) -> String {
    let lines: Vec<&str> = summary
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join("; ")
}

fn render_finding(f: &Finding) -> String {
    if f.evidence.is_empty() {
        format!("- [{}/10] {}", f.importance, f.finding)
    } else {
        format!("- [{}/10] {} ({})", f.importance, f.finding, f.evidence)
    }
}

/// Working memory of one scope. See the module docs.
#[derive(Debug, Clone)]
pub struct ActiveContext {
    scope: ScopeId,
    options: ActiveContextOptions,
    scratchpad: Vec<Finding>,
    rounds: Vec<RoundRecord>,
    current: Option<RoundRecord>,
    recent: VecDeque<RawObservation>,
    compressed: Vec<CompressedObservation>,
    dropped_compressed: usize,
    total_observations: usize,
    plan: Option<Plan>,
    plan_history: Vec<Plan>,
    expecting_plan: bool,
}

impl ActiveContext {
    /// An empty working memory for `scope`.
    pub fn new(scope: ScopeId, options: ActiveContextOptions) -> ActiveContext {
        ActiveContext {
            scope,
            options,
            scratchpad: Vec::new(),
            rounds: Vec::new(),
            current: None,
            recent: VecDeque::new(),
            compressed: Vec::new(),
            dropped_compressed: 0,
            total_observations: 0,
            plan: None,
            plan_history: Vec::new(),
            expecting_plan: false,
        }
    }

    pub fn scope(&self) -> &ScopeId {
        &self.scope
    }

    /// Opens round `iteration` (closing any open round) and compresses observations that
    /// left the raw window. The window is counted in rounds, not in tool calls.
    pub fn start_round(&mut self, iteration: u32) {
        self.end_round();
        self.current = Some(RoundRecord::new(iteration));
        let oldest_raw = iteration.saturating_sub(self.options.max_recent_rounds);
        while self.recent.front().is_some_and(|r| r.round < oldest_raw) {
            if let Some(raw) = self.recent.pop_front() {
                self.push_compressed(raw);
            }
        }
    }

    /// Closes the open round, if any.
    pub fn end_round(&mut self) {
        if let Some(round) = self.current.take() {
            self.rounds.push(round);
        }
    }

    fn push_compressed(&mut self, raw: RawObservation) {
        self.compressed.push(CompressedObservation {
            tool: raw.obs.tool.clone(),
            round: raw.round,
            summary: compress(&raw.obs),
        });
        if self.compressed.len() > MAX_COMPRESSED {
            self.compressed.remove(0);
            self.dropped_compressed += 1;
        }
    }

    /// The iteration of the open (or last closed) round; 0 before the first round.
    pub fn current_iteration(&self) -> u32 {
        self.current
            .as_ref()
            .or(self.rounds.last())
            .map_or(0, |r| r.iteration)
    }

    fn round_mut(&mut self) -> &mut RoundRecord {
        let next = self.current_iteration() + 1;
        self.current.get_or_insert_with(|| RoundRecord::new(next))
    }

    /// Records the model's text of this round; a plan in it is adopted (see [`extract_plan`]).
    pub fn record_thought(&mut self, text: &str) {
        let iteration = self.current_iteration();
        self.round_mut().thought = Some(text.to_string());
        self.adopt_plan(text, iteration);
    }

    /// Records the reflection prompt shown this round.
    pub fn record_reflection(&mut self, text: &str) {
        self.round_mut().reflection = Some(text.to_string());
    }

    /// Adds a finding to the scratchpad (importance clamped to 1..=10); returns the count.
    pub fn note_finding(&mut self, finding: &str, evidence: &str, importance: f64) -> usize {
        let importance = importance.round().clamp(1.0, 10.0) as u8;
        let round = self.current_iteration();
        self.scratchpad.push(Finding {
            finding: finding.trim().to_string(),
            evidence: evidence.trim().to_string(),
            importance,
            round,
        });
        self.scratchpad.len()
    }

    /// Adds a finished tool call to the observation log (the ObservationRecord step).
    pub fn record_observation(&mut self, obs: ToolObservation) {
        if self.options.lightweight {
            return;
        }
        self.total_observations += 1;
        let round = self.current_iteration();
        self.recent.push_back(RawObservation { round, obs });
    }

    /// Adds a tool call and whether it brought new information to the reasoning trace (the
    /// TraceRecord step). Successful submits always count as new.
    pub fn record_action(&mut self, obs: &ToolObservation, is_new: bool) {
        let got_new_info = is_new || (is_submit_tool(&obs.tool) && !obs.failed);
        let round = self.round_mut();
        round.actions.push((obs.tool.clone(), obs.args.clone()));
        round.observations.push(ObservationMeta {
            tool: obs.tool.clone(),
            got_new_info,
            result_size: obs.text.len(),
        });
    }

    /// The actions of the open round (used by the plan tracker).
    pub fn current_actions(&self) -> &[(String, Value)] {
        self.current.as_ref().map_or(&[], |r| r.actions.as_slice())
    }

    pub fn findings(&self) -> &[Finding] {
        &self.scratchpad
    }

    /// Findings with importance ≥ `min`.
    pub fn high_priority_findings(&self, min: u8) -> Vec<Finding> {
        self.scratchpad
            .iter()
            .filter(|f| f.importance >= min)
            .cloned()
            .collect()
    }

    pub fn rounds(&self) -> &[RoundRecord] {
        &self.rounds
    }

    pub fn total_observations(&self) -> usize {
        self.total_observations
    }

    /// Compressed observations, oldest first.
    pub fn compressed_observations(&self) -> &[CompressedObservation] {
        &self.compressed
    }

    /// Observations still raw (current window), oldest first, with their round.
    pub fn raw_observations(&self) -> impl Iterator<Item = (u32, &ToolObservation)> {
        self.recent.iter().map(|r| (r.round, &r.obs))
    }

    pub fn plan(&self) -> Option<&Plan> {
        self.plan.as_ref()
    }

    pub fn plan_mut(&mut self) -> Option<&mut Plan> {
        self.plan.as_mut()
    }

    pub fn plan_history(&self) -> &[Plan] {
        &self.plan_history
    }

    /// Lets the next plan in the model's text replace the current one.
    pub fn expect_plan(&mut self) {
        self.expecting_plan = true;
    }

    /// Adopts the plan the model recorded with `plan_task` (its result data): it replaces the
    /// current plan, which goes to the history. Returns whether the data held a plan.
    pub fn adopt_recorded_plan(&mut self, data: &Value) -> bool {
        let Some(plan) = recorded_plan(data, self.current_iteration()) else {
            return false;
        };
        self.expecting_plan = false;
        if let Some(old) = self.plan.replace(plan) {
            self.plan_history.push(old);
        }
        true
    }

    fn adopt_plan(&mut self, text: &str, iteration: u32) {
        if self.plan.is_some() && !self.expecting_plan {
            return;
        }
        let Some(mut new_plan) = extract_plan(text, iteration) else {
            return;
        };
        self.expecting_plan = false;
        if let Some(old) = self.plan.take() {
            new_plan.created_at_iteration = old.created_at_iteration;
            self.plan_history.push(old);
        }
        self.plan = Some(new_plan);
    }

    /// Counters over closed rounds and the open one.
    pub fn stats(&self) -> TraceStats {
        let all = self.rounds.iter().chain(self.current.iter());
        all.fold(TraceStats::default(), |mut s, r| {
            s.total_rounds += 1;
            s.thought_count += usize::from(r.thought.is_some());
            s.total_actions += r.actions.len();
            s.reflection_count += usize::from(r.reflection.is_some());
            s
        })
    }

    /// A summary of the last `n` closed rounds, or `None` before the first closed round.
    pub fn recent_summary(&self, n: usize) -> Option<RecentSummary> {
        let start = self.rounds.len().saturating_sub(n);
        let recent = &self.rounds[start..];
        let last = recent.last()?;
        let observations: Vec<&ObservationMeta> =
            recent.iter().flat_map(|r| r.observations.iter()).collect();
        let new_info = observations.iter().filter(|o| o.got_new_info).count();
        let new_info_ratio = if observations.is_empty() {
            0.0
        } else {
            new_info as f64 / observations.len() as f64
        };
        Some(RecentSummary {
            round_count: recent.len(),
            thoughts: recent
                .iter()
                .filter_map(|r| r.thought.as_deref())
                .map(|t| cut_with_marker(&one_line(t), 100, "…"))
                .collect(),
            tool_calls: recent
                .iter()
                .flat_map(|r| r.actions.iter().map(|a| a.0.clone()))
                .collect(),
            new_info_ratio,
            last_iteration: last.iteration,
        })
    }

    /// The working-memory text for the system prompt, within `budget` tokens.
    ///
    /// Scratchpad findings go first, most important first, each included while it fits
    /// (partial inclusion rather than all-or-nothing). Then compressed observations, newest
    /// first while they fit (rendered oldest→newest). Then the plan, if it still fits. Raw
    /// observations are not rendered: they are still in the message history.
    pub fn build_context(&self, meter: &TokenMeter, budget: usize) -> String {
        if self.options.lightweight || budget == 0 {
            return String::new();
        }
        let mut remaining = budget;
        let mut sections = Vec::new();
        let findings = self.render_findings(meter, &mut remaining);
        sections.extend(findings);
        sections.extend(self.render_observations(meter, &mut remaining));
        sections.extend(self.render_plan(meter, &mut remaining));
        sections.join("\n")
    }

    fn render_findings(&self, meter: &TokenMeter, remaining: &mut usize) -> Option<String> {
        let header = "## Key findings (noted with note_finding)";
        let mut cost = meter.count(header) + 1;
        if self.scratchpad.is_empty() || cost > *remaining {
            return None;
        }
        let mut sorted: Vec<&Finding> = self.scratchpad.iter().collect();
        sorted.sort_by_key(|f| std::cmp::Reverse(f.importance));
        let mut lines = vec![header.to_string()];
        for f in sorted {
            let line = render_finding(f);
            let c = meter.count(&line) + 1;
            if cost + c <= *remaining {
                cost += c;
                lines.push(line);
            }
        }
        if lines.len() == 1 {
            return None;
        }
        *remaining -= cost;
        Some(lines.join("\n"))
    }

    fn render_observations(&self, meter: &TokenMeter, remaining: &mut usize) -> Option<String> {
        let header = "## Earlier exploration (compressed)";
        let mut cost = meter.count(header) + 1;
        if self.compressed.is_empty() || cost > *remaining {
            return None;
        }
        let mut picked: Vec<String> = Vec::new();
        for c in self.compressed.iter().rev().take(RENDERED_OBSERVATIONS) {
            let summary = cut_with_marker(&one_line(&c.summary), 200, "…");
            let line = format!("- [R{}|{}] {}", c.round, c.tool, summary);
            let line_cost = meter.count(&line) + 1;
            if cost + line_cost > *remaining {
                break;
            }
            cost += line_cost;
            picked.push(line);
        }
        let omitted = self.compressed.len() - picked.len() + self.dropped_compressed;
        if omitted > 0 {
            let line = format!("  …({omitted} earlier observations not shown)");
            let line_cost = meter.count(&line) + 1;
            if cost + line_cost <= *remaining {
                cost += line_cost;
                picked.insert(0, line);
            }
        }
        if picked.is_empty() {
            return None;
        }
        *remaining -= cost;
        let mut out = String::from(header);
        for line in picked.iter().rev() {
            let _ = write!(out, "\n{line}");
        }
        Some(out)
    }

    fn render_plan(&self, meter: &TokenMeter, remaining: &mut usize) -> Option<String> {
        let plan = self.plan.as_ref()?;
        let mut text = format!("## Plan ({}/{} done)", plan.done_count(), plan.steps.len());
        for (i, step) in plan.steps.iter().enumerate() {
            let mark = if step.status == StepStatus::Done {
                "x"
            } else {
                " "
            };
            let _ = write!(text, "\n{}. [{mark}] {}", i + 1, step.description);
        }
        let cost = meter.count(&text) + 1;
        if cost > *remaining {
            return None;
        }
        *remaining -= cost;
        Some(text)
    }

    /// The distillate of this scope: findings, a summary line per observation (raw ones
    /// compressed on the fly, so the last rounds are not lost), stats and plan.
    pub fn distill(&self) -> DistilledContext {
        let compressed = self
            .compressed
            .iter()
            .map(|c| (c.tool.clone(), c.summary.clone()));
        let raw = self
            .recent
            .iter()
            .map(|r| (r.obs.tool.clone(), compress(&r.obs)));
        // Notes are already in key_findings.
        let tool_call_summary = compressed
            .chain(raw)
            .filter(|(tool, _)| tool != "note_finding")
            .map(|(tool, s)| format!("[{tool}] {}", cut_with_marker(&one_line(&s), 150, "…")))
            .collect();
        DistilledContext {
            key_findings: self.scratchpad.clone(),
            tool_call_summary,
            stats: self.stats(),
            plan: self.plan.clone(),
            total_observations: self.total_observations,
            compressed_count: self.compressed.len(),
        }
    }
}

#[cfg(test)]
mod tests;
