//! `alembic team init|status|push|pull`: the team store configured by `[team]` in
//! `.alembic/config.toml` (or `ALEMBIC_TEAM_URL`), for team-scoped memories and the knowledge
//! base. Each step is one tool call through the project's pipeline as caller `cli` (memories:
//! `team_status`, `team_push`, `team_pull`; knowledge: `team_knowledge_status`,
//! `team_knowledge_push`, `team_knowledge_pull`), so it is validated, policy-checked and
//! audited like an agent's call. Every step is idempotent: running a command again moves
//! nothing twice.

use alembic_runtime::ProjectRuntime;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create or migrate the team schema on the server, then push this checkout's team-scoped memories and knowledge base (idempotent)
    Init(TeamArgs),
    /// Which team and server, how many team memories and knowledge entries it holds, how many local ones wait to be pushed
    Status(TeamArgs),
    /// Move this checkout's team-scoped memories and knowledge base (with guard-rule overrides) to the team server; what the team does not take stays and is named (idempotent, no duplicates)
    Push(TeamArgs),
    /// Copy the team's memories and knowledge base from the server into this checkout, e.g. to leave the team (idempotent)
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

/// One step of a command: the tool, what the spinner says, the key of its result.
type Step = (&'static str, &'static str, &'static str);

const STATUS: [Step; 2] = [
    (
        "team_status",
        "asking the team server about memories",
        "memories",
    ),
    (
        "team_knowledge_status",
        "asking the team server about knowledge",
        "knowledge",
    ),
];
const PUSH: [Step; 2] = [
    ("team_push", "pushing team memories", "memories"),
    (
        "team_knowledge_push",
        "pushing the knowledge base",
        "knowledge",
    ),
];
const PULL: [Step; 2] = [
    ("team_pull", "pulling team memories", "memories"),
    (
        "team_knowledge_pull",
        "pulling the knowledge base",
        "knowledge",
    ),
];

pub fn run(command: TeamCommand) -> CmdResult {
    let (steps, args): (Vec<Step>, TeamArgs) = match command {
        // opening each store on the server creates or migrates its schema (status does
        // that), then the pushes move what this checkout has
        TeamCommand::Init(a) => (STATUS.into_iter().chain(PUSH).collect(), a),
        TeamCommand::Status(a) => (STATUS.to_vec(), a),
        TeamCommand::Push(a) => (PUSH.to_vec(), a),
        TeamCommand::Pull(a) => (PULL.to_vec(), a),
    };
    if !args.project.project.is_dir() {
        anyhow::bail!(UsageError(format!(
            "project directory {} does not exist",
            args.project.project.display()
        )));
    }
    let rt = ProjectRuntime::open_command(&args.project.project)?;
    let init = steps.len() > 2;
    let mut data = json!({});
    for (tool, doing, key) in steps {
        let spinner = (!args.json).then(|| spinner(doing));
        let result = crate::tool_call::call_as_cli(&rt, tool, json!({}))?;
        if let Some(s) = spinner {
            s.finish_and_clear();
        }
        let output = match result {
            Ok(output) => output,
            Err(exit) => return Ok(exit),
        };
        let slot = if init && tool.ends_with("status") {
            "schema"
        } else {
            key
        };
        merge(&mut data, slot, key, output.data);
        if !args.json {
            println!("{}", output.text);
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&data)?);
    }
    Ok(Exit::Ok)
}

/// Puts a step's result under `slot` (and, for init's status steps, under `schema.<key>`).
fn merge(data: &mut Value, slot: &str, key: &str, value: Value) {
    if slot == key {
        data[key] = value;
    } else {
        data[slot][key] = value;
    }
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
