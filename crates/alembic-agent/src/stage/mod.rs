//! One stage of a run: the ReAct loop itself.
//!
//! Per round: open the round in working memory; tick the tracker (which may end the stage or
//! force the terminal phase); queue its nudge; build the system prompt (base, long-term memory,
//! phase context, working memory); compact the window; call the model; then either run its
//! tool calls through the pipeline (at most [`crate::AgentOptions::max_tool_calls_per_turn`];
//! malformed ones are answered with the parser's feedback) or take its text as the answer.
//! An empty reply is retried once with a nudge; model errors follow the 2-strike policy; when
//! the rounds run out the stage asks for a summary with tools switched off. Before the
//! window compacts, old rounds L2 would fold may be summarised by the model (`l2.rs`).

mod handoff;
mod l2;

pub use l2::L2_SUMMARY_SYSTEM_PROMPT;

use alembic_base::lock;
use std::sync::{Arc, Mutex};

use alembic_context::{
    ActiveContext, ContextWindow, ExitDecision, ExplorationBudget, ExplorationTracker, LoopMemory,
    Message as WindowMessage, Strategy, TextVerdict, ToolChoice as PhaseChoice, budget_for_context,
};
use alembic_llm::{
    ChatRequest, ChatResponse, ErrorStrikes, LlmError, StreamEvent, StrikeVerdict, ToolCall,
    ToolChoice, ToolSpec,
};
use alembic_tools::{Allowlist, Caller, ToolCall as PipelineCall};
use futures::StreamExt;

use crate::convert::CallLedger;
use crate::error::AgentError;
use crate::events::AgentEvent;
use crate::preset::StageSpec;
use crate::prompt;
use crate::report::{StageEnd, StageReport, ToolCallRecord, UsageReport};
use crate::runtime::RunContext;

/// What one stage produced.
#[derive(Debug)]
pub(crate) struct StageOutcome {
    pub report: StageReport,
    pub tool_calls: Vec<ToolCallRecord>,
    pub usage: UsageReport,
}

/// What the loop does after a reply.
enum Flow {
    Continue,
    Answer(String),
    /// Stop asking; finish with a forced summary.
    Summarise,
}

/// Detaches the stage's loop from the directory however the stage ends.
struct Attached<'a> {
    ctx: &'a RunContext<'a>,
    caller_id: String,
}

impl Drop for Attached<'_> {
    fn drop(&mut self) {
        self.ctx.tools().loops.detach(&self.caller_id);
        self.ctx.tools().grants.end_session(&self.caller_id);
    }
}

/// The tools `allowlist` offers as the model sees them, their schema tokens and the stage's
/// base prompt (which names them).
fn tool_list(
    ctx: &RunContext<'_>,
    spec: &StageSpec,
    allowlist: &Allowlist,
) -> (Vec<ToolSpec>, usize, String) {
    let tools_rt = ctx.tools();
    let tools: Vec<ToolSpec> = tools_rt
        .pipeline
        .registry()
        .schemas(allowlist)
        .into_iter()
        .map(|s| ToolSpec {
            name: s.name,
            description: s.description,
            parameters: s.parameters,
        })
        .collect();
    let schema_tokens = ctx
        .coordinator
        .meter()
        .count(&serde_json::to_string(&tools).unwrap_or_default());
    let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    let base_prompt = prompt::base_system_prompt(spec, tools_rt.pipeline.project_root(), &names);
    (tools, schema_tokens, base_prompt)
}

pub(crate) struct StageLoop<'a> {
    ctx: &'a RunContext<'a>,
    spec: &'a StageSpec,
    /// The stage preset's allowlist; each round adds the tools forged for this run.
    base_allowlist: Allowlist,
    caller: Caller,
    tools: Vec<ToolSpec>,
    schema_tokens: usize,
    base_prompt: String,
    /// The static memory prompt under the scope's current profile.
    static_memory: String,
    /// A Bootstrap stage has entered PRODUCE (profile switched, analysis handed over).
    produce_started: bool,
    /// The system prompt of the current round.
    system: String,
    window: ContextWindow,
    ledger: CallLedger,
    l2_cache: l2::L2Cache,
    strikes: ErrorStrikes,
    tracker: Option<Arc<Mutex<ExplorationTracker>>>,
    /// Number of the round being run (1-based).
    round: u32,
    /// Rounds the model answered (empty replies and failed calls not counted).
    answered_rounds: u32,
    empty_retried: bool,
    calls: Vec<ToolCallRecord>,
    usage: UsageReport,
    _attached: Attached<'a>,
}

