//! query_code_graph: the code entity graph (types, modules, methods) and its relations.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use std::sync::Arc;

use alembic_tools::{ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::ast::{find_focused_type, find_type};
use super::{clamped, code_tool, index_error, non_blank};
use crate::call_view::SearchGraph;
use crate::calls::CallEdge;
use crate::focus::Reach;
use crate::graph::{ProjectGraph, method_key};
use crate::service::{CodeService, ProjectTopology};
use crate::summary::TypeKind;

const MAX_SEARCH: usize = 15;
pub(super) const MAX_LIST: usize = 20;
pub(super) const MAX_AFFECTED_FILES: usize = 15;

/// The first `n` of `items`, joined by commas (lists in impact answers are cut this way).
pub(super) fn first_joined<'a>(items: impl IntoIterator<Item = &'a String>, n: usize) -> String {
    items
        .into_iter()
        .take(n)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn tool(service: &Arc<CodeService>) -> ToolDefinition {
    code_tool(
        service,
        ToolModule::AstGraph,
        "query_code_graph",
        "Query the code entity graph. action: search (entities whose name contains entity_id), inheritance_chain, descendants, conformances, impact (what a change to entity_id reaches), topology (modules, dependency layers, cycles), entity_edges (incoming and outgoing relations).",
        query_code_graph,
    )
}

// Variant docs stay `//` comments: a doc comment would turn the schema's enum into a oneOf.
#[derive(Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Action {
    Search,
    InheritanceChain,
    Descendants,
    Conformances,
    Impact,
    Topology,
    EntityEdges,
}

#[derive(Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum EntityType {
    Class,
    Protocol,
    Category,
    Module,
    Method,
}

impl EntityType {
    fn as_str(self) -> &'static str {
        match self {
            EntityType::Class => "class",
            EntityType::Protocol => "protocol",
            EntityType::Category => "category",
            EntityType::Module => "module",
            EntityType::Method => "method",
        }
    }
}

fn three() -> i64 {
    3
}

/// Arguments of `query_code_graph` (snake_case names, as the reference's tool had them).
#[derive(Deserialize, schemars::JsonSchema)]
struct CodeGraphArgs {
    action: Action,
    /// entity name (class, protocol, module directory, Class.method), or the keyword for search
    entity_id: Option<String>,
    entity_type: Option<EntityType>,
    #[serde(default = "three")]
    #[schemars(range(min = 1, max = 10))]
    max_depth: i64,
}

fn query_code_graph(service: &CodeService, args: CodeGraphArgs) -> Result<ToolOutput, ToolError> {
    let depth = clamped(args.max_depth, 1, 10);
    // Topology is the whole project's module graph.
    if args.action == Action::Topology {
        let t = service.module_graph().map_err(index_error)?;
        return Ok(topology(&t));
    }
    let id = non_blank(args.entity_id.as_deref().unwrap_or_default(), "entity_id")?;
    // Questions about one type's ancestors, subclasses and conformers read only the
    // summaries they need; the others need the whole project.
    let what = match args.action {
        Action::InheritanceChain | Action::Descendants => Some("class"),
        Action::Conformances => Some("class or protocol"),
        _ => None,
    };
    let Some(what) = what else {
        return match args.action {
            Action::Impact => super::entity::impact(service, id, depth),
            Action::EntityEdges => super::entity::entity_edges(service, id),
            _ => {
                let entity_type = args.entity_type.map(EntityType::as_str);
                service
                    .with_calls(|view| {
                        let g = view.search_graph(id)?;
                        Ok(search(&g, &view.modules(), id, entity_type))
                    })
                    .and_then(|found| found)
                    .map_err(index_error)
            }
        };
    };
    let g = service
        .graph_around(id, Reach::all())
        .map_err(index_error)?;
    find_focused_type(service, &g, id, what)?;
    match args.action {
        Action::InheritanceChain => {
            let t = find_type(&g, id, "class")?;
            let chain = g.inheritance_chain(&t.name);
            Ok(ToolOutput::new(
                json!({"entity": t.name, "chain": chain}),
                chain.join(" → "),
            ))
        }
        Action::Descendants => descendants(&g, id, depth),
        _ => conformances(&g, id),
    }
}

/// Subclasses down to `depth`, or every conformer of a protocol.
fn descendants(g: &ProjectGraph, id: &str, depth: usize) -> Result<ToolOutput, ToolError> {
    let t = find_type(g, id, "class")?;
    let desc: Vec<(String, usize)> = if t.kind == TypeKind::Protocol {
        g.all_conformers(&t.name)
            .into_iter()
            .map(|c| (c, 1))
            .collect()
    } else {
        g.descendants(&t.name, depth)
    };
    let mut text = format!("{} descendants of {}\n", desc.len(), t.name);
    for (n, d) in desc.iter().take(MAX_LIST) {
        let _ = writeln!(text, "{}{n}", "  ".repeat(*d));
    }
    let rows: Vec<Value> = desc
        .iter()
        .map(|(n, d)| json!({"name": n, "depth": d}))
        .collect();
    Ok(ToolOutput::new(
        json!({"entity": t.name, "descendants": rows}),
        text.trim_end().to_string(),
    ))
}

