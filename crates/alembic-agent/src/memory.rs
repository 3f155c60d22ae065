//! Long-term memory as the agent uses it: recall for the static prompt (through the
//! coordinator's [`PersistentRecall`]) and consolidation of what a run found worth keeping.

use std::sync::{Mutex, MutexGuard};

use alembic_context::{Finding, PersistentRecall, RecalledMemory};
use alembic_memory::{
    ConsolidateStats, ListFilter, MemoryError, MemorySource, MemoryType, NewMemory,
    PersistentMemory, RetrieveOptions,
};

/// Findings below this importance stay in the run's working memory only.
pub const DEFAULT_KEEP_IMPORTANCE: u8 = 7;
/// Importance given to a key fact taken from a chat answer.
const ANSWER_FACT_IMPORTANCE: f64 = 5.0;
/// Longest answer sentence kept as a fact (characters).
const ANSWER_FACT_MAX_CHARS: usize = 240;

/// A project's [`PersistentMemory`] shared by the coordinator (reads) and the runtime (writes).
#[derive(Debug)]
pub struct SharedMemory {
    store: Mutex<PersistentMemory>,
}

impl SharedMemory {
    pub fn new(store: PersistentMemory) -> SharedMemory {
        SharedMemory {
            store: Mutex::new(store),
        }
    }

    /// The store, for callers that need more than recall and consolidation (`/memory`).
    pub fn lock(&self) -> MutexGuard<'_, PersistentMemory> {
        alembic_base::lock(&self.store)
    }

    /// Consolidates `candidates` (update / merge / add by similarity, see alembic-memory).
    pub fn consolidate(&self, candidates: &[NewMemory]) -> Result<ConsolidateStats, MemoryError> {
        if candidates.is_empty() {
            return Ok(ConsolidateStats::default());
        }
        self.lock().consolidate(candidates)
    }
}

impl PersistentRecall for SharedMemory {
    fn recall(&self, query: Option<&str>, limit: usize) -> Vec<RecalledMemory> {
        let mut store = self.lock();
        let memories = match query.filter(|q| !q.trim().is_empty()) {
            Some(q) => {
                let options = RetrieveOptions {
                    limit,
                    ..RetrieveOptions::default()
                };
                store
                    .retrieve(q, &options)
                    .map(|hits| hits.into_iter().map(|h| h.memory).collect())
            }
            None => store.list(&ListFilter {
                limit: Some(limit),
                ..ListFilter::default()
            }),
        };
        // Recall feeds a prompt: a broken store means "nothing remembered", not a failed run.
        match memories {
            Ok(found) => found
                .into_iter()
                .map(|m| RecalledMemory {
                    kind: m.kind.as_str().to_string(),
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
