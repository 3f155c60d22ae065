//! project-access: search_project_code, read_project_file, list_project_structure,
//! get_file_summary, semantic_search_code.

use std::fmt::Write as _;

use std::sync::Arc;

use alembic_tools::{ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{clamped, code_tool, given, index_error, non_blank};
use crate::files::{self, FileError, FileWindow};
use crate::search::{self, PatternResult, SearchRequest};
use crate::semantic::SearchMode;
use crate::service::CodeService;
use crate::summary::FileSummary;

const MAX_BATCH_PATTERNS: usize = 10;
const MAX_BATCH_FILES: usize = 8;
const BATCH_FILE_LINES: usize = 100;

pub(super) fn tools(service: &Arc<CodeService>) -> Vec<ToolDefinition> {
    let m = ToolModule::ProjectAccess;
    vec![
        code_tool(
            service,
            m,
            "search_project_code",
            "Search the project's files for a text or regex (case-insensitive). Returns matching lines ranked so that calls and usages come before declarations and imports, with context lines. Use `patterns` to run up to 10 searches at once. Binary files, files over 1 MiB, hidden, ignored and vendored directories are skipped.",
            search_project_code,
        ),
        code_tool(
            service,
            m,
            "read_project_file",
            "Read lines of a project file (1-based startLine/endLine, at most maxLines). `filePaths` reads up to 8 files at once, 100 lines each. Paths are relative to the project root and cannot leave it.",
            read_project_file,
        ),
        code_tool(
            service,
            m,
            "list_project_structure",
            "Show the project's directory tree (directories first; hidden, ignored and vendored entries left out) with file sizes, and totals by language.",
            list_project_structure,
        ),
        code_tool(
            service,
            m,
            "get_file_summary",
            "Summarise one source file from its syntax tree: imports, type declarations with parents, methods with signatures and lines, properties.",
            get_file_summary,
        ),
        code_tool(
            service,
            m,
            "semantic_search_code",
            "Find the types, methods and functions of the project most related to a natural-language query (BM25 over identifiers, blended with embeddings when an embedder is configured).",
            semantic_search_code,
        ),
    ]
}

fn three() -> i64 {
    3
}

fn five() -> i64 {
    5
}

fn one() -> i64 {
    1
}

fn yes() -> bool {
    true
}

fn default_max_lines() -> i64 {
    files::DEFAULT_MAX_LINES as i64
}

/// Arguments of `search_project_code`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SearchArgs {
    /// text to find (a regex when isRegex is true)
    pattern: Option<String>,
    /// several patterns searched in one pass; takes precedence over pattern
    #[schemars(length(max = MAX_BATCH_PATTERNS))]
    patterns: Option<Vec<String>>,
    #[serde(default)]
    is_regex: bool,
    /// comma-separated extensions, e.g. ".swift,.m"
    file_filter: Option<String>,
    #[serde(default = "three")]
    #[schemars(range(min = 0, max = 10))]
    context_lines: i64,
    /// matches shown per pattern
    #[serde(default = "five")]
    #[schemars(range(min = 1, max = 200))]
    max_results: i64,
}

/// Arguments of `read_project_file`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ReadArgs {
    file_path: Option<String>,
    #[schemars(length(max = MAX_BATCH_FILES))]
    file_paths: Option<Vec<String>>,
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    start_line: i64,
    #[schemars(range(min = 1))]
    end_line: Option<i64>,
    #[serde(default = "default_max_lines")]
    #[schemars(range(min = 1, max = files::MAX_LINES_CAP))]
    max_lines: i64,
}

/// Arguments of `list_project_structure`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ListArgs {
    /// directory relative to the root; empty for the root
    #[serde(default)]
    directory: String,
    #[serde(default = "three")]
    #[schemars(range(min = 1, max = 5))]
    depth: i64,
    #[serde(default = "yes")]
    include_stats: bool,
}

/// Arguments of `get_file_summary`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FileSummaryArgs {
    file_path: String,
}

/// Arguments of `semantic_search_code`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SemanticArgs {
    query: String,
    #[serde(default = "five")]
    #[schemars(range(min = 1, max = 20))]
    top_k: i64,
    /// only chunks of this language, e.g. swift
    language: Option<String>,
}

