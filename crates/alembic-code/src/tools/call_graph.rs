//! query_call_graph: callers, callees and the impact of changing a method.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use alembic_tools::{ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::graph_query::{MAX_AFFECTED_FILES, MAX_LIST, callee_label, first_joined, search};
use super::{clamped, code_tool, index_error, non_blank, not_found, similar};
use crate::call_view::CallView;
use crate::calls::CallEdge;
use crate::index::IndexError;
use crate::service::CodeService;
use crate::topology::module_of;

pub(super) fn tool(service: &Arc<CodeService>) -> ToolDefinition {
    code_tool(
        service,
        ToolModule::AstGraph,
        "query_call_graph",
        "Call graph of a method (\"Class.method\" or a bare name): its callers, callees, both, the impact of changing it (transitive callers and affected files), or search for methods by name. Every edge carries a resolution confidence.",
        query_call_graph,
    )
}

#[derive(Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Direction {
    Callers,
    Callees,
    Both,
    Impact,
    Search,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Callers => "callers",
            Direction::Callees => "callees",
            Direction::Both => "both",
            Direction::Impact => "impact",
            Direction::Search => "search",
        }
    }
}

fn both() -> Direction {
    Direction::Both
}

fn two() -> i64 {
    2
}

/// Arguments of `query_call_graph`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct CallGraphArgs {
    method_name: String,
    #[serde(default = "both")]
    direction: Direction,
    #[serde(default = "two")]
    #[schemars(range(min = 1, max = 5))]
    max_depth: i64,
}

fn edge_line(e: &CallEdge, other: &str) -> String {
    let times = if e.count > 1 {
        format!(" ×{}", e.count)
    } else {
        String::new()
    };
    let how = serde_json::to_value(e.resolution)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!(
        "{other} — {}:{}{times} [{how} {:.2}]",
        e.file, e.line, e.confidence
    )
}

fn query_call_graph(service: &CodeService, args: CallGraphArgs) -> Result<ToolOutput, ToolError> {
    let name = non_blank(&args.method_name, "methodName")?.to_string();
    service
        .with_calls(|view| answer(view, &name, args.direction, clamped(args.max_depth, 1, 5)))
        .map_err(index_error)?
}

/// The whole answer, read through `view` (the full graph or the index's call rows).
fn answer(
    view: &mut CallView<'_>,
    name: &str,
    direction: Direction,
    depth: usize,
) -> Result<ToolOutput, ToolError> {
    if direction == Direction::Search {
        let keyword = name.rsplit('.').next().unwrap_or(name);
        let g = view.search_graph(keyword).map_err(index_error)?;
        return Ok(search(&g, &view.modules(), keyword, Some("method")));
    }
    let keys = view.find_callables(name).map_err(index_error)?;
    if keys.is_empty() {
        let names = view.method_keys().map_err(index_error)?;
        return Err(not_found(
            "method",
            name,
            &similar(name, names.iter().map(String::as_str)),
        ));
    }
    let mut text = String::new();
    let mut data = Vec::new();
    for key in keys.iter().take(5) {
        let (t, v) = call_graph_of(view, key, direction, depth).map_err(index_error)?;
        let _ = write!(text, "{key}\n{t}");
        data.push(json!({"method": key, "result": v}));
    }
    if keys.len() > 5 {
        let _ = writeln!(
            text,
            "… {} more methods named {name}; qualify it as Class.method",
            keys.len() - 5
        );
    }
    Ok(ToolOutput::new(
        json!({"methodName": name, "direction": direction.as_str(), "matches": data}),
        text.trim_end().to_string(),
    ))
}

/// One callable's part of the answer (`search` is answered before any callable is looked up).
fn call_graph_of(
    view: &mut CallView<'_>,
    key: &str,
    direction: Direction,
    depth: usize,
) -> Result<(String, Value), IndexError> {
    Ok(match direction {
        Direction::Callers => walk(view, key, depth, true)?,
        Direction::Callees => walk(view, key, depth, false)?,
        Direction::Impact => call_impact(view, key)?,
        Direction::Both | Direction::Search => {
            let (a, av) = walk(view, key, depth, true)?;
            let (b, bv) = walk(view, key, depth, false)?;
            (
                format!("{a}{b}"),
                json!({"callers": av["callers"], "callees": bv["callees"]}),
            )
        }
    })
}

/// Breadth-first callers (or callees) up to `depth`, one level of edges read at a time.
fn walk(
    view: &mut CallView<'_>,
    key: &str,
    depth: usize,
    callers: bool,
) -> Result<(String, Value), IndexError> {
    let label = if callers { "callers" } else { "callees" };
    let mut seen: HashSet<String> = HashSet::from([key.to_string()]);
    let mut frontier = vec![key.to_string()];
    let mut rows = Vec::new();
    let mut text = String::new();
    for level in 1..=depth {
        let g = if callers {
            view.edges(&frontier, &[])?
        } else {
            view.edges(&[], &frontier)?
        };
        let mut next = Vec::new();
        for k in &frontier {
            let edges = if callers { g.callers(k) } else { g.callees(k) };
            for e in edges {
                let other = if callers {
                    e.caller.clone()
                } else {
                    callee_label(e)
                };
                if !seen.insert(other.clone()) {
                    continue;
                }
                if rows.len() < MAX_LIST {
                    let via = if level == 1 {
                        String::new()
                    } else if callers {
                        format!(" (calls {k})")
                    } else {
                        format!(" (from {k})")
                    };
                    let _ = writeln!(
                        text,
                        "  {}{} {}{via}",
                        "  ".repeat(level - 1),
                        if callers { "←" } else { "→" },
                        edge_line(e, &other)
                    );
                }
                rows.push(json!({"entity": other, "depth": level, "file": e.file, "line": e.line, "confidence": e.confidence, "resolution": e.resolution, "count": e.count}));
                if e.callee.is_some() || callers {
                    next.push(other);
                }
            }
        }
        frontier = next;
    }
    if rows.is_empty() {
        let _ = writeln!(text, "  no {label} found");
    } else if rows.len() > MAX_LIST {
        let _ = writeln!(text, "  … {} more {label}", rows.len() - MAX_LIST);
    }
    Ok((text, json!({ label: rows })))
}

fn call_impact(view: &mut CallView<'_>, key: &str) -> Result<(String, Value), IndexError> {
    let transitive = view.transitive_callers(key, 3)?;
    let callers: Vec<String> = transitive.iter().map(|(k, _)| k.clone()).collect();
    let g = view.edges(&[key.to_string()], &callers)?;
    let direct: Vec<String> = g
        .callers(key)
        .into_iter()
        .map(|e| e.caller.clone())
        .collect();
    let files: BTreeSet<String> = transitive
        .iter()
        .flat_map(|(k, _)| g.callees(k).into_iter().map(|e| e.file.clone()))
        .chain(g.callers(key).into_iter().map(|e| e.file.clone()))
        .collect();
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f)).collect();
    let mut text = format!(
        "  {} direct callers, {} transitive (depth ≤ 3), {} files in {} modules\n",
        direct.len(),
        transitive.len(),
        files.len(),
        modules.len()
    );
    let _ = writeln!(text, "  direct: {}", first_joined(&direct, MAX_LIST));
    let _ = writeln!(
        text,
        "  files: {}",
        first_joined(&files, MAX_AFFECTED_FILES)
    );
    let rows: Vec<Value> = transitive
        .iter()
        .map(|(k, d)| json!({"entity": k, "depth": d}))
        .collect();
    Ok((
        text,
        json!({"directCallers": direct, "transitiveCallers": rows, "affectedFiles": files, "modules": modules}),
    ))
}
