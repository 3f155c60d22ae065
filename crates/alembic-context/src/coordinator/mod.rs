//! MemoryCoordinator: the one entry point to the memory tiers, their token budgets and the
//! prompt text they produce.
//!
//! - **Budgets.** A total memory budget (default 4000 tokens, or 12.5 % of the model's context
//!   after [`MemoryCoordinator::configure`]) is split by a profile: `user` (chat), `analyst`
//!   and `producer`. The profile belongs to a scope, not to the coordinator, so concurrent
//!   dimensions in different stages do not change each other's shares.
//! - **Static prompt** (once per run of a scope): persistent memory, then session memory, then
//!   the conversation summary, each cut to its share; what a tier leaves unused is surplus.
//! - **Dynamic prompt** (every round): the scope's ActiveContext within its share plus that
//!   scope's surplus.
//! - **Scopes** are explicit handles. There is no "current scope", so dimension A can never
//!   be given dimension C's working memory.

use alembic_base::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::active::{ActiveContext, ActiveContextOptions, DistilledContext, ScopeId};
use crate::session::{DimensionReport, SessionStore};
use crate::text::{TokenMeter, cut_chars};

/// Default total memory budget in tokens.
pub const DEFAULT_MEMORY_BUDGET: usize = 4000;
/// Share of the model context given to memory by [`MemoryCoordinator::configure`].
pub const MEMORY_SHARE_OF_CONTEXT: f64 = 0.125;
/// Reserved for the system prompt in [`MemoryCoordinator::message_budget`].
pub const SYSTEM_PROMPT_RESERVE: usize = 2000;
/// Reserved for tool schemas.
pub const TOOL_SCHEMA_RESERVE: usize = 3000;
/// Safety margin.
pub const SAFETY_MARGIN: usize = 3000;
/// Memories asked from persistent memory for the static prompt, at least…
const MIN_RECALL: usize = 15;
/// …and at most; in between, one per [`RECALL_TOKENS_PER_MEMORY`] tokens of the persistent
/// share, so a model with a large context is offered more of what is remembered.
const MAX_RECALL: usize = 100;
/// Tokens of persistent share per recalled memory (a typical memory line is 30–80 tokens).
const RECALL_TOKENS_PER_MEMORY: usize = 80;

/// How a model's context is split for one run (seed: memory 12.5 %, then the reserves; the
/// rest is for the messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextSplit {
    /// The model's whole context in tokens.
    pub context: usize,
    /// Memory budget (static + dynamic memory prompt).
    pub memory: usize,
    pub system_reserve: usize,
    pub tool_schema_reserve: usize,
    pub safety_margin: usize,
    /// What is left for the messages: context − memory − the three reserves.
    pub messages: usize,
}

impl ContextSplit {
    /// The budget of the ContextWindow, whose usage counts the system prompt (which carries
    /// the memory prompt) and the tool schemas besides the messages: the message budget plus
    /// the memory and the system and schema reserves, i.e. everything but the safety margin.
    pub fn window_budget(&self) -> usize {
        self.messages + self.memory + self.system_reserve + self.tool_schema_reserve
    }
}

/// Who the memory is assembled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BudgetProfile {
    /// Chat: long-term memory matters most, there is no session.
    User,
    /// Analysis stage of a dimension: working memory matters most.
    Analyst,
    /// Production stage: earlier analysis (session memory) matters most.
    Producer,
}

impl BudgetProfile {
    /// Shares of (active context, session, persistent, conversation).
    pub fn shares(self) -> [f64; 4] {
        match self {
            BudgetProfile::User => [0.20, 0.00, 0.60, 0.20],
            BudgetProfile::Analyst => [0.45, 0.35, 0.15, 0.05],
            BudgetProfile::Producer => [0.25, 0.55, 0.15, 0.05],
        }
    }
}

/// Token shares of one profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    pub active_context: usize,
    pub session: usize,
    pub persistent: usize,
    pub conversation: usize,
}

