//! Candidate validation (errors block a submission, warnings only advise) and the quality
//! score (five dimensions, an overall value and a grade A–F).

use serde::Serialize;

use crate::model::{Entry, NewEntry};

/// The longest title accepted, in characters.
pub const MAX_TITLE_CHARS: usize = 120;

/// What is wrong with a candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Validation {
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

impl Validation {
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Checks a candidate before it is stored.
pub fn validate(new: &NewEntry) -> Validation {
    let mut v = Validation::default();
    let title = new.title.trim();
    if title.is_empty() {
        v.errors
            .push("title is missing: give a short, specific title".into());
    } else if title.chars().count() > MAX_TITLE_CHARS {
        v.errors.push(format!(
            "title is {} characters long; at most {MAX_TITLE_CHARS} are accepted",
            title.chars().count()
        ));
    }
    if new.content.trim().is_empty() && new.pattern.trim().is_empty() {
        v.errors.push(
            "content is missing: give content.markdown (explanation) and/or content.pattern (code)"
                .into(),
        );
    }
    for s in &new.sources {
        if s.starts_with('/') || s.split(['/', '\\']).any(|p| p == "..") {
            v.errors.push(format!(
                "source '{s}' is not a project-relative path (no leading '/', no '..')"
            ));
        }
    }
    advise(new, &mut v.warnings);
    v
}

fn advise(new: &NewEntry, w: &mut Vec<String>) {
    if new.description.trim().is_empty() {
        w.push("no description: one sentence on what this is helps search".into());
    }
    if new.sources.is_empty() {
        w.push("no sources: list the project files this was found in (evidence)".into());
    }
    if !new.content.trim().is_empty() && new.content.chars().count() < 200 {
        w.push("content.markdown is shorter than 200 characters".into());
    }
    if new.pattern.trim().is_empty() {
        w.push("no code pattern (content.pattern)".into());
    } else if new.pattern.lines().count() > 40 {
        w.push("code pattern is longer than 40 lines: keep the essential skeleton".into());
    }
    if let Some(t) = new.trigger.as_deref()
        && !t.starts_with('@')
    {
        w.push(format!("trigger '{t}' should start with '@'"));
    }
    if new.language.trim().is_empty() {
        w.push("language unknown: pass language or list source files".into());
    }
}

/// A quality score; every dimension and the overall value lie in 0..=1.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quality {
    pub completeness: f64,
    pub depth: f64,
    pub code: f64,
    pub evidence: f64,
    pub engagement: f64,
    pub overall: f64,
    pub grade: char,
}

/// Usage counters that feed the engagement dimension.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageCounts {
    pub views: u64,
    pub adoptions: u64,
    pub applications: u64,
}

/// Scores a stored entry (engagement from its usage counters).
pub fn score_entry(entry: &Entry) -> Quality {
    let new = NewEntry {
        title: entry.title.clone(),
        description: entry.description.clone(),
        kind: Some(entry.kind),
        knowledge_type: entry.knowledge_type.clone(),
        category: entry.category.clone(),
        language: entry.language.clone(),
        trigger: entry.trigger.clone(),
        content: entry.content.clone(),
        pattern: entry.pattern.clone(),
        rationale: entry.rationale.clone(),
        tags: entry.tags.clone(),
        sources: entry.sources.clone(),
        extra: entry.extra.clone(),
    };
    let usage = UsageCounts {
        views: entry.views,
        adoptions: entry.adoptions,
        applications: entry.applications,
    };
    score(&new, usage)
}

/// Scores a candidate.
pub fn score(new: &NewEntry, usage: UsageCounts) -> Quality {
    let completeness = completeness(new);
    let depth = depth(&new.content);
    let code = code_score(&new.pattern);
    let evidence = (new.sources.len() as f64 / 2.0).min(1.0);
    let used = usage.adoptions as f64 * 2.0 + usage.applications as f64 + usage.views as f64 / 10.0;
    let engagement = (used / 10.0).min(1.0);
    let overall =
        0.3 * completeness + 0.25 * depth + 0.2 * code + 0.15 * evidence + 0.1 * engagement;
    Quality {
        completeness: round2(completeness),
        depth: round2(depth),
        code: round2(code),
        evidence: round2(evidence),
        engagement: round2(engagement),
        overall: round2(overall),
        grade: grade(overall),
    }
}

fn completeness(new: &NewEntry) -> f64 {
    let has = |s: &str| !s.trim().is_empty();
    let clause = |k: &str| new.extra.get(k).and_then(|v| v.as_str()).is_some_and(has);
    let present = [
        has(&new.title),
        has(&new.description),
        has(&new.content),
        has(&new.pattern),
        has(&new.rationale),
        new.trigger.as_deref().is_some_and(has),
        has(&new.language),
        !new.tags.is_empty(),
        !new.sources.is_empty(),
        clause("whenClause") || clause("doClause"),
    ];
    present.iter().filter(|p| **p).count() as f64 / present.len() as f64
}

fn depth(markdown: &str) -> f64 {
    let length = (markdown.chars().count() as f64 / 400.0).min(1.0);
    let grounded = markdown.contains("```") || has_file_reference(markdown);
    0.7 * length + if grounded { 0.3 } else { 0.0 }
}

/// Whether `text` mentions a file like `Net/Client.swift` or `client.rs:42`.
fn has_file_reference(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || "()[]`,".contains(c))
        .any(|w| {
            let w = w.split(':').next().unwrap_or("");
            w.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && (1..=5).contains(&ext.len())
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
                    && ext.chars().any(|c| c.is_ascii_alphabetic())
            })
        })
}

fn code_score(pattern: &str) -> f64 {
    match pattern.lines().filter(|l| !l.trim().is_empty()).count() {
        0 => 0.0,
        1..=2 => 0.5,
        3..=30 => 1.0,
        _ => 0.7,
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn grade(overall: f64) -> char {
    match overall {
        x if x >= 0.9 => 'A',
        x if x >= 0.75 => 'B',
        x if x >= 0.6 => 'C',
        x if x >= 0.4 => 'D',
        _ => 'F',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate() -> NewEntry {
        NewEntry {
            title: "Retry requests with backoff".into(),
            content: "x".repeat(400) + "\nSee `Net/Client.swift:42`",
            pattern: "a\nb\nc".into(),
            sources: vec!["Net/Client.swift".into(), "Net/Retry.swift".into()],
            ..NewEntry::default()
        }
    }

    #[test]
    fn missing_title_and_content_are_errors() {
        let v = validate(&NewEntry::default());
        assert_eq!(v.errors.len(), 2, "{v:?}");
        assert!(v.errors[0].contains("title is missing"));
    }

    #[test]
    fn escaping_sources_are_errors() {
        let mut c = candidate();
        c.sources = vec!["../secret".into()];
        assert!(validate(&c).errors[0].contains("project-relative"));
    }

    #[test]
    fn fuller_candidates_score_higher() {
        let thin = score(
            &NewEntry {
                title: "t".into(),
                content: "short".into(),
                ..NewEntry::default()
            },
            UsageCounts::default(),
        );
        let full = score(&candidate(), UsageCounts::default());
        assert!(full.overall > thin.overall);
        assert_eq!(thin.grade, 'F');
        assert_eq!(full.depth, 1.0);
        assert_eq!(full.code, 1.0);
    }
}
