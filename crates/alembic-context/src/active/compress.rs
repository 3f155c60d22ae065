//! Per-tool compression of observations that leave the raw window.
//!
//! Different tools carry different densities of information, so each observation-producing
//! tool gets its own summary (the seed's table): searches keep the file list and match counts,
//! reads keep file names and line counts, class queries keep the class, its parents and its
//! protocols, submits keep status and reason. Everything else falls back to the start of the
//! text the model saw. Compressors read the structured result first and fall back to the text,
//! because tools are free to return either.

use serde_json::Value;

use crate::observation::{ToolObservation, array_field, batch_entries, is_submit_tool, str_field};
use crate::text::{cut_with_marker, first_line};

/// Length of the generic fallback summary, in characters.
const GENERIC_MAX_CHARS: usize = 600;
/// Files listed per search summary.
const SEARCH_MAX_FILES: usize = 8;
/// Patterns listed per batch search summary.
const BATCH_MAX_PATTERNS: usize = 5;
/// Files listed per batch read summary.
const READ_MAX_FILES: usize = 5;

/// The compact summary of one observation.
pub fn compress(obs: &ToolObservation) -> String {
    if obs.failed {
        return format!("failed: {}", first_line(&obs.text, 200));
    }
    let specific = match obs.tool.as_str() {
        "search_project_code" | "semantic_search_code" => compress_search(obs),
        "read_project_file" => compress_read(obs),
        "get_class_info" => compress_class_info(obs),
        "get_class_hierarchy" => compress_count(
            obs,
            &["classes", "hierarchy", "descendants", "roots"],
            "class hierarchy",
        ),
        "list_project_structure" => compress_count(obs, &["entries", "children"], "structure"),
        "note_finding" => obs
            .arg_str(&["finding"])
            .map(|f| format!("noted: {}", first_line(f, 200))),
        tool if is_submit_tool(tool) => Some(compress_submit(obs)),
        _ => None,
    };
    specific.unwrap_or_else(|| generic(obs))
}

/// The fallback: the text the model saw (or the JSON result), cut to 600 characters.
pub fn generic(obs: &ToolObservation) -> String {
    let text = if obs.text.trim().is_empty() {
        obs.data.to_string()
    } else {
        obs.text.trim().to_string()
    };
    cut_with_marker(&text, GENERIC_MAX_CHARS, "…(truncated)")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn match_file(m: &Value) -> Option<&str> {
    str_field(m, &["file", "path", "filePath"])
}

fn match_line(m: &Value) -> Option<u64> {
    ["line", "lineNumber", "startLine"]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_u64))
}

/// Groups matches by file in first-seen order: (file, line numbers, match count).
fn group_by_file(matches: &[Value]) -> Vec<(String, Vec<u64>, usize)> {
    let mut groups: Vec<(String, Vec<u64>, usize)> = Vec::new();
    for m in matches {
        let Some(file) = match_file(m) else { continue };
        let idx = match groups.iter().position(|(f, _, _)| f == file) {
            Some(i) => i,
            None => {
                groups.push((file.to_string(), Vec::new(), 0));
                groups.len() - 1
            }
        };
        let group = &mut groups[idx];
        group.2 += 1;
        if let Some(line) = match_line(m) {
            group.1.push(line);
        }
    }
    groups
}

fn render_file_groups(groups: &[(String, Vec<u64>, usize)], out: &mut Vec<String>) {
    for (file, lines, count) in groups.iter().take(SEARCH_MAX_FILES) {
        let shown: Vec<String> = lines.iter().take(3).map(|l| format!("L{l}")).collect();
        if shown.is_empty() {
            out.push(format!("  {file}: {}", plural(*count, "match", "matches")));
        } else {
            out.push(format!(
                "  {file}: {} ({})",
                plural(*count, "match", "matches"),
                shown.join(",")
            ));
        }
    }
    if groups.len() > SEARCH_MAX_FILES {
        out.push(format!(
            "  …and {} more files",
            groups.len() - SEARCH_MAX_FILES
        ));
    }
}

/// (file, line numbers, match count) per file: from the `files` list with counts when the
/// tool gives one (alembic-code does; its `matches` are cut to `maxResults`), else from the
/// matches themselves.
fn file_groups(result: &Value) -> Vec<(String, Vec<u64>, usize)> {
    let matches = array_field(result, &["matches", "hits"]).map_or(&[][..], Vec::as_slice);
    let mut groups = group_by_file(matches);
    if let Some(files) = array_field(result, &["files"]) {
        let counted: Vec<(String, Vec<u64>, usize)> = files
            .iter()
            .filter_map(|f| {
                let file = str_field(f, &["file", "path"])?;
                let count = f.get("matches").and_then(Value::as_u64).unwrap_or(1) as usize;
                let lines = groups
                    .iter()
                    .find(|g| g.0 == file)
                    .map(|g| g.1.clone())
                    .unwrap_or_default();
                Some((file.to_string(), lines, count))
            })
            .collect();
        if !counted.is_empty() {
            groups = counted;
        }
    }
    groups
}

