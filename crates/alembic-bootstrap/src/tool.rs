//! The `bootstrap_knowledge` tool (infrastructure): the deterministic bootstrap as a tool call.

use std::sync::Arc;
use std::time::Duration;

use alembic_tools::{
    EffectClass, RegistryError, ToolDefinition, ToolError, ToolModule, ToolOutput, ToolRegistry,
};
use serde::Deserialize;

use crate::analyser::DeterministicAnalyser;
use crate::error::BootstrapError;
use crate::runner::{Bootstrap, BootstrapOptions, NoProgress};

/// Tool name.
pub const BOOTSTRAP_KNOWLEDGE: &str = "bootstrap_knowledge";

/// A whole bootstrap of a large tree takes a while, and the CLI's LLM analyser runs an agent
/// per dimension inside this one call; the pipeline's default limit is far too short.
const TIMEOUT: Duration = Duration::from_secs(4 * 3600);

fn default_max_files() -> i64 {
    2000
}

/// Arguments of `bootstrap_knowledge`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapArgs {
    /// Only these dimension ids (analysed even when their evidence did not change); every dimension active for the project when left out
    pub dimensions: Option<Vec<String>>,
    /// Read at most this many source files
    #[serde(default = "default_max_files")]
    #[schemars(range(min = 1, max = 1000000))]
    pub max_files: i64,
    /// Re-analyse dimensions whose evidence files did not change
    pub force: Option<bool>,
    /// Continue the last interrupted run after its last completed dimension
    pub resume: Option<bool>,
}

/// Registers `bootstrap_knowledge` bound to `bootstrap`.
pub fn register_tools(
    registry: &ToolRegistry,
    bootstrap: Arc<Bootstrap>,
) -> Result<(), RegistryError> {
    registry.register(
        ToolDefinition::typed::<BootstrapArgs>(
            BOOTSTRAP_KNOWLEDGE,
            "Cold-start analysis of the whole project without an LLM: scans files, builds the code index, graph and module topology, then writes per-dimension knowledge candidates (status submitted, for review) with file:line evidence, and each dimension's findings as memories. Unchanged dimensions are skipped. Returns the run summary.",
            ToolModule::Infrastructure,
            EffectClass::WritesKnowledge,
        )
        .timeout(TIMEOUT)
        .handler(bootstrap, |bootstrap, args, _ctx| async move { run(&bootstrap, args).await }),
    )
}

/// Test hook, for the resume test only: `ALEMBIC_BOOTSTRAP_PAUSE_AFTER=<dimension id>` makes
/// the run sleep (60 s, or `ALEMBIC_BOOTSTRAP_PAUSE_SECS`) right after committing that
/// dimension, so a test can `kill -9` the process between two checkpoints deterministically.
pub const PAUSE_HOOK_ENV: &str = "ALEMBIC_BOOTSTRAP_PAUSE_AFTER";

fn pause_hook() -> Option<(String, Duration)> {
    let dim = std::env::var(PAUSE_HOOK_ENV)
        .ok()
        .filter(|d| !d.is_empty())?;
    let secs = std::env::var("ALEMBIC_BOOTSTRAP_PAUSE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Some((dim, Duration::from_secs(secs)))
}

async fn run(bootstrap: &Bootstrap, args: BootstrapArgs) -> Result<ToolOutput, ToolError> {
    let opts = BootstrapOptions {
        dimensions: args.dimensions.unwrap_or_default(),
        resume: args.resume.unwrap_or(false),
        force: args.force.unwrap_or(false),
        max_files: Some(usize::try_from(args.max_files.max(1)).unwrap_or(1)),
        pause_after: pause_hook(),
    };
    let sink = bootstrap.progress().unwrap_or_else(|| Arc::new(NoProgress));
    let analyser = bootstrap
        .analyser()
        .unwrap_or_else(|| Arc::new(DeterministicAnalyser));
    let report = bootstrap
        .run(analyser.as_ref(), &opts, sink.as_ref())
        .await
        .map_err(|e| match e {
            BootstrapError::UnknownDimension { .. } | BootstrapError::NothingToResume { .. } => {
                ToolError::Invalid(e.to_string())
            }
            other => ToolError::failed(other.to_string()),
        })?;
    let mut data = serde_json::to_value(&report).map_err(|e| ToolError::failed(e.to_string()))?;
    let mut text = report.table();
    if let Some(knowledge) = bootstrap.publisher() {
        publish(knowledge, &mut data, &mut text).await;
    }
    Ok(ToolOutput::new(data, text))
}

/// With a team configured: moves every candidate bootstrap created in the project database
/// to the team store (same ids; idempotent) and says so in the report (`team`), or why it
/// could not (`teamError`: the local run is committed either way, and a later run or
/// `alembic team push` moves what is left). A candidate the team already has (same id, or a
/// live entry with its title) revises the team's when that one is still an unreviewed
/// bootstrap candidate and the evidence changed, at the version read: a reviewer's move in
/// between is a conflict, reported, and a reviewed entry is never overwritten.
async fn publish(
    knowledge: Arc<alembic_knowledge::KnowledgeService>,
    data: &mut serde_json::Value,
    text: &mut String,
) {
    let Some(team) = knowledge.team_label().map(str::to_string) else {
        return;
    };
    let published = tokio::task::spawn_blocking(move || {
        knowledge.move_local(
            |e| e.created_by == crate::checkpoint::BOOTSTRAP_SOURCE,
            false,
            Some(&crate::checkpoint::revises_team_candidate),
        )
    })
    .await;
    match published {
        Ok(Ok(Some(r))) => {
            data["team"] = serde_json::json!({"team": team, "published": r.import.imported,
                "alreadyThere": r.import.already_present + r.left_as_they_were,
                "revised": r.revised, "conflicts": r.conflicts,
                "titleTaken": r.import.title_taken.len(), "removedHere": r.removed_here});
            text.push_str(&format!(
                "\npublished {} candidates to {team} ({} were already there, {} revised there)",
                r.import.imported,
                r.import.already_present + r.left_as_they_were,
                r.revised.len()
            ));
            for conflict in &r.conflicts {
                text.push_str(&format!("\nnot revised on {team}: {conflict}"));
            }
        }
        Ok(Ok(None)) => {}
        Ok(Err(e)) => {
            data["teamError"] = serde_json::json!(e.to_string());
            text.push_str(&format!("\ncandidates not published to {team}: {e}"));
        }
        Err(e) => {
            data["teamError"] = serde_json::json!(e.to_string());
            text.push_str(&format!("\ncandidates not published to {team}: {e}"));
        }
    }
}