impl<'a> StageLoop<'a> {
    pub fn new(
        ctx: &'a RunContext<'a>,
        spec: &'a StageSpec,
        task: String,
    ) -> Result<StageLoop<'a>, AgentError> {
        let tools_rt = ctx.tools();
        let base_allowlist = spec.allowlist(&tools_rt.presets)?;
        let static_memory = ctx.memory.static_prompt(ctx.coordinator, ctx.scope)?;
        let caller_id = format!("agent:{}:{}:{}", ctx.preset, spec.name, ctx.run_id);
        let caller = Caller::new(caller_id.clone(), base_allowlist.clone());
        let (tools, schema_tokens, base_prompt) = tool_list(ctx, spec, &base_allowlist);
        let strategy = spec.strategy.filter(|_| ctx.options.exploration_control);
        let tracker = strategy.map(|strategy| {
            let budget = ExplorationBudget {
                max_iterations: spec.max_iterations,
                ..ExplorationBudget::default()
            };
            Arc::new(Mutex::new(ExplorationTracker::new(strategy, budget)))
        });
        let budget = ctx
            .options
            .context_budget
            .unwrap_or_else(|| ctx.split.window_budget());
        // The seed's model-aware cap on the messages (96k / 64k on a 1M-token model): without
        // it the window is the context less the margin and compaction never runs there.
        let history_cap = budget_for_context(ctx.split.context, spec.run_kind());
        let window = ContextWindow::new(task, budget, ctx.coordinator.meter().clone())
            .with_history_cap(history_cap);
        let memory = LoopMemory::new(
            Arc::clone(ctx.coordinator),
            ctx.scope.clone(),
            tracker.clone(),
            tools_rt.pipeline.project_root(),
            Arc::clone(&ctx.options.clock),
        );
        tools_rt.loops.attach(caller_id.clone(), Arc::new(memory));
        Ok(StageLoop {
            ctx,
            spec,
            base_allowlist,
            caller,
            tools,
            schema_tokens,
            base_prompt,
            static_memory,
            produce_started: false,
            system: String::new(),
            window,
            ledger: CallLedger::default(),
            l2_cache: l2::L2Cache::default(),
            strikes: ErrorStrikes::new(2, ctx.options.strike_pause),
            tracker,
            round: 0,
            answered_rounds: 0,
            empty_retried: false,
            calls: Vec::new(),
            usage: UsageReport::default(),
            _attached: Attached { ctx, caller_id },
        })
    }

    /// Runs the stage to its answer.
    pub async fn run(mut self) -> Result<StageOutcome, AgentError> {
        self.ctx.emit(AgentEvent::StageStarted {
            stage: self.spec.name.clone(),
            tools: self.tools.iter().map(|t| t.name.clone()).collect(),
        });
        loop {
            if self.ctx.cancel.is_cancelled() {
                return Err(AgentError::Cancelled);
            }
            if !self.begin_round()? {
                break;
            }
            let choice = self.prepare_round().await?;
            let Some(reply) = self.call_model(choice).await? else {
                continue;
            };
            match self.handle_reply(reply).await? {
                Flow::Continue => {}
                Flow::Answer(text) => return Ok(self.finish(text, StageEnd::Answered)),
                Flow::Summarise => break,
            }
        }
        let summary = self.forced_summary().await?;
        Ok(self.finish(summary, StageEnd::ForcedSummary))
    }

    fn with_active<R>(&self, f: impl FnOnce(&mut ActiveContext) -> R) -> Result<R, AgentError> {
        Ok(self.ctx.coordinator.with_active(self.ctx.scope, f)?)
    }

    /// Opens the next round; false when the stage has no rounds left.
    fn begin_round(&mut self) -> Result<bool, AgentError> {
        self.round += 1;
        let round = self.round;
        self.with_active(|ac| ac.start_round(round))?;
        let go_on = match &self.tracker {
            Some(t) if self.tracker_ends_stage() => {
                let mut t = lock(t);
                t.tick();
                matches!(t.should_exit(), ExitDecision::Continue)
            }
            Some(t) => {
                lock(t).tick();
                round <= self.spec.max_iterations
            }
            None => round <= self.spec.max_iterations,
        };
        if go_on {
            self.ctx.emit(AgentEvent::RoundStarted {
                stage: self.spec.name.clone(),
                round,
            });
        }
        Ok(go_on)
    }

    /// Does the tracker end the stage, or the stage's round limit (no tracker, chat)?
    fn tracker_ends_stage(&self) -> bool {
        self.tracker.is_some() && self.spec.strategy.is_some_and(Strategy::tracker_ends_stage)
    }

    /// The round will be asked again (failed call or empty reply).
    fn rollback_round(&mut self) {
        self.round = self.round.saturating_sub(1);
        if let Some(t) = &self.tracker {
            lock(t).rollback_tick();
        }
    }

    /// Re-reads the tools of this round: the preset's plus those forged for this run (a tool
    /// `forge_tool` made is offered from the next round on, and no longer once it expired).
    fn refresh_tools(&mut self) {
        let allowlist = self
            .ctx
            .tools()
            .grants
            .widen(&self.caller.id, &self.base_allowlist);
        let (tools, schema_tokens, base_prompt) = tool_list(self.ctx, self.spec, &allowlist);
        let same = tools.len() == self.tools.len()
            && tools.iter().zip(&self.tools).all(|(a, b)| a.name == b.name);
        if same {
            return;
        }
        self.caller = Caller::new(self.caller.id.clone(), allowlist);
        self.tools = tools;
        self.schema_tokens = schema_tokens;
        self.base_prompt = base_prompt;
    }

    /// Queues the tracker's nudge, sets the system prompt, compacts; returns the tool choice.
    async fn prepare_round(&mut self) -> Result<ToolChoice, AgentError> {
        self.refresh_tools();
        if let Some(t) = self.tracker.clone() {
            let nudge = self.with_active(|ac| lock(&t).next_nudge(ac))?;
            if let Some(n) = nudge {
                self.window.push_user(n.text.clone());
                self.ctx.emit(AgentEvent::Nudge {
                    kind: format!("{:?}", n.kind),
                    text: n.text,
                });
            }
        }
        self.enter_produce_if_due()?;
        let choice = match &self.tracker {
            _ if self.tools.is_empty() => ToolChoice::None,
            Some(t) => match lock(t).tool_choice() {
                PhaseChoice::Auto => ToolChoice::Auto,
                PhaseChoice::Required => ToolChoice::Required,
                PhaseChoice::None => ToolChoice::None,
            },
            None => ToolChoice::Auto,
        };
        self.refresh_window(choice).await?;
        Ok(choice)
    }

    /// System prompt of this round, then compaction with the tokens the request will carry.
    async fn refresh_window(&mut self, choice: ToolChoice) -> Result<(), AgentError> {
        let mut parts = vec![self.base_prompt.clone()];
        if !self.static_memory.is_empty() {
            parts.push(self.static_memory.clone());
        }
        parts.push(match &self.tracker {
            Some(t) if self.tracker_ends_stage() => lock(t).phase_context(),
            _ => prompt::round_progress(self.round, self.spec.max_iterations),
        });
        let dynamic = self.ctx.coordinator.dynamic_prompt(self.ctx.scope)?;
        if !dynamic.trim().is_empty() {
            parts.push(dynamic);
        }
        let parts: Vec<&str> = parts
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .collect();
        self.system = parts.join("\n\n");
        self.window.set_system_prompt(self.system.clone());
        let schema_tokens = if choice == ToolChoice::None {
            0
        } else {
            self.schema_tokens
        };
        self.window.set_tool_schema_tokens(schema_tokens);
        self.compact().await;
        Ok(())
    }

    fn request(&self, choice: ToolChoice) -> ChatRequest {
        let mut request = ChatRequest::new(
            self.ctx.provider.model(),
            self.ledger.render(self.window.messages()),
        );
        request.system = self.system.clone();
        // tool_choice none: no tools at all, so the model cannot call one.
        if choice != ToolChoice::None {
            request.tools = self.tools.clone();
        }
        request.tool_choice = choice;
        request.temperature = Some(self.spec.temperature);
        request.max_tokens = self.ctx.options.max_output_tokens;
        request.stream = self.ctx.options.stream;
        request
    }

    /// One model call under the 2-strike policy; `None` means "run this round again".
    async fn call_model(&mut self, choice: ToolChoice) -> Result<Option<ChatResponse>, AgentError> {
        let request = self.request(choice);
        match self.send(&request).await {
            Ok(reply) => {
                self.strikes.record_success();
                self.usage.add(reply.usage);
                Ok(Some(reply))
            }
            Err(e) => self.on_model_error(e).await.map(|()| None),
        }
    }

    async fn send(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let provider = &self.ctx.provider;
        if !request.stream {
            return provider.chat(request, self.ctx.cancel).await;
        }
        let mut stream = provider.chat_stream(request, self.ctx.cancel).await?;
        while let Some(event) = stream.next().await {
            match event? {
                StreamEvent::TextDelta { text } => self.ctx.emit(AgentEvent::TextDelta { text }),
                StreamEvent::Done { response } => return Ok(response),
                _ => {}
            }
        }
        Err(LlmError::InvalidResponse {
            provider: provider.name().to_string(),
            message: "stream ended without a final event".into(),
        })
    }

    /// First strike: pause and retry the round; second (or a fatal error): end the stage.
    async fn on_model_error(&mut self, error: LlmError) -> Result<(), AgentError> {
        if self.ctx.cancel.is_cancelled() || matches!(error, LlmError::Cancelled { .. }) {
            return Err(AgentError::Cancelled);
        }
        match self.strikes.record_error(&error) {
            StrikeVerdict::RetryRound { pause } => {
                self.ctx.emit(AgentEvent::Retrying {
                    error: error.to_string(),
                });
                self.rollback_round();
                tokio::select! {
                    () = tokio::time::sleep(pause) => Ok(()),
                    () = self.ctx.cancel.cancelled() => Err(AgentError::Cancelled),
                }
            }
            StrikeVerdict::ResetToPromptAndStop | StrikeVerdict::Stop => {
                self.window.reset_to_prompt_only();
                Err(AgentError::Model {
                    stage: self.spec.name.clone(),
                    rounds: self.answered_rounds,
                    source: error,
                })
            }
        }
    }

    async fn handle_reply(&mut self, reply: ChatResponse) -> Result<Flow, AgentError> {
        if reply.is_empty() {
            if self.empty_retried {
                return Ok(Flow::Summarise);
            }
            self.empty_retried = true;
            self.rollback_round();
            self.window.push_user(prompt::EMPTY_REPLY_NUDGE);
            return Ok(Flow::Continue);
        }
        self.empty_retried = false;
        self.answered_rounds += 1;
        let text = reply.text.trim().to_string();
        if !text.is_empty() {
            self.with_active(|ac| ac.record_thought(&text))?;
        }
        let has_calls = !reply.tool_calls.is_empty() || !reply.malformed_tool_calls.is_empty();
        let graceful = self
            .tracker
            .as_ref()
            .is_some_and(|t| lock(t).is_graceful_exit());
        if has_calls && graceful {
            // Past the iteration limit tools are off; calls made anyway are ignored.
            self.with_active(ActiveContext::end_round)?;
            return Ok(if text.is_empty() {
                Flow::Continue
            } else {
                Flow::Answer(text)
            });
        }
        if has_calls {
            self.run_tool_calls(&reply).await?;
            return self.end_tool_round();
        }
        self.on_text(text)
    }

    fn on_text(&mut self, text: String) -> Result<Flow, AgentError> {
        let Some(t) = self.tracker.clone() else {
            self.with_active(ActiveContext::end_round)?;
            return Ok(Flow::Answer(text));
        };
        let verdict = self.with_active(|ac| {
            let v = lock(&t).on_text_response(ac);
            ac.end_round();
            v
        })?;
        match verdict {
            TextVerdict::FinalAnswer => Ok(Flow::Answer(text)),
            TextVerdict::Continue => {
                self.window.push_assistant(WindowMessage::assistant(text));
                Ok(Flow::Continue)
            }
        }
    }

    fn end_tool_round(&mut self) -> Result<Flow, AgentError> {
        let tracker = self.tracker.clone();
        self.with_active(|ac| {
            if let Some(t) = &tracker {
                lock(t).end_round(ac);
            }
            ac.end_round();
        })?;
        if !self.tracker_ends_stage() && self.round >= self.spec.max_iterations {
            return Ok(Flow::Summarise);
        }
        Ok(Flow::Continue)
    }

    /// Appends the assistant turn and one result per call (every call gets an answer, so
    /// the history stays valid for every vendor).
    async fn run_tool_calls(&mut self, reply: &ChatResponse) -> Result<(), AgentError> {
        let calls: Vec<ToolCall> = match reply.to_assistant_message() {
            alembic_llm::Message::Assistant { tool_calls, .. } => tool_calls,
            _ => Vec::new(),
        };
        for c in &calls {
            self.ledger.record_call(c);
        }
        let window_calls = calls.iter().map(CallLedger::to_window_call).collect();
        self.window
            .push_assistant(WindowMessage::assistant_with_calls(
                reply.text.trim(),
                window_calls,
            ));
        for (index, call) in calls.iter().enumerate() {
            let malformed = reply.malformed_tool_calls.iter().find(|m| m.id == call.id);
            let (text, record) = if index >= self.ctx.options.max_tool_calls_per_turn {
                self.over_limit(call)
            } else if let Some(m) = malformed {
                (
                    m.feedback(),
                    self.record(call, "malformed_arguments", Vec::new()),
                )
            } else {
                self.execute(call).await
            };
            if !record.is_ok() {
                self.ledger.record_failure(&call.id);
            }
            self.window
                .push_tool_result(&call.id, &text, !record.is_ok());
            self.ctx.emit(AgentEvent::ToolCallFinished {
                name: record.name.clone(),
                status: record.status.clone(),
            });
            self.calls.push(record);
        }
        Ok(())
    }

    fn record(&self, call: &ToolCall, status: &str, suggestions: Vec<String>) -> ToolCallRecord {
        ToolCallRecord {
            stage: self.spec.name.clone(),
            round: self.round,
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            status: status.to_string(),
            suggestions,
        }
    }

    fn over_limit(&self, call: &ToolCall) -> (String, ToolCallRecord) {
        let max = self.ctx.options.max_tool_calls_per_turn;
        let text = format!(
            "tool call \"{}\" was not run: at most {max} tool calls are run per turn; call it again in the next turn if you still need it",
            call.name
        );
        (text, self.record(call, "over_turn_limit", Vec::new()))
    }

    async fn execute(&self, call: &ToolCall) -> (String, ToolCallRecord) {
        self.ctx.emit(AgentEvent::ToolCallStarted {
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        });
        let request = PipelineCall::new(&call.name, call.arguments.clone(), self.caller.clone());
        let outcome = self
            .ctx
            .tools()
            .pipeline
            .execute_with_cancel(request, self.ctx.cancel.child_token())
            .await;
        let record = self.record(call, outcome.status.as_str(), outcome.suggestions.clone());
        (outcome.text_for_model(), record)
    }

    /// The last request when the rounds ran out: tools off, answer from what was found.
    async fn forced_summary(&mut self) -> Result<String, AgentError> {
        self.window.push_user(prompt::FORCED_SUMMARY_NUDGE);
        self.refresh_window(ToolChoice::None).await?;
        let request = self.request(ToolChoice::None);
        match self.send(&request).await {
            Ok(reply) if !reply.text.trim().is_empty() => {
                self.usage.add(reply.usage);
                Ok(reply.text.trim().to_string())
            }
            Ok(reply) => {
                self.usage.add(reply.usage);
                self.fallback()
            }
            Err(_) if self.ctx.cancel.is_cancelled() => Err(AgentError::Cancelled),
            Err(e) => {
                tracing::warn!("forced summary failed: {e}");
                self.fallback()
            }
        }
    }

    fn fallback(&self) -> Result<String, AgentError> {
        let distilled = self.with_active(|ac| ac.distill().render(20))?;
        Ok(prompt::fallback_summary(&distilled))
    }

    fn finish(self, answer: String, end: StageEnd) -> StageOutcome {
        StageOutcome {
            report: StageReport {
                name: self.spec.name.clone(),
                rounds: self.answered_rounds,
                end,
                answer,
            },
            tool_calls: self.calls,
            usage: self.usage,
        }
    }
}
