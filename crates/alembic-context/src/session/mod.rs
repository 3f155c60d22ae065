//! SessionStore: the memory of one bootstrap session, shared by all its dimensions.
//!
//! Per-dimension reports with findings and evidence, an evidence index by file, cross-dimension
//! references, rule-based tier reflections (no LLM), and the read-only tool-result cache.
//!
//! There is no checkpoint here: `alembic-bootstrap`'s checkpoint store commits each finished
//! dimension's report with its candidates and memory in one transaction and rebuilds the
//! session from those reports on `--resume`; a second checkpoint of the same reports could
//! disagree with the first.

pub mod cache;
mod digest;
mod reflect;
mod render;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::active::{DistilledContext, Finding};
pub use cache::{CacheKey, CacheStats, CachedResult, ToolResultCache, is_cacheable_tool};

/// A finding of a dimension, with its evidence (`path:line`, several separated by commas).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionFinding {
    pub finding: String,
    #[serde(default)]
    pub evidence: String,
    pub importance: u8,
}

/// A knowledge candidate a dimension submitted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CandidateSummary {
    pub title: String,
    #[serde(default)]
    pub sub_topic: String,
    #[serde(default)]
    pub summary: String,
}

/// The digest a bootstrap dimension ends with (the `dimensionDigest` JSON).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DimensionDigest {
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub candidate_count: u32,
    #[serde(default)]
    pub key_findings: Vec<String>,
    #[serde(default)]
    pub cross_refs: BTreeMap<String, String>,
    #[serde(default)]
    pub gaps: Vec<String>,
    #[serde(default)]
    pub remaining_tasks: Vec<Value>,
}

/// What a finished dimension leaves for the others.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DimensionReport {
    pub dim_id: String,
    pub completed_at_ms: u64,
    #[serde(default)]
    pub analysis_text: String,
    #[serde(default)]
    pub findings: Vec<SessionFinding>,
    #[serde(default)]
    pub referenced_files: Vec<String>,
    #[serde(default)]
    pub candidates: Vec<CandidateSummary>,
    #[serde(default)]
    pub distilled: Option<DistilledContext>,
    #[serde(default)]
    pub digest: Option<DimensionDigest>,
}

/// "Dimension `from` suggests `detail` to dimension `to`."
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrossReference {
    pub from: String,
    pub to: String,
    pub detail: String,
}

/// Rule-based synthesis after a tier of dimensions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierReflection {
    pub tier_index: usize,
    pub completed_dimensions: Vec<String>,
    pub top_findings: Vec<(String, SessionFinding)>,
    pub cross_dimension_patterns: Vec<String>,
    pub suggestions_for_next_tier: Vec<String>,
}

/// One entry of the evidence index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceEntry {
    pub file: String,
    pub dim_id: String,
    pub finding: String,
    pub importance: u8,
}

/// What the producer stage of a dimension gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProducerContext {
    pub findings: Vec<SessionFinding>,
    pub key_findings: Vec<Finding>,
    pub tool_call_summary: Vec<String>,
    pub referenced_files: Vec<String>,
    /// Suggestions other dimensions made for this one.
    pub cross_refs: Vec<CrossReference>,
}

/// The persisted part of a session (everything but the cache).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
struct SessionState {
    reports: Vec<DimensionReport>,
    cross_refs: Vec<CrossReference>,
    reflections: Vec<TierReflection>,
}

/// See the module docs.
#[derive(Debug, Clone, Default)]
pub struct SessionStore {
    state: SessionState,
    cache: ToolResultCache,
}

impl SessionStore {
    pub fn new() -> SessionStore {
        SessionStore::default()
    }

    /// Stores (or replaces) the report of `report.dim_id`, and its digest's cross-references.
    /// Replacing a report replaces its evidence too: nothing is indexed twice. A replacement
    /// without a distillate or digest keeps the earlier one's: the bootstrap runner re-stores
    /// the report it committed, which knows neither.
    pub fn store_report(&mut self, mut report: DimensionReport) {
        for f in &mut report.findings {
            f.importance = f.importance.clamp(1, 10);
        }
        if let Some(digest) = &report.digest {
            for (to, detail) in digest
                .cross_refs
                .iter()
                .filter(|(_, d)| !d.trim().is_empty())
            {
                self.add_cross_ref(&report.dim_id, to, detail);
            }
        }
        match self
            .state
            .reports
            .iter_mut()
            .find(|r| r.dim_id == report.dim_id)
        {
            Some(slot) => {
                if report.distilled.is_none() {
                    report.distilled = slot.distilled.take();
                }
                if report.digest.is_none() {
                    report.digest = slot.digest.take();
                }
                *slot = report;
            }
            None => self.state.reports.push(report),
        }
    }

    /// Drops the report of `dim_id` unless it is finished (completion time set): what a
    /// dimension that failed after its analysis phase left must not reach the others.
    pub fn discard_unfinished(&mut self, dim_id: &str) {
        self.state
            .reports
            .retain(|r| r.dim_id != dim_id || r.completed_at_ms > 0);
    }

    /// Adds a cross-reference unless the same one exists.
    pub fn add_cross_ref(&mut self, from: &str, to: &str, detail: &str) {
        let r = CrossReference {
            from: from.to_string(),
            to: to.to_string(),
            detail: detail.trim().to_string(),
        };
        if !self.state.cross_refs.contains(&r) {
            self.state.cross_refs.push(r);
        }
    }

