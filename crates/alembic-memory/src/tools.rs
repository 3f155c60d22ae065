//! Memory tools for agents and IDE clients: `memory_recall`, `memory_remember` and
//! `memory_forget`, backed by the project's [`PersistentMemory`].
//!
//! Handlers find the store as the [`MemoryService`] in the pipeline's services. The service
//! opens `.alembic/alembic.db` on first use, so a runtime that only lists tools writes nothing.
//! SQLite work is short (one indexed query or one transaction) and runs on the calling task.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use alembic_tools::{
    EffectClass, RegistryError, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput,
    ToolRegistry, handler_fn,
};
use serde_json::{Value, json};

use crate::{
    ConsolidateStats, EmbedderConfig, MemoryConfig, MemoryError, MemorySource, MemoryType,
    NewMemory, PersistentMemory, RetrieveOptions, ScoredMemory, build_embedder,
};

/// The longest memory `memory_remember` accepts, in characters.
pub const MAX_CONTENT_CHARS: usize = 4000;
/// The most memories one `memory_recall` returns.
pub const MAX_RECALL: u64 = 50;

/// The project's persistent memory as a shared service, opened on first use.
pub struct MemoryService {
    root: PathBuf,
    config: MemoryConfig,
    embedder: EmbedderConfig,
    store: OnceLock<Result<Mutex<PersistentMemory>, String>>,
}

impl std::fmt::Debug for MemoryService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryService")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl MemoryService {
    /// The memory of the project at `root`, opened when a tool first needs it.
    pub fn for_project(root: &Path, config: MemoryConfig) -> Self {
        MemoryService {
            root: root.to_path_buf(),
            config,
            embedder: EmbedderConfig::None,
            store: OnceLock::new(),
        }
    }

    /// Embeds memories and queries with this embedder (built when the store opens). If it
    /// cannot be built, the tools work lexically and the reason is logged.
    pub fn with_embedder_config(mut self, embedder: EmbedderConfig) -> Self {
        self.embedder = embedder;
        self
    }

    /// The project store with the configured embedder, or lexical when it cannot be built.
    fn open_store(&self) -> Result<PersistentMemory, String> {
        let store = PersistentMemory::open_project(&self.root, self.config.clone())
            .map_err(|e| format!("cannot open the persistent memory: {e}"))?;
        let embedder = build_embedder(&self.embedder).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "memory embedder unavailable; memory tools are lexical");
            None
        });
        Ok(store.with_embedder(embedder))
    }

    /// A service over an already open store (tests, embedders).
    pub fn from_store(memory: PersistentMemory) -> Self {
        let service = MemoryService {
            root: PathBuf::new(),
            config: memory.config().clone(),
            embedder: EmbedderConfig::None,
            store: OnceLock::new(),
        };
        let _ = service.store.set(Ok(Mutex::new(memory)));
        service
    }

    /// Runs `f` with the store, opening it first if needed. The tools, the CLI's reads and the
    /// agent loop all share this one store.
    pub fn with_store<T>(
        &self,
        f: impl FnOnce(&mut PersistentMemory) -> Result<T, MemoryError>,
    ) -> Result<T, ToolError> {
        let store = self.store.get_or_init(|| self.open_store().map(Mutex::new));
        let store = store.as_ref().map_err(|e| ToolError::failed(e.clone()))?;
        let mut guard = store.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard).map_err(|e| ToolError::failed(e.to_string()))
    }
}

/// Registers the three memory tools.
pub fn register_tools(registry: &ToolRegistry) -> Result<(), RegistryError> {
    registry.register(recall_tool())?;
    registry.register(remember_tool())?;
    registry.register(forget_tool())
}

fn service(ctx: &ToolContext) -> Result<Arc<MemoryService>, ToolError> {
    ctx.service::<MemoryService>()
        .ok_or_else(|| ToolError::failed("persistent memory is not available in this runtime"))
}

