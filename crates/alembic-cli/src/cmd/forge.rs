//! `alembic forge create|reuse|generate|save|promote|list|show|remove`
//!
//! Forged tools live in `.alembic/tools/`: permanent ones as `NAME.json` (loaded by every
//! command that opens the project, so `alembic tools call` and the MCP server see them), and
//! temporary ones in `.temporary/` with an expiry (30 minutes by default) until `forge save`.
//! `save`, `remove` and `promote` are calls of the `forge_save`, `forge_remove` and
//! `forge_promote` tools through the pipeline as caller `cli`, so they are validated,
//! policy-checked and audited like any agent's call.

use std::collections::BTreeMap;
use std::path::PathBuf;

use alembic_runtime::ProjectRuntime;
use alembic_runtime::forge::generate::{
    GenerateRequest, generate_enabled_here, generate_verified, pipeline_bridge,
};
use alembic_runtime::forge::reuse::{ForgeRequest, alias_name, best_reuse, find_reuse};
use alembic_runtime::forge::sandbox::SandboxLimits;
use alembic_runtime::forge::store::{Lifetime, SavedTool, ToolStore};
use alembic_runtime::forge::{AliasSpec, Clock, CompositionSpec, LlmCodeGenerator, SystemClock};
use alembic_runtime::tools::Allowlist;
use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Subcommand)]
pub enum ForgeCommand {
    /// Save a composed tool from a CompositionSpec file (JSON or TOML)
    Create(CreateArgs),
    /// Find an existing tool plus pre-filled arguments for a request; keep it as an alias tool
    Reuse(ReuseArgs),
    /// Have the LLM write a tool, verify it in the sandbox, keep it as a temporary tool
    /// (needs ALEMBIC_ENABLE_FORGE_GENERATE=true or `[forge] generate = true`)
    Generate(GenerateArgs),
    /// Keep a temporary forged tool for good
    Save(NameArgs),
    /// Turn a forged tool into a skill: .alembic/skills/NAME/SKILL.md and schema.json
    Promote(PromoteArgs),
    /// List forged tools
    List(ListArgs),
    /// Show one forged tool
    Show(ShowArgs),
    /// Delete a forged tool
    Remove(NameArgs),
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// CompositionSpec file: name, description, merge_strategy, parameters, steps
    #[arg(long, value_name = "FILE")]
    pub spec: PathBuf,
    /// Replace a saved forged tool of the same name
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct ReuseArgs {
    /// What the tool is for, in words
    #[arg(long)]
    pub intent: String,
    /// A verb: read, search, analyze, list, ...
    #[arg(long)]
    pub action: String,
    /// A noun or value: recipe, NetworkKit, Network, ...
    #[arg(long)]
    pub target: String,
    /// Save the alias for good instead of keeping it temporary
    #[arg(long)]
    pub save: bool,
    /// Minutes a temporary alias lives
    #[arg(long, value_name = "MIN", default_value_t = 30)]
    pub ttl_mins: u64,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// What the tool should do
    pub description: String,
    /// Minutes the tool lives before `forge save`
    #[arg(long, value_name = "MIN", default_value_t = 30)]
    pub ttl_mins: u64,
    /// Generation rounds (failures are fed back to the model)
    #[arg(long, default_value_t = 2)]
    pub attempts: usize,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct NameArgs {
    /// Forged tool name
    pub name: String,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// Forged tool name
    pub name: String,
    /// Arguments of an example call (JSON object); it is run and its result recorded
    #[arg(long, value_name = "JSON")]
    pub example: Vec<String>,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Forged tool name
    pub name: String,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

pub fn run(cmd: ForgeCommand) -> CmdResult {
    match cmd {
        ForgeCommand::Create(a) => create(a),
        ForgeCommand::Reuse(a) => reuse(a),
        ForgeCommand::Generate(a) => generate(a),
        ForgeCommand::Save(a) => save(a),
        ForgeCommand::Promote(a) => promote(a),
        ForgeCommand::List(a) => list(a),
        ForgeCommand::Show(a) => show(a),
        ForgeCommand::Remove(a) => remove(a),
    }
}

fn now_ms() -> u64 {
    u64::try_from(SystemClock.now_ms()).unwrap_or(0)
}

fn ttl_expiry(mins: u64) -> Option<u64> {
    Some(now_ms().saturating_add(mins.saturating_mul(60_000)))
}

/// Saved compositions of the project, for cycle checks.
fn saved_compositions(store: &ToolStore) -> BTreeMap<String, CompositionSpec> {
    store
        .load_saved()
        .into_iter()
        .filter_map(|(_, t)| match t {
            Ok(SavedTool::Composed(s)) => Some((s.name.clone(), s)),
            _ => None,
        })
        .collect()
}

fn create(args: CreateArgs) -> CmdResult {
    let text = std::fs::read_to_string(&args.spec)
        .with_context(|| format!("cannot read {}", args.spec.display()))?;
    let tool = SavedTool::parse(&text, &args.spec).map_err(|e| UsageError(e.to_string()))?;
    if matches!(tool, SavedTool::Generated(_)) {
        return Err(UsageError(
            "generated tools are made with `alembic forge generate`, which verifies them; `create` takes compositions and aliases".into(),
        )
        .into());
    }
    let rt = ProjectRuntime::inspect_command(&args.project.project)?;
    let store = ToolStore::new(&rt.root);
    let name = tool.name().to_string();
    let existing = store.find(&name, now_ms());
    if rt.registry.contains(&name) {
        match existing {
            Some((Lifetime::Saved, _, _)) if args.force => {
                rt.registry.unregister(&name);
            }
            Some((Lifetime::Saved, _, path)) => {
                return Err(UsageError(format!(
                    "a forged tool \"{name}\" is already saved in {}; pass --force to replace it",
                    path.display()
                ))
                .into());
            }
            Some((Lifetime::Temporary, _, _)) => {
                rt.registry.unregister(&name);
            }
            None => {
                return Err(UsageError(
                    alembic_runtime::forge::ForgeError::NameTaken { name }.to_string(),
                )
                .into());
            }
        }
    }
    let mut compositions = saved_compositions(&store);
    if let SavedTool::Composed(spec) = &tool {
        compositions.insert(name.clone(), spec.clone());
    }
    let definition = tool
        .definition(&rt.registry, &compositions, false)
        .map_err(|e| UsageError(e.to_string()))?;
    rt.registry
        .register(definition)
        .map_err(|e| UsageError(e.to_string()))?;
    let path = store.save(&tool)?;
    println!(
        "saved {} tool \"{name}\" to {}\ncall it with: alembic tools call {name} --args '{{...}}'",
        tool.mode().as_str(),
        path.display()
    );
    Ok(Exit::Ok)
}

fn reuse(args: ReuseArgs) -> CmdResult {
    let rt = ProjectRuntime::inspect_command(&args.project.project)?;
    let request = ForgeRequest::new(&args.intent, &args.action, &args.target);
    let Some(found) = find_reuse(&rt.registry, &Allowlist::All, &request) else {
        let best = best_reuse(&rt.registry, &Allowlist::All, &request);
        let hint = best
            .map(|b| {
                format!(
                    "; the closest was {} (score {:.2}): {}",
                    b.tool, b.score, b.reasoning
                )
            })
            .unwrap_or_default();
        eprintln!(
            "no existing tool matches well enough{hint}; try `alembic forge create --spec FILE`"
        );
        return Ok(Exit::ToolError);
    };
    let alias = AliasSpec {
        name: alias_name(&found.tool, &args.target),
        tool: found.tool.clone(),
        preset_args: found.preset_args.clone(),
        description: None,
    };
    let store = ToolStore::new(&rt.root);
    let saved = SavedTool::Alias(alias.clone());
    if found.preset_args.is_empty() {
        // Nothing to pre-fill: the existing tool is the answer as it is.
    } else if rt.registry.contains(&alias.name) && store.find(&alias.name, now_ms()).is_none() {
        return Err(UsageError(
            alembic_runtime::forge::ForgeError::NameTaken { name: alias.name }.to_string(),
        )
        .into());
    } else if args.save {
        store.save(&saved)?;
    } else {
        store.save_temporary(&saved, ttl_expiry(args.ttl_mins))?;
    }
    let call_as = if found.preset_args.is_empty() {
        &found.tool
    } else {
        &alias.name
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"match": found, "tool": call_as}))?
        );
    } else {
        println!(
            "reuse {} with {} (score {:.2}: {})\ncall it as: alembic tools call {call_as}",
            found.tool,
            Value::Object(found.preset_args.clone()),
            found.score,
            found.reasoning
        );
    }
    Ok(Exit::Ok)
}

