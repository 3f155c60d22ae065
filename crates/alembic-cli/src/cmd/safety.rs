//! `alembic safety check-command|check-path`: explain what the safety layer would decide,
//! without running or touching anything. Exit 0 when allowed, 3 otherwise.

use std::sync::Arc;

use alembic_runtime::ProjectRuntime;
use alembic_runtime::safety::{Access, CommandVerdict, PathError, SafetyServices};
use clap::{Args, Subcommand};
use serde_json::json;

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Subcommand)]
pub enum SafetyCommand {
    /// Judge a shell command with the project's command policy (nothing is run)
    CheckCommand(CheckCommandArgs),
    /// Judge a path as a file tool would see it (nothing is read or written)
    CheckPath(CheckPathArgs),
}

#[derive(Debug, Args)]
pub struct CheckCommandArgs {
    /// The shell script, quoted as one argument
    pub script: String,
    /// Working directory inside the project the command would run in
    #[arg(long, default_value = ".")]
    pub cwd: String,
    /// Print {"verdict", "reason", "rule"} as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct CheckPathArgs {
    /// Path relative to the project root (or absolute inside it)
    pub path: String,
    /// Check for writing (control files, symlinks and hard links are refused)
    #[arg(long)]
    pub write: bool,
    /// Print {"verdict", "reason"} as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

pub fn run(cmd: SafetyCommand) -> CmdResult {
    match cmd {
        SafetyCommand::CheckCommand(a) => check_command(a),
        SafetyCommand::CheckPath(a) => check_path(a),
    }
}

/// The project's guard and command policy, as the runtime wires them for every tool call.
fn services(project: &ProjectArgs) -> anyhow::Result<Arc<SafetyServices>> {
    let rt =
        ProjectRuntime::inspect_command(&project.project).map_err(|e| UsageError(e.to_string()))?;
    Ok(Arc::clone(&rt.services().safety))
}

fn check_command(args: CheckCommandArgs) -> CmdResult {
    let services = services(&args.project)?;
    let cwd = services
        .guard
        .check(&args.cwd, Access::Read)
        .map_err(|e| UsageError(format!("--cwd: {e}")))?;
    let verdict = services
        .policy
        .evaluate_in(&args.script, &services.guard, &cwd);
    if args.json {
        let out =
            json!({"verdict": verdict.kind(), "reason": verdict.reason(), "rule": verdict.rule()});
        println!("{out}");
    } else {
        println!("{}", render_command(&verdict));
    }
    Ok(if verdict.is_allow() {
        Exit::Ok
    } else {
        Exit::Refused
    })
}

fn render_command(verdict: &CommandVerdict) -> String {
    match verdict {
        CommandVerdict::Allow => "allow: runs without approval".to_owned(),
        CommandVerdict::NeedsApproval { reason } => format!("needs approval: {reason}"),
        CommandVerdict::Deny { reason, rule } => format!("deny [{rule}]: {reason}"),
    }
}

fn check_path(args: CheckPathArgs) -> CmdResult {
    let services = services(&args.project)?;
    let access = if args.write {
        Access::Write
    } else {
        Access::Read
    };
    let access_name = if args.write { "write" } else { "read" };
    let result = services.guard.check(&args.path, access);
    // A missing file inside the root is not a safety refusal: the tool reports it itself.
    let (allowed, out, line) = match &result {
        Ok(path) => (
            true,
            json!({"verdict": "allow", "reason": null, "path": path}),
            format!("allow: {path} ({access_name})"),
        ),
        Err(e @ (PathError::NotFound { .. } | PathError::NotADirectory { .. })) => (
            true,
            json!({"verdict": "allow", "reason": e.to_string(), "path": null}),
            format!("allow ({access_name}): {e}"),
        ),
        Err(e) => (
            false,
            json!({"verdict": "deny", "reason": e.to_string(), "rule": e.rule()}),
            format!("deny [{}]: {e}", e.rule()),
        ),
    };
    if args.json {
        println!("{out}");
    } else {
        println!("{line}");
    }
    Ok(if allowed { Exit::Ok } else { Exit::Refused })
}
