//! `alembic knowledge list|show|search|stats|approve|reject|publish|deprecate`
//!
//! Reads and reviews the project's knowledge base (`.alembic/alembic.db`). Agents propose
//! candidates with `submit_knowledge`; a person reviews them here: approve or reject a
//! submitted candidate, publish an approved one, deprecate a published recipe. Every move is
//! recorded with `cli` as who and the given reason.

use alembic_knowledge::{Entry, Filter, Kind, KnowledgeError, KnowledgeStore, Status};
use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::json;

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
    /// Approve a submitted candidate
    Approve(MoveArgs),
    /// Reject a candidate (a --reason is required)
    Reject(MoveArgs),
    /// Publish an approved candidate as a recipe
    Publish(MoveArgs),
    /// Deprecate a published recipe (a --reason is required)
    Deprecate(MoveArgs),
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
    pub id: String,
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
        KnowledgeCommand::Approve(a) => mv(a, Status::Approved),
        KnowledgeCommand::Reject(a) => mv(a, Status::Rejected),
        KnowledgeCommand::Publish(a) => mv(a, Status::Published),
        KnowledgeCommand::Deprecate(a) => mv(a, Status::Deprecated),
    }
}

/// The project's knowledge base; a project without a database reads as empty (nothing is
/// created by reading).
fn open(project: &ProjectArgs, write: bool) -> anyhow::Result<KnowledgeStore> {
    let path = alembic_store::project_db_path(&project.project);
    let store = if write || path.exists() {
        KnowledgeStore::open_project(&project.project)
    } else {
        KnowledgeStore::open_in_memory()
    };
    store.with_context(|| {
        format!(
            "opening the knowledge base of {}",
            project.project.display()
        )
    })
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
    let kb = open(&a.out.project, false)?;
    let entries = kb.list(&filter(&a.filter)?)?;
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
    let kb = open(&a.out.project, false)?;
    let hits = kb.search(&a.query, &filter(&a.filter)?)?;
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
    let kb = open(&a.out.project, false)?;
    let entry = match kb.get(&a.id) {
        Err(e @ KnowledgeError::NotFound { .. }) => {
            eprintln!("error: {e}");
            return Ok(Exit::ToolError);
        }
        other => other?,
    };
    let history = kb.history(&a.id)?;
    let edges = kb.neighbours(&a.id, None)?;
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
    let kb = open(&a.project, false)?;
    let s = kb.stats()?;
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

fn mv(a: MoveArgs, to: Status) -> CmdResult {
    let mut kb = open(&a.out.project, true)?;
    match kb.transition(&a.id, to, "cli", a.reason.as_deref()) {
        Ok(entry) => {
            if a.out.json {
                println!("{}", serde_json::to_string_pretty(&entry)?);
            } else {
                println!("{}", line(&entry));
            }
            Ok(Exit::Ok)
        }
        Err(e @ KnowledgeError::NotFound { .. }) => {
            eprintln!("error: {e}");
            Ok(Exit::ToolError)
        }
        Err(
            e @ (KnowledgeError::InvalidTransition { .. } | KnowledgeError::ReasonRequired { .. }),
        ) => Err(usage_err(e)),
        Err(e) => Err(e.into()),
    }
}
