//! `alembic memory add|search|list|show|forget|gc|stats|export|import`
//!
//! Works on the project's persistent memory (`.alembic/alembic.db`) with the settings of the
//! `[memory]` section of `.alembic/config.toml` (capacity, lifetimes, weights, embedder).
//! Embeddings: `ALEMBIC_EMBEDDINGS` if set, else the section's `embedder` key, else the local
//! all-MiniLM-L6-v2 when `scripts/fetch-models` has installed it (or `ALEMBIC_MINILM_DIR`
//! points at it). `ALEMBIC_EMBEDDINGS=none` turns embeddings off, and
//! `ALEMBIC_EMBEDDINGS=openai` uses `OPENAI_BASE_URL` (default https://api.openai.com/v1),
//! `OPENAI_API_KEY` and `ALEMBIC_EMBEDDING_MODEL` (default text-embedding-3-small).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use alembic_memory::{
    EmbedderConfig, ListFilter, Memory, MemorySource, MemoryType, NewMemory, PersistentMemory,
    RetrieveOptions, Scope, ScoredMemory, build_embedder, default_model_dir,
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
        MemoryCommand::Add(a) => add(a),
        MemoryCommand::Search(a) => search(a),
        MemoryCommand::List(a) => list(a),
        MemoryCommand::Show(a) => show(a),
        MemoryCommand::Forget(a) => forget(a),
        MemoryCommand::Gc(a) => gc(a),
        MemoryCommand::Stats(a) => stats(a),
        MemoryCommand::Export(a) => export(a),
        MemoryCommand::Import(a) => import(a),
    }
}

fn usage<T: std::str::FromStr<Err = alembic_memory::MemoryError>>(text: &str) -> anyhow::Result<T> {
    text.parse()
        .map_err(|e: alembic_memory::MemoryError| UsageError(e.to_string()).into())
}

/// The embedder chosen by `ALEMBIC_EMBEDDINGS`, else by the config file (see the module docs).
fn embedder_config(configured: Option<EmbedderConfig>) -> anyhow::Result<EmbedderConfig> {
    let choice = match (std::env::var("ALEMBIC_EMBEDDINGS"), configured) {
        (Ok(choice), _) => choice,
        (Err(_), Some(configured)) => return Ok(configured),
        (Err(_), None) => "auto".into(),
    };
    let local = default_model_dir().filter(|d| d.join("model.safetensors").is_file());
    Ok(match choice.as_str() {
        "none" => EmbedderConfig::None,
        "auto" => local.map_or(EmbedderConfig::None, |dir| EmbedderConfig::Local { dir }),
        "local" => EmbedderConfig::Local {
            dir: default_model_dir()
                .context("cannot locate the model directory: set ALEMBIC_MINILM_DIR")?,
        },
        "openai" => EmbedderConfig::OpenAi {
            base_url: std::env::var("OPENAI_BASE_URL")
                .unwrap_or_else(|_| "https://api.openai.com/v1".into()),
            api_key: std::env::var("OPENAI_API_KEY").ok(),
            model: std::env::var("ALEMBIC_EMBEDDING_MODEL")
                .unwrap_or_else(|_| "text-embedding-3-small".into()),
        },
        other => anyhow::bail!(UsageError(format!(
            "ALEMBIC_EMBEDDINGS={other:?} is not supported; accepted: auto, none, local, openai"
        ))),
    })
}

/// Opens the project memory. `embed` is false for commands that never compare vectors.
fn open(project: &ProjectArgs, embed: bool) -> anyhow::Result<PersistentMemory> {
    if !project.project.is_dir() {
        anyhow::bail!(UsageError(format!(
            "project directory {} does not exist",
            project.project.display()
        )));
    }
    let config = alembic_runtime::ProjectConfig::load(&project.project)?;
    let settings = alembic_runtime::memory_config::memory_settings(&config)?;
    let pm = PersistentMemory::open_project(&project.project, settings.memory)
        .with_context(|| format!("cannot open the memory of {}", project.project.display()))?;
    if !embed {
        return Ok(pm);
    }
    let embedder =
        build_embedder(&embedder_config(settings.embedder)?).context("cannot set up embeddings")?;
    Ok(pm.with_embedder(embedder))
}

fn add(a: AddArgs) -> CmdResult {
    let input = NewMemory {
        kind: usage::<MemoryType>(&a.kind)?,
        source: usage::<MemorySource>(&a.source)?,
        scope: usage::<Scope>(&a.scope)?,
        content: a.text,
        importance: a.importance,
        ttl_days: a.ttl_days,
        ..NewMemory::default()
    };
    let mut pm = open(&a.project, true)?;
    let stats = pm
        .consolidate(std::slice::from_ref(&input))
        .map_err(user_error)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
        return Ok(Exit::Ok);
    }
    for o in &stats.outcomes {
        let action = serde_json::to_value(o.action)?
            .as_str()
            .unwrap_or_default()
            .to_string();
        match (&o.id, &o.previous) {
            (Some(id), Some(prev)) => println!("{action} {id} (supersedes {prev})"),
            (Some(id), None) => println!("{action} {id}"),
            _ => println!("{action}: too short to remember (at least 5 characters)"),
        }
    }
    Ok(Exit::Ok)
}

