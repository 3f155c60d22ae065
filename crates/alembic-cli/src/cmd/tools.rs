//! `alembic tools list|schema|call`

use alembic_runtime::ProjectRuntime;
use alembic_runtime::tools::{Allowlist, ToolCall, ToolDefinition};
use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List the tools (of one preset, or all registered ones)
    List(ListArgs),
    /// Print the JSON Schema of a tool's parameters
    Schema(SchemaArgs),
    /// Call a tool through the whole pipeline (gates, safety, audit)
    Call(CallArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only the tools of this preset
    #[arg(long, value_name = "P")]
    pub preset: Option<String>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Tool name
    pub name: String,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// Tool name
    pub name: String,
    /// Arguments as a JSON object
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// Call with the allowlist of this preset (default: all)
    #[arg(long, value_name = "P", default_value = "all")]
    pub preset: String,
    /// Print the whole outcome as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

pub fn run(cmd: ToolsCommand) -> CmdResult {
    match cmd {
        ToolsCommand::List(a) => list(a),
        ToolsCommand::Schema(a) => schema(a),
        ToolsCommand::Call(a) => call(a),
    }
}

fn list(args: ListArgs) -> CmdResult {
    let rt = ProjectRuntime::inspect_command(&args.project.project)?;
    let allowlist = match &args.preset {
        Some(p) => {
            rt.caller("cli", Some(p))
                .map_err(|e| UsageError(e.to_string()))?
                .allowlist
        }
        None => Allowlist::All,
    };
    let tools = rt.registry.definitions(&allowlist);
    if args.json {
        let items: Vec<Value> = tools.iter().map(tool_json).collect();
        println!("{}", serde_json::to_string_pretty(&items)?);
        return Ok(Exit::Ok);
    }
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4);
    for t in &tools {
        let first = t.description.lines().next().unwrap_or_default();
        println!(
            "{:<width$}  {:<18}  {:<20}  {first}",
            t.name,
            t.module.as_str(),
            t.effect.as_str()
        );
    }
    println!("{} tools", tools.len());
    Ok(Exit::Ok)
}

fn tool_json(t: &ToolDefinition) -> Value {
    json!({
        "name": t.name,
        "module": t.module.as_str(),
        "effect": t.effect.as_str(),
        "description": t.description,
        "parameters": t.parameters,
    })
}

fn schema(args: SchemaArgs) -> CmdResult {
    let rt = ProjectRuntime::inspect_command(&args.project.project)?;
    let Some(tool) = rt.registry.get(&args.name) else {
        let near = rt.registry.suggest(&args.name, &Allowlist::All);
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!("; did you mean: {}?", near.join(", "))
        };
        return Err(UsageError(format!("unknown tool \"{}\"{hint}", args.name)).into());
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&tool_json(&tool.definition))?
    );
    Ok(Exit::Ok)
}

fn call(args: CallArgs) -> CmdResult {
    let parsed: Value = serde_json::from_str(&args.args).map_err(|e| {
        UsageError(format!(
            "--args is not valid JSON ({e}); pass an object such as '{{\"pattern\": \"foo\"}}'"
        ))
    })?;
    let rt = ProjectRuntime::open_command(&args.project.project)?;
    let caller = rt
        .caller("cli", Some(&args.preset))
        .map_err(|e| UsageError(e.to_string()))?;
    let pipeline = rt.pipeline();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let outcome = runtime.block_on(pipeline.execute(ToolCall::new(args.name, parsed, caller)));
    rt.flush_audit()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&outcome)?);
    } else if outcome.is_ok() {
        println!("{}", outcome.text_for_model());
    } else {
        crate::tool_call::print_failure(&outcome);
    }
    Ok(Exit::from_code(outcome.status.exit_code()))
}
