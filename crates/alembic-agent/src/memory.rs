//! Long-term memory as the agent uses it: recall for the static prompt (through the
//! coordinator's [`PersistentRecall`]) and consolidation of what a run found worth keeping.

use std::sync::Arc;

use alembic_context::{Finding, PersistentRecall, RecalledMemory};
use alembic_memory::tools::MemoryService;
use alembic_memory::{
    ConsolidateStats, ListFilter, Located, Memory, MemoryError, MemorySource, MemoryType,
    NewMemory, Origin, PersistentMemory, RetrieveOptions,
};
use alembic_tools::ToolError;

/// Findings below this importance stay in the run's working memory only.
pub const DEFAULT_KEEP_IMPORTANCE: u8 = 7;
/// Importance given to a key fact taken from a chat answer.
const ANSWER_FACT_IMPORTANCE: f64 = 5.0;
/// Stated preferences recalled for every question.
const PREFERENCES_RECALLED: usize = 5;
/// Longest answer sentence kept as a fact (characters).
const ANSWER_FACT_MAX_CHARS: usize = 240;

/// A project's persistent memory as the agent uses it: the coordinator reads it, the runtime
/// consolidates into it. It is the project's one [`MemoryService`], the same store (and
/// embedder) the memory tools and the CLI use.
#[derive(Debug)]
pub struct SharedMemory {
    service: Arc<MemoryService>,
}

impl SharedMemory {
    /// The agent's view of the project's memory service.
    pub fn new(service: Arc<MemoryService>) -> SharedMemory {
        SharedMemory { service }
    }

    /// Over an already open store (tests, embedders without a project).
    pub fn from_store(store: PersistentMemory) -> SharedMemory {
        SharedMemory::new(Arc::new(MemoryService::from_store(store)))
    }

    /// The project's memory service (both stores, for readers such as `/memory`).
    pub fn service(&self) -> &Arc<MemoryService> {
        &self.service
    }

    /// Runs `f` with the store, for callers that need more than recall and consolidation
    /// (`/memory`). Fails when the store cannot be opened.
    pub fn with_store<T>(
        &self,
        f: impl FnOnce(&mut PersistentMemory) -> Result<T, MemoryError>,
    ) -> Result<T, ToolError> {
        self.service.with_store(f)
    }

    /// Consolidates `candidates` (update / merge / add by similarity, see alembic-memory).
    pub fn consolidate(&self, candidates: &[NewMemory]) -> Result<ConsolidateStats, ToolError> {
        if candidates.is_empty() {
            return Ok(ConsolidateStats::default());
        }
        self.with_store(|m| m.consolidate(candidates))
    }
}

impl PersistentRecall for SharedMemory {
    /// The user's stated preferences (up to five, whatever the query:
    /// they apply to every question), then the memories relevant to `query`, `limit` in all.
    /// With a team configured both come from the local and the team store; a team memory's
    /// kind reads "fact, team" so the prompt says where it came from.
    fn recall(&self, query: Option<&str>, limit: usize) -> Vec<RecalledMemory> {
        // Recall feeds a prompt: a broken store means "nothing remembered", not a failed run.
        match recall_from(&self.service, query, limit) {
            Ok(found) => found
                .into_iter()
                .map(|Located { item: m, store }| RecalledMemory {
                    kind: match store {
                        Origin::Team => format!("{}, team", m.kind.as_str()),
                        Origin::Local => m.kind.as_str().to_string(),
                    },
                    content: m.content,
                    importance: m.importance,
                })
                .collect(),
            Err(e) => {
                tracing::warn!("long-term memory recall failed: {e}");
                Vec::new()
            }
        }
    }
}

/// Logs why the team's memories are missing from a recall; the local ones are still used.
fn note_team_error(error: Option<String>) {
    if let Some(e) = error {
        tracing::warn!("team memories unavailable for recall: {e}");
    }
}

