//! `suggest_skills`: which skills this project would profit from, read from four signals
//! in the project's own state, each suggestion with the numbers behind it:
//!
//! - **guard violations**: a guard rule violated again and again in recorded checks
//!   (`guard_runs`) asks for a skill on how to avoid it;
//! - **memory preferences**: preferences recorded in persistent memory belong in one skill
//!   that every session loads;
//! - **knowledge gaps**: a category with candidates but no published recipe;
//! - **candidate backlog**: many candidates waiting for review ask for a review checklist.
//!
//! Suggestions whose name is already a skill are listed as covered, not suggested again. A
//! signal whose store cannot be read is reported with its error; the others still answer.

use std::collections::BTreeMap;
use std::sync::Arc;

use alembic_knowledge::{Entry, Filter, KnowledgeService, Status};
use alembic_memory::{ListFilter, MemoryService, MemoryType};
use alembic_tools::{EffectClass, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Serialize;
use serde_json::{Value, json};

use crate::library;
use crate::tools::SkillService;

/// A rule needs this many recorded violations to be worth a skill.
pub const GUARD_MIN_VIOLATIONS: u64 = 3;
/// Preference memories needed for a preferences skill.
pub const PREFERENCES_MIN: usize = 2;
/// Candidates in a category without any published recipe needed to call it a gap.
pub const GAP_MIN_CANDIDATES: usize = 2;
/// Candidates waiting for review needed to suggest a review checklist.
pub const BACKLOG_MIN: usize = 5;
/// At most this many guard rules are suggested (the most violated).
const GUARD_TOP: usize = 3;

/// One suggested skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    pub name: String,
    pub description: String,
    /// Why, with the numbers.
    pub rationale: String,
    /// `high` or `medium`.
    pub priority: &'static str,
    /// `guard_violations`, `memory_preferences`, `knowledge_gap` or `candidate_backlog`.
    pub signal: &'static str,
    /// The numbers the rationale quotes, for programs.
    pub evidence: Value,
}

/// Arguments of `suggest_skills` (none).
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SuggestArgs {}

#[derive(Clone)]
struct State {
    skills: Arc<SkillService>,
    knowledge: Arc<KnowledgeService>,
    memory: Arc<MemoryService>,
}

pub(crate) fn suggest_skills(
    skills: Arc<SkillService>,
    knowledge: Arc<KnowledgeService>,
    memory: Arc<MemoryService>,
) -> ToolDefinition {
    ToolDefinition::typed::<SuggestArgs>(
        "suggest_skills",
        "Suggest skills worth writing for this project, from guard violation frequency, recorded memory preferences, knowledge gaps and the candidate backlog; each suggestion says why, with its numbers.",
        ToolModule::Infrastructure,
        EffectClass::ReadOnly,
    )
    .blocking(
        State {
            skills,
            knowledge,
            memory,
        },
        |state, _args| Ok(suggest(state)),
    )
}

fn suggest(state: &State) -> ToolOutput {
    let mut suggestions = Vec::new();
    let mut unavailable = Vec::new();
    let mut collect = |signal: &str, found: Result<Vec<Suggestion>, ToolError>| match found {
        Ok(s) => suggestions.extend(s),
        Err(e) => unavailable.push(json!({"signal": signal, "error": e.to_string()})),
    };
    collect("guard_violations", guard_signal(&state.knowledge));
    collect("memory_preferences", preference_signal(&state.memory));
    match candidate_entries(&state.knowledge) {
        Ok(entries) => {
            collect("knowledge_gap", Ok(gap_signal(&entries)));
            collect("candidate_backlog", Ok(backlog_signal(&entries)));
        }
        Err(e) => collect("knowledge_gap, candidate_backlog", Err(e)),
    }
    let existing: Vec<String> = library::list_skills(state.skills.root())
        .skills
        .into_iter()
        .map(|s| s.skill.name)
        .collect();
    let (covered, suggestions): (Vec<Suggestion>, Vec<Suggestion>) = suggestions
        .into_iter()
        .partition(|s| existing.contains(&s.name));
    let covered: Vec<&str> = covered.iter().map(|s| s.name.as_str()).collect();
    let text = render(&suggestions, &covered, &unavailable);
    ToolOutput::new(
        json!({"suggestions": suggestions, "alreadyCovered": covered, "unavailable": unavailable}),
        text,
    )
}

fn render(suggestions: &[Suggestion], covered: &[&str], unavailable: &[Value]) -> String {
    let mut text = if suggestions.is_empty() {
        "no skill suggestions: no signal reached its threshold".to_string()
    } else {
        format!("{} skill suggestion(s):\n", suggestions.len())
    };
    for s in suggestions {
        text.push_str(&format!(
            "- {} [{}] {}\n  why: {}\n",
            s.name, s.priority, s.description, s.rationale
        ));
    }
    if !covered.is_empty() {
        text.push_str(&format!("already skills: {}\n", covered.join(", ")));
    }
    for u in unavailable {
        text.push_str(&format!(
            "signal {} unavailable: {}\n",
            u["signal"].as_str().unwrap_or(""),
            u["error"].as_str().unwrap_or("")
        ));
    }
    text
}

