//! SignalDetector: did a tool call bring new information?
//!
//! Rules:
//! - **new file**: a search that surfaces a file not seen before, or a read of a file not read
//!   before, is new. (A file first seen as a search hit is new when it is *read*: reading is
//!   how the agent verifies, and the reference counted it as stagnation.)
//! - **new pattern**: search patterns are recorded; a search whose results are all known files
//!   is not new even when the pattern is — a synonym that finds the same files is exactly the
//!   "search X, nothing new, search another word for X" loop convergence is meant to stop.
//! - **new query**: structured queries (class info, hierarchy, graphs, structure, overview) are
//!   new once per `tool:target`.
//! - Submits, memory tools and failed calls are never new, so the model cannot defeat the
//!   stagnation detector by taking notes.

use std::collections::HashSet;

use serde_json::Value;

use crate::observation::{ToolObservation, array_field, batch_entries, is_submit_tool, str_field};

/// Tools whose rounds count as search rounds.
pub const SEARCH_TOOLS: &[&str] = &[
    "search_project_code",
    "semantic_search_code",
    "get_class_info",
    "get_class_hierarchy",
    "get_protocol_info",
    "get_method_overrides",
    "get_category_map",
    "list_project_structure",
    "get_project_overview",
    "get_file_summary",
    "query_code_graph",
    "query_call_graph",
];

/// Tools that only touch memory: never new information.
const MEMORY_TOOLS: &[&str] = &[
    "note_finding",
    "get_previous_analysis",
    "get_previous_evidence",
];

/// Keeps the sets of seen files, read files, patterns and queries.
#[derive(Debug, Clone, Default)]
pub struct SignalDetector {
    seen_files: HashSet<String>,
    read_files: HashSet<String>,
    patterns: HashSet<String>,
    queries: HashSet<String>,
}

impl SignalDetector {
    pub fn unique_files(&self) -> usize {
        self.seen_files.len()
    }

    pub fn unique_patterns(&self) -> usize {
        self.patterns.len()
    }

    pub fn unique_queries(&self) -> usize {
        self.queries.len()
    }

    /// Records `obs` and says whether it brought new information.
    pub fn observe(&mut self, obs: &ToolObservation) -> bool {
        if obs.failed || is_submit_tool(&obs.tool) || MEMORY_TOOLS.contains(&obs.tool.as_str()) {
            return false;
        }
        match obs.tool.as_str() {
            "search_project_code" | "semantic_search_code" => self.observe_search(obs),
            "read_project_file" => self.observe_read(obs),
            "get_project_overview" => self.queries.insert("overview".to_string()),
            "list_project_structure" => {
                let dir = obs.arg_str(&["directory", "path"]).unwrap_or("/");
                self.queries.insert(format!("list:{dir}"))
            }
            tool => {
                let target = obs
                    .arg_str(&[
                        "className",
                        "protocolName",
                        "methodName",
                        "entity_id",
                        "name",
                        "filePath",
                    ])
                    .map(str::to_string)
                    .unwrap_or_else(|| canonical_args(&obs.args));
                self.queries.insert(format!("{tool}:{target}"))
            }
        }
    }

    fn observe_search(&mut self, obs: &ToolObservation) -> bool {
        for p in string_values(&obs.args, &["pattern", "query"], &["patterns", "queries"]) {
            self.patterns.insert(p);
        }
        let mut files = Vec::new();
        collect_match_files(&obs.data, &mut files);
        for (_, entry) in batch_entries(&obs.data).unwrap_or_default() {
            collect_match_files(entry, &mut files);
        }
        let mut new = false;
        for f in files {
            new |= self.seen_files.insert(f);
        }
        new
    }

    fn observe_read(&mut self, obs: &ToolObservation) -> bool {
        let mut new = false;
        for f in string_values(
            &obs.args,
            &["filePath", "path", "file_path"],
            &["filePaths", "paths"],
        ) {
            self.seen_files.insert(f.clone());
            new |= self.read_files.insert(f);
        }
        new
    }
}

/// Files of a search result: every match and, when given, the per-file counts (which list
/// files whose matches were cut by `maxResults`).
fn collect_match_files(value: &Value, out: &mut Vec<String>) {
    if let Some(files) = array_field(value, &["files"]) {
        out.extend(
            files
                .iter()
                .filter_map(|f| str_field(f, &["file", "path"]))
                .map(str::to_string),
        );
    }
    if let Some(matches) = array_field(value, &["matches", "hits", "results"]) {
        out.extend(
            matches
                .iter()
                .filter_map(|m| str_field(m, &["file", "path", "filePath"]))
                .map(str::to_string),
        );
    }
}

