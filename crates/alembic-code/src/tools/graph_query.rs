//! query_code_graph and query_call_graph.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;

use std::sync::Arc;

use alembic_tools::{ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::ast::find_type;
use super::{clamped, code_tool, index_error, non_blank, not_found, similar};
use crate::calls::CallEdge;
use crate::graph::{ProjectGraph, method_key};
use crate::service::CodeService;
use crate::summary::TypeKind;
use crate::topology::module_of;

const MAX_SEARCH: usize = 15;
const MAX_LIST: usize = 20;
const MAX_EDGES: usize = 10;
const MAX_AFFECTED_FILES: usize = 15;

pub(super) fn tools(service: &Arc<CodeService>) -> Vec<ToolDefinition> {
    let m = ToolModule::AstGraph;
    vec![
        code_tool(
            service,
            m,
            "query_code_graph",
            "Query the code entity graph. action: search (entities whose name contains entity_id), inheritance_chain, descendants, conformances, impact (what a change to entity_id reaches), topology (modules, dependency layers, cycles), entity_edges (incoming and outgoing relations).",
            query_code_graph,
        ),
        code_tool(
            service,
            m,
            "query_call_graph",
            "Call graph of a method (\"Class.method\" or a bare name): its callers, callees, both, the impact of changing it (transitive callers and affected files), or search for methods by name. Every edge carries a resolution confidence.",
            query_call_graph,
        ),
    ]
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

fn query_code_graph(service: &CodeService, args: CodeGraphArgs) -> Result<ToolOutput, ToolError> {
    let g = service.graph().map_err(index_error)?;
    let depth = clamped(args.max_depth, 1, 10);
    if args.action == Action::Topology {
        return Ok(topology(&g));
    }
    let id = non_blank(args.entity_id.as_deref().unwrap_or_default(), "entity_id")?;
    match args.action {
        Action::Search => Ok(search(&g, id, args.entity_type.map(EntityType::as_str))),
        Action::InheritanceChain => {
            let t = find_type(&g, id, "class")?;
            let chain = g.inheritance_chain(&t.name);
            Ok(ToolOutput::new(
                json!({"entity": t.name, "chain": chain}),
                chain.join(" → "),
            ))
        }
        Action::Descendants => descendants(&g, id, depth),
        Action::Conformances => conformances(&g, id),
        Action::Impact => impact(&g, id, depth),
        Action::EntityEdges => entity_edges(&g, id),
        Action::Topology => Ok(topology(&g)),
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

fn search(g: &ProjectGraph, keyword: &str, entity_type: Option<&str>) -> ToolOutput {
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
        for m in g
            .modules
            .modules
            .keys()
            .filter(|m| m.to_lowercase().contains(&k))
        {
            found.push(("module".into(), m.clone(), format!("{m}/")));
        }
    }
    // Exact names first, then shorter names.
    found.sort_by_key(|(_, n, _)| (n.to_lowercase() != k, n.len()));
    let total = found.len();
    found.truncate(MAX_SEARCH);
    let mut text = format!("{total} entities match \"{keyword}\"\n");
    for (kind, name, loc) in &found {
        let _ = writeln!(text, "  {kind} {name} — {loc}");
    }
    let rows: Vec<Value> = found
        .iter()
        .map(|(kind, name, loc)| json!({"type": kind, "name": name, "location": loc}))
        .collect();
    ToolOutput::new(
        json!({"keyword": keyword, "total": total, "entities": rows}),
        text.trim_end().to_string(),
    )
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

/// What a change to a type (or module) reaches: descendants, conformers, extensions,
/// callers of its methods, and dependent modules.
fn impact(g: &ProjectGraph, id: &str, depth: usize) -> Result<ToolOutput, ToolError> {
    if let Some(m) = g.modules.modules.get(id) {
        let dependents: Vec<&String> = g
            .modules
            .modules
            .values()
            .filter(|x| x.dependencies.contains_key(&m.name))
            .map(|x| &x.name)
            .collect();
        let text = format!(
            "module {} is used by {} modules: {}",
            m.name,
            dependents.len(),
            dependents
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ToolOutput::new(
            json!({"entity": m.name, "dependentModules": dependents}),
            text,
        ));
    }
    let t = find_type(g, id, "class, protocol or module")?;
    let mut affected: BTreeSet<String> = g
        .descendants(&t.name, depth)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    if t.kind == TypeKind::Protocol {
        affected.extend(g.all_conformers(&t.name));
    }
    let mut callers: BTreeSet<String> = BTreeSet::new();
    for m in &t.methods {
        for (c, _) in g
            .calls
            .transitive_callers(&method_key(&t.name, &m.name), depth)
        {
            callers.insert(c);
        }
    }
    let mut files: BTreeSet<String> = affected
        .iter()
        .filter_map(|n| g.types.get(n))
        .map(|x| x.file.clone())
        .collect();
    files.extend(t.extensions.iter().map(|e| e.file.clone()));
    files.extend(
        callers
            .iter()
            .filter_map(|c| g.calls.callees(c).first().map(|e| e.file.clone())),
    );
    let mut text = format!(
        "changing {} reaches {} types, {} callers, {} files\n",
        t.name,
        affected.len(),
        callers.len(),
        files.len()
    );
    let list = |s: &BTreeSet<String>| {
        s.iter()
            .take(MAX_LIST)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(text, "types: {}", list(&affected));
    let _ = writeln!(text, "callers: {}", list(&callers));
    let _ = write!(
        text,
        "files: {}",
        files
            .iter()
            .take(MAX_AFFECTED_FILES)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(ToolOutput::new(
        json!({"entity": t.name, "types": affected, "callers": callers, "files": files}),
        text,
    ))
}

fn topology(g: &ProjectGraph) -> ToolOutput {
    let mut in_degree: Vec<(&String, usize)> = g
        .modules
        .modules
        .keys()
        .map(|m| {
            (
                m,
                g.modules
                    .modules
                    .values()
                    .filter(|x| x.dependencies.contains_key(m))
                    .count(),
            )
        })
        .collect();
    in_degree.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let layers = g.modules.layers();
    let cycles = g.modules.cycles();
    let mut text = format!(
        "{} modules, {} dependency edges, {} layers, {} cycles; {} types, {} call edges\n",
        g.modules.modules.len(),
        g.modules
            .modules
            .values()
            .map(|m| m.dependencies.len())
            .sum::<usize>(),
        layers.len(),
        cycles.len(),
        g.types.len(),
        g.calls.len()
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
    let data = json!({"modules": g.modules.modules.len(), "layers": layers, "cycles": cycles, "mostDependedOn": top, "types": g.types.len(), "callEdges": g.calls.len()});
    ToolOutput::new(data, text)
}

fn entity_edges(g: &ProjectGraph, id: &str) -> Result<ToolOutput, ToolError> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut inc: Vec<(String, String)> = Vec::new();
    if let Some(m) = g.modules.modules.get(id) {
        out.extend(
            m.dependencies
                .keys()
                .map(|d| ("depends_on".to_string(), d.clone())),
        );
        inc.extend(
            g.modules
                .modules
                .values()
                .filter(|x| x.dependencies.contains_key(id))
                .map(|x| ("used_by".to_string(), x.name.clone())),
        );
    } else if let Some((ty, method)) = id.rsplit_once('.') {
        let key = method_key(ty, method);
        out.extend(
            g.callees(&key)
                .into_iter()
                .map(|e| ("calls".to_string(), callee_label(e))),
        );
        inc.extend(
            g.callers(&key)
                .into_iter()
                .map(|e| ("called_by".to_string(), e.caller.clone())),
        );
    } else {
        let t = find_type(g, id, "entity")?;
        out.extend(
            t.superclass
                .iter()
                .map(|s| ("inherits".to_string(), s.clone())),
        );
        out.extend(
            t.conformances
                .iter()
                .map(|c| ("conforms".to_string(), c.clone())),
        );
        out.extend(t.extensions.iter().map(|e| {
            (
                "extended_by".to_string(),
                format!(
                    "{} ({})",
                    e.category.as_deref().unwrap_or("extension"),
                    e.file
                ),
            )
        }));
        inc.extend(
            g.subclasses
                .get(&t.name)
                .into_iter()
                .flatten()
                .map(|s| ("subclassed_by".to_string(), s.clone())),
        );
        inc.extend(
            g.conformers
                .get(&t.name)
                .into_iter()
                .flatten()
                .map(|s| ("conformed_by".to_string(), s.clone())),
        );
        let callers: BTreeSet<String> = t
            .methods
            .iter()
            .flat_map(|m| g.callers(&method_key(&t.name, &m.name)))
            .map(|e| e.caller.clone())
            .collect();
        inc.extend(callers.into_iter().map(|c| ("called_by".to_string(), c)));
    }
    let mut text = format!("{id}: {} outgoing, {} incoming\n", out.len(), inc.len());
    for (rel, to) in out.iter().take(MAX_EDGES) {
        let _ = writeln!(text, "  → {rel} {to}");
    }
    for (rel, from) in inc.iter().take(MAX_EDGES) {
        let _ = writeln!(text, "  ← {rel} {from}");
    }
    let rows = |v: &[(String, String)]| {
        v.iter()
            .map(|(r, n)| json!({"relation": r, "entity": n}))
            .collect::<Vec<_>>()
    };
    Ok(ToolOutput::new(
        json!({"entity": id, "outgoing": rows(&out), "incoming": rows(&inc)}),
        text.trim_end().to_string(),
    ))
}

fn callee_label(e: &CallEdge) -> String {
    e.callee.clone().unwrap_or_else(|| match &e.receiver_type {
        Some(t) => format!("{t}.{} (external)", e.callee_name),
        None => format!("{} (external)", e.callee_name),
    })
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
    let g = service.graph().map_err(index_error)?;
    let name = non_blank(&args.method_name, "methodName")?;
    let direction = args.direction;
    let depth = clamped(args.max_depth, 1, 5);
    if direction == Direction::Search {
        return Ok(search(
            &g,
            name.rsplit('.').next().unwrap_or(name),
            Some("method"),
        ));
    }
    let keys = g.find_callables(name);
    if keys.is_empty() {
        let names: Vec<String> = g
            .types
            .values()
            .flat_map(|t| t.methods.iter().map(move |m| method_key(&t.name, &m.name)))
            .collect();
        return Err(not_found(
            "method",
            name,
            &similar(name, names.iter().map(String::as_str)),
        ));
    }
    let mut text = String::new();
    let mut data = Vec::new();
    for key in keys.iter().take(5) {
        let (t, v) = call_graph_of(&g, key, direction, depth);
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
    g: &ProjectGraph,
    key: &str,
    direction: Direction,
    depth: usize,
) -> (String, Value) {
    match direction {
        Direction::Callers => walk(g, key, depth, true),
        Direction::Callees => walk(g, key, depth, false),
        Direction::Impact => call_impact(g, key),
        Direction::Both | Direction::Search => {
            let (a, av) = walk(g, key, depth, true);
            let (b, bv) = walk(g, key, depth, false);
            (
                format!("{a}{b}"),
                json!({"callers": av["callers"], "callees": bv["callees"]}),
            )
        }
    }
}

/// Breadth-first callers (or callees) up to `depth`.
fn walk(g: &ProjectGraph, key: &str, depth: usize, callers: bool) -> (String, Value) {
    let label = if callers { "callers" } else { "callees" };
    let mut seen: HashSet<String> = HashSet::from([key.to_string()]);
    let mut frontier = vec![key.to_string()];
    let mut rows = Vec::new();
    let mut text = String::new();
    for level in 1..=depth {
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
    (text, json!({ label: rows }))
}

fn call_impact(g: &ProjectGraph, key: &str) -> (String, Value) {
    let direct: Vec<String> = g
        .callers(key)
        .into_iter()
        .map(|e| e.caller.clone())
        .collect();
    let transitive = g.calls.transitive_callers(key, 3);
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
    let _ = writeln!(
        text,
        "  direct: {}",
        direct
            .iter()
            .take(MAX_LIST)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        text,
        "  files: {}",
        files
            .iter()
            .take(MAX_AFFECTED_FILES)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
    let rows: Vec<Value> = transitive
        .iter()
        .map(|(k, d)| json!({"entity": k, "depth": d}))
        .collect();
    (
        text,
        json!({"directCallers": direct, "transitiveCallers": rows, "affectedFiles": files, "modules": modules}),
    )
}