fn generate(args: GenerateArgs) -> CmdResult {
    let rt = ProjectRuntime::open_command(&args.project.project)?;
    if !generate_enabled_here(rt.config.section("forge")) {
        eprintln!(
            "error: {}",
            alembic_runtime::forge::ForgeError::GenerateDisabled
        );
        return Ok(Exit::Refused);
    }
    let config = alembic_runtime::llm::load_provider_config(
        &alembic_runtime::llm::ConfigOverrides::default(),
    )
    .map_err(|e| UsageError(e.to_string()))?;
    let provider = alembic_runtime::llm::build_provider(config)?;
    let generator = LlmCodeGenerator::new(provider);
    let caller = rt
        .caller("forge", Some("all"))
        .map_err(|e| UsageError(e.to_string()))?;
    let request = GenerateRequest {
        description: args.description.clone(),
        available_tools: rt.registry.schemas(&caller.allowlist),
        feedback: None,
    };
    let bridge = pipeline_bridge(rt.pipeline(), caller);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let limits = SandboxLimits::default();
    let result = runtime.block_on(generate_verified(
        &generator,
        request,
        bridge,
        &limits,
        args.attempts,
    ));
    rt.flush_audit()?;
    let (tool, results) = result?;
    if rt.registry.contains(&tool.name) {
        return Err(UsageError(
            alembic_runtime::forge::ForgeError::NameTaken { name: tool.name }.to_string(),
        )
        .into());
    }
    let name = tool.name.clone();
    let path = ToolStore::new(&rt.root)
        .save_temporary(&SavedTool::Generated(tool), ttl_expiry(args.ttl_mins))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"tool": name, "tests": results, "path": path}))?
        );
    } else {
        println!(
            "generated \"{name}\"; {n} of {n} test cases passed; it expires in {} min unless you run: alembic forge save {name}",
            args.ttl_mins,
            n = results.len()
        );
    }
    Ok(Exit::Ok)
}

