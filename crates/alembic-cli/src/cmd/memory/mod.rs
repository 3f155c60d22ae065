//! `alembic memory add|search|list|show|forget|gc|stats|export|import`
//!
//! Works on the project's one persistent memory (`.alembic/alembic.db`), the runtime's
//! memory service with the settings of the `[memory]` section of `.alembic/config.toml`
//! (capacity, lifetimes, weights) and the embedder `alembic_runtime::memory_config` resolves
//! (`ALEMBIC_EMBEDDINGS`, else the `embedder` key, else the local model when installed).
//! Reads use the service; changes (`add`, `forget`, `import`, `gc`) are tool calls through
//! the pipeline as caller `cli` (see [`write`]), so they are validated and audited.

mod write;

use std::io::Write;
use std::path::PathBuf;

use alembic_runtime::ProjectRuntime;
use alembic_runtime::memory::tools::MemoryService;
use alembic_runtime::memory::{
    ListFilter, Located, Memory, Origin, RetrieveOptions, Scope, ScoredMemory,
};
use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Remember something (consolidated: duplicates update, overlaps merge, contradictions replace)
    Add(AddArgs),
    /// Find memories relevant to a query, best first
    Search(SearchArgs),
    /// List current memories, most recently updated first
    List(ListArgs),
    /// Show one memory (with --history, every version of it)
    Show(ShowArgs),
    /// Delete a memory and the versions it superseded
    Forget(IdArgs),
    /// Apply lifetimes now: delete expired, forget unused for 90 days, archive unused for 30
    Gc(JsonArgs),
    /// Counts by state, scope, type and source
    Stats(JsonArgs),
    /// Write every memory (history included) as JSON lines to stdout or --output
    Export(ExportArgs),
    /// Read memories exported by `export` (existing ids are skipped)
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// What to remember
    pub text: String,
    /// fact, insight or preference
    #[arg(long = "type", value_name = "T", default_value = "fact")]
    pub kind: String,
    /// 1 (trivia) to 10 (critical)
    #[arg(long, value_name = "N", default_value_t = 5.0)]
    pub importance: f64,
    /// bootstrap, user or system
    #[arg(long, value_name = "S", default_value = "user")]
    pub source: String,
    /// project, user or team
    #[arg(long, value_name = "SCOPE", default_value = "project")]
    pub scope: String,
    /// Expire after this many days
    #[arg(long, value_name = "N")]
    pub ttl_days: Option<f64>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    pub query: String,
    /// How many results
    #[arg(short = 'k', long = "limit", default_value_t = 10)]
    pub k: usize,
    /// Only this scope (project, user or team)
    #[arg(long, value_name = "SCOPE")]
    pub scope: Option<String>,
    /// Show the three score parts (recency, importance, relevance)
    #[arg(long)]
    pub explain: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Include archived memories
    #[arg(long)]
    pub archived: bool,
    /// Include superseded versions
    #[arg(long)]
    pub history: bool,
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    pub id: String,
    /// Every version: what this memory superseded and what superseded it
    #[arg(long)]
    pub history: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    pub id: String,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct JsonArgs {
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Write to this file instead of stdout
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// JSON lines written by `alembic memory export`
    pub file: PathBuf,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

pub fn run(cmd: MemoryCommand) -> CmdResult {
    match cmd {
        MemoryCommand::Add(a) => write::add(a),
        MemoryCommand::Search(a) => search(a),
        MemoryCommand::List(a) => list(a),
        MemoryCommand::Show(a) => show(a),
        MemoryCommand::Forget(a) => write::forget(a),
        MemoryCommand::Gc(a) => write::gc(a),
        MemoryCommand::Stats(a) => stats(a),
        MemoryCommand::Export(a) => export(a),
        MemoryCommand::Import(a) => write::import(a),
    }
}

fn usage<T: std::str::FromStr<Err = alembic_runtime::memory::MemoryError>>(
    text: &str,
) -> anyhow::Result<T> {
    text.parse()
        .map_err(|e: alembic_runtime::memory::MemoryError| UsageError(e.to_string()).into())
}

/// The project's runtime: `open` (with the audit log) for changes, inspect-only for reads.
fn runtime(project: &ProjectArgs, writes: bool) -> anyhow::Result<ProjectRuntime> {
    if !project.project.is_dir() {
        anyhow::bail!(UsageError(format!(
            "project directory {} does not exist",
            project.project.display()
        )));
    }
    Ok(if writes {
        ProjectRuntime::open_command(&project.project)?
    } else {
        ProjectRuntime::inspect_command(&project.project)?
    })
}

/// Runs a read-only `f` on the project's memory service (the embedder is not built).
fn read<T>(
    project: &ProjectArgs,
    f: impl FnOnce(
        &alembic_runtime::memory::PersistentMemory,
    ) -> Result<T, alembic_runtime::memory::MemoryError>,
) -> anyhow::Result<T> {
    let rt = runtime(project, false)?;
    let memory: &MemoryService = &rt.services().memory;
    Ok(memory.read(f)??)
}

fn search(a: SearchArgs) -> CmdResult {
    let scope = a.scope.as_deref().map(usage::<Scope>).transpose()?;
    let options = RetrieveOptions {
        limit: a.k,
        scope,
        ..RetrieveOptions::default()
    };
    let rt = runtime(&a.project, false)?;
    // Retrieval compares vectors, so it runs with the embedder.
    let found = rt.services().memory.recall(&a.query, &options)?;
    warn_team(found.team_error.as_deref());
    let hits = &found.items;
    if a.json {
        let results: Vec<serde_json::Value> = hits
            .iter()
            .map(|h| scored_json(&h.item, h.store, a.explain))
            .collect();
        let mut out = json!({ "results": results });
        if let Some(e) = &found.team_error {
            out["teamError"] = json!(e);
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(Exit::Ok);
    }
    if hits.is_empty() {
        println!("no relevant memories");
    }
    for (i, Located { item: h, store }) in hits.iter().enumerate() {
        println!(
            "{:>2}. {} [{}{}] score {:.3}  {}",
            i + 1,
            h.memory.id,
            h.memory.kind,
            team_mark(*store),
            h.score,
            h.memory.content
        );
        if a.explain {
            let p = &h.parts;
            let channels = [
                p.lexical.map(|l| format!("lexical {l:.3}")),
                p.semantic.map(|s| format!("cosine {s:.3}")),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
            println!(
                "    recency {:.3} (w 0.2) + importance {:.3} (w 0.3) + relevance {:.3} (w 0.5) [{channels}]",
                p.recency, p.importance, p.relevance
            );
        }
    }
    Ok(Exit::Ok)
}

/// " team" for a memory from the team store (local ones carry no mark).
fn team_mark(store: Origin) -> &'static str {
    match store {
        Origin::Team => " team",
        Origin::Local => "",
    }
}

/// Says on stderr that the team's memories are missing from what is shown, and why.
fn warn_team(error: Option<&str>) {
    if let Some(e) = error {
        eprintln!("warning: team memories unavailable: {e}");
    }
}

fn scored_json(h: &ScoredMemory, store: Origin, explain: bool) -> serde_json::Value {
    let m = &h.memory;
    let mut v = json!({
        "id": m.id, "content": m.content, "type": m.kind, "score": h.score,
        "scope": m.scope, "source": m.source, "importance": m.importance,
        "access_count": m.access_count, "updated": iso(m.updated), "store": store,
    });
    if explain {
        v["explain"] = json!(h.parts);
    }
    v
}

fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| ms.to_string())
}