fn total_matches(result: &Value, groups: &[(String, Vec<u64>, usize)]) -> usize {
    result
        .get("total")
        .and_then(Value::as_u64)
        .map_or_else(|| groups.iter().map(|g| g.2).sum(), |t| t as usize)
}

fn compress_search(obs: &ToolObservation) -> Option<String> {
    if let Some(batch) = batch_entries(&obs.data) {
        return Some(compress_batch_search(&batch));
    }
    array_field(&obs.data, &["matches", "hits"])?;
    let pattern = obs.arg_str(&["pattern", "query"]).unwrap_or("?");
    let groups = file_groups(&obs.data);
    let mut out = vec![format!(
        "search \"{pattern}\": {} in {}",
        plural(total_matches(&obs.data, &groups), "match", "matches"),
        plural(groups.len(), "file", "files")
    )];
    render_file_groups(&groups, &mut out);
    Some(out.join("\n"))
}

fn compress_batch_search(batch: &[(String, &Value)]) -> String {
    let mut out = vec![format!("batch search of {} patterns", batch.len())];
    for (pattern, entry) in batch.iter().take(BATCH_MAX_PATTERNS) {
        let groups = file_groups(entry);
        let files: Vec<&str> = groups.iter().take(3).map(|g| g.0.as_str()).collect();
        out.push(format!(
            "  [{pattern}] {}: {}",
            plural(total_matches(entry, &groups), "match", "matches"),
            files.join(", ")
        ));
    }
    if batch.len() > BATCH_MAX_PATTERNS {
        out.push(format!(
            "  …and {} more patterns",
            batch.len() - BATCH_MAX_PATTERNS
        ));
    }
    out.join("\n")
}

fn line_count(entry: &Value) -> Option<usize> {
    if let Some(n) = ["lineCount", "lines", "totalLines"]
        .iter()
        .find_map(|k| entry.get(*k).and_then(Value::as_u64))
    {
        return usize::try_from(n).ok();
    }
    entry
        .get("content")
        .and_then(Value::as_str)
        .map(|c| c.lines().count())
}

/// `path (N lines)`, or `path (lines a-b of N)` for a window of a longer file.
fn read_label(path: &str, entry: &Value) -> String {
    let num = |k: &str| entry.get(k).and_then(Value::as_u64);
    match (num("startLine"), num("endLine"), num("totalLines")) {
        (Some(a), Some(b), Some(n)) if a > 1 || b < n => format!("{path} (lines {a}-{b} of {n})"),
        _ => match line_count(entry) {
            Some(n) => format!("{path} ({} lines)", n),
            None if entry.get("error").is_some() => format!("{path} (error)"),
            None => format!("{path} (? lines)"),
        },
    }
}

fn compress_read(obs: &ToolObservation) -> Option<String> {
    // The reference compressor looked for `files` while the tool returned `batchResults`;
    // accept both (as an array or as a map keyed by path).
    if let Some(files) = batch_entries(&obs.data) {
        let mut out = vec![format!("read {}", plural(files.len(), "file", "files"))];
        for (path, f) in files.iter().take(READ_MAX_FILES) {
            out.push(format!("  {}", read_label(path, f)));
        }
        if files.len() > READ_MAX_FILES {
            out.push(format!(
                "  …and {} more files",
                files.len() - READ_MAX_FILES
            ));
        }
        return Some(out.join("\n"));
    }
    let path = str_field(&obs.data, &["path", "filePath", "file"])
        .or_else(|| obs.arg_str(&["filePath", "path", "file_path"]))?;
    if obs.data.is_object() {
        return Some(format!("read {}", read_label(path, &obs.data)));
    }
    Some(format!("read {path} ({} lines)", obs.text.lines().count()))
}

fn string_list(value: &Value, keys: &[&str]) -> Vec<String> {
    if let Some(items) = array_field(value, keys) {
        return items
            .iter()
            .filter_map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .or_else(|| str_field(v, &["name"]).map(str::to_string))
            })
            .collect();
    }
    str_field(value, keys)
        .map(|s| vec![s.to_string()])
        .unwrap_or_default()
}

fn count_of(value: &Value, key: &str) -> Option<usize> {
    match value.get(key)? {
        Value::Array(items) => Some(items.len()),
        Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
        _ => None,
    }
}

fn compress_class_info(obs: &ToolObservation) -> Option<String> {
    let name =
        str_field(&obs.data, &["className", "name"]).or_else(|| obs.arg_str(&["className"]))?;
    let mut out = vec![format!("class {name}")];
    let parents = string_list(&obs.data, &["superClass", "superclass", "parents", "chain"]);
    if !parents.is_empty() {
        out.push(format!("  inherits: {}", parents.join(" -> ")));
    }
    let protocols = string_list(
        &obs.data,
        &["protocols", "conformances", "interfaces", "conforms"],
    );
    if !protocols.is_empty() {
        out.push(format!("  protocols: {}", protocols.join(", ")));
    }
    if let Some(n) = count_of(&obs.data, "methods") {
        out.push(format!("  methods: {n}"));
    }
    if let Some(n) = count_of(&obs.data, "properties") {
        out.push(format!("  properties: {n}"));
    }
    if out.len() == 1 {
        // Only the name was structured: keep the first line of the rendered text as context.
        out.push(format!("  {}", first_line(&obs.text, 200)));
    }
    Some(out.join("\n"))
}

