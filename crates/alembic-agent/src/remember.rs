//! Memory from conversations. At the end of a run (`alembic ask`, every question of
//! `alembic chat`) and on `/remember` in chat, what the conversation taught becomes candidate
//! memories for the one consolidator (ADD / UPDATE / MERGE / REPLACE, see alembic-memory):
//!
//! - noted findings (`note_finding`) at or above the keep importance, always, and the text of
//!   a `/remember <text>` as the user wrote it;
//! - the model's extraction: one bounded call (no tools, [`EXTRACTION_MAX_TOKENS`] output
//!   tokens, the side-call timeout, the caller's cancellation) over the conversation, whose
//!   JSON answer is validated before anything is used: facts and insights about the project,
//!   and preferences only where the user stated them;
//! - when the extraction fails (an error, the timeout, the provider's open breaker, an invalid
//!   answer), the rule-based candidates instead: a chat answer's key fact
//!   ([`crate::memory::answer_fact`]).
//!
//! `[memory] extract_from_conversations = false` keeps nothing and makes no call.

use std::fmt::Write as _;

use alembic_context::Finding;
use alembic_llm::{ChatRequest, Message, ToolChoice, json_answer};
use alembic_memory::{Action, ConsolidateStats, MemorySource, MemoryType, NewMemory};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::memory::{self, answer_fact, finding_candidates};
use crate::preset::AgentPreset;
use crate::report::{Extraction, MemoryReport, SavedMemory, UsageReport};
use crate::runtime::{AgentRuntime, RunRequest};
use crate::stage::StageOutcome;

/// Output tokens the extraction call may use.
pub const EXTRACTION_MAX_TOKENS: u32 = 600;
/// Memories taken from one extraction at most.
const MAX_MEMORIES: usize = 6;
/// Characters of one extracted memory.
const MIN_CHARS: usize = 10;
const MAX_CHARS: usize = 300;
/// Characters of the conversation sent to the extraction call (the most recent part).
const TRANSCRIPT_MAX_CHARS: usize = 8_000;

/// The extraction call's instructions (its system prompt).
pub const MEMORY_EXTRACTION_SYSTEM_PROMPT: &str = "You decide what an AI assistant should remember from a conversation about a software project, for later sessions.\nAnswer with one JSON object and nothing else: {\"memories\": [{\"type\": \"fact\", \"content\": \"one self-contained sentence\", \"importance\": 7}]}. type is fact (about the project's code or design), insight (a conclusion drawn from several facts) or preference (how the user wants to work; only when the user stated it). content names files, types and modules explicitly; importance is 1 to 10. At most 6 memories; {\"memories\": []} when nothing is worth keeping. Do not keep greetings, questions, or what the assistant was unsure about.";

/// What a conversation leaves for long-term memory.
#[derive(Debug, Clone)]
pub(crate) struct Harvest {
    /// The conversation as text for the extraction call.
    pub transcript: String,
    /// Kept whatever the extraction does (noted findings, the user's `/remember` text).
    pub always: Vec<NewMemory>,
    /// Kept only when the extraction fails (the answer's key fact).
    pub fallback: Vec<NewMemory>,
    /// Source and provenance of the extracted memories.
    pub source: MemorySource,
    pub provenance: String,
}

/// Importance of the text a user asked to remember (`/remember <text>`).
const NOTE_IMPORTANCE: f64 = 8.0;
/// Characters of an answer in the transcript.
const ANSWER_MAX_CHARS: usize = 3_000;

impl Harvest {
    /// What a run leaves: its noted findings, its question and answer, the earlier turns of
    /// its conversation; a single-loop (chat) run's answer gives the fallback fact.
    pub(crate) fn of_run(
        run_id: &str,
        request: &RunRequest,
        findings: &[Finding],
        outcomes: &[StageOutcome],
        keep_importance: u8,
    ) -> Harvest {
        let provenance = memory::provenance(run_id, &request.question);
        let single = matches!(request.preset, AgentPreset::Single { .. });
        let source = if single {
            MemorySource::User
        } else {
            MemorySource::System
        };
        let answer = outcomes.last().map_or("", |o| o.report.answer.as_str());
        let used_tools = outcomes.iter().any(|o| !o.tool_calls.is_empty());
        let fallback = if single {
            answer_fact(answer, used_tools, &provenance)
                .into_iter()
                .collect()
        } else {
            Vec::new()
        };
        let transcript = run_transcript(request, answer, findings);
        Harvest {
            transcript,
            always: finding_candidates(findings, keep_importance, source, &provenance),
            fallback,
            source,
            provenance,
        }
    }