impl Allocation {
    /// `total` split by `profile` (each share rounded).
    pub fn of(profile: BudgetProfile, total: usize) -> Allocation {
        let [a, s, p, c] = profile
            .shares()
            .map(|f| (total as f64 * f).round() as usize);
        Allocation {
            active_context: a,
            session: s,
            persistent: p,
            conversation: c,
        }
    }
}

/// One memory recalled from long-term memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecalledMemory {
    pub kind: String,
    pub content: String,
    pub importance: f64,
}

/// Long-term memory as the coordinator sees it (implemented for alembic-memory's store).
pub trait PersistentRecall: Send + Sync {
    /// Up to `limit` memories, best first; relevant to `query` when one is given.
    fn recall(&self, query: Option<&str>, limit: usize) -> Vec<RecalledMemory>;
}

/// Any `Fn(query, limit)` is a recall source, so the agent can adapt alembic-memory's
/// `PersistentMemory::retrieve` (which needs `&mut`) behind its own lock without this crate
/// depending on the store.
impl<F> PersistentRecall for F
where
    F: Fn(Option<&str>, usize) -> Vec<RecalledMemory> + Send + Sync,
{
    fn recall(&self, query: Option<&str>, limit: usize) -> Vec<RecalledMemory> {
        self(query, limit)
    }
}

/// Inputs of the static prompt.
#[derive(Debug, Clone, Default)]
pub struct StaticPromptRequest<'a> {
    /// The task or question, used to retrieve relevant long-term memories.
    pub query: Option<&'a str>,
    /// The bootstrap dimension, for session memory.
    pub dimension: Option<&'a str>,
    pub focus_keywords: &'a [&'a str],
    /// A summary of older conversation turns (chat).
    pub conversation_summary: Option<&'a str>,
}

/// Errors of the coordinator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoordinatorError {
    #[error("working memory scope \"{scope}\" is not open; open it with open_scope before the run")]
    UnknownScope { scope: String },
}

#[derive(Debug)]
struct ScopeState {
    active: ActiveContext,
    profile: BudgetProfile,
    surplus: usize,
}

/// See the module docs.
pub struct MemoryCoordinator {
    total: usize,
    meter: TokenMeter,
    persistent: Option<Arc<dyn PersistentRecall>>,
    session: Option<Arc<Mutex<SessionStore>>>,
    scopes: Mutex<HashMap<ScopeId, ScopeState>>,
}

impl std::fmt::Debug for MemoryCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryCoordinator")
            .field("total", &self.total)
            .field("exact_tokens", &self.meter.is_exact())
            .field("persistent", &self.persistent.is_some())
            .field("session", &self.session.is_some())
            .finish()
    }
}

impl Default for MemoryCoordinator {
    fn default() -> Self {
        Self::new(TokenMeter::default())
    }
}

impl MemoryCoordinator {
    /// A coordinator with the default 4000-token budget counting with `meter`.
    pub fn new(meter: TokenMeter) -> MemoryCoordinator {
        MemoryCoordinator {
            total: DEFAULT_MEMORY_BUDGET,
            meter,
            persistent: None,
            session: None,
            scopes: Mutex::new(HashMap::new()),
        }
    }

    /// A coordinator counting tokens exactly for `model` when its tokenizer is known.
    pub fn for_model(model: &str) -> MemoryCoordinator {
        Self::new(TokenMeter::for_model(model))
    }

    pub fn with_persistent(mut self, memory: Arc<dyn PersistentRecall>) -> Self {
        self.persistent = Some(memory);
        self
    }

    pub fn with_session(mut self, session: Arc<Mutex<SessionStore>>) -> Self {
        self.session = Some(session);
        self
    }

    /// Sizes the memory budget from the model's context: 12.5 % of `total_context`.
    /// Allocations are computed from the total on every use, so they follow at once.
    pub fn configure(&mut self, total_context: usize) {
        if total_context > 0 {
            self.total = (total_context as f64 * MEMORY_SHARE_OF_CONTEXT).round() as usize;
        }
    }

