//! Memory tools for agents and IDE clients: `memory_recall`, `memory_remember` and
//! `memory_forget`, and the operator tools `memory_import` and `memory_gc` that the CLI calls
//! (in no agent preset), all backed by the project's one [`MemoryService`].
//!
//! Each tool is registered with the service handle, so a runtime without persistent memory
//! simply does not register them. With a team configured ([`MemoryService::with_team`]),
//! `memory_remember` with scope `team` writes to the team store, `memory_recall` merges team
//! memories into the local ones (or says why the team store is unavailable) and
//! `memory_forget` reaches team memories too. SQLite work is short (one indexed query or one
//! transaction) and runs on the calling task.

use std::sync::Arc;

use alembic_tools::{
    EffectClass, RegistryError, ToolDefinition, ToolError, ToolModule, ToolOutput, ToolRegistry,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use crate::service::{MemoryService, TeamOpener};
use crate::{
    ConsolidateStats, Located, MemorySource, MemoryType, NewMemory, Origin, RetrieveOptions, Scope,
    ScoredMemory,
};

/// The longest memory `memory_remember` accepts, in characters.
pub const MAX_CONTENT_CHARS: usize = 4000;
/// The most memories one `memory_recall` returns.
pub const MAX_RECALL: u64 = 50;

/// Registers the memory tools (agent and operator) bound to `memory`.
pub fn register_tools(
    registry: &ToolRegistry,
    memory: Arc<MemoryService>,
) -> Result<(), RegistryError> {
    registry.register(recall_tool(Arc::clone(&memory)))?;
    registry.register(remember_tool(Arc::clone(&memory)))?;
    registry.register(forget_tool(Arc::clone(&memory)))?;
    crate::team_tools::register_tools(registry, Arc::clone(&memory))?;
    crate::operator_tools::register_tools(registry, memory)
}

// The kinds of memory as tool arguments; no doc comments on the variants, so the schema stays
// a plain string enum.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum KindArg {
    Fact,
    Insight,
    Preference,
}

impl From<KindArg> for MemoryType {
    fn from(kind: KindArg) -> Self {
        match kind {
            KindArg::Fact => MemoryType::Fact,
            KindArg::Insight => MemoryType::Insight,
            KindArg::Preference => MemoryType::Preference,
        }
    }
}

fn five() -> i64 {
    5
}

fn fact() -> KindArg {
    KindArg::Fact
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    /// what to recall
    #[schemars(length(min = 1))]
    query: String,
    /// how many memories at most
    #[serde(default = "five")]
    #[schemars(range(min = 1, max = MAX_RECALL))]
    k: i64,
    /// only memories of this type
    #[serde(rename = "type")]
    kind: Option<KindArg>,
}

fn recall_tool(memory: Arc<MemoryService>) -> ToolDefinition {
    ToolDefinition::typed::<RecallArgs>(
        "memory_recall",
        "Recall long-term memories about this project (facts, insights, preferences) relevant to a \
         query, best first, each with its id, type, importance and score.",
        ToolModule::Query,
        EffectClass::ReadOnly,
    )
    .handler(memory, |memory, args, _ctx| async move {
        let options = RetrieveOptions {
            limit: args.k.clamp(1, MAX_RECALL as i64) as usize,
            kind: args.kind.map(MemoryType::from),
            ..RetrieveOptions::default()
        };
        let found = memory.recall(&args.query, &options)?;
        let mut output = recall_output(&args.query, &found.items);
        if let Some(e) = found.team_error {
            output.data["teamError"] = json!(e);
            output
                .text
                .push_str(&format!("\nteam memories unavailable: {e}"));
        }
        Ok(output)
    })
}

