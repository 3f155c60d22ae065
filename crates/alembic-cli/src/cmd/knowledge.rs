//! `alembic knowledge list|show|search|stats|review|approve|reject|publish|deprecate|export|guard-overrides`
//!
//! Reads and reviews the project's knowledge base (`.alembic/alembic.db`). Agents propose
//! candidates with `submit_knowledge`; a person reviews them here: approve or reject a
//! submitted candidate, publish an approved one, deprecate a published recipe. A review is a
//! call of the lifecycle tool through the project's pipeline as caller `cli`, so it is
//! policy-checked and audited like an agent's call, and recorded with `cli` as who and the
//! given reason. Reads use the runtime's knowledge service directly. `export` writes the
//! published knowledge into an agent guideline file (see [`export`]); `guard-overrides`
//! keeps the guard-rule overrides (see [`overrides`]).

mod bulk;
mod export;
mod overrides;
mod review;

use alembic_runtime::ProjectRuntime;
use alembic_runtime::knowledge::{
    Entry, Filter, Kind, KnowledgeBackend, KnowledgeError, KnowledgeStore, Status,
};
use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

pub use export::ExportArgs;
pub use overrides::OverridesCommand;

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Subcommand)]
pub enum KnowledgeCommand {
    /// List entries, newest first (default: every status)
    List(ListArgs),
    /// Show one entry with its lifecycle history and graph edges
    Show(ShowArgs),
    /// Full-text search, best first
    Search(SearchArgs),
    /// Counts by status, kind and language, edges, proposals, guard checks
    Stats(JsonArgs),
    /// Review candidates one at a time with their evidence lines: approve, reject with a
    /// reason, edit, publish, skip or quit (one key per line on stdin)
    Review(review::ReviewArgs),
    /// Approve submitted candidates (ids, or --all / --dimension / --status with a confirmation)
    Approve(MoveArgs),
    /// Reject candidates (a --reason is required); their bootstrap memories are retracted
    Reject(MoveArgs),
    /// Publish approved candidates as recipes
    Publish(MoveArgs),
    /// Deprecate published recipes (a --reason is required); their bootstrap memories are retracted
    Deprecate(MoveArgs),
    /// Write the published knowledge into AGENTS.md, CLAUDE.md or .cursor/rules/alembic.mdc
    /// (inside a marked block; text outside it is never touched)
    Export(ExportArgs),
    /// Show, set or clear the guard-rule overrides kept in the knowledge base (the team's
    /// store when a team is configured), applied by every guard check
    #[command(subcommand)]
    GuardOverrides(OverridesCommand),
}