    /// Caps the memory budget at `cap` tokens (the `[memory] max_budget_tokens` setting); a
    /// cap above the current total changes nothing.
    pub fn cap_total(&mut self, cap: usize) {
        self.total = self.total.min(cap);
    }

    /// How `total_context` is split under the current memory budget.
    pub fn split(&self, total_context: usize) -> ContextSplit {
        ContextSplit {
            context: total_context,
            memory: self.total,
            system_reserve: SYSTEM_PROMPT_RESERVE,
            tool_schema_reserve: TOOL_SCHEMA_RESERVE,
            safety_margin: SAFETY_MARGIN,
            messages: self.message_budget(total_context),
        }
    }

    pub fn total_budget(&self) -> usize {
        self.total
    }

    pub fn meter(&self) -> &TokenMeter {
        &self.meter
    }

    pub fn session(&self) -> Option<&Arc<Mutex<SessionStore>>> {
        self.session.as_ref()
    }

    /// Shares of `profile` under the current total.
    pub fn allocation(&self, profile: BudgetProfile) -> Allocation {
        Allocation::of(profile, self.total)
    }

    /// Tokens left for messages: context − memory − system prompt − tool schemas − margin
    /// (0 when the reserves exceed the context, rather than a negative number).
    pub fn message_budget(&self, total_context: usize) -> usize {
        total_context
            .saturating_sub(self.total)
            .saturating_sub(SYSTEM_PROMPT_RESERVE + TOOL_SCHEMA_RESERVE + SAFETY_MARGIN)
    }

    /// Opens (or reopens, replacing) the working memory of `scope`.
    pub fn open_scope(
        &self,
        scope: ScopeId,
        profile: BudgetProfile,
        options: ActiveContextOptions,
    ) {
        let state = ScopeState {
            active: ActiveContext::new(scope.clone(), options),
            profile,
            surplus: 0,
        };
        lock(&self.scopes).insert(scope, state);
    }

    /// Switches the budget profile of `scope` (e.g. analyst → producer between stages).
    pub fn set_profile(
        &self,
        scope: &ScopeId,
        profile: BudgetProfile,
    ) -> Result<(), CoordinatorError> {
        self.with_state(scope, |s| s.profile = profile)
    }

    /// Runs `f` on the working memory of `scope`.
    pub fn with_active<R>(
        &self,
        scope: &ScopeId,
        f: impl FnOnce(&mut ActiveContext) -> R,
    ) -> Result<R, CoordinatorError> {
        self.with_state(scope, |s| f(&mut s.active))
    }

    fn with_state<R>(
        &self,
        scope: &ScopeId,
        f: impl FnOnce(&mut ScopeState) -> R,
    ) -> Result<R, CoordinatorError> {
        let mut scopes = lock(&self.scopes);
        let state = scopes
            .get_mut(scope)
            .ok_or_else(|| CoordinatorError::UnknownScope {
                scope: scope.to_string(),
            })?;
        Ok(f(state))
    }

    /// Closes `scope`: distils its working memory, stores `report` (with the distillate) in the
    /// session when both exist, and frees the scope.
    pub fn close_scope(
        &self,
        scope: &ScopeId,
        report: Option<DimensionReport>,
    ) -> Result<DistilledContext, CoordinatorError> {
        let state =
            lock(&self.scopes)
                .remove(scope)
                .ok_or_else(|| CoordinatorError::UnknownScope {
                    scope: scope.to_string(),
                })?;
        let distilled = state.active.distill();
        if let (Some(session), Some(mut report)) = (&self.session, report) {
            report.distilled = Some(distilled.clone());
            if report.dim_id.is_empty() {
                report.dim_id = scope.dimension().to_string();
            }
            lock(session).store_report(report);
        }
        Ok(distilled)
    }

