//! `rebuild_index` (infrastructure): brings every index of a project up to date in one call
//! — the code index (and the code embeddings where an embedder is configured), the knowledge
//! and memory full-text indexes (index text recomputed with the current tokenizer), and the
//! memory embeddings — reporting progress as it goes. It lives here because it reaches three
//! services; its state is [`ProjectServices`].
//!
//! `dryRun` reports what a rebuild would change (files added, changed and removed; stale
//! index rows; vectors to make) and writes nothing: on a project without a database it does
//! not even create one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use alembic_code::{IndexPlan, Progress};
use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ProjectServices;

/// Paths listed per kind of change in a dry run's answer.
const LISTED_PATHS: usize = 20;
/// Share of the progress the code index takes (it is most of the work).
const CODE_SHARE: f64 = 0.6;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct RebuildArgs {
    /// parse every file and embed everything again, not only what changed
    #[serde(default)]
    force: bool,
    /// only report what a rebuild would change; write nothing
    #[serde(default)]
    dry_run: bool,
}

/// The `rebuild_index` tool over the project's services.
pub(crate) fn rebuild_index(services: ProjectServices) -> ToolDefinition {
    ToolDefinition::typed::<RebuildArgs>(
        "rebuild_index",
        "Rebuild the project's indexes: the code index (and code embeddings where configured), \
         the knowledge and memory search indexes and the memory embeddings, with progress. \
         force re-parses and re-embeds everything; dryRun only reports what would change \
         (files added, changed, removed; stale index rows; vectors to make).",
        ToolModule::Infrastructure,
        EffectClass::WritesKnowledge,
    )
    .timeout(Duration::from_secs(30 * 60))
    .handler(services, |services, args, ctx| async move {
        tokio::task::spawn_blocking(move || {
            if args.dry_run {
                dry_run(&services, args.force)
            } else {
                rebuild(&services, args.force, &ctx)
            }
        })
        .await
        .map_err(|e| ToolError::failed(format!("rebuild worker failed: {e}")))?
    })
}

fn code_error(e: alembic_code::IndexError) -> ToolError {
    ToolError::failed(format!("code index: {e}"))
}

fn listed(paths: &[String]) -> Value {
    json!({"count": paths.len(), "paths": paths.iter().take(LISTED_PATHS).collect::<Vec<_>>()})
}

fn dry_run(s: &ProjectServices, force: bool) -> Result<ToolOutput, ToolError> {
    let db_exists = alembic_store::project_db_path(s.code.root()).exists();
    let plan = if db_exists {
        s.code.plan().map_err(code_error)?
    } else {
        IndexPlan::for_new_project(s.code.root())
    };
    let parse = if force {
        plan.files
    } else {
        plan.added.len() + plan.changed.len()
    };
    let (knowledge, memory, vectors) = if db_exists {
        let k = s.knowledge.with(|kb| kb.reindex(true))?;
        let m = s.memory.with_store(|m| m.reindex(true))?;
        let v = s.memory.with_store(|m| m.vectors_to_make(force))?;
        (k, m, v)
    } else {
        Default::default()
    };
    let text = format!(
        "dry run, nothing written: code index {} file(s), would read {parse} ({} added, {} \
         changed, {} removed); knowledge {} row(s), {} stale; memory {} row(s), {} stale{}",
        plan.files,
        plan.added.len(),
        plan.changed.len(),
        plan.removed.len(),
        knowledge.rows,
        knowledge.stale,
        memory.rows,
        memory.stale,
        match &vectors {
            Some((model, n)) => format!("; {n} memory vector(s) to make with {model}"),
            None => String::new(),
        }
    );
    let data = json!({
        "dryRun": true,
        "code": {"files": plan.files, "indexed": plan.indexed, "wouldRead": parse,
                 "added": listed(&plan.added), "changed": listed(&plan.changed),
                 "removed": listed(&plan.removed),
                 "embeddings": s.code.embedder().is_some()},
        "knowledge": {"rows": knowledge.rows, "stale": knowledge.stale},
        "memory": {"rows": memory.rows, "stale": memory.stale,
                   "vectorsToMake": vectors.as_ref().map(|v| v.1),
                   "embeddingModel": vectors.as_ref().map(|v| v.0.clone())},
    });
    Ok(ToolOutput::new(data, text))
}

fn check_cancel(ctx: &ToolContext) -> Result<(), ToolError> {
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    Ok(())
}

/// The code index with per-file progress (0..CODE_SHARE of the whole).
fn rebuild_code(s: &ProjectServices, force: bool, ctx: &ToolContext) -> Result<Value, ToolError> {
    ctx.progress("code index: scanning files", Some(0.0));
    let total = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let report = s
        .code
        .rebuild(force, &|p| match p {
            Progress::Walked { to_check, .. } => total.store(to_check, Ordering::Relaxed),
            Progress::Phase(_) => {}
            Progress::Checked => {
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                let t = total.load(Ordering::Relaxed).max(d);
                ctx.progress(
                    format!("code index: {d}/{t} files read"),
                    Some(CODE_SHARE * d as f64 / t as f64),
                );
            }
        })
        .map_err(code_error)?;
    let chunks = match s.code.embedder() {
        Some(_) => {
            ctx.progress("code embeddings", Some(CODE_SHARE));
            Some(s.code.semantic().map_err(code_error)?.len())
        }
        None => None,
    };
    Ok(json!({"report": report, "embeddedChunks": chunks}))
}

fn rebuild(s: &ProjectServices, force: bool, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let code = rebuild_code(s, force, ctx)?;
    check_cancel(ctx)?;
    ctx.progress("knowledge search index", Some(0.7));
    let knowledge = s.knowledge.with(|kb| kb.reindex(false))?;
    check_cancel(ctx)?;
    ctx.progress("memory search index", Some(0.8));
    let memory = s.memory.with_store(|m| m.reindex(false))?;
    let model = s
        .memory
        .with_store(|m| m.vectors_to_make(false))?
        .map(|v| v.0);
    let embedded = s.memory.with_store(|m| {
        m.reembed(force, &|n| {
            ctx.progress(format!("memory embeddings: {n}"), Some(0.9));
        })
    })?;
    ctx.progress("done", Some(1.0));
    let r = &code["report"];
    let text = format!(
        "rebuilt: code index {} file(s) ({} parsed, {} removed){}; knowledge {} row(s), {} \
         re-indexed; memory {} row(s), {} re-indexed{}",
        r["files"],
        r["parsed"],
        r["removed"],
        match code["embeddedChunks"].as_u64() {
            Some(n) => format!(", {n} code chunk(s) embedded"),
            None => String::new(),
        },
        knowledge.rows,
        knowledge.stale,
        memory.rows,
        memory.stale,
        match &model {
            Some(m) => format!(", {embedded} vector(s) made with {m}"),
            None => String::new(),
        }
    );
    let data = json!({
        "dryRun": false,
        "code": code,
        "knowledge": {"rows": knowledge.rows, "reindexed": knowledge.stale},
        "memory": {"rows": memory.rows, "reindexed": memory.stale, "embedded": embedded,
                   "embeddingModel": model},
    });
    Ok(ToolOutput::new(data, text))
}