fn compress_count(obs: &ToolObservation, keys: &[&str], label: &str) -> Option<String> {
    let n = array_field(&obs.data, keys)?.len();
    let target = obs
        .arg_str(&["className", "directory", "path", "name"])
        .unwrap_or("/");
    Some(format!("{label} of {target}: {n} entries"))
}

fn compress_submit(obs: &ToolObservation) -> String {
    let title = obs.arg_str(&["title", "name"]).unwrap_or("(untitled)");
    let status = str_field(&obs.data, &["status"]).unwrap_or("ok");
    let reason = str_field(&obs.data, &["reason", "message", "error"]);
    match reason {
        Some(r) => format!("submit \"{title}\": {status} ({})", first_line(r, 160)),
        None => format!("submit \"{title}\": {status}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn search_keeps_files_and_match_counts() {
        let obs = ToolObservation::ok(
            "search_project_code",
            json!({"pattern": "URLSession"}),
            json!({"matches": [
                {"file": "Net/APIClient.swift", "line": 12},
                {"file": "Net/APIClient.swift", "line": 40},
                {"file": "Net/Session.swift", "line": 3}
            ]}),
            "…",
        );
        assert_eq!(
            compress(&obs),
            "search \"URLSession\": 3 matches in 2 files\n  Net/APIClient.swift: 2 matches (L12,L40)\n  Net/Session.swift: 1 match (L3)"
        );
    }

    #[test]
    fn batch_reads_use_batch_results() {
        let obs = ToolObservation::ok(
            "read_project_file",
            json!({"filePaths": ["a.rs", "b.rs"]}),
            json!({"batchResults": [
                {"path": "a.rs", "content": "x\ny\n"},
                {"path": "b.rs", "lineCount": 10}
            ]}),
            "",
        );
        assert_eq!(
            compress(&obs),
            "read 2 files\n  a.rs (2 lines)\n  b.rs (10 lines)"
        );
    }

    #[test]
    fn single_read_falls_back_to_the_argument_and_text() {
        let obs = ToolObservation::ok(
            "read_project_file",
            json!({"filePath": "src/lib.rs"}),
            Value::Null,
            "a\nb\nc",
        );
        assert_eq!(compress(&obs), "read src/lib.rs (3 lines)");
    }

    #[test]
    fn search_uses_the_file_counts_and_total_when_given() {
        let obs = ToolObservation::ok(
            "search_project_code",
            json!({"pattern": "fetch"}),
            json!({"pattern": "fetch", "total": 42,
                   "matches": [{"file": "a.swift", "line": 3}],
                   "files": [{"file": "a.swift", "matches": 40}, {"file": "b.swift", "matches": 2}]}),
            "",
        );
        assert_eq!(
            compress(&obs),
            "search \"fetch\": 42 matches in 2 files\n  a.swift: 40 matches (L3)\n  b.swift: 2 matches"
        );
        let batch = ToolObservation::ok(
            "search_project_code",
            json!({"patterns": ["a", "b"]}),
            json!({"batchResults": {"a": {"total": 1, "files": [{"file": "x.rs", "matches": 1}]}, "b": {"total": 0, "files": []}}}),
            "",
        );
        assert_eq!(
            compress(&batch),
            "batch search of 2 patterns\n  [a] 1 match: x.rs\n  [b] 0 matches: "
        );
    }

    #[test]
    fn class_info_keeps_parents_and_protocols() {
        let obs = ToolObservation::ok(
            "get_class_info",
            json!({"className": "APIClient"}),
            json!({"className": "APIClient", "superClass": "NSObject",
                   "protocols": ["Requesting", "Sendable"], "methods": [1, 2, 3]}),
            "",
        );
        assert_eq!(
            compress(&obs),
            "class APIClient\n  inherits: NSObject\n  protocols: Requesting, Sendable\n  methods: 3"
        );
    }

    #[test]
    fn submit_keeps_status_and_reason() {
        let obs = ToolObservation::ok(
            "submit_knowledge",
            json!({"title": "Retry policy"}),
            json!({"status": "rejected", "reason": "missing usage example"}),
            "",
        );
        assert_eq!(
            compress(&obs),
            "submit \"Retry policy\": rejected (missing usage example)"
        );
    }

    #[test]
    fn unknown_tools_fall_back_to_truncated_text() {
        let obs = ToolObservation::ok("query_call_graph", json!({}), Value::Null, "x".repeat(700));
        let s = compress(&obs);
        assert!(s.ends_with("…(truncated)"));
        assert_eq!(s.chars().count(), 600 + "…(truncated)".chars().count());
    }
}