    /// Adds a finding to the scratchpad of `scope`; returns the confirmation for the model.
    pub fn note_finding(
        &self,
        scope: &ScopeId,
        finding: &str,
        evidence: &str,
        importance: f64,
    ) -> Result<String, CoordinatorError> {
        self.with_active(scope, |ac| {
            let count = ac.note_finding(finding, evidence, importance);
            let imp = importance.round().clamp(1.0, 10.0);
            let short = cut_chars(finding.trim(), 80);
            format!("📌 noted [{imp}/10]: \"{short}\" — {count} key findings in working memory")
        })
    }

    /// The static memory text of `scope` (persistent → session → conversation, each within its
    /// share); what the tiers leave unused becomes the scope's surplus for the dynamic prompt.
    pub fn static_prompt(
        &self,
        scope: &ScopeId,
        request: &StaticPromptRequest<'_>,
    ) -> Result<String, CoordinatorError> {
        let profile = self.with_state(scope, |s| s.profile)?;
        let alloc = self.allocation(profile);
        let mut surplus = 0;
        let mut parts = Vec::new();
        let persistent = self.persistent_section(request.query, alloc.persistent);
        let session = self.session_section(request, alloc.session);
        let conversation =
            self.conversation_section(request.conversation_summary, alloc.conversation);
        for (text, share) in [
            (persistent, alloc.persistent),
            (session, alloc.session),
            (conversation, alloc.conversation),
        ] {
            surplus += share.saturating_sub(self.meter.count(&text));
            if !text.is_empty() {
                parts.push(text);
            }
        }
        self.with_state(scope, |s| s.surplus = surplus)?;
        Ok(parts.join("\n\n"))
    }

    fn persistent_section(&self, query: Option<&str>, budget: usize) -> String {
        let Some(memory) = self.persistent.as_ref().filter(|_| budget > 0) else {
            return String::new();
        };
        let limit = (budget / RECALL_TOKENS_PER_MEMORY).clamp(MIN_RECALL, MAX_RECALL);
        let lines = memory
            .recall(query, limit)
            .into_iter()
            .map(|m| format!("- [{}] {}", m.kind, m.content.trim()));
        self.lines_within("## Long-term memory", lines, budget)
    }

    fn session_section(&self, request: &StaticPromptRequest<'_>, budget: usize) -> String {
        match (&self.session, request.dimension) {
            (Some(session), Some(dim)) if budget > 0 => lock(session).context_for_dimension(
                dim,
                request.focus_keywords,
                budget,
                &self.meter,
            ),
            _ => String::new(),
        }
    }

    fn conversation_section(&self, summary: Option<&str>, budget: usize) -> String {
        let Some(summary) = summary.filter(|s| !s.trim().is_empty() && budget > 0) else {
            return String::new();
        };
        self.lines_within(
            "## Earlier in this conversation",
            summary.lines().map(str::to_string),
            budget,
        )
    }

    /// A header and the lines that fit in `budget` tokens (empty when no line fits).
    fn lines_within(
        &self,
        header: &str,
        lines: impl Iterator<Item = String>,
        budget: usize,
    ) -> String {
        let mut used = self.meter.count(header) + 1;
        let mut out = vec![header.to_string()];
        for line in lines {
            let cost = self.meter.count(&line) + 1;
            if used + cost <= budget {
                used += cost;
                out.push(line);
            }
        }
        if out.len() == 1 {
            String::new()
        } else {
            out.join("\n")
        }
    }

    /// The working-memory text of `scope` for this round: its ActiveContext within the
    /// profile's share plus the scope's surplus from the static prompt.
    pub fn dynamic_prompt(&self, scope: &ScopeId) -> Result<String, CoordinatorError> {
        let total = self.total;
        self.with_state(scope, |s| {
            let budget = Allocation::of(s.profile, total).active_context + s.surplus;
            s.active.build_context(&self.meter, budget)
        })
    }

    /// Budget the dynamic prompt of `scope` gets this round.
    pub fn dynamic_budget(&self, scope: &ScopeId) -> Result<usize, CoordinatorError> {
        let total = self.total;
        self.with_state(scope, |s| {
            Allocation::of(s.profile, total).active_context + s.surplus
        })
    }
}

#[cfg(test)]
mod tests;
