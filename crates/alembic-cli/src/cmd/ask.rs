//! `alembic ask "<question>"`: one question to the agent, answered with the project's tools.

use alembic_runtime::base::lock;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alembic_runtime::ProjectRuntime;
use alembic_runtime::agent::{
    AgentError, AgentEvent, AgentOptions, AgentPreset, AgentRuntime, RunReport, RunRequest,
};
use alembic_runtime::llm::{
    ConfigError, ConfigOverrides, ProviderKind, build_provider, load_provider_config,
};
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

/// Model choice shared by `ask` and `chat`.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// LLM provider: openai, anthropic, gemini, deepseek or openai-compatible (default: from
    /// the [llm] section of the user config, else the first API key found in the environment)
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Model name as the vendor spells it (default: the provider's default model)
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Agent preset: chat (one loop), insight (analysis, then knowledge production) or bootstrap
    /// (explore, submit, summarise under the Bootstrap exploration strategy)
    #[arg(long, value_name = "P", default_value = "chat")]
    pub preset: String,
    /// Print the answer when it is complete instead of as it arrives
    #[arg(long)]
    pub no_stream: bool,
    /// Stop a question that runs longer than this many seconds (0: no limit)
    #[arg(long, value_name = "SECS", default_value_t = 900)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The question
    pub question: String,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Print {answer, rounds, tool_calls, usage, …} as JSON instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

/// The agent for one project, with the provider the user configured, and the project runtime
/// (kept to flush the audit log of the agent's tool calls).
pub(crate) fn open_agent(
    project: &Path,
    model: &ModelArgs,
    stream: bool,
) -> anyhow::Result<(AgentRuntime, ProjectRuntime)> {
    // Not a project: say so first, whatever the provider settings.
    alembic_runtime::project_guard::require_project(project)?;
    let provider = match model.provider.as_deref() {
        Some(p) => Some(p.parse::<ProviderKind>().map_err(usage)?),
        None => None,
    };
    let overrides = ConfigOverrides {
        provider,
        model: model.model.clone(),
    };
    let config = load_provider_config(&overrides).map_err(usage)?;
    let provider = build_provider(config)?;
    let rt = ProjectRuntime::open_command(project)?;
    let options = AgentOptions {
        stream,
        run_timeout: (model.timeout > 0).then(|| Duration::from_secs(model.timeout)),
        ..AgentOptions::default()
    };
    let agent = rt.agent(provider, options)?;
    Ok((agent, rt))
}

fn usage(e: ConfigError) -> UsageError {
    UsageError(e.to_string())
}

/// Prints streamed text to stdout and tool activity to stderr.
pub(crate) fn printer(show_text: bool) -> alembic_runtime::agent::EventSink {
    let at_line_start = Arc::new(Mutex::new(true));
    Arc::new(move |event: &AgentEvent| {
        let mut fresh = lock(&at_line_start);
        match event {
            AgentEvent::TextDelta { text } if show_text => {
                print!("{text}");
                let _ = std::io::stdout().flush();
                *fresh = text.ends_with('\n');
            }
            AgentEvent::ToolCallStarted { name, arguments } => {
                if !*fresh {
                    println!();
                    *fresh = true;
                }
                let args = arguments.to_string();
                let args: String = args.chars().take(100).collect();
                eprintln!("  → {name} {args}");
            }
            AgentEvent::ToolCallFinished { name, status } if status != "ok" => {
                eprintln!("  ✗ {name}: {status}");
            }
            AgentEvent::Retrying { error } => eprintln!("  ! model call failed, retrying: {error}"),
            _ => {}
        }
    })
}

/// Runs one question, cancelling it on Ctrl-C.
pub(crate) async fn ask_once(
    agent: &AgentRuntime,
    request: &RunRequest,
) -> anyhow::Result<RunReport> {
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    let watcher = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
        }
    });
    let result = agent.run(request, &cancel).await;
    watcher.abort();
    result.map_err(|e| match e {
        AgentError::Preset(p) => UsageError(p.to_string()).into(),
        other => anyhow::Error::from(other),
    })
}

/// Prints the answer (unless it was streamed) and the trace.
pub(crate) fn print_answer(report: &RunReport, streamed: bool) {
    if streamed {
        println!();
    } else {
        println!("{}", report.answer);
    }
    eprintln!("— {}", report.trace_line());
    if let Some(line) = report.memory.saved_line() {
        eprintln!("— {line}");
    }
}

pub fn run(args: AskArgs) -> CmdResult {
    if args.question.trim().is_empty() {
        return Err(UsageError("the question is empty: pass it as the first argument, e.g. alembic ask \"what does src/main.rs do?\"".into()).into());
    }
    let stream = !args.model.no_stream && !args.json;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let (agent, project) = open_agent(&args.project.project, &args.model, stream)?;
        let agent = agent.with_events(printer(stream));
        let request = RunRequest::new(
            args.question.clone(),
            AgentPreset::from_name(&args.model.preset),
        );
        let report = ask_once(&agent, &request).await;
        project.flush_audit()?;
        let report = report?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print_answer(&report, stream);
        }
        Ok(Exit::Ok)
    })
}
