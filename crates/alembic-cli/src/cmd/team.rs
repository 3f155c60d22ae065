//! `alembic team status|push|pull`: the team store configured by `[team]` in
//! `.alembic/config.toml` (or `ALEMBIC_TEAM_URL`). Each command is one tool call through the
//! project's pipeline as caller `cli` (`team_status`, `team_push`, `team_pull`), so it is
//! validated, policy-checked and audited like an agent's call.

use alembic_runtime::ProjectRuntime;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Which team and server, how many team memories it holds, how many local ones wait to be pushed
    Status(TeamArgs),
    /// Move this checkout's team-scoped memories to the team server (idempotent, no duplicates)
    Push(TeamArgs),
    /// Copy the team's memories from the server into this checkout (idempotent)
    Pull(TeamArgs),
}

#[derive(Debug, Args)]
pub struct TeamArgs {
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

pub fn run(command: TeamCommand) -> CmdResult {
    let (tool, doing, args) = match command {
        TeamCommand::Status(a) => ("team_status", "asking the team server", a),
        TeamCommand::Push(a) => ("team_push", "pushing team memories", a),
        TeamCommand::Pull(a) => ("team_pull", "pulling team memories", a),
    };
    if !args.project.project.is_dir() {
        anyhow::bail!(UsageError(format!(
            "project directory {} does not exist",
            args.project.project.display()
        )));
    }
    let rt = ProjectRuntime::open(&args.project.project)?;
    let spinner = (!args.json).then(|| spinner(doing));
    let result = crate::tool_call::call_as_cli(&rt, tool, json!({}))?;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let output = match result {
        Ok(output) => output,
        Err(exit) => return Ok(exit),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&output.data)?);
    } else {
        println!("{}", output.text);
    }
    Ok(Exit::Ok)
}

fn spinner(message: &'static str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
        bar.set_style(style);
    }
    bar.set_message(message);
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}