    /// Records a submitted candidate for `dim_id` (creating an empty report if needed).
    pub fn add_candidate(&mut self, dim_id: &str, candidate: CandidateSummary) {
        let idx = match self.state.reports.iter().position(|r| r.dim_id == dim_id) {
            Some(i) => i,
            None => {
                self.state.reports.push(DimensionReport {
                    dim_id: dim_id.to_string(),
                    ..DimensionReport::default()
                });
                self.state.reports.len() - 1
            }
        };
        self.state.reports[idx].candidates.push(candidate);
    }

    /// The dimension that already submitted a candidate whose title, lower-cased with
    /// whitespace collapsed, is `norm_title` (SubmitDedup across the dimensions of a session).
    pub fn dimension_with_candidate(&self, norm_title: &str) -> Option<&str> {
        let norm = |t: &str| {
            t.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        };
        let wanted = norm(norm_title);
        self.state
            .reports
            .iter()
            .find(|r| r.candidates.iter().any(|c| norm(&c.title) == wanted))
            .map(|r| r.dim_id.as_str())
    }

    pub fn report(&self, dim_id: &str) -> Option<&DimensionReport> {
        self.state.reports.iter().find(|r| r.dim_id == dim_id)
    }

    /// Dimensions with a finished report (completion time set), in completion order.
    pub fn completed_dimensions(&self) -> Vec<String> {
        self.state
            .reports
            .iter()
            .filter(|r| r.completed_at_ms > 0)
            .map(|r| r.dim_id.clone())
            .collect()
    }

    pub fn cross_refs(&self) -> &[CrossReference] {
        &self.state.cross_refs
    }

    pub fn reflections(&self) -> &[TierReflection] {
        &self.state.reflections
    }

    /// The evidence index: file → entries, built from report findings (an LLM dimension's
    /// notes and every candidate's cited sources are findings of its report, so there is no
    /// second input).
    pub fn evidence_index(&self) -> BTreeMap<String, Vec<EvidenceEntry>> {
        let mut index: BTreeMap<String, Vec<EvidenceEntry>> = BTreeMap::new();
        for r in &self.state.reports {
            for f in &r.findings {
                for file in evidence_files(&f.evidence) {
                    index.entry(file.clone()).or_default().push(EvidenceEntry {
                        file,
                        dim_id: r.dim_id.clone(),
                        finding: f.finding.clone(),
                        importance: f.importance,
                    });
                }
            }
        }
        index
    }

    /// Evidence whose file or finding contains `query` (case-insensitive), optionally from one
    /// dimension, most important first.
    pub fn search_evidence(&self, query: &str, dim_id: Option<&str>) -> Vec<EvidenceEntry> {
        let q = query.to_lowercase();
        let mut hits: Vec<EvidenceEntry> = self
            .evidence_index()
            .into_values()
            .flatten()
            .filter(|e| dim_id.is_none_or(|d| e.dim_id == d))
            .filter(|e| e.file.to_lowercase().contains(&q) || e.finding.to_lowercase().contains(&q))
            .collect();
        hits.sort_by_key(|e| std::cmp::Reverse(e.importance));
        hits
    }

    /// What the producer stage of `dim_id` needs, or `None` before its analysis is stored.
    pub fn distilled_for_producer(&self, dim_id: &str) -> Option<ProducerContext> {
        let report = self.report(dim_id)?;
        let distilled = report.distilled.clone().unwrap_or_default();
        Some(ProducerContext {
            findings: report.findings.clone(),
            key_findings: distilled.key_findings,
            tool_call_summary: distilled.tool_call_summary,
            referenced_files: report.referenced_files.clone(),
            cross_refs: self
                .state
                .cross_refs
                .iter()
                .filter(|c| c.to == dim_id)
                .cloned()
                .collect(),
        })
    }

    /// Looks up a cached read-only result.
    pub fn cached_result(&mut self, key: &CacheKey, now_ms: u64) -> Option<CachedResult> {
        self.cache.get(key, now_ms)
    }

    /// Caches a result of a read-only tool call.
    pub fn cache_result(&mut self, key: CacheKey, result: CachedResult, now_ms: u64) {
        self.cache.put(key, result, now_ms);
    }

    /// Caches a result of a project-file or code read (kept across knowledge writes, so the
    /// dimensions of a bootstrap share their searches).
    pub fn cache_project_read(&mut self, key: CacheKey, result: CachedResult, now_ms: u64) {
        self.cache.put_project_read(key, result, now_ms);
    }

    /// Drops cached results that a knowledge or memory write may have made stale.
    pub fn invalidate_non_project_reads(&mut self) {
        self.cache.clear_all_but_project_reads();
    }

    /// A side-effect tool ran: cached searches may be stale.
    pub fn invalidate_cache(&mut self) {
        self.cache.clear();
    }

    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }
}

/// File paths named by an evidence string: `a.swift:12, dir/b.rs:3-9` → `a.swift`, `dir/b.rs`.
/// The line suffix is stripped from the right, so Windows paths (`C:\x.rs:4`) survive.
pub fn evidence_files(evidence: &str) -> Vec<String> {
    evidence
        .split([',', ';', '\n'])
        .filter_map(|part| {
            let part = part.trim();
            let path = match part.rsplit_once(':') {
                Some((p, line))
                    if !line.is_empty() && line.chars().all(|c| c.is_ascii_digit() || c == '-') =>
                {
                    p
                }
                _ => part,
            };
            let looks_like_path = path.contains('.') || path.contains('/') || path.contains('\\');
            (looks_like_path && !path.contains(' ')).then(|| path.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests;
