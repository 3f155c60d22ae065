//! Rule-based tier reflections: what a finished tier of dimensions tells the next one.

use std::collections::{BTreeMap, BTreeSet};

use super::{SessionFinding, SessionStore, TierReflection};
use crate::active::plan::step_keywords;

/// Findings, patterns and suggestions kept per reflection.
const TOP_N: usize = 5;

impl SessionStore {
    /// Builds and stores the reflection of tier `tier_index` over `dims`.
    ///
    /// - top findings: the most important findings of the tier;
    /// - patterns: files cited as evidence by ≥ 2 distinct dimensions, and identifiers
    ///   (CamelCase or quoted) named in findings of ≥ 2 distinct dimensions;
    /// - suggestions: gaps the dimensions' digests left, and cross-references they made to
    ///   dimensions that have not run yet.
    pub fn reflect_tier(&mut self, tier_index: usize, dims: &[&str]) -> TierReflection {
        let completed: Vec<String> = dims
            .iter()
            .filter(|d| self.report(d).is_some())
            .map(|d| d.to_string())
            .collect();
        let reflection = TierReflection {
            tier_index,
            top_findings: self.top_findings(&completed),
            cross_dimension_patterns: self.shared_patterns(&completed),
            suggestions_for_next_tier: self.suggestions(&completed),
            completed_dimensions: completed,
        };
        self.state.reflections.push(reflection.clone());
        reflection
    }

    fn top_findings(&self, dims: &[String]) -> Vec<(String, SessionFinding)> {
        let mut all: Vec<(String, SessionFinding)> = dims
            .iter()
            .filter_map(|d| self.report(d))
            .flat_map(|r| r.findings.iter().map(|f| (r.dim_id.clone(), f.clone())))
            .collect();
        all.sort_by_key(|(_, f)| std::cmp::Reverse(f.importance));
        all.truncate(TOP_N);
        all
    }

    fn shared_patterns(&self, dims: &[String]) -> Vec<String> {
        let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (file, entries) in self.evidence_index() {
            for e in entries.iter().filter(|e| dims.contains(&e.dim_id)) {
                files
                    .entry(file.clone())
                    .or_default()
                    .insert(e.dim_id.clone());
            }
        }
        let mut idents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in dims.iter().filter_map(|d| self.report(d)) {
            for f in &r.findings {
                for k in step_keywords(&f.finding) {
                    idents.entry(k).or_default().insert(r.dim_id.clone());
                }
            }
        }
        let mut shared: Vec<(usize, String)> = Vec::new();
        for (file, ds) in files.iter().filter(|(_, ds)| ds.len() >= 2) {
            let list: Vec<&str> = ds.iter().map(String::as_str).collect();
            shared.push((
                ds.len(),
                format!(
                    "{file} is evidence in {} dimensions ({})",
                    ds.len(),
                    list.join(", ")
                ),
            ));
        }
        for (ident, ds) in idents.iter().filter(|(_, ds)| ds.len() >= 2) {
            let list: Vec<&str> = ds.iter().map(String::as_str).collect();
            shared.push((
                ds.len(),
                format!("`{ident}` appears in findings of {}", list.join(", ")),
            ));
        }
        shared.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
        shared.into_iter().take(TOP_N).map(|(_, s)| s).collect()
    }

    fn suggestions(&self, dims: &[String]) -> Vec<String> {
        let done = self.completed_dimensions();
        let mut out: Vec<String> = Vec::new();
        for r in dims.iter().filter_map(|d| self.report(d)) {
            if let Some(digest) = &r.digest {
                out.extend(
                    digest
                        .gaps
                        .iter()
                        .map(|g| format!("{} left uncovered: {g}", r.dim_id)),
                );
            }
        }
        for c in self
            .state
            .cross_refs
            .iter()
            .filter(|c| dims.contains(&c.from) && !done.contains(&c.to))
        {
            out.push(format!("{}: {} (from {})", c.to, c.detail, c.from));
        }
        out.truncate(TOP_N);
        out
    }
}