fn recall_tool() -> ToolDefinition {
    ToolDefinition::new(
        "memory_recall",
        "Recall long-term memories about this project (facts, insights, preferences) relevant to a \
         query, best first, each with its id, type, importance and score.",
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "what to recall"},
                "k": {"type": "integer", "minimum": 1, "maximum": MAX_RECALL, "default": 5,
                      "description": "how many memories at most"},
                "type": {"type": "string", "enum": ["fact", "insight", "preference"],
                         "description": "only memories of this type"}
            },
            "required": ["query"],
            "additionalProperties": false
        }),
        ToolModule::Query,
        EffectClass::ReadOnly,
        handler_fn(|args, ctx| async move {
            let query = args["query"].as_str().unwrap_or_default().to_string();
            let options = RetrieveOptions {
                limit: args["k"].as_u64().unwrap_or(5).clamp(1, MAX_RECALL) as usize,
                kind: memory_type(&args)?,
                ..RetrieveOptions::default()
            };
            let hits = service(&ctx)?.with_store(|m| m.retrieve(&query, &options))?;
            Ok(recall_output(&query, &hits))
        }),
    )
}

fn memory_type(args: &Value) -> Result<Option<MemoryType>, ToolError> {
    match args["type"].as_str() {
        None => Ok(None),
        Some(t) => t
            .parse()
            .map(Some)
            .map_err(|e: MemoryError| ToolError::Invalid(e.to_string())),
    }
}

fn recall_output(query: &str, hits: &[ScoredMemory]) -> ToolOutput {
    let memories: Vec<Value> = hits
        .iter()
        .map(|h| {
            json!({
                "id": h.memory.id,
                "type": h.memory.kind.as_str(),
                "content": h.memory.content,
                "importance": h.memory.importance,
                "score": round3(h.score),
                "relevance": round3(h.parts.relevance),
            })
        })
        .collect();
    let mut text = match hits.len() {
        0 => format!("no memories for \"{query}\""),
        n => format!("{n} memories for \"{query}\":"),
    };
    for h in hits {
        text.push_str(&format!(
            "\n- [{} {:.2}] {} ({})",
            h.memory.kind.as_str(),
            h.score,
            h.memory.content,
            h.memory.id
        ));
    }
    ToolOutput::new(json!({"query": query, "memories": memories}), text)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn remember_tool() -> ToolDefinition {
    ToolDefinition::new(
        "memory_remember",
        "Keep a long-term memory about this project. It is consolidated with what is already \
         known: a near duplicate updates or merges into the existing memory, a contradiction \
         replaces it (the old version is kept as history). Returns what happened and the id.",
        json!({
            "type": "object",
            "properties": {
                "content": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT_CHARS,
                            "description": "the memory, one self-contained statement"},
                "type": {"type": "string", "enum": ["fact", "insight", "preference"],
                         "default": "fact"},
                "importance": {"type": "number", "minimum": 1, "maximum": 10, "default": 5,
                               "description": "1 trivial … 10 essential"}
            },
            "required": ["content"],
            "additionalProperties": false
        }),
        ToolModule::Infrastructure,
        EffectClass::WritesMemory,
        handler_fn(|args, ctx| async move {
            let candidate = NewMemory::fact(args["content"].as_str().unwrap_or_default().trim())
                .with_type(memory_type(&args)?.unwrap_or(MemoryType::Fact))
                .with_importance(args["importance"].as_f64().unwrap_or(5.0).clamp(1.0, 10.0))
                .with_source(MemorySource::User)
                .with_provenance(ctx.caller.id.clone());
            let stats =
                service(&ctx)?.with_store(|m| m.consolidate(std::slice::from_ref(&candidate)))?;
            remember_output(&stats)
        }),
    )
}

fn remember_output(stats: &ConsolidateStats) -> Result<ToolOutput, ToolError> {
    let outcome = stats
        .outcomes
        .first()
        .ok_or_else(|| ToolError::failed("consolidation returned no outcome"))?;
    let data = serde_json::to_value(outcome).map_err(|e| ToolError::failed(e.to_string()))?;
    let action = data["action"].as_str().unwrap_or("done").to_string();
    let id = outcome.id.as_deref().unwrap_or("none");
    let mut text = format!("{action} memory {id}");
    if let Some(previous) = &outcome.previous {
        text.push_str(&format!(" (previous version {previous})"));
    }
    if let Some(s) = outcome.similarity {
        text.push_str(&format!(", similarity {s:.2}"));
    }
    Ok(ToolOutput::new(data, text))
}