fn search_project_code(service: &CodeService, args: SearchArgs) -> Result<ToolOutput, ToolError> {
    let batch: Vec<String> = args
        .patterns
        .unwrap_or_default()
        .into_iter()
        .filter(|s| !s.is_empty())
        .take(MAX_BATCH_PATTERNS)
        .collect();
    let is_batch = !batch.is_empty();
    let patterns = if is_batch {
        batch
    } else {
        given(args.pattern.as_deref())
            .map(|p| vec![p.to_string()])
            .unwrap_or_default()
    };
    let req = SearchRequest {
        patterns,
        is_regex: args.is_regex,
        extensions: given(args.file_filter.as_deref())
            .map(search::parse_extensions)
            .unwrap_or_default(),
        context_lines: clamped(args.context_lines, 0, 10),
        max_results: clamped(args.max_results, 1, 200),
    };
    let result =
        search::search(service.guard(), &req).map_err(|e| ToolError::Invalid(e.to_string()))?;
    let mut text = String::new();
    for r in &result.results {
        render_pattern(r, &mut text);
    }
    let _ = write!(text, "searched {} files", result.searched_files);
    let data = if is_batch {
        let batch: serde_json::Map<String, Value> = result
            .results
            .iter()
            .map(|r| {
                (
                    r.pattern.clone(),
                    json!({"matches": r.matches, "total": r.total, "files": r.files}),
                )
            })
            .collect();
        json!({"batchResults": batch, "patternsSearched": result.results.len(), "searchedFiles": result.searched_files})
    } else {
        let r = &result.results[0];
        json!({"pattern": r.pattern, "matches": r.matches, "total": r.total, "files": r.files, "searchedFiles": result.searched_files})
    };
    Ok(ToolOutput::new(data, text))
}

/// `"area": 12 matches in 3 files — A.swift (5), B.swift (4), …` then the kept matches.
fn render_pattern(r: &PatternResult, out: &mut String) {
    let files: Vec<String> = r
        .files
        .iter()
        .take(8)
        .map(|f| format!("{} ({})", f.file, f.matches))
        .collect();
    let more = if r.files.len() > 8 {
        format!(", +{} more", r.files.len() - 8)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "\"{}\": {} matches in {} files{}{}{}",
        r.pattern,
        r.total,
        r.files.len(),
        if files.is_empty() { "" } else { " — " },
        files.join(", "),
        more
    );
    for m in &r.matches {
        let _ = writeln!(out, "  {}:{} [{:+}] {}", m.file, m.line, m.score, m.code);
        for line in m.context.lines() {
            let _ = writeln!(out, "    {line}");
        }
    }
    if r.total > r.matches.len() {
        let _ = writeln!(
            out,
            "  ({} more not shown; raise maxResults or narrow fileFilter)",
            r.total - r.matches.len()
        );
    }
}

fn file_error(e: FileError) -> ToolError {
    match e {
        FileError::Path(p) if p.is_confinement() => ToolError::refused(p.rule(), p.to_string()),
        FileError::Path(alembic_safety::PathError::NotFound { .. }) => {
            ToolError::NotFound(e.to_string())
        }
        other => ToolError::Invalid(other.to_string()),
    }
}

fn render_window(w: &FileWindow, out: &mut String) {
    let _ = writeln!(
        out,
        "{} (lines {}-{} of {}{})",
        w.file_path,
        w.start_line,
        w.end_line,
        w.total_lines,
        w.language.map(|l| format!(", {l}")).unwrap_or_default()
    );
    let width = w.end_line.to_string().len();
    for (i, line) in w.content.lines().enumerate() {
        let _ = writeln!(out, "{:>width$} | {line}", w.start_line + i);
    }
    if w.truncated {
        let _ = writeln!(
            out,
            "… cut at maxLines; continue with startLine {}",
            w.end_line + 1
        );
    }
}