fn line(m: &Memory) -> String {
    let mut flags = Vec::new();
    if m.archived_at.is_some() {
        flags.push("archived".to_string());
    }
    if let Some(next) = &m.superseded_by {
        flags.push(format!("superseded by {next}"));
    }
    let flags = if flags.is_empty() {
        String::new()
    } else {
        format!(" ({})", flags.join(", "))
    };
    format!(
        "{} [{} {} imp {}] {}{}  {}",
        m.id,
        m.scope,
        m.kind,
        m.importance,
        iso(m.updated),
        flags,
        m.content
    )
}

fn list(a: ListArgs) -> CmdResult {
    let filter = ListFilter {
        include_archived: a.archived,
        include_history: a.history,
        limit: a.limit,
        ..Default::default()
    };
    let rt = runtime(&a.project, false)?;
    let found = rt.services().memory.list_everywhere(&filter)?;
    warn_team(found.team_error.as_deref());
    if a.json {
        let mut out = json!({ "memories": found.items });
        if let Some(e) = &found.team_error {
            out["teamError"] = json!(e);
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if found.items.is_empty() {
        println!("no memories");
    } else {
        for m in &found.items {
            println!("{}", located_line(m));
        }
    }
    Ok(Exit::Ok)
}

/// A listed memory's line, with the store when it is the team's.
fn located_line(m: &Located<Memory>) -> String {
    match m.store {
        Origin::Team => format!("{} (team store)", line(&m.item)),
        Origin::Local => line(&m.item),
    }
}

fn show(a: ShowArgs) -> CmdResult {
    let (memory, history) = read(&a.project, |m| {
        let memory = m.get(&a.id)?;
        let history = match (&memory, a.history) {
            (Some(_), true) => m.history(&a.id)?,
            _ => Vec::new(),
        };
        Ok((memory, history))
    })?;
    let Some(memory) = memory else {
        anyhow::bail!(no_such_memory(&a.id));
    };
    let versions = if a.history {
        history
    } else {
        vec![memory.clone()]
    };
    if a.json {
        let value = if a.history {
            json!({ "memory": memory, "history": versions })
        } else {
            json!(memory)
        };
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(Exit::Ok);
    }
    for m in &versions {
        println!("{}", line(m));
        if !a.history {
            println!(
                "  source {} · accessed {} times, last {} · created {} · valid from {}{}{}",
                m.source,
                m.access_count,
                iso(m.last_accessed),
                iso(m.created),
                iso(m.valid_from),
                m.valid_to
                    .map(|t| format!(" to {}", iso(t)))
                    .unwrap_or_default(),
                m.provenance
                    .as_ref()
                    .map(|p| format!(" · from {p}"))
                    .unwrap_or_default(),
            );
        }
    }
    Ok(Exit::Ok)
}

/// The usage error for an id that names no memory.
fn no_such_memory(id: &str) -> UsageError {
    UsageError(format!("no memory with id {id} (see alembic memory list)"))
}

fn stats(a: JsonArgs) -> CmdResult {
    let s = read(&a.project, |m| m.stats())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(Exit::Ok);
    }
    let groups = |g: &[(String, usize)]| {
        g.iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "current {} (archived {}), history {}, expired {}, with vectors {}",
        s.current, s.archived, s.history, s.expired, s.with_vectors
    );
    println!("by scope: {}", groups(&s.by_scope));
    println!("by type: {}", groups(&s.by_type));
    println!("by source: {}", groups(&s.by_source));
    println!("average importance {}", s.avg_importance);
    Ok(Exit::Ok)
}

fn export(a: ExportArgs) -> CmdResult {
    let memories = read(&a.project, |m| m.export())?;
    let mut out: Box<dyn Write> = match &a.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    for m in &memories {
        writeln!(out, "{}", serde_json::to_string(m)?)?;
    }
    out.flush()?;
    if let Some(path) = &a.output {
        eprintln!("exported {} memories to {}", memories.len(), path.display());
    }
    Ok(Exit::Ok)
}