    /// What `/remember` leaves: the conversation so far, and the user's own words kept as
    /// given.
    fn of_note(conversation: &str, note: Option<&str>) -> Harvest {
        let id = uuid::Uuid::now_v7().to_string();
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        let provenance = memory::provenance(&id, &format!("/remember {}", note.unwrap_or("")));
        let mut transcript = conversation.trim().to_string();
        if let Some(n) = note {
            let _ = write!(transcript, "\n\nThe user asked to remember: {n}");
        }
        let always = note
            .map(|n| {
                NewMemory::fact(n)
                    .with_importance(NOTE_IMPORTANCE)
                    .with_source(MemorySource::User)
                    .with_provenance(&provenance)
            })
            .into_iter()
            .collect();
        Harvest {
            transcript,
            always,
            fallback: Vec::new(),
            source: MemorySource::User,
            provenance,
        }
    }
}

/// A run as the extraction call reads it: the earlier turns, the question, the answer (cut)
/// and the findings noted.
fn run_transcript(request: &RunRequest, answer: &str, findings: &[Finding]) -> String {
    let mut transcript = String::new();
    if let Some(earlier) = request.conversation.as_deref() {
        let _ = write!(transcript, "Earlier in the conversation:\n{earlier}\n\n");
    }
    let answer: String = answer.chars().take(ANSWER_MAX_CHARS).collect();
    let _ = write!(
        transcript,
        "User: {}\n\nAssistant: {answer}",
        request.question.trim()
    );
    if !findings.is_empty() {
        transcript.push_str("\n\nFindings the assistant noted:");
        for f in findings {
            let _ = write!(transcript, "\n- [{}/10] {}", f.importance, f.finding.trim());
        }
    }
    transcript
}

/// One memory the model proposed, validated.
#[derive(Debug, Clone, PartialEq)]
struct Proposed {
    kind: MemoryType,
    content: String,
    importance: f64,
}

impl AgentRuntime {
    /// `/remember` in chat: what `conversation` (the turns so far, as text) taught, and
    /// `note` (the user's own words, kept as given), go through extraction and the
    /// consolidator like the end of a run. Nothing is kept when extraction from conversations
    /// is switched off.
    pub async fn remember(
        &self,
        conversation: &str,
        note: Option<&str>,
        cancel: &CancellationToken,
    ) -> MemoryReport {
        self.keep_harvest(Harvest::of_note(conversation, note), cancel)
            .await
    }

    /// Extracts, consolidates and reports what `harvest` leaves (see the module docs).
    pub(crate) async fn keep_harvest(
        &self,
        harvest: Harvest,
        cancel: &CancellationToken,
    ) -> MemoryReport {
        let Some(store) = self.memory() else {
            return MemoryReport::default();
        };
        if !self.options().extract_from_conversations {
            return MemoryReport {
                extraction: Extraction::Off,
                ..MemoryReport::default()
            };
        }
        let mut report = MemoryReport::default();
        let mut candidates = harvest.always.clone();
        match self
            .extract(&harvest, &mut report.extraction_usage, cancel)
            .await
        {
            Ok(found) => {
                report.extraction = Extraction::Used {
                    memories: found.len(),
                };
                candidates.extend(found);
            }
            Err(error) => {
                tracing::info!("memory extraction failed: {error}");
                report.extraction = Extraction::Failed { error };
                candidates.extend(harvest.fallback);
            }
        }
        report.candidates = candidates.iter().map(|c| c.content.clone()).collect();
        match store.consolidate(&candidates) {
            Ok(stats) => record(&mut report, &candidates, &stats),
            Err(e) => report.error = Some(e.to_string()),
        }
        report
    }

    /// The model's memories of `harvest`, or why there are none.
    async fn extract(
        &self,
        harvest: &Harvest,
        usage: &mut UsageReport,
        cancel: &CancellationToken,
    ) -> Result<Vec<NewMemory>, String> {
        let provider = self.provider();
        let transcript = recent(&harvest.transcript, TRANSCRIPT_MAX_CHARS);
        let mut request = ChatRequest::new(provider.model(), vec![Message::user(transcript)]);
        request.system = MEMORY_EXTRACTION_SYSTEM_PROMPT.to_string();
        request.tool_choice = ToolChoice::None;
        request.max_tokens = Some(EXTRACTION_MAX_TOKENS);
        request.temperature = Some(0.2);
        let limit = self.options().side_call_timeout;
        let reply = match tokio::time::timeout(limit, provider.chat(&request, cancel)).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err(format!("no answer within {} s", limit.as_secs_f64())),
        };
        usage.add(reply.usage);
        let proposed = parse(&reply.text)?;
        Ok(proposed
            .into_iter()
            .map(|p| {
                let source = match p.kind {
                    MemoryType::Preference => MemorySource::User,
                    _ => harvest.source,
                };
                NewMemory::fact(p.content)
                    .with_type(p.kind)
                    .with_importance(p.importance)
                    .with_source(source)
                    .with_provenance(&harvest.provenance)
            })
            .collect())
    }
}