/// Input errors from the library (empty text, bad importance) are usage errors (exit 2).
fn user_error(e: alembic_memory::MemoryError) -> anyhow::Error {
    use alembic_memory::MemoryError as E;
    match e {
        E::EmptyContent { .. }
        | E::ContentTooLong { .. }
        | E::BadImportance { .. }
        | E::UnknownValue { .. } => UsageError(e.to_string()).into(),
        other => other.into(),
    }
}

fn search(a: SearchArgs) -> CmdResult {
    let scope = a.scope.as_deref().map(usage::<Scope>).transpose()?;
    let mut pm = open(&a.project, true)?;
    let options = RetrieveOptions {
        limit: a.k,
        scope,
        ..RetrieveOptions::default()
    };
    let hits = pm.retrieve(&a.query, &options)?;
    if a.json {
        let results: Vec<serde_json::Value> =
            hits.iter().map(|h| scored_json(h, a.explain)).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "results": results }))?
        );
        return Ok(Exit::Ok);
    }
    if hits.is_empty() {
        println!("no relevant memories");
    }
    for (i, h) in hits.iter().enumerate() {
        println!(
            "{:>2}. {} [{}] score {:.3}  {}",
            i + 1,
            h.memory.id,
            h.memory.kind,
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

fn scored_json(h: &ScoredMemory, explain: bool) -> serde_json::Value {
    let m = &h.memory;
    let mut v = json!({
        "id": m.id, "content": m.content, "type": m.kind, "score": h.score,
        "scope": m.scope, "source": m.source, "importance": m.importance,
        "access_count": m.access_count, "updated": iso(m.updated),
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
    let pm = open(&a.project, false)?;
    let filter = ListFilter {
        include_archived: a.archived,
        include_history: a.history,
        limit: a.limit,
        ..Default::default()
    };
    let memories = pm.list(&filter)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "memories": memories }))?
        );
    } else if memories.is_empty() {
        println!("no memories");
    } else {
        memories.iter().for_each(|m| println!("{}", line(m)));
    }
    Ok(Exit::Ok)
}

fn show(a: ShowArgs) -> CmdResult {
    let pm = open(&a.project, false)?;
    let Some(memory) = pm.get(&a.id)? else {
        anyhow::bail!(UsageError(format!(
            "no memory with id {} (see alembic memory list)",
            a.id
        )));
    };
    let versions = if a.history {
        pm.history(&a.id)?
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

fn forget(a: IdArgs) -> CmdResult {
    let mut pm = open(&a.project, false)?;
    if !pm.forget(&a.id)? {
        anyhow::bail!(UsageError(format!(
            "no memory with id {} (see alembic memory list)",
            a.id
        )));
    }
    if a.json {
        println!("{}", json!({ "forgotten": a.id }));
    } else {
        println!("forgot {}", a.id);
    }
    Ok(Exit::Ok)
}

fn gc(a: JsonArgs) -> CmdResult {
    let mut pm = open(&a.project, false)?;
    let s = pm.gc()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        println!(
            "expired {}, forgotten {}, archived {}, remaining {}",
            s.expired, s.forgotten, s.archived, s.remaining
        );
    }
    Ok(Exit::Ok)
}

fn stats(a: JsonArgs) -> CmdResult {
    let pm = open(&a.project, false)?;
    let s = pm.stats()?;
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
    let pm = open(&a.project, false)?;
    let memories = pm.export()?;
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

fn import(a: ImportArgs) -> CmdResult {
    let file = std::fs::File::open(&a.file)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", a.file.display())))?;
    let mut memories = Vec::new();
    for (i, l) in std::io::BufReader::new(file).lines().enumerate() {
        let l = l?;
        if l.trim().is_empty() {
            continue;
        }
        let m: Memory = serde_json::from_str(&l).map_err(|e| {
            UsageError(format!(
                "{} line {}: not an exported memory: {e}",
                a.file.display(),
                i + 1
            ))
        })?;
        memories.push(m);
    }
    let mut pm = open(&a.project, false)?;
    let (imported, skipped) = pm.import(&memories)?;
    if a.json {
        println!("{}", json!({ "imported": imported, "skipped": skipped }));
    } else {
        println!("imported {imported}, skipped {skipped} already present");
    }
    Ok(Exit::Ok)
}