/// String values of the single keys and the array keys of `args`.
fn string_values(args: &Value, single: &[&str], arrays: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = str_field(args, single)
        .map(str::to_string)
        .into_iter()
        .collect();
    if let Some(items) = array_field(args, arrays) {
        out.extend(items.iter().filter_map(Value::as_str).map(str::to_string));
    }
    out
}

/// The arguments as compact JSON with sorted keys: the same canonical form as audit hashes
/// and `alembic_tools::cache_key`, so one call has one identity everywhere.
pub fn canonical_args(args: &Value) -> String {
    alembic_tools::canonical::canonical_json(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn search(pattern: &str, files: &[&str]) -> ToolObservation {
        let matches: Vec<Value> = files
            .iter()
            .map(|f| json!({"file": f, "line": 1}))
            .collect();
        ToolObservation::ok(
            "search_project_code",
            json!({"pattern": pattern}),
            json!({"matches": matches}),
            "",
        )
    }

    #[test]
    fn a_search_is_new_only_when_it_surfaces_a_new_file() {
        let mut d = SignalDetector::default();
        assert!(d.observe(&search("URLSession", &["a.swift", "b.swift"])));
        assert!(!d.observe(&search("request", &["a.swift"])));
        assert!(!d.observe(&search("URLSession", &["a.swift", "b.swift"])));
        assert!(d.observe(&search("response", &["a.swift", "c.swift"])));
        assert_eq!((d.unique_files(), d.unique_patterns()), (3, 3));
    }

    #[test]
    fn files_cut_from_the_matches_still_count_as_seen() {
        // alembic-code cuts `matches` to maxResults but lists every file with its count.
        let mut d = SignalDetector::default();
        let single = ToolObservation::ok(
            "search_project_code",
            json!({"pattern": "fetch"}),
            json!({"matches": [{"file": "a.swift", "line": 1}], "files": [{"file": "a.swift", "matches": 3}, {"file": "b.swift", "matches": 1}]}),
            "",
        );
        assert!(d.observe(&single));
        assert_eq!(d.unique_files(), 2);
        let batch = ToolObservation::ok(
            "search_project_code",
            json!({"patterns": ["x", "y"]}),
            json!({"batchResults": {"x": {"files": [{"file": "b.swift", "matches": 1}]}, "y": {"files": [{"file": "c.swift", "matches": 2}]}}}),
            "",
        );
        assert!(d.observe(&batch));
        assert_eq!((d.unique_files(), d.unique_patterns()), (3, 3));
    }

    #[test]
    fn reading_a_file_seen_in_search_results_is_new_once() {
        let mut d = SignalDetector::default();
        d.observe(&search("x", &["a.swift"]));
        let read = ToolObservation::ok(
            "read_project_file",
            json!({"filePath": "a.swift"}),
            Value::Null,
            "",
        );
        assert!(d.observe(&read));
        assert!(!d.observe(&read));
    }

    #[test]
    fn structured_queries_are_new_once_per_target() {
        let mut d = SignalDetector::default();
        let q = |name: &str| {
            ToolObservation::ok(
                "get_class_hierarchy",
                json!({"className": name}),
                Value::Null,
                "",
            )
        };
        assert!(d.observe(&q("NetworkKit")));
        assert!(!d.observe(&q("NetworkKit")));
        assert!(d.observe(&q("APIClient")));
        let overview = ToolObservation::ok("get_project_overview", json!({}), Value::Null, "");
        assert!(d.observe(&overview));
        assert!(!d.observe(&overview));
    }

    #[test]
    fn submits_notes_and_failures_are_never_new() {
        let mut d = SignalDetector::default();
        let note = ToolObservation::ok("note_finding", json!({"finding": "x"}), Value::Null, "");
        let submit =
            ToolObservation::ok("submit_knowledge", json!({"title": "t"}), Value::Null, "");
        let failed =
            ToolObservation::failed("search_project_code", json!({"pattern": "p"}), "error");
        assert!(!d.observe(&note));
        assert!(!d.observe(&submit));
        assert!(!d.observe(&failed));
    }

    #[test]
    fn canonical_args_sort_keys_recursively() {
        assert_eq!(
            canonical_args(&json!({"b": 1, "a": {"d": 2, "c": [3, {"f": 1, "e": 0}]}})),
            r#"{"a":{"c":[3,{"e":0,"f":1}],"d":2},"b":1}"#
        );
    }
}