/// The counts of `stats` and the memories it saved, in `report`.
fn record(report: &mut MemoryReport, candidates: &[NewMemory], stats: &ConsolidateStats) {
    report.added = stats.added;
    report.updated = stats.updated;
    report.merged = stats.merged;
    report.replaced = stats.replaced;
    report.skipped = stats.skipped;
    report.saved = candidates
        .iter()
        .zip(&stats.outcomes)
        .filter(|(_, o)| o.action != Action::Skipped)
        .map(|(c, o)| SavedMemory {
            action: o.action,
            kind: c.kind,
            content: c.content.clone(),
        })
        .collect();
}

/// The last `max` characters of `text` (the most recent part of a conversation).
fn recent(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let tail: String = text.chars().skip(count - max).collect();
    format!("[earlier part cut]\n{tail}")
}

/// Validates the extraction answer: one JSON object with a `memories` array of at most
/// [`MAX_MEMORIES`] objects, each with a known `type`, a `content` of 10 to 300 characters
/// and an `importance` from 1 to 10. Says what was wrong.
fn parse(answer: &str) -> Result<Vec<Proposed>, String> {
    let value: Value = serde_json::from_str(json_answer(answer))
        .map_err(|e| format!("expected a JSON object with a \"memories\" array ({e})"))?;
    let Some(items) = value.get("memories").and_then(Value::as_array) else {
        return Err("expected a JSON object with a \"memories\" array".into());
    };
    if items.len() > MAX_MEMORIES {
        return Err(format!(
            "{} memories proposed, at most {MAX_MEMORIES} are accepted",
            items.len()
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| proposed(item).map_err(|why| format!("memory {}: {why}", i + 1)))
        .collect()
}

fn proposed(item: &Value) -> Result<Proposed, String> {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .parse::<MemoryType>()
        .map_err(|_| "\"type\" must be fact, insight or preference".to_string())?;
    let content = item
        .get("content")
        .and_then(Value::as_str)
        .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let chars = content.chars().count();
    if !(MIN_CHARS..=MAX_CHARS).contains(&chars) {
        return Err(format!(
            "\"content\" must be a string of {MIN_CHARS} to {MAX_CHARS} characters, got {chars}"
        ));
    }
    let importance = item
        .get("importance")
        .and_then(Value::as_f64)
        .filter(|i| (1.0..=10.0).contains(i))
        .ok_or_else(|| "\"importance\" must be a number from 1 to 10".to_string())?;
    Ok(Proposed {
        kind,
        content,
        importance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_valid_answer_gives_typed_memories() {
        let answer = "```json\n{\"memories\": [{\"type\": \"preference\", \"content\": \"The user wants answers in German.\", \"importance\": 8}, {\"type\": \"fact\", \"content\": \"PaymentCoordinator owns the repository.\", \"importance\": 7.5}]}\n```";
        assert_eq!(
            parse(answer).unwrap(),
            vec![
                Proposed {
                    kind: MemoryType::Preference,
                    content: "The user wants answers in German.".into(),
                    importance: 8.0
                },
                Proposed {
                    kind: MemoryType::Fact,
                    content: "PaymentCoordinator owns the repository.".into(),
                    importance: 7.5
                },
            ]
        );
        assert_eq!(parse("{\"memories\": []}").unwrap(), vec![]);
    }

    #[test]
    fn an_invalid_answer_says_what_was_wrong() {
        let check = |answer: &str, expected: &str| {
            let error = parse(answer).unwrap_err();
            assert!(error.contains(expected), "{answer}: {error}");
        };
        check("Sure! Here is what I remember.", "expected a JSON object");
        check("{\"facts\": []}", "with a \"memories\" array");
        check(
            "{\"memories\": [{\"type\": \"rumour\", \"content\": \"Payment uses a coordinator\", \"importance\": 5}]}",
            "memory 1: \"type\" must be fact, insight or preference",
        );
        check(
            "{\"memories\": [{\"type\": \"fact\", \"content\": \"short\", \"importance\": 5}]}",
            "\"content\" must be a string of 10 to 300 characters, got 5",
        );
        check(
            "{\"memories\": [{\"type\": \"fact\", \"content\": \"Payment uses a coordinator\", \"importance\": 11}]}",
            "\"importance\" must be a number from 1 to 10",
        );
        let seven = format!(
            "{{\"memories\": [{}]}}",
            ["{\"type\": \"fact\", \"content\": \"Payment uses a coordinator\", \"importance\": 5}"; 7].join(",")
        );
        check(&seven, "7 memories proposed, at most 6 are accepted");
    }

    #[test]
    fn the_transcript_keeps_its_most_recent_part() {
        assert_eq!(recent("abcdef", 10), "abcdef");
        assert_eq!(recent("abcdef", 3), "[earlier part cut]\ndef");
    }
}
