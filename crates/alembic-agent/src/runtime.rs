//! [`AgentRuntime`]: runs a question through the stages of a preset and keeps what was learnt.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use alembic_context::{
    ActiveContextOptions, ContextSplit, MemoryCoordinator, MillisClock, PersistentRecall, ScopeId,
    StaticPromptRequest, context_size,
};
use alembic_llm::LlmProvider;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::error::AgentError;
use crate::events::{AgentEvent, EventSink};
use crate::memory::{DEFAULT_KEEP_IMPORTANCE, SharedMemory};
use crate::preset::{AgentPreset, StageLimits};
use crate::prompt;
use crate::remember::Harvest;
use crate::report::{MemoryReport, RunReport, StageReport, ToolCallRecord, UsageReport};
use crate::stage::{StageLoop, StageOutcome};
use crate::tools::AgentTools;

/// Knobs of the runtime. Defaults follow the reference where it had a value.
#[derive(Clone)]
pub struct AgentOptions {
    /// Stream model replies (text pieces arrive as [`AgentEvent::TextDelta`]).
    pub stream: bool,
    pub limits: StageLimits,
    /// Tool calls run per model turn; further calls are answered "not run" (reference: 8).
    pub max_tool_calls_per_turn: usize,
    /// Noted findings at or above this importance go to long-term memory.
    pub keep_importance: u8,
    /// Pause before retrying a round after a failed model call (reference: 2 s).
    pub strike_pause: Duration,
    pub max_output_tokens: Option<u32>,
    /// Token budget of the message window; `None` takes it from the model's context split
    /// (see [`AgentRuntime::context_split`]). Either way the window's messages are also held
    /// to the model table's cap (`alembic_context::budget_for_context`: 96k for a system run
    /// on a 1M-token model), which is what makes compaction run on large models.
    pub context_budget: Option<usize>,
    /// The model's context in tokens; `None` looks the model name up in the context table.
    pub context_window: Option<usize>,
    /// Upper bound of the memory budget (`[memory] max_budget_tokens`); `None` keeps the
    /// 12.5 % of the context.
    pub memory_budget_cap: Option<usize>,
    /// At the end of a run (and on [`AgentRuntime::remember`]), turn its noted findings and
    /// what the model extracts (facts, the user's stated preferences) into candidate memories
    /// for the consolidator; off, nothing is kept and no extraction call is made
    /// (`[memory] extract_from_conversations`).
    pub extract_from_conversations: bool,
    /// Exploration control: stages with a strategy run under the exploration tracker (nudges,
    /// convergence, phase-driven tool_choice); off, every stage runs until the model answers
    /// or its round limit (a measuring switch for the seed's scenarios).
    pub exploration_control: bool,
    /// Let the model summarise the old rounds the window's L2 folds (one bounded call per
    /// round range); off, or when the call fails, L2 writes its rule-based lines.
    pub l2_summary: bool,
    /// Time limit of one bounded side call (an L2 summary, the memory extraction); after it
    /// the rule-based result is used.
    pub side_call_timeout: Duration,
    /// Milliseconds clock for the session cache.
    pub clock: MillisClock,
    /// Wall-clock limit of one whole run (every stage); `None` runs until the stages end.
    pub run_timeout: Option<Duration>,
}

impl std::fmt::Debug for AgentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentOptions")
            .field("stream", &self.stream)
            .field("limits", &self.limits)
            .field("max_tool_calls_per_turn", &self.max_tool_calls_per_turn)
            .field("keep_importance", &self.keep_importance)
            .field("strike_pause", &self.strike_pause)
            .field("run_timeout", &self.run_timeout)
            .field("context_window", &self.context_window)
            .field("memory_budget_cap", &self.memory_budget_cap)
            .field("exploration_control", &self.exploration_control)
            .field("l2_summary", &self.l2_summary)
            .field("side_call_timeout", &self.side_call_timeout)
            .field(
                "extract_from_conversations",
                &self.extract_from_conversations,
            )
            .finish_non_exhaustive()
    }
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            stream: false,
            limits: StageLimits::default(),
            max_tool_calls_per_turn: 8,
            keep_importance: DEFAULT_KEEP_IMPORTANCE,
            strike_pause: Duration::from_secs(2),
            max_output_tokens: Some(4096),
            context_budget: None,
            context_window: None,
            memory_budget_cap: None,
            extract_from_conversations: true,
            exploration_control: true,
            l2_summary: true,
            side_call_timeout: Duration::from_secs(30),
            clock: Arc::new(alembic_base::SystemClock),
            run_timeout: None,
        }
    }
}

/// One question for [`AgentRuntime::run`].
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub question: String,
    pub preset: AgentPreset,
    /// Earlier turns of a chat, summarised (goes into the static memory prompt).
    pub conversation: Option<String>,
}

impl RunRequest {
    pub fn new(question: impl Into<String>, preset: AgentPreset) -> RunRequest {
        RunRequest {
            question: question.into(),
            preset,
            conversation: None,
        }
    }
}