/// Each hit with its store (`local` or `team`); the text marks team memories.
fn recall_output(query: &str, hits: &[Located<ScoredMemory>]) -> ToolOutput {
    let memories: Vec<Value> = hits
        .iter()
        .map(|Located { item: h, store }| {
            json!({
                "id": h.memory.id,
                "type": h.memory.kind.as_str(),
                "content": h.memory.content,
                "importance": h.memory.importance,
                "score": round3(h.score),
                "relevance": round3(h.parts.relevance),
                "store": store,
            })
        })
        .collect();
    let mut text = match hits.len() {
        0 => format!("no memories for \"{query}\""),
        n => format!("{n} memories for \"{query}\":"),
    };
    for Located { item: h, store } in hits {
        let team = if *store == Origin::Team { " team" } else { "" };
        text.push_str(&format!(
            "\n- [{}{team} {:.2}] {} ({})",
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

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    /// the memory, one self-contained statement
    #[schemars(length(min = 1, max = MAX_CONTENT_CHARS))]
    content: String,
    #[serde(rename = "type", default = "fact")]
    kind: KindArg,
    /// 1 trivial … 10 essential
    #[schemars(range(min = 1, max = 10), extend("default" = 5))]
    importance: Option<f64>,
    /// whose memory: this project (the default), the user across projects, or the team
    scope: Option<ScopeArg>,
    /// who produced it (default user)
    source: Option<SourceArg>,
    /// forget it after this many days (default: kept until unused)
    #[serde(rename = "ttlDays")]
    ttl_days: Option<f64>,
}

// Scopes and sources as tool arguments (plain string enums: no doc comments on variants).
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ScopeArg {
    Project,
    User,
    Team,
}

#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum SourceArg {
    Bootstrap,
    User,
    System,
}

impl RememberArgs {
    /// The candidate memory, with `provenance` (the caller) recorded.
    fn candidate(self, provenance: String) -> NewMemory {
        let scope = match self.scope {
            None | Some(ScopeArg::Project) => Scope::Project,
            Some(ScopeArg::User) => Scope::User,
            Some(ScopeArg::Team) => Scope::Team,
        };
        let source = match self.source {
            None | Some(SourceArg::User) => MemorySource::User,
            Some(SourceArg::Bootstrap) => MemorySource::Bootstrap,
            Some(SourceArg::System) => MemorySource::System,
        };
        let mut candidate = NewMemory::fact(self.content.trim())
            .with_type(self.kind.into())
            .with_importance(self.importance.unwrap_or(5.0).clamp(1.0, 10.0))
            .with_scope(scope)
            .with_source(source)
            .with_provenance(provenance);
        candidate.ttl_days = self.ttl_days;
        candidate
    }
}

fn remember_tool(memory: Arc<MemoryService>) -> ToolDefinition {
    ToolDefinition::typed::<RememberArgs>(
        "memory_remember",
        "Keep a long-term memory about this project. It is consolidated with what is already \
         known: a near duplicate updates or merges into the existing memory, a contradiction \
         replaces it (the old version is kept as history). Returns what happened and the id.",
        ToolModule::Infrastructure,
        EffectClass::WritesMemory,
    )
    .handler(memory, |memory, args, ctx| async move {
        let candidate = args.candidate(ctx.caller.id.clone());
        let one = std::slice::from_ref(&candidate);
        // with a team configured, team-scoped memories go to the team store (or fail there),
        // after the local ones it does not hold yet, so consolidation compares with them too
        if candidate.scope == Scope::Team && memory.team_label().is_some() {
            crate::team_tools::push_unpushed(&memory)?;
            if let Some(stats) = memory.with_team_store(|t| t.consolidate(one))? {
                return remember_output(&stats);
            }
        }
        let stats = memory.with_store(|m| m.consolidate(one))?;
        remember_output(&stats)
    })
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

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ForgetArgs {
    /// the memory id
    #[schemars(length(min = 1))]
    id: String,
}

fn forget_tool(memory: Arc<MemoryService>) -> ToolDefinition {
    ToolDefinition::typed::<ForgetArgs>(
        "memory_forget",
        "Forget a long-term memory by its id (as returned by memory_recall or memory_remember).",
        ToolModule::Infrastructure,
        EffectClass::WritesMemory,
    )
    .handler(memory, |memory, args, _ctx| async move {
        let id = args.id;
        let forgotten = memory.with_store(|m| m.forget(&id))?
            || memory.with_team_store(|t| t.forget(&id))? == Some(true);
        if !forgotten {
            return Err(ToolError::NotFound(format!("no memory with id \"{id}\"")));
        }
        Ok(ToolOutput::new(
            json!({"id": id, "forgotten": true}),
            format!("forgot memory {id}"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ManualClock, MemoryConfig, PersistentMemory};
    use alembic_tools::{Allowlist, Caller, OutcomeStatus, Pipeline, ToolCall};
    use pretty_assertions::assert_eq;

    fn pipeline() -> Arc<Pipeline> {
        pipeline_with_memory().0
    }

    fn pipeline_with_memory() -> (Arc<Pipeline>, Arc<MemoryService>) {
        let registry = Arc::new(ToolRegistry::new());
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let memory = PersistentMemory::open_in_memory(MemoryConfig::default(), clock).unwrap();
        let memory = Arc::new(MemoryService::from_store(memory));
        register_tools(&registry, Arc::clone(&memory)).unwrap();
        // Memory tools change only Alembic's own state; allow them as the real policy does.
        let pipeline = Pipeline::builder(registry, ".")
            .safety(Arc::new(AllowAll))
            .build();
        (pipeline, memory)
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
    async fn remember_keeps_scope_source_ttl_and_the_caller() {
        let (p, memory) = pipeline_with_memory();
        let args = json!({"content": "Releases are tagged on Fridays", "scope": "team",
                          "source": "bootstrap", "ttlDays": 2});
        let kept = call(&p, "memory_remember", args).await;
        assert_eq!(kept.status, OutcomeStatus::Ok, "{kept:?}");
        let id = kept.output.unwrap().data["id"]
            .as_str()
            .unwrap()
            .to_string();
        let m = memory.read(|m| m.get(&id)).unwrap().unwrap().unwrap();
        assert_eq!(
            (m.scope, m.source, m.provenance.as_deref()),
            (Scope::Team, MemorySource::Bootstrap, Some("mcp:test"))
        );
        assert_eq!(m.expires_at, Some(1_700_000_000_000 + 2 * crate::DAY_MS));
    }

    #[tokio::test]
    async fn import_skips_present_ids_and_gc_counts() {
        let (p, memory) = pipeline_with_memory();
        call(
            &p,
            "memory_remember",
            json!({"content": "CI runs on GitHub Actions"}),
        )
        .await;
        let exported = memory.read(|m| m.export()).unwrap().unwrap();
        let args = json!({"memories": exported});
        let again = call(&p, "memory_import", args.clone()).await;
        assert_eq!(
            again.output.unwrap().data,
            json!({"imported": 0, "skipped": 1})
        );
        let id = exported[0].id.clone();
        call(&p, "memory_forget", json!({"id": id})).await;
        let back = call(&p, "memory_import", args).await;
        let back = back.output.unwrap();
        assert_eq!(back.data, json!({"imported": 1, "skipped": 0}));
        assert_eq!(back.text, "imported 1, skipped 0 already present");
        let gc = call(&p, "memory_gc", json!({})).await.output.unwrap();
        assert_eq!(
            gc.data,
            json!({"expired": 0, "forgotten": 0, "archived": 0, "remaining": 1})
        );
        assert_eq!(gc.text, "expired 0, forgotten 0, archived 0, remaining 1");
        let bad = call(&p, "memory_import", json!({"memories": [{"id": "x"}]})).await;
        assert_eq!(bad.status, OutcomeStatus::InvalidArguments, "{bad:?}");
    }
}
