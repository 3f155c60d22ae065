//! The LLM path of `alembic bootstrap`: [`LlmAnalyser`] runs each dimension through
//! [`AgentRuntime::run_dimension`] (one stage under the seed's Bootstrap strategy, EXPLORE →
//! PRODUCE → SUMMARIZE) in the run's shared session. The reflections of the tiers before are
//! in that session (the runner builds them into it), and reach the prompt from there.
//!
//! The producer submits through the knowledge tools (so SubmitDedup spans the dimensions), but
//! its agent's pipeline carries [`StagedSubmissions`]: an accepted submission is checked as
//! `submit_knowledge` checks it and kept, not written. The analyser hands the kept entries to
//! the runner as the dimension's findings, and the runner writes them (source `bootstrap`,
//! status submitted, tagged with the dimension) with the dimension's memory and checkpoint in
//! one transaction, exactly as on the deterministic path. A dimension that fails (a provider
//! error) leaves nothing written; `--resume` runs it again.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use alembic_agent::AgentRuntime;
use alembic_agent::bootstrap::DimensionBrief;
use alembic_base::lock;
use alembic_bootstrap::extract::Finding;
use alembic_bootstrap::facts::Evidence;
use alembic_bootstrap::{
    BootstrapError, Dimension, DimensionAnalyser, DimensionOutcome, TierContext,
};
use alembic_context::LoopDirectory;
use alembic_knowledge::{KnowledgeService, NewEntry};
use alembic_tools::{
    BeforeVerdict, Middleware, MiddlewareError, MiddlewareSlot, PreparedCall, ToolMetadata,
    ToolOutput, async_trait,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Importance of a producer's candidate when the analyst noted nothing more important.
const DEFAULT_IMPORTANCE: u8 = 6;

/// Keeps the submissions of bootstrap producers, per dimension, instead of writing them.
/// Its `before` hook must run after SubmitDedup's, so that a duplicate is refused first: it
/// sits in the next slot (ObservationRecord), since it joins the pipeline before the memory
/// middlewares and would precede SubmitDedup within the SubmitDedup slot.
pub struct StagedSubmissions {
    knowledge: Arc<KnowledgeService>,
    loops: Arc<LoopDirectory>,
    staged: Mutex<HashMap<String, Vec<NewEntry>>>,
}

impl std::fmt::Debug for StagedSubmissions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StagedSubmissions").finish_non_exhaustive()
    }
}

impl StagedSubmissions {
    /// `loops` must be the directory the agent's runs attach to (it names a call's dimension).
    pub fn new(knowledge: Arc<KnowledgeService>, loops: Arc<LoopDirectory>) -> Self {
        StagedSubmissions {
            knowledge,
            loops,
            staged: Mutex::new(HashMap::new()),
        }
    }

    /// Removes and returns what `dimension` submitted, in submission order.
    pub fn take(&self, dimension: &str) -> Vec<NewEntry> {
        lock(&self.staged).remove(dimension).unwrap_or_default()
    }
}

#[async_trait]
impl Middleware for StagedSubmissions {
    fn name(&self) -> &str {
        "bootstrap_staging"
    }

    fn slot(&self) -> MiddlewareSlot {
        MiddlewareSlot::ObservationRecord
    }

    async fn before(
        &self,
        call: &PreparedCall,
        _meta: &mut ToolMetadata,
    ) -> Result<BeforeVerdict, MiddlewareError> {
        if !alembic_context::is_submit_tool(call.name()) {
            return Ok(BeforeVerdict::Continue);
        }
        let Some(memory) = self.loops.get(&call.caller.id) else {
            return Ok(BeforeVerdict::Continue);
        };
        // A title bootstrap submitted in an earlier run and nobody reviewed yet is staged
        // again: the checkpoint revises that candidate if its content changed.
        let own_unreviewed = |e: &alembic_knowledge::Entry| {
            e.created_by == alembic_bootstrap::checkpoint::BOOTSTRAP_SOURCE
                && e.status == alembic_knowledge::Status::Submitted
        };
        let checked = alembic_knowledge::tools::check_submission(
            &self.knowledge,
            call.args.clone(),
            &own_unreviewed,
        );
        let entry = match checked {
            Ok(Ok(entry)) => entry,
            Ok(Err(refusal)) => return Ok(BeforeVerdict::Respond(refusal)),
            Err(e) => return Err(MiddlewareError(e.to_string())),
        };
        let out = ToolOutput::new(
            json!({"status": "submitted", "staged": true, "title": entry.title}),
            format!(
                "submitted \"{}\" for review (stored when this dimension completes)",
                entry.title
            ),
        );
        lock(&self.staged)
            .entry(memory.scope.dimension().to_string())
            .or_default()
            .push(entry);
        Ok(BeforeVerdict::Respond(out))
    }
}