#[derive(Debug, Args)]
pub struct JsonArgs {
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct FilterArgs {
    /// draft, submitted, approved, rejected, published or deprecated
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    /// rule, pattern or fact
    #[arg(long, value_name = "K")]
    pub kind: Option<String>,
    #[arg(long, value_name = "LANG")]
    pub language: Option<String>,
    #[arg(long, value_name = "C")]
    pub category: Option<String>,
    /// How many entries at most
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub out: JsonArgs,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    pub query: String,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub out: JsonArgs,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    pub id: String,
    #[command(flatten)]
    pub out: JsonArgs,
}

#[derive(Debug, Args)]
pub struct MoveArgs {
    /// Entry ids; or select entries with --all, --dimension or --status
    #[arg(required_unless_present_any = ["all", "dimension", "status"])]
    pub ids: Vec<String>,
    #[command(flatten)]
    pub select: bulk::SelectArgs,
    /// Why (required to reject or deprecate)
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    pub out: JsonArgs,
}

pub fn run(cmd: KnowledgeCommand) -> CmdResult {
    match cmd {
        KnowledgeCommand::List(a) => list(a),
        KnowledgeCommand::Show(a) => show(a),
        KnowledgeCommand::Search(a) => search(a),
        KnowledgeCommand::Stats(a) => stats(a),
        KnowledgeCommand::Review(a) => review::run(a),
        KnowledgeCommand::Approve(a) => mv(a, Status::Approved),
        KnowledgeCommand::Reject(a) => mv(a, Status::Rejected),
        KnowledgeCommand::Publish(a) => mv(a, Status::Published),
        KnowledgeCommand::Deprecate(a) => mv(a, Status::Deprecated),
        KnowledgeCommand::Export(a) => export::run(a),
        KnowledgeCommand::GuardOverrides(c) => overrides::run(c),
    }
}

/// Runs `f` on the project's knowledge base (the runtime's service: the team's store when a
/// team is configured); a project without a team or a database reads as empty (nothing is
/// created by reading). The outer error is a failure to open the project; the inner one is
/// the knowledge base's answer.
fn read<T>(
    project: &ProjectArgs,
    f: impl FnOnce(&mut dyn KnowledgeBackend) -> Result<T, KnowledgeError>,
) -> anyhow::Result<Result<T, KnowledgeError>> {
    let rt = ProjectRuntime::inspect_command(&project.project)?;
    let local_only = rt.services().knowledge.team_label().is_none();
    if local_only && !alembic_runtime::store::project_db_path(&project.project).exists() {
        let mut empty = KnowledgeStore::open_in_memory()?;
        return Ok(f(&mut empty));
    }
    read_with(&rt, f)
}

pub(crate) fn read_with<T>(
    rt: &ProjectRuntime,
    f: impl FnOnce(&mut dyn KnowledgeBackend) -> Result<T, KnowledgeError>,
) -> anyhow::Result<Result<T, KnowledgeError>> {
    let answer = rt.services().knowledge.with(|kb| Ok(f(kb)));
    answer.with_context(|| format!("opening the knowledge base of {}", rt.root.display()))
}

fn usage_err(e: KnowledgeError) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

fn filter(f: &FilterArgs) -> anyhow::Result<Filter> {
    Ok(Filter {
        statuses: match &f.status {
            Some(s) => vec![s.parse::<Status>().map_err(usage_err)?],
            None => Vec::new(),
        },
        kind: f
            .kind
            .as_deref()
            .map(str::parse::<Kind>)
            .transpose()
            .map_err(usage_err)?,
        language: f.language.clone(),
        category: f.category.clone(),
        knowledge_type: None,
        limit: f.limit.max(1),
    })
}

fn line(e: &Entry) -> String {
    let lang = if e.language.is_empty() {
        String::new()
    } else {
        format!(", {}", e.language)
    };
    format!(
        "{}  {:<10} {} ({}{lang})",
        e.id,
        e.status.as_str(),
        e.title,
        e.kind.as_str()
    )
}

fn list(a: ListArgs) -> CmdResult {
    let filter = filter(&a.filter)?;
    let entries = read(&a.out.project, |kb| kb.list(&filter))??;
    if a.out.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "entries": entries }))?
        );
    } else if entries.is_empty() {
        println!("no knowledge entries");
    } else {
        entries.iter().for_each(|e| println!("{}", line(e)));
    }
    Ok(Exit::Ok)
}

fn search(a: SearchArgs) -> CmdResult {
    let filter = filter(&a.filter)?;
    let hits = read(&a.out.project, |kb| kb.search(&a.query, &filter))??;
    if a.out.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "results": hits }))?
        );
    } else if hits.is_empty() {
        println!("nothing matches \"{}\"", a.query);
    } else {
        hits.iter()
            .for_each(|h| println!("{:.2}  {}", h.score, line(&h.entry)));
    }
    Ok(Exit::Ok)
}

fn show(a: ShowArgs) -> CmdResult {
    let found = read(&a.out.project, |kb| {
        Ok((
            kb.get(&a.id)?,
            kb.history(&a.id)?,
            kb.neighbours(&a.id, None)?,
        ))
    })?;
    let (entry, history, edges) = match found {
        Err(e @ KnowledgeError::NotFound { .. }) => {
            eprintln!("error: {e}");
            return Ok(Exit::ToolError);
        }
        other => other?,
    };
    if a.out.json {
        let data = json!({"entry": entry, "history": history, "edges": edges});
        println!("{}", serde_json::to_string_pretty(&data)?);
        return Ok(Exit::Ok);
    }
    println!("{}", line(&entry));
    for (label, value) in [
        ("description", &entry.description),
        ("content", &entry.content),
        ("pattern", &entry.pattern),
        ("rationale", &entry.rationale),
    ] {
        if !value.trim().is_empty() {
            println!("\n{label}:\n{value}");
        }
    }
    if !entry.sources.is_empty() {
        println!("\nsources: {}", entry.sources.join(", "));
    }
    println!("\nhistory:");
    for t in &history {
        let from = t.from.map_or("(new)", Status::as_str);
        let why = t
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        println!("  {from} -> {} by {}{why}", t.to, t.by);
    }
    for n in &edges.outgoing {
        println!("  -{}-> {} {}", n.edge.relation, n.other_id, n.other_title);
    }
    for n in &edges.incoming {
        println!("  <-{}- {} {}", n.edge.relation, n.other_id, n.other_title);
    }
    Ok(Exit::Ok)
}