/// The ReAct agent: a model, the tool pipeline, and long-term memory.
pub struct AgentRuntime {
    provider: Arc<dyn LlmProvider>,
    tools: AgentTools,
    memory: Option<Arc<SharedMemory>>,
    options: AgentOptions,
    events: Option<EventSink>,
}

impl std::fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntime")
            .field("provider", &self.provider.name())
            .field("model", &self.provider.model())
            .field("memory", &self.memory.is_some())
            .finish_non_exhaustive()
    }
}

/// What the stages of one run share.
pub(crate) struct RunContext<'a> {
    pub runtime: &'a AgentRuntime,
    pub provider: &'a Arc<dyn LlmProvider>,
    pub options: &'a AgentOptions,
    pub run_id: &'a str,
    pub preset: &'a str,
    pub coordinator: &'a Arc<MemoryCoordinator>,
    /// How the model's context is split for this run.
    pub split: ContextSplit,
    pub scope: &'a ScopeId,
    /// What each stage builds its static memory prompt from.
    pub memory: &'a MemoryInputs,
    pub cancel: &'a CancellationToken,
}

/// What the static memory prompt of a run is built from. It is built again whenever the
/// scope's budget profile changes (every stage, and a Bootstrap stage entering PRODUCE), so
/// each profile's shares size its own persistent, session and conversation sections.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemoryInputs {
    /// The task or question (recall query).
    pub query: String,
    /// The bootstrap dimension, for the session section.
    pub dimension: Option<String>,
    pub focus_keywords: Vec<String>,
    pub conversation: Option<String>,
}

impl MemoryInputs {
    /// The static memory prompt of `scope` under its current profile.
    pub fn static_prompt(
        &self,
        coordinator: &MemoryCoordinator,
        scope: &ScopeId,
    ) -> Result<String, AgentError> {
        let keywords: Vec<&str> = self.focus_keywords.iter().map(String::as_str).collect();
        Ok(coordinator.static_prompt(
            scope,
            &StaticPromptRequest {
                query: Some(&self.query),
                dimension: self.dimension.as_deref(),
                focus_keywords: &keywords,
                conversation_summary: self.conversation.as_deref(),
            },
        )?)
    }
}

impl RunContext<'_> {
    pub fn tools(&self) -> &AgentTools {
        &self.runtime.tools
    }

    pub fn emit(&self, event: AgentEvent) {
        if let Some(sink) = &self.runtime.events {
            sink(&event);
        }
    }
}

impl AgentRuntime {
    pub fn new(
        provider: Arc<dyn LlmProvider>,
        tools: AgentTools,
        memory: Option<Arc<SharedMemory>>,
        options: AgentOptions,
    ) -> AgentRuntime {
        AgentRuntime {
            provider,
            tools,
            memory,
            options,
            events: None,
        }
    }

    /// Sends progress events (streamed text, tool calls, nudges) to `sink`.
    pub fn with_events(mut self, sink: EventSink) -> AgentRuntime {
        self.events = Some(sink);
        self
    }

    pub fn provider(&self) -> &Arc<dyn LlmProvider> {
        &self.provider
    }

    pub fn memory(&self) -> Option<&Arc<SharedMemory>> {
        self.memory.as_ref()
    }

    pub(crate) fn options(&self) -> &AgentOptions {
        &self.options
    }

    /// Names of the tools `preset` offers, per stage.
    pub fn stage_tools(
        &self,
        preset: &AgentPreset,
    ) -> Result<Vec<(String, Vec<String>)>, AgentError> {
        let registry = self.tools.pipeline.registry();
        preset
            .stages(&self.options.limits)
            .into_iter()
            .map(|s| {
                let allow = s.allowlist(&self.tools.presets)?;
                let names = registry
                    .schemas(&allow)
                    .into_iter()
                    .map(|t| t.name)
                    .collect();
                Ok((s.name, names))
            })
            .collect()
    }

    /// The model's context in tokens (the option, else the model table).
    pub(crate) fn context_tokens(&self) -> usize {
        self.options
            .context_window
            .unwrap_or_else(|| context_size(self.provider.model()))
    }

    /// The coordinator of a run: exact token counts for the model, a memory budget of 12.5 %
    /// of its context (capped by the option), and the project's long-term memory.
    pub(crate) fn coordinator(&self) -> MemoryCoordinator {
        let mut coordinator = MemoryCoordinator::for_model(self.provider.model());
        coordinator.configure(self.context_tokens());
        if let Some(cap) = self.options.memory_budget_cap {
            coordinator.cap_total(cap);
        }
        match &self.memory {
            Some(m) => coordinator.with_persistent(Arc::clone(m) as Arc<dyn PersistentRecall>),
            None => coordinator,
        }
    }

    /// How a run on this model splits its context: memory (12.5 %, capped), the reserves, and
    /// the messages; the message window gets [`ContextSplit::window_budget`].
    pub fn context_split(&self) -> ContextSplit {
        self.coordinator().split(self.context_tokens())
    }