/// Analyses a dimension with the agent (see the module docs).
pub struct LlmAnalyser {
    agent: AgentRuntime,
    staging: Arc<StagedSubmissions>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for LlmAnalyser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmAnalyser").finish_non_exhaustive()
    }
}

impl LlmAnalyser {
    /// `agent`'s pipeline must carry `staging`.
    pub fn new(agent: AgentRuntime, staging: Arc<StagedSubmissions>) -> Self {
        LlmAnalyser {
            agent,
            staging,
            cancel: CancellationToken::new(),
        }
    }

    /// Cancelling it stops the dimensions in flight (each then fails, writing nothing).
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }
}

#[async_trait]
impl DimensionAnalyser for LlmAnalyser {
    fn uses_llm(&self) -> bool {
        true
    }

    async fn analyse(
        &self,
        dim: &Dimension,
        ctx: &TierContext,
    ) -> Result<DimensionOutcome, BootstrapError> {
        let brief = DimensionBrief {
            id: dim.id.clone(),
            label: dim.label.clone(),
            guide: dim.extraction_guide.clone(),
            knowledge_types: dim.allowed_knowledge_types.clone(),
            tier: usize::from(ctx.tier),
        };
        let result = self
            .agent
            .run_dimension(&ctx.session, &brief, &self.cancel)
            .await;
        // Taken whatever the result: a failed dimension's submissions are dropped.
        let staged = self.staging.take(&dim.id);
        let run = result.map_err(|e| BootstrapError::Analysis {
            dimension: dim.id.clone(),
            message: e.to_string(),
        })?;
        let importance = run
            .findings
            .iter()
            .map(|f| f.importance)
            .max()
            .unwrap_or(DEFAULT_IMPORTANCE)
            .clamp(1, 10);
        let findings = staged
            .into_iter()
            .map(|entry| finding(&ctx.facts.root, dim, entry, importance))
            .collect();
        Ok(DimensionOutcome {
            findings,
            analysis: run.analysis,
            notes: run.findings,
        })
    }
}

/// A producer's entry as a finding; its evidence is the cited sources that exist.
fn finding(root: &Path, dim: &Dimension, mut entry: NewEntry, importance: u8) -> Finding {
    let evidence = cited(root, &entry.sources);
    if entry.knowledge_type.trim().is_empty() {
        entry.knowledge_type = dim
            .allowed_knowledge_types
            .first()
            .cloned()
            .unwrap_or_else(|| "best-practice".into());
    }
    let summary = if entry.description.trim().is_empty() {
        entry.content.lines().next().unwrap_or("").to_string()
    } else {
        entry.description.clone()
    };
    Finding {
        title: entry.title.clone(),
        summary,
        detail: entry.content.clone(),
        knowledge_type: entry.knowledge_type.clone(),
        language: entry.language.clone(),
        evidence,
        importance,
        entry: Some(entry),
    }
}

/// `path` or `path:line` (or `path:line-line`) sources that name an existing file inside the
/// project; a line past the end, or none, cites line 1 (the file as a whole).
pub fn cited(root: &Path, sources: &[String]) -> Vec<Evidence> {
    let mut out: Vec<Evidence> = Vec::new();
    let Ok(guard) = alembic_safety::PathGuard::new(root) else {
        return out;
    };
    for source in sources {
        let (file, line) = split_line(source.trim());
        let file = file.trim_start_matches("./");
        let rel = Path::new(file);
        if file.is_empty()
            || rel.is_absolute()
            || rel
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            continue;
        }
        // Through the guard: a cited link out of the project is no evidence.
        let Ok(text) = guard.read_to_string(file) else {
            continue;
        };
        let lines = text.lines().count().max(1);
        let line = line.filter(|l| (1..=lines).contains(l)).unwrap_or(1);
        let e = Evidence {
            file: file.to_string(),
            line,
        };
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

fn split_line(source: &str) -> (&str, Option<usize>) {
    match source.rsplit_once(':') {
        Some((file, tail)) => {
            let first = tail.split('-').next().unwrap_or("");
            match first.parse::<usize>() {
                Ok(n) => (file, Some(n)),
                Err(_) => (source, None),
            }
        }
        None => (source, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cited_keeps_existing_files_with_their_lines_and_drops_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "one\ntwo\nthree\n").unwrap();
        let sources: Vec<String> = [
            "src/a.rs:2",
            "./src/a.rs:3-9",
            "src/a.rs",
            "src/a.rs:40",
            "src/missing.rs:1",
            "../outside.rs",
            "/etc/passwd",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let got: Vec<String> = cited(dir.path(), &sources)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, ["src/a.rs:2", "src/a.rs:3", "src/a.rs:1"]);
    }
}
