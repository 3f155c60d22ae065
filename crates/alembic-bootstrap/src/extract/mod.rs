//! Deterministic extractors: each turns measured facts into findings with evidence
//! (`file:line` that exists). An extractor reports only what it can point at.

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::dimensions::Dimension;
use crate::facts::{Evidence, Facts, spread};

pub mod architecture;
pub mod concurrency;
pub mod errors;
pub mod guard;
pub mod guidelines;
pub mod idioms;
pub mod logging;
pub mod networking;
pub mod patterns;
pub mod standards;
pub mod testing;
pub mod topics;

/// Evidence places shown per finding.
pub const EVIDENCE_SHOWN: usize = 5;

/// One measured finding of a dimension; becomes a candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable title (no counts), so an unchanged fact is recognised on a re-run.
    pub title: String,
    /// One sentence with the measured figures.
    pub summary: String,
    /// Markdown with the figures and the cited lines.
    pub detail: String,
    pub knowledge_type: String,
    pub language: String,
    pub evidence: Vec<Evidence>,
    /// 1..=10.
    pub importance: u8,
    /// The entry as an LLM producer submitted it (the LLM path); `None` for a measured
    /// finding, whose entry is built from the fields above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<alembic_knowledge::NewEntry>,
}

/// A line-level signal: lines matching `pattern` in sources of `languages` (all when empty).
#[derive(Debug, Clone, Copy)]
pub struct Signal {
    pub title: &'static str,
    pub what: &'static str,
    pub languages: &'static [&'static str],
    pub pattern: &'static str,
    pub min_hits: usize,
}

/// Whether the dimension has a deterministic extractor.
pub fn has_extractor(id: &str) -> bool {
    matches!(
        id,
        "architecture"
            | "design-patterns"
            | "coding-standards"
            | "error-resilience"
            | "concurrency-async"
            | "networking-api"
            | "observability-logging"
            | "testing-quality"
            | "agent-guidelines"
            | "security-auth"
    ) || idioms::signals_for(id).is_some()
        || topics::signals_for(id).is_some()
}

/// Runs the extractor of `dim` (none → no findings).
pub fn run(dim: &Dimension, facts: &Facts) -> Vec<Finding> {
    let kt = |i: usize| {
        dim.allowed_knowledge_types
            .get(i)
            .or(dim.allowed_knowledge_types.first())
            .cloned()
            .unwrap_or_else(|| "best-practice".into())
    };
    let mut found = match dim.id.as_str() {
        "architecture" => architecture::extract(facts),
        "design-patterns" => patterns::extract(facts),
        "coding-standards" => standards::extract(facts),
        "error-resilience" => from_signals(facts, errors::SIGNALS, &kt(0)),
        "concurrency-async" => from_signals(facts, concurrency::SIGNALS, &kt(0)),
        "networking-api" => from_signals(facts, networking::SIGNALS, &kt(0)),
        "observability-logging" => from_signals(facts, logging::SIGNALS, &kt(0)),
        "testing-quality" => testing::extract(facts),
        "agent-guidelines" => guidelines::extract(facts, &kt(0)),
        id => idioms::signals_for(id)
            .or_else(|| topics::signals_for(id))
            .map(|s| from_signals(facts, s, &kt(0)))
            .unwrap_or_default(),
    };
    // The guard audit's violations feed the dimension each rule is about.
    found.extend(guard::extract(facts, &dim.id, &kt(0)));
    found
}

/// One finding per signal with at least `min_hits` matching lines.
pub fn from_signals(facts: &Facts, signals: &[Signal], knowledge_type: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in signals {
        if !s.languages.is_empty() && !s.languages.iter().any(|l| facts.has_language(l)) {
            continue;
        }
        let Ok(re) = Regex::new(s.pattern) else {
            tracing::warn!(
                pattern = s.pattern,
                "bootstrap signal pattern does not compile"
            );
            continue;
        };
        let hits = facts.matches(&re, s.languages);
        if hits.len() < s.min_hits.max(1) {
            continue;
        }
        out.push(finding_from_hits(facts, s, &hits, knowledge_type));
    }
    out
}

fn finding_from_hits(facts: &Facts, s: &Signal, hits: &[Evidence], kt: &str) -> Finding {
    let files = hits
        .iter()
        .map(|e| e.file.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let summary = format!("{}: {} places in {} files.", s.what, hits.len(), files);
    let evidence = spread(hits, EVIDENCE_SHOWN);
    let language = s
        .languages
        .iter()
        .find(|l| facts.has_language(l))
        .map(|l| l.to_string())
        .unwrap_or_default();
    Finding {
        title: s.title.to_string(),
        detail: detail(facts, &summary, &evidence),
        summary,
        knowledge_type: kt.to_string(),
        language,
        evidence,
        importance: importance(hits.len()),
        entry: None,
    }
}

/// Importance from how widespread a fact is: 4 for a handful of places, up to 8.
pub fn importance(places: usize) -> u8 {
    match places {
        0..=2 => 4,
        3..=9 => 5,
        10..=49 => 6,
        50..=199 => 7,
        _ => 8,
    }
}

/// Markdown body: the summary, then each cited line.
pub fn detail(facts: &Facts, summary: &str, evidence: &[Evidence]) -> String {
    let mut out = format!("{summary}\n\nWhere it is:\n");
    for e in evidence {
        let code = facts.line_text(&e.file, e.line).unwrap_or("").trim();
        let code: String = code.chars().take(120).collect();
        out.push_str(&format!("- `{e}`: `{code}`\n"));
    }
    out
}