    /// Answers `request`: every stage of its preset in turn, then consolidation of what is
    /// worth keeping into long-term memory.
    pub async fn run(
        &self,
        request: &RunRequest,
        cancel: &CancellationToken,
    ) -> Result<RunReport, AgentError> {
        let stages = request.preset.stages(&self.options.limits);
        for s in &stages {
            s.allowlist(&self.tools.presets)?;
        }
        let run_id = uuid::Uuid::now_v7().to_string();
        let coordinator = Arc::new(self.coordinator());
        let scope = ScopeId::new(format!("run:{run_id}"));
        let first_profile = stages.first().map(|s| s.profile);
        let Some(first_profile) = first_profile else {
            return Err(AgentError::Setup("the preset has no stages".into()));
        };
        coordinator.open_scope(
            scope.clone(),
            first_profile,
            ActiveContextOptions::default(),
        );
        let memory = MemoryInputs {
            query: request.question.clone(),
            conversation: request.conversation.clone(),
            ..MemoryInputs::default()
        };
        let deadline = RunDeadline::arm(cancel, self.options.run_timeout);
        let ctx = RunContext {
            runtime: self,
            provider: &self.provider,
            options: &self.options,
            run_id: &run_id,
            preset: request.preset.name(),
            coordinator: &coordinator,
            split: coordinator.split(self.context_tokens()),
            scope: &scope,
            memory: &memory,
            cancel: &deadline.token,
        };
        let outcomes = run_stages(&ctx, &stages, &request.question)
            .await
            .map_err(|e| deadline.explain(e));
        let findings = coordinator.with_active(&scope, |ac| ac.findings().to_vec());
        coordinator.close_scope(&scope, None)?;
        let outcomes = outcomes?;
        let harvest = Harvest::of_run(
            &run_id,
            request,
            &findings?,
            &outcomes,
            self.options.keep_importance,
        );
        let memory = self.keep_harvest(harvest, cancel).await;
        Ok(assemble(run_id, request.preset.name(), outcomes, memory))
    }
}

/// Runs the stages in order, each under its own budget profile (its static memory prompt is
/// built under that profile); each later stage starts from the distilled findings of the run
/// so far and the previous stage's answer.
pub(crate) async fn run_stages(
    ctx: &RunContext<'_>,
    stages: &[crate::preset::StageSpec],
    question: &str,
) -> Result<Vec<StageOutcome>, AgentError> {
    let mut outcomes: Vec<StageOutcome> = Vec::new();
    let mut task = question.to_string();
    for spec in stages {
        ctx.coordinator.set_profile(ctx.scope, spec.profile)?;
        if let Some(previous) = outcomes.last() {
            let distilled = ctx
                .coordinator
                .with_active(ctx.scope, |ac| ac.distill().render(20))?;
            task = prompt::producer_prompt(question, &distilled, &previous.report.answer);
        }
        let outcome = StageLoop::new(ctx, spec, task.clone())?.run().await?;
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

fn assemble(
    run_id: String,
    preset: &str,
    outcomes: Vec<StageOutcome>,
    memory: MemoryReport,
) -> RunReport {
    let mut usage = UsageReport::default();
    let mut tool_calls: Vec<ToolCallRecord> = Vec::new();
    let mut stages: Vec<StageReport> = Vec::new();
    for o in outcomes {
        usage.absorb(&o.usage);
        tool_calls.extend(o.tool_calls);
        stages.push(o.report);
    }
    let answer = stages
        .iter()
        .map(|s| s.answer.trim())
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n---\n\n");
    RunReport {
        run_id,
        preset: preset.to_string(),
        answer,
        rounds: stages.iter().map(|s| s.rounds).sum(),
        tool_calls,
        usage,
        stages,
        memory,
    }
}

/// The run's cancellation token: the caller's, plus the run timeout when one is set.
struct RunDeadline {
    token: CancellationToken,
    limit: Option<Duration>,
    expired: Arc<AtomicBool>,
    /// Stops the timer task when the run ends first.
    _stop_timer: Option<DropGuard>,
}

impl RunDeadline {
    fn arm(caller: &CancellationToken, limit: Option<Duration>) -> RunDeadline {
        let token = caller.child_token();
        let expired = Arc::new(AtomicBool::new(false));
        let stop_timer = limit.map(|limit| {
            let stop = CancellationToken::new();
            let (run, fired, stopped) = (token.clone(), Arc::clone(&expired), stop.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = tokio::time::sleep(limit) => {
                        fired.store(true, Ordering::SeqCst);
                        run.cancel();
                    }
                    () = stopped.cancelled() => {}
                }
            });
            stop.drop_guard()
        });
        RunDeadline {
            token,
            limit,
            expired,
            _stop_timer: stop_timer,
        }
    }

    /// A cancellation caused by the timer is reported as a timeout, not as the user's cancel.
    fn explain(&self, error: AgentError) -> AgentError {
        match (error, self.limit) {
            (AgentError::Cancelled, Some(limit)) if self.expired.load(Ordering::SeqCst) => {
                AgentError::TimedOut { limit }
            }
            (other, _) => other,
        }
    }
}