fn stats(a: JsonArgs) -> CmdResult {
    let s = read(&a.project, |kb| kb.stats())??;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(Exit::Ok);
    }
    println!(
        "entries: {} ({} candidates, {} published recipes)",
        s.total, s.candidates, s.recipes
    );
    for (label, map) in [
        ("status", &s.by_status),
        ("kind", &s.by_kind),
        ("language", &s.by_language),
    ] {
        let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k} {v}")).collect();
        if !parts.is_empty() {
            println!("by {label}: {}", parts.join(", "));
        }
    }
    println!(
        "graph edges: {}, open proposals: {}, guard checks: {}",
        s.edges, s.open_proposals, s.guard_runs
    );
    Ok(Exit::Ok)
}

/// The lifecycle tool that makes the move to `to`, and its arguments.
fn move_call(to: Status, id: &str, reason: Option<&str>) -> (&'static str, Value) {
    let (tool, id_key, reason_key) = match to {
        Status::Approved => ("approve_candidate", "candidateId", "note"),
        Status::Rejected => ("reject_candidate", "candidateId", "reason"),
        Status::Published => ("publish_recipe", "recipeId", "note"),
        _ => ("deprecate_recipe", "recipeId", "reason"),
    };
    let mut args = json!({ id_key: id });
    if let Some(r) = reason {
        args[reason_key] = json!(r);
    }
    (tool, args)
}

/// Refuses a move the entry's state does not allow (or one without its required reason) as a
/// usage error, and a missing entry as a tool error, before the call: the exit codes tell
/// them apart. The tool checks again inside its transaction.
fn check_move(
    rt: &ProjectRuntime,
    id: &str,
    reason: Option<&str>,
    to: Status,
) -> anyhow::Result<Option<Exit>> {
    let from = match read_with(rt, |kb| kb.get(id))? {
        Ok(entry) => entry.status,
        Err(e @ KnowledgeError::NotFound { .. }) => {
            eprintln!("error: {e}");
            return Ok(Some(Exit::ToolError));
        }
        Err(e) => return Err(e.into()),
    };
    let id = id.to_string();
    if !from.can_move_to(to) {
        let allowed = from.next();
        return Err(usage_err(KnowledgeError::InvalidTransition {
            id,
            from,
            to,
            allowed,
        }));
    }
    let blank = reason.is_none_or(|r| r.trim().is_empty());
    if to.needs_reason() && blank {
        return Err(usage_err(KnowledgeError::ReasonRequired { id, to }));
    }
    Ok(None)
}

/// One id moves as before (the entry is printed); several ids or a selection go through
/// [`bulk`], which counts and confirms a selection first.
fn mv(a: MoveArgs, to: Status) -> CmdResult {
    let rt = ProjectRuntime::open_command(&a.out.project.project)?;
    if a.select.any() || a.ids.len() > 1 {
        return bulk::run(&rt, &a, to);
    }
    let Some(id) = a.ids.first() else {
        return Err(UsageError(
            "name an entry id, or select with --all, --dimension or --status".into(),
        )
        .into());
    };
    if let Some(exit) = check_move(&rt, id, a.reason.as_deref(), to)? {
        return Ok(exit);
    }
    let (tool, args) = move_call(to, id, a.reason.as_deref());
    if let Err(exit) = crate::tool_call::call_as_cli(&rt, tool, args)? {
        return Ok(exit);
    }
    let entry = read_with(&rt, |kb| kb.get(id))??;
    if a.out.json {
        println!("{}", serde_json::to_string_pretty(&entry)?);
    } else {
        println!("{}", line(&entry));
    }
    Ok(Exit::Ok)
}