fn guard_signal(kb: &KnowledgeService) -> Result<Vec<Suggestion>, ToolError> {
    let stats = kb.with(|kb| kb.guard_stats())?;
    let mut rules: Vec<(&String, &u64)> = stats
        .by_rule
        .iter()
        .filter(|(_, n)| **n >= GUARD_MIN_VIOLATIONS)
        .collect();
    rules.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    Ok(rules
        .into_iter()
        .take(GUARD_TOP)
        .map(|(rule, &n)| {
            let share = n as f64 / stats.violations.max(1) as f64;
            Suggestion {
                name: kebab(&format!("avoid-{rule}")),
                description: format!("How this project avoids and fixes `{rule}` violations."),
                rationale: format!(
                    "guard rule `{rule}` was violated {n} times, {:.0}% of the {} violations in {} recorded checks",
                    share * 100.0,
                    stats.violations,
                    stats.runs
                ),
                priority: if n >= 10 || share >= 0.3 { "high" } else { "medium" },
                signal: "guard_violations",
                evidence: json!({"rule": rule, "violations": n, "totalViolations": stats.violations, "checks": stats.runs}),
            }
        })
        .collect())
}

fn preference_signal(memory: &MemoryService) -> Result<Vec<Suggestion>, ToolError> {
    let all = memory
        .read(|m| m.list(&ListFilter::default()))?
        .map_err(|e| ToolError::failed(e.to_string()))?;
    let mut prefs: Vec<_> = all
        .into_iter()
        .filter(|m| m.kind == MemoryType::Preference)
        .collect();
    if prefs.len() < PREFERENCES_MIN {
        return Ok(Vec::new());
    }
    prefs.sort_by(|a, b| b.importance.total_cmp(&a.importance));
    let top: Vec<String> = prefs
        .iter()
        .take(3)
        .map(|m| {
            format!(
                "\"{}\" (importance {})",
                first_line(&m.content, 60),
                m.importance
            )
        })
        .collect();
    let n = prefs.len();
    Ok(vec![Suggestion {
        name: "project-preferences".into(),
        description: "The preferences recorded for this project, in one guide every session loads."
            .into(),
        rationale: format!(
            "{n} preference memories are recorded; the most important: {}",
            top.join(", ")
        ),
        priority: if n >= 5 { "high" } else { "medium" },
        signal: "memory_preferences",
        evidence: json!({"preferences": n}),
    }])
}

fn candidate_entries(kb: &KnowledgeService) -> Result<Vec<Entry>, ToolError> {
    kb.with(|kb| {
        kb.list(&Filter {
            limit: 100_000,
            ..Filter::default()
        })
    })
}

fn gap_signal(entries: &[Entry]) -> Vec<Suggestion> {
    // category -> (open candidates, published recipes)
    let mut by_category: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for e in entries {
        let counts = by_category.entry(e.category.as_str()).or_default();
        match e.status {
            Status::Draft | Status::Submitted | Status::Approved => counts.0 += 1,
            Status::Published => counts.1 += 1,
            Status::Rejected | Status::Deprecated => {}
        }
    }
    by_category
        .into_iter()
        .filter(|(c, (open, published))| {
            !c.is_empty() && *open >= GAP_MIN_CANDIDATES && *published == 0
        })
        .enumerate()
        .map(|(i, (category, (open, _)))| Suggestion {
            name: Some(kebab(&format!("{category}-guide")))
                .filter(|n| crate::format::validate_name(n).is_ok())
                .unwrap_or_else(|| format!("knowledge-gap-guide-{}", i + 1)),
            description: format!(
                "How this project does {category}: the conventions its candidates describe."
            ),
            rationale: format!(
                "category `{category}` has {open} candidates under review but no published recipe"
            ),
            priority: if open >= 5 { "high" } else { "medium" },
            signal: "knowledge_gap",
            evidence: json!({"category": category, "candidates": open, "published": 0}),
        })
        .collect()
}

fn backlog_signal(entries: &[Entry]) -> Vec<Suggestion> {
    let count = |s: Status| entries.iter().filter(|e| e.status == s).count();
    let (drafts, submitted, approved) = (
        count(Status::Draft),
        count(Status::Submitted),
        count(Status::Approved),
    );
    let waiting = drafts + submitted + approved;
    if waiting < BACKLOG_MIN {
        return Vec::new();
    }
    vec![Suggestion {
        name: "review-candidates".into(),
        description: "A checklist for reviewing knowledge candidates quickly and consistently."
            .into(),
        rationale: format!(
            "{waiting} candidates wait: {submitted} submitted, {drafts} drafts, {approved} approved but not published"
        ),
        priority: if waiting >= 20 { "high" } else { "medium" },
        signal: "candidate_backlog",
        evidence: json!({"waiting": waiting, "submitted": submitted, "drafts": drafts, "approved": approved}),
    }]
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.chars().count() <= max {
        return line.to_string();
    }
    let cut: String = line.chars().take(max).collect();
    format!("{cut}…")
}

/// `text` as a skill name: lower-case, runs of other characters as one hyphen, at most 64.
fn kebab(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let mut out: String = out.chars().take(64).collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kebab_makes_valid_skill_names() {
        assert_eq!(kebab("avoid-rust.unwrap"), "avoid-rust-unwrap");
        assert_eq!(kebab("Network & IO-guide"), "network-io-guide");
        let long = kebab(&format!("avoid-{}", "x".repeat(80)));
        assert!(crate::format::validate_name(&long).is_ok(), "{long}");
    }
}