fn read_project_file(service: &CodeService, args: ReadArgs) -> Result<ToolOutput, ToolError> {
    let batch: Vec<&str> = args
        .file_paths
        .iter()
        .flatten()
        .map(String::as_str)
        .take(MAX_BATCH_FILES)
        .collect();
    let start = clamped(args.start_line, 1, usize::MAX);
    let end = args.end_line.and_then(|e| usize::try_from(e).ok());
    let max_lines = clamped(args.max_lines, 1, files::MAX_LINES_CAP);
    if batch.is_empty() {
        let path = non_blank(args.file_path.as_deref().unwrap_or_default(), "filePath")?;
        let w =
            files::read_window(service.guard(), path, start, end, max_lines).map_err(file_error)?;
        let mut text = String::new();
        render_window(&w, &mut text);
        let data = serde_json::to_value(&w).unwrap_or(Value::Null);
        return Ok(ToolOutput::new(camel(data), text));
    }
    let mut results = serde_json::Map::new();
    let mut text = String::new();
    for path in &batch {
        match files::read_window(service.guard(), path, 1, None, BATCH_FILE_LINES) {
            Ok(w) => {
                render_window(&w, &mut text);
                results.insert(
                    path.to_string(),
                    camel(serde_json::to_value(&w).unwrap_or(Value::Null)),
                );
            }
            Err(e) => {
                let _ = writeln!(text, "{path}: error: {e}");
                results.insert(path.to_string(), json!({"error": e.to_string()}));
            }
        }
    }
    Ok(ToolOutput::new(
        json!({"batchResults": results, "filesRead": batch.len()}),
        text,
    ))
}

/// snake_case keys of a serialised struct → camelCase, to match the tools' parameter style.
pub(super) fn camel(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let mut out = String::new();
                    let mut up = false;
                    for c in k.chars() {
                        if c == '_' {
                            up = true;
                        } else if up {
                            out.extend(c.to_uppercase());
                            up = false;
                        } else {
                            out.push(c);
                        }
                    }
                    (out, camel(v))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(camel).collect()),
        other => other,
    }
}

fn list_project_structure(service: &CodeService, args: ListArgs) -> Result<ToolOutput, ToolError> {
    let dir = given(Some(&args.directory)).unwrap_or("");
    let depth = clamped(args.depth, 1, 5);
    let tree = files::list_structure(service.guard(), dir, depth, args.include_stats)
        .map_err(file_error)?;
    let mut text = tree.tree.clone();
    if let Some(s) = &tree.stats {
        let langs: Vec<String> = s
            .by_language
            .iter()
            .map(|(l, n)| format!("{l} {n}"))
            .collect();
        let _ = write!(
            text,
            "{} files, {} directories, {} lines of source",
            s.total_files, s.total_dirs, s.total_lines
        );
        if !langs.is_empty() {
            let _ = write!(text, " ({})", langs.join(", "));
        }
        text.push('\n');
    }
    if tree.truncated {
        text.push_str("(listing cut; ask for a subdirectory or a smaller depth)\n");
    }
    Ok(ToolOutput::new(
        camel(serde_json::to_value(&tree).unwrap_or(Value::Null)),
        text,
    ))
}

fn get_file_summary(service: &CodeService, args: FileSummaryArgs) -> Result<ToolOutput, ToolError> {
    let path = non_blank(&args.file_path, "filePath")?;
    let rel = service
        .guard()
        .check(path, alembic_safety::Access::Read)
        .map_err(|e| file_error(FileError::Path(e)))?;
    let bytes = service
        .guard()
        .read(&rel)
        .map_err(|e| file_error(FileError::Path(e)))?;
    let text = String::from_utf8_lossy(&bytes);
    let Some(lang) = crate::language::Lang::detect(std::path::Path::new(&rel), &text) else {
        return Err(ToolError::Invalid(format!(
            "{rel} is not a source file of a supported language (swift, objc, rust, python, typescript, javascript, go, java, kotlin, c, cpp)"
        )));
    };
    let summary = crate::extract::summarize(&rel, lang, &text)
        .map_err(|e| ToolError::failed(e.to_string()))?;
    Ok(ToolOutput::new(
        summary_json(&summary),
        render_summary(&summary),
    ))
}