fn forget_tool() -> ToolDefinition {
    ToolDefinition::new(
        "memory_forget",
        "Forget a long-term memory by its id (as returned by memory_recall or memory_remember).",
        json!({
            "type": "object",
            "properties": {"id": {"type": "string", "minLength": 1, "description": "the memory id"}},
            "required": ["id"],
            "additionalProperties": false
        }),
        ToolModule::Infrastructure,
        EffectClass::WritesMemory,
        handler_fn(|args, ctx| async move {
            let id = args["id"].as_str().unwrap_or_default().to_string();
            if !service(&ctx)?.with_store(|m| m.forget(&id))? {
                return Err(ToolError::NotFound(format!("no memory with id \"{id}\"")));
            }
            Ok(ToolOutput::new(
                json!({"id": id, "forgotten": true}),
                format!("forgot memory {id}"),
            ))
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ManualClock;
    use alembic_tools::{Allowlist, Caller, OutcomeStatus, Pipeline, Services, ToolCall};
    use pretty_assertions::assert_eq;

    fn pipeline() -> Arc<Pipeline> {
        let registry = Arc::new(ToolRegistry::new());
        register_tools(&registry).unwrap();
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let memory = PersistentMemory::open_in_memory(MemoryConfig::default(), clock).unwrap();
        let services = Services::builder()
            .insert(Arc::new(MemoryService::from_store(memory)))
            .build();
        // Memory tools change only Alembic's own state; allow them as the real policy does.
        Pipeline::builder(registry, ".")
            .services(services)
            .safety(Arc::new(AllowAll))
            .build()
    }

    struct AllowAll;
    impl alembic_tools::SafetyCheck for AllowAll {
        fn check(&self, _: &alembic_tools::PreparedCall) -> alembic_tools::SafetyDecision {
            alembic_tools::SafetyDecision::Allow
        }
    }

    async fn call(p: &Arc<Pipeline>, tool: &str, args: Value) -> alembic_tools::ToolOutcome {
        let caller = Caller::new("mcp:test", Allowlist::All);
        p.execute(ToolCall::new(tool, args, caller)).await
    }

    #[tokio::test]
    async fn remember_recall_forget() {
        let p = pipeline();
        let kept = call(
            &p,
            "memory_remember",
            json!({"content": "The payment module uses the Coordinator pattern", "importance": 8}),
        )
        .await;
        assert_eq!(kept.status, OutcomeStatus::Ok, "{kept:?}");
        let data = kept.output.unwrap().data;
        assert_eq!(data["action"], "added");
        let id = data["id"].as_str().unwrap().to_string();

        let found = call(
            &p,
            "memory_recall",
            json!({"query": "payment coordinator", "k": 3}),
        )
        .await;
        let out = found.output.unwrap();
        assert_eq!(out.data["memories"][0]["id"], id.as_str());
        assert_eq!(out.data["memories"][0]["type"], "fact");
        assert!(
            out.text
                .starts_with("1 memories for \"payment coordinator\":\n- [fact "),
            "{}",
            out.text
        );

        let gone = call(&p, "memory_forget", json!({"id": id})).await;
        assert_eq!(gone.status, OutcomeStatus::Ok);
        let again = call(&p, "memory_recall", json!({"query": "payment coordinator"})).await;
        assert_eq!(again.output.unwrap().data["memories"], json!([]));
        let missing = call(&p, "memory_forget", json!({"id": id})).await;
        assert_eq!(missing.status, OutcomeStatus::Error);
        assert_eq!(
            missing.error.unwrap(),
            format!("not found: no memory with id \"{id}\"")
        );
    }

    #[tokio::test]
    async fn a_near_duplicate_is_consolidated_not_added() {
        let p = pipeline();
        let text = "CI runs on GitHub Actions for every pull request";
        call(&p, "memory_remember", json!({"content": text})).await;
        let again = call(&p, "memory_remember", json!({"content": text})).await;
        let action = again.output.unwrap().data["action"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(action != "added", "a duplicate was added again");
    }

    #[tokio::test]
    async fn bad_arguments_are_refused_before_the_store() {
        let p = pipeline();
        let r = call(
            &p,
            "memory_remember",
            json!({"content": "x", "type": "rumour"}),
        )
        .await;
        assert_eq!(r.status, OutcomeStatus::InvalidArguments);
        let r = call(&p, "memory_recall", json!({"query": "x", "k": 500})).await;
        assert_eq!(r.status, OutcomeStatus::InvalidArguments);
    }

    #[tokio::test]
    async fn without_the_service_the_tools_say_so() {
        let registry = Arc::new(ToolRegistry::new());
        register_tools(&registry).unwrap();
        let p = Pipeline::builder(registry, ".").build();
        let r = call(&p, "memory_recall", json!({"query": "x"})).await;
        assert_eq!(
            r.error.unwrap(),
            "persistent memory is not available in this runtime"
        );
    }
}