/// Entities whose name contains `keyword`: types of `g` by key, methods and functions by
/// name, and `modules`; a search that left names out says so and counts at least.
pub(super) fn search(
    found_in: &SearchGraph,
    modules: &BTreeSet<String>,
    keyword: &str,
    entity_type: Option<&str>,
) -> ToolOutput {
    let g = &found_in.graph;
    let k = keyword.to_lowercase();
    let wants = |t: &str| entity_type.is_none_or(|e| e == t);
    let mut found: Vec<(String, String, String)> = Vec::new();
    for t in g.types.values() {
        let kind = match t.kind {
            TypeKind::Protocol => "protocol",
            TypeKind::Extension | TypeKind::Members => "category",
            _ => "class",
        };
        if wants(kind) && t.name.to_lowercase().contains(&k) {
            found.push((
                kind.to_string(),
                t.name.clone(),
                format!("{}:{}", t.file, t.line),
            ));
        }
        if wants("method") {
            for m in t
                .methods
                .iter()
                .filter(|m| m.name.to_lowercase().contains(&k))
            {
                found.push((
                    "method".into(),
                    method_key(&t.name, &m.name),
                    format!("{}:{}", m.file, m.line),
                ));
            }
        }
    }
    if wants("method") {
        for f in g
            .functions
            .values()
            .flatten()
            .filter(|f| f.name.to_lowercase().contains(&k))
        {
            found.push((
                "function".into(),
                f.key.clone(),
                format!("{}:{}", f.file, f.line),
            ));
        }
    }
    if wants("module") {
        for m in modules.iter().filter(|m| m.to_lowercase().contains(&k)) {
            found.push(("module".into(), m.clone(), format!("{m}/")));
        }
    }
    // Exact names first, then shorter names.
    found.sort_by_key(|(_, n, _)| (n.to_lowercase() != k, n.len()));
    let total = found.len();
    found.truncate(MAX_SEARCH);
    let left_out = found_in.left_out;
    let mut text = if left_out == 0 {
        format!("{total} entities match \"{keyword}\"\n")
    } else {
        format!(
            "at least {total} entities match \"{keyword}\" ({left_out} more matching names \
             were not read, to stay within the files one query reads; use a longer keyword)\n"
        )
    };
    for (kind, name, loc) in &found {
        let _ = writeln!(text, "  {kind} {name} — {loc}");
    }
    let rows: Vec<Value> = found
        .iter()
        .map(|(kind, name, loc)| json!({"type": kind, "name": name, "location": loc}))
        .collect();
    let mut data = json!({"keyword": keyword, "total": total, "entities": rows});
    if left_out > 0 {
        data["namesLeftOut"] = json!(left_out);
    }
    ToolOutput::new(data, text.trim_end().to_string())
}

fn conformances(g: &ProjectGraph, id: &str) -> Result<ToolOutput, ToolError> {
    let t = find_type(g, id, "class or protocol")?;
    if t.kind == TypeKind::Protocol {
        let conformers = g.all_conformers(&t.name);
        let text = format!(
            "{} conformers of {}: {}",
            conformers.len(),
            t.name,
            conformers.join(", ")
        );
        return Ok(ToolOutput::new(
            json!({"entity": t.name, "conformers": conformers}),
            text,
        ));
    }
    let protocols: Vec<String> = g
        .ancestry(&t.name, true)
        .into_iter()
        .skip(1)
        .filter(|a| {
            g.types.get(a).is_none_or(|x| x.kind == TypeKind::Protocol)
                && !g.inheritance_chain(&t.name).contains(a)
        })
        .collect();
    let text = format!(
        "{} conforms to: {}",
        t.name,
        if protocols.is_empty() {
            "nothing".into()
        } else {
            protocols.join(", ")
        }
    );
    Ok(ToolOutput::new(
        json!({"entity": t.name, "protocols": protocols}),
        text,
    ))
}

fn topology(t: &ProjectTopology) -> ToolOutput {
    let modules = &t.modules.modules;
    let mut used_by: BTreeMap<&String, usize> = modules.keys().map(|m| (m, 0)).collect();
    for dep in modules.values().flat_map(|m| m.dependencies.keys()) {
        if let Some(n) = used_by.get_mut(dep) {
            *n += 1;
        }
    }
    let mut in_degree: Vec<(&String, usize)> = used_by.into_iter().collect();
    in_degree.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let layers = t.modules.layers();
    let cycles = t.modules.cycles();
    let mut text = format!(
        "{} modules, {} dependency edges, {} layers, {} cycles; {} types, {} call edges\n",
        modules.len(),
        modules
            .values()
            .map(|m| m.dependencies.len())
            .sum::<usize>(),
        layers.len(),
        cycles.len(),
        t.types,
        t.totals.call_edges
    );
    for (layer, ms) in &layers {
        let _ = writeln!(
            text,
            "  layer {layer}: {}",
            ms.iter().take(12).cloned().collect::<Vec<_>>().join(", ")
        );
    }
    for c in &cycles {
        let _ = writeln!(text, "  cycle: {}", c.join(" ↔ "));
    }
    let top: Vec<String> = in_degree
        .iter()
        .take(8)
        .filter(|(_, n)| *n > 0)
        .map(|(m, n)| format!("{m} ({n})"))
        .collect();
    let _ = write!(
        text,
        "most depended on: {}",
        if top.is_empty() {
            "none".into()
        } else {
            top.join(", ")
        }
    );
    let data = json!({"modules": modules.len(), "layers": layers, "cycles": cycles, "mostDependedOn": top, "types": t.types, "callEdges": t.totals.call_edges});
    ToolOutput::new(data, text)
}

pub(super) fn callee_label(e: &CallEdge) -> String {
    e.callee.clone().unwrap_or_else(|| match &e.receiver_type {
        Some(t) => format!("{t}.{} (external)", e.callee_name),
        None => format!("{} (external)", e.callee_name),
    })
}