fn summary_json(s: &FileSummary) -> Value {
    let declarations: Vec<Value> = s
        .types
        .iter()
        .map(|t| json!({"kind": t.kind, "name": t.name, "superclass": t.superclass, "conformances": t.conformances, "category": t.category, "line": t.line, "endLine": t.end_line}))
        .collect();
    let methods: Vec<Value> = s
        .all_methods()
        .map(|(owner, m)| json!({"owner": owner.map(|t| &t.name), "name": m.name, "static": m.is_static, "signature": m.signature, "line": m.line, "endLine": m.end_line, "complexity": m.complexity}))
        .collect();
    let properties: Vec<Value> = s
        .types
        .iter()
        .flat_map(|t| t.properties.iter().map(move |p| json!({"owner": t.name, "name": p.name, "type": p.type_name, "static": p.is_static, "line": p.line, "attributes": p.attributes})))
        .collect();
    let imports: Vec<&str> = s.imports.iter().map(|i| i.module.as_str()).collect();
    json!({"filePath": s.path, "language": s.language, "lineCount": s.line_count, "imports": imports, "declarations": declarations, "methods": methods, "properties": properties, "callSites": s.calls.len(), "entryPoint": s.has_entry_point})
}

fn render_summary(s: &FileSummary) -> String {
    let mut out = format!(
        "{} ({}, {} lines{})\n",
        s.path,
        s.language.name(),
        s.line_count,
        if s.has_entry_point {
            ", entry point"
        } else {
            ""
        }
    );
    if !s.imports.is_empty() {
        let imports: Vec<&str> = s.imports.iter().map(|i| i.module.as_str()).collect();
        let _ = writeln!(out, "imports: {}", imports.join(", "));
    }
    for t in &s.types {
        let mut head = format!("{} {}", t.kind.name(), t.name);
        if let Some(c) = &t.category {
            let _ = write!(head, " ({c})");
        }
        if let Some(sup) = &t.superclass {
            let _ = write!(head, " : {sup}");
        }
        if !t.conformances.is_empty() {
            let _ = write!(head, " <{}>", t.conformances.join(", "));
        }
        let _ = writeln!(out, "{head}  [{}-{}]", t.line, t.end_line);
        for p in &t.properties {
            let _ = writeln!(
                out,
                "  {} {}{}",
                if p.is_static { "static" } else { "prop" },
                p.name,
                p.type_name
                    .as_ref()
                    .map(|t| format!(": {t}"))
                    .unwrap_or_default()
            );
        }
        for m in &t.methods {
            let _ = writeln!(
                out,
                "  {}  :{}",
                super::marked_signature(&m.signature, m.is_static),
                m.line
            );
        }
    }
    for f in &s.functions {
        let _ = writeln!(out, "{}  :{}", f.signature, f.line);
    }
    let _ = write!(out, "{} call sites", s.calls.len());
    out
}

fn semantic_search_code(
    service: &CodeService,
    args: SemanticArgs,
) -> Result<ToolOutput, ToolError> {
    let query = non_blank(&args.query, "query")?;
    let top_k = clamped(args.top_k, 1, 20);
    let language = given(args.language.as_deref());
    let (found, chunks) = service
        .semantic_search(query, top_k, language)
        .map_err(index_error)?;
    let mode = found.mode.name();
    let how = match (&found.embedder, &found.fallback) {
        (Some(model), None) => format!("{mode} over {chunks} code chunks, embedder {model}"),
        (_, Some(reason)) => {
            format!("{mode} over {chunks} code chunks; {reason}, fell back to lexical")
        }
        (None, None) => format!("{mode} over {chunks} code chunks"),
    };
    let hits = &found.hits;
    let mut text = format!("{} results for \"{query}\" ({how})\n", hits.len());
    for h in hits {
        let _ = writeln!(
            text,
            "{:.2} {} {} — {}:{}",
            h.score, h.chunk.kind, h.chunk.symbol, h.chunk.file, h.chunk.line
        );
    }
    if hits.is_empty() {
        text.push_str("no match; try search_project_code with a literal identifier\n");
    }
    let data = json!({
        "mode": mode, "embedder": found.embedder, "fallback": found.fallback, "query": query,
        "degraded": found.mode == SearchMode::Lexical, "totalResults": hits.len(), "results": hits,
    });
    Ok(ToolOutput::new(data, text))
}