fn save(args: NameArgs) -> CmdResult {
    let rt = ProjectRuntime::open_command(&args.project.project)?;
    call_forge_tool(&rt, "forge_save", json!({"name": args.name}))
}

fn promote(args: PromoteArgs) -> CmdResult {
    let examples = args
        .example
        .iter()
        .map(|text| parse_example(text))
        .collect::<Result<Vec<_>, _>>()?;
    let rt = ProjectRuntime::open_command(&args.project.project)?;
    call_forge_tool(
        &rt,
        "forge_promote",
        json!({"name": args.name, "examples": examples}),
    )
}

fn parse_example(text: &str) -> Result<Value, UsageError> {
    serde_json::from_str(text).map_err(|e| {
        UsageError(format!(
            "--example is not valid JSON ({e}); pass an object such as '{{\"module\": \"NetworkKit\"}}'"
        ))
    })
}

/// Runs a forge tool through the pipeline as caller `cli` (validated, policy-checked and
/// audited), prints its text or its error, and exits as `alembic tools call` would.
fn call_forge_tool(rt: &ProjectRuntime, tool: &str, args: Value) -> CmdResult {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let outcome = runtime.block_on(rt.call_as_cli(tool, args));
    rt.flush_audit()?;
    match (&outcome.output, &outcome.error) {
        (Some(output), _) if outcome.is_ok() => println!("{}", output.text),
        (_, error) => eprintln!("error: {}", error.as_deref().unwrap_or("no detail")),
    }
    Ok(Exit::from_code(outcome.status.exit_code()))
}

fn list(args: ListArgs) -> CmdResult {
    let rt = ProjectRuntime::inspect_command(&args.project.project)?;
    let store = ToolStore::new(&rt.root);
    let now = now_ms();
    let mut rows = Vec::new();
    for (path, parsed) in store.load_saved() {
        rows.push(match parsed {
            Ok(t) => json!({"name": t.name(), "kind": t.mode().as_str(), "lifetime": "saved", "loaded": rt.registry.contains(t.name()), "path": path}),
            Err(e) => json!({"name": path.file_stem().map(|s| s.to_string_lossy().to_string()), "lifetime": "saved", "loaded": false, "error": e.to_string(), "path": path}),
        });
    }
    for r in store.load_temporary(now) {
        let remaining = r.expires_at_ms.map(|e| e.saturating_sub(now) / 1000);
        rows.push(json!({"name": r.tool.name(), "kind": r.tool.mode().as_str(), "lifetime": "temporary", "loaded": rt.registry.contains(r.tool.name()), "expires_in_secs": remaining}));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(Exit::Ok);
    }
    for row in &rows {
        let name = row["name"].as_str().unwrap_or("?");
        let kind = row["kind"].as_str().unwrap_or("-");
        let life = match row["expires_in_secs"].as_u64() {
            Some(s) => format!("temporary, {} min left", s.div_ceil(60)),
            None => row["lifetime"].as_str().unwrap_or("").to_string(),
        };
        let state = match row.get("error").and_then(Value::as_str) {
            Some(e) => format!("not loaded: {e}"),
            None if row["loaded"] == json!(true) => "loaded".into(),
            None => "not loaded (see the warning when it starts)".into(),
        };
        println!("{name:<32}  {kind:<8}  {life:<24}  {state}");
    }
    println!("{} forged tools", rows.len());
    Ok(Exit::Ok)
}

fn show(args: ShowArgs) -> CmdResult {
    let rt = ProjectRuntime::inspect_command(&args.project.project)?;
    let store = ToolStore::new(&rt.root);
    let Some((lifetime, tool, path)) = store.find(&args.name, now_ms()) else {
        return Err(UsageError(format!(
            "no forged tool named \"{}\"; see `alembic forge list`",
            args.name
        ))
        .into());
    };
    let parameters = rt
        .registry
        .get(&args.name)
        .map(|t| t.definition.parameters.clone());
    if args.json {
        let out = json!({"lifetime": lifetime, "path": path, "loaded": parameters.is_some(), "parameters": parameters, "tool": tool});
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(Exit::Ok);
    }
    println!(
        "{} ({} tool, {:?}, {})",
        tool.name(),
        tool.mode().as_str(),
        lifetime,
        path.display()
    );
    println!("{}", serde_json::to_string_pretty(&tool)?);
    Ok(Exit::Ok)
}

fn remove(args: NameArgs) -> CmdResult {
    let rt = ProjectRuntime::open_command(&args.project.project)?;
    call_forge_tool(&rt, "forge_remove", json!({"name": args.name}))
}
