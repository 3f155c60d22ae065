//! `alembic knowledge guard-overrides show|set <file>|clear`: the guard-rule overrides kept in
//! the knowledge base (the team's store when a team is configured, so every checkout of the
//! team checks code with them; else the project database). Every guard check layers them
//! between the built-in rules and the project's `.alembic/guard-rules.toml`. `set` checks the
//! file as the loader reads it before anything is sent (a bad file names the line and what
//! is accepted); `set` and `clear` are calls of `set_guard_overrides` as caller `cli`.

use std::path::PathBuf;

use alembic_runtime::ProjectRuntime;
use alembic_runtime::knowledge::GuardRules;
use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::{JsonArgs, read};
use crate::CmdResult;
use crate::exit::{Exit, UsageError};

#[derive(Debug, Subcommand)]
pub enum OverridesCommand {
    /// Print the stored overrides (the text of a rules file) and where they are kept
    Show(JsonArgs),
    /// Validate a rules file (as .alembic/guard-rules.toml) and store it as the overrides, replacing any
    Set(SetArgs),
    /// Remove the stored overrides
    Clear(JsonArgs),
}

#[derive(Debug, Args)]
pub struct SetArgs {
    /// A guard rules file: [[rule]] tables (id, description, languages, pattern, severity) and a disabled list
    pub file: PathBuf,
    #[command(flatten)]
    pub out: JsonArgs,
}

pub fn run(cmd: OverridesCommand) -> CmdResult {
    match cmd {
        OverridesCommand::Show(a) => show(a),
        OverridesCommand::Set(a) => {
            let text = std::fs::read_to_string(&a.file)
                .with_context(|| format!("cannot read {}", a.file.display()))?;
            let origin = a.file.display().to_string();
            GuardRules::check_file(&text, &origin).map_err(|e| UsageError(e.to_string()))?;
            write(&a.out, json!({"rules": text}))
        }
        OverridesCommand::Clear(a) => write(&a, json!({"clear": true})),
    }
}

fn show(a: JsonArgs) -> CmdResult {
    let (store, text) = read(&a.project, |kb| Ok((kb.describe(), kb.guard_overrides()?)))??;
    if a.json {
        let data = json!({"store": store, "rules": text});
        println!("{}", serde_json::to_string_pretty(&data)?);
    } else {
        match text {
            Some(text) => print!("{text}{}", if text.ends_with('\n') { "" } else { "\n" }),
            None => println!("no guard-rule overrides stored in {store}"),
        }
    }
    Ok(Exit::Ok)
}

fn write(out: &JsonArgs, args: Value) -> CmdResult {
    let rt = ProjectRuntime::open_command(&out.project.project)?;
    let output = match crate::tool_call::call_as_cli(&rt, "set_guard_overrides", args)? {
        Ok(output) => output,
        Err(exit) => return Ok(exit),
    };
    if out.json {
        println!("{}", serde_json::to_string_pretty(&output.data)?);
    } else {
        println!("{}", output.text);
    }
    Ok(Exit::Ok)
}