/// Preferences first, then the memories relevant to `query` (or the newest), `limit` in all,
/// from both stores.
fn recall_from(
    service: &MemoryService,
    query: Option<&str>,
    limit: usize,
) -> Result<Vec<Located<Memory>>, ToolError> {
    let mut found = preferences(service)?;
    let rest: Vec<Located<Memory>> = match query.filter(|q| !q.trim().is_empty()) {
        Some(q) => {
            let options = RetrieveOptions {
                limit,
                ..RetrieveOptions::default()
            };
            let hits = service.recall(q, &options)?;
            note_team_error(hits.team_error);
            hits.items
                .into_iter()
                .map(|h| Located {
                    item: h.item.memory,
                    store: h.store,
                })
                .collect()
        }
        None => {
            let listed = service.list_everywhere(&ListFilter {
                limit: Some(limit),
                ..ListFilter::default()
            })?;
            note_team_error(listed.team_error);
            listed.items
        }
    };
    for m in rest {
        if !found.iter().any(|p| p.item.id == m.item.id) {
            found.push(m);
        }
    }
    found.truncate(limit);
    Ok(found)
}

/// The newest stated preferences of both stores, most important first.
fn preferences(service: &MemoryService) -> Result<Vec<Located<Memory>>, ToolError> {
    let listed = service.list_everywhere(&ListFilter::default())?;
    note_team_error(listed.team_error);
    let mut found: Vec<Located<Memory>> = listed
        .items
        .into_iter()
        .filter(|m| m.item.kind == MemoryType::Preference)
        .take(PREFERENCES_RECALLED)
        .collect();
    found.sort_by(|a, b| b.item.importance.total_cmp(&a.item.importance));
    Ok(found)
}

/// Where a memory written by a run came from: the run id and the question.
pub fn provenance(run_id: &str, question: &str) -> String {
    let question: String = question.trim().chars().take(160).collect();
    format!("agent run {run_id}: {question}")
}

/// Noted findings at or above `keep_importance`, as facts for long-term memory.
pub fn finding_candidates(
    findings: &[Finding],
    keep_importance: u8,
    source: MemorySource,
    provenance: &str,
) -> Vec<NewMemory> {
    findings
        .iter()
        .filter(|f| f.importance >= keep_importance)
        .map(|f| {
            NewMemory::fact(f.finding.trim())
                .with_importance(f64::from(f.importance))
                .with_source(source)
                .with_provenance(provenance)
        })
        .collect()
}

/// The key fact of a chat answer: its first sentence, when the answer rests on tool results.
///
/// Only the first sentence is kept because answers usually lead with their conclusion; the
/// rest is explanation the next run can re-derive. An answer given without any tool call is
/// not new knowledge (it came from the prompt or from memory) and yields nothing.
pub fn answer_fact(answer: &str, used_tools: bool, provenance: &str) -> Option<NewMemory> {
    if !used_tools {
        return None;
    }
    // Headings name a topic, not a fact: the first sentence of prose is the conclusion.
    let text = answer
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.trim_start_matches(['-', '*', '>']).trim())
        .find(|l| !l.is_empty())?;
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, '。' | '！' | '？')
                || (matches!(c, '.' | '!' | '?')
                    && text[i + c.len_utf8()..]
                        .chars()
                        .next()
                        .is_none_or(char::is_whitespace))
        })
        .map_or(text.len(), |(i, c)| i + c.len_utf8());
    let sentence: String = text[..end].chars().take(ANSWER_FACT_MAX_CHARS).collect();
    if sentence.chars().count() < 20 {
        return None;
    }
    Some(
        NewMemory::fact(sentence)
            .with_type(MemoryType::Insight)
            .with_importance(ANSWER_FACT_IMPORTANCE)
            .with_source(MemorySource::User)
            .with_provenance(provenance),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn answer_fact_takes_the_first_sentence_of_grounded_answers() {
        let fact = answer_fact(
            "## Payment\nThe Payment module uses a coordinator. It also has repositories.",
            true,
            "p",
        )
        .unwrap();
        assert_eq!(fact.content, "The Payment module uses a coordinator.");
        assert_eq!(fact.kind, MemoryType::Insight);
        assert_eq!(fact.provenance.as_deref(), Some("p"));
        assert_eq!(
            answer_fact("The Payment module uses a coordinator.", false, "p"),
            None
        );
        assert_eq!(answer_fact("Yes.", true, "p"), None);
    }

    #[test]
    fn version_numbers_do_not_end_a_sentence() {
        let fact = answer_fact(
            "The app targets iOS 17.2 and uses SwiftUI throughout",
            true,
            "p",
        );
        assert_eq!(
            fact.map(|f| f.content),
            Some("The app targets iOS 17.2 and uses SwiftUI throughout".to_string())
        );
    }
}
