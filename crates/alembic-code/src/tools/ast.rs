//! ast-graph: get_project_overview, get_class_hierarchy, get_class_info,
//! get_protocol_info, get_method_overrides, get_category_map (the two graph query tools
//! are in `graph_query` and `call_graph`).

use std::fmt::Write as _;

use std::collections::BTreeSet;
use std::sync::Arc;

use alembic_tools::{ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{code_tool, given, index_error, non_blank, not_found, similar};
use crate::focus::Reach;
use crate::graph::{ProjectGraph, Totals, TypeInfo};
use crate::service::{CodeService, RootClasses};
use crate::summary::TypeKind;

/// Root trees shown without a class name, and descendants per tree.
const MAX_ROOTS: usize = 30;
/// Cycles, modules per cycle and entry points the overview's text lists.
const MAX_OVERVIEW_LIST: usize = 20;
/// Modules (largest first) and entry points the overview's data lists.
const MAX_OVERVIEW_DATA: usize = 100;
const MAX_TREE_CHILDREN: usize = 5;
const MAX_CATEGORY_CLASSES: usize = 30;
/// Methods above this complexity are tagged in renderings.
const COMPLEXITY_TAG: u32 = 3;
/// Levels of subclasses `get_class_hierarchy` lists.
const DESCENDANT_DEPTH: usize = 10;

pub(super) fn tools(service: &Arc<CodeService>) -> Vec<ToolDefinition> {
    let m = ToolModule::AstGraph;
    vec![
        code_tool(
            service,
            m,
            "get_project_overview",
            "Overview of the project from its syntax trees: files, classes, protocols, extensions, methods, languages, modules with their dependency layers, and entry points.",
            overview,
        ),
        code_tool(
            service,
            m,
            "get_class_hierarchy",
            "Inheritance of one class (chain to the root and direct subclasses), or without className the root classes with their subclass trees.",
            hierarchy,
        ),
        code_tool(
            service,
            m,
            "get_class_info",
            "Everything about one class: location, inheritance chain, protocols, properties, class (+) and instance (-) methods with complexity, extensions/categories, subclasses.",
            class_info,
        ),
        code_tool(
            service,
            m,
            "get_protocol_info",
            "A protocol, interface or trait: location, inherited protocols, required and optional methods, and the types conforming to it.",
            protocol_info,
        ),
        code_tool(
            service,
            m,
            "get_method_overrides",
            "Subclasses that override a method of a class (or types implementing a protocol method), with file and line.",
            method_overrides,
        ),
        code_tool(
            service,
            m,
            "get_category_map",
            "Extensions, categories and impl blocks: of one class, or without className the classes that have them, most first.",
            category_map,
        ),
    ]
}

/// Arguments of `get_project_overview`: none.
#[derive(Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Arguments of `get_class_hierarchy` and `get_category_map`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct MaybeClassArgs {
    /// class, struct, enum or protocol name
    class_name: Option<String>,
}

/// Arguments of `get_class_info`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ClassArgs {
    /// class, struct, enum or protocol name
    class_name: String,
}

/// Arguments of `get_protocol_info`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ProtocolArgs {
    protocol_name: String,
}

/// Arguments of `get_method_overrides`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct OverridesArgs {
    /// class, struct, enum or protocol name
    class_name: String,
    method_name: String,
}

pub(super) fn find_type<'g>(
    graph: &'g ProjectGraph,
    name: &str,
    what: &str,
) -> Result<&'g TypeInfo, ToolError> {
    find_type_among(graph, name, what, || {
        Ok(graph.types.keys().cloned().collect())
    })
}

/// [`find_type`] in a graph focused on `name` ([`CodeService::graph_around`]), which
/// holds every type of that name; "not found" suggestions come from every type key.
pub(super) fn find_focused_type<'g>(
    service: &CodeService,
    graph: &'g ProjectGraph,
    name: &str,
    what: &str,
) -> Result<&'g TypeInfo, ToolError> {
    find_type_among(graph, name, what, || {
        service.type_keys().map_err(index_error)
    })
}

fn find_type_among<'g>(
    graph: &'g ProjectGraph,
    name: &str,
    what: &str,
    all_keys: impl FnOnce() -> Result<BTreeSet<String>, ToolError>,
) -> Result<&'g TypeInfo, ToolError> {
    match graph.types_named(name).as_slice() {
        [one] => Ok(one),
        [] => {
            let keys = all_keys()?;
            Err(not_found(
                what,
                name,
                &similar(name, keys.iter().map(String::as_str)),
            ))
        }
        many => Err(ambiguous(what, name, many)),
    }
}

/// The graph a question about the types named `name` needs, with their descendants as far
/// as `reach`.
fn focused(
    service: &CodeService,
    name: &str,
    reach: Reach,
) -> Result<Arc<ProjectGraph>, ToolError> {
    service.graph_around(name, reach).map_err(index_error)
}

/// A simple name shared by several types: list them with the keys that select one.
fn ambiguous(what: &str, name: &str, candidates: &[&TypeInfo]) -> ToolError {
    let listed: Vec<String> = candidates
        .iter()
        .map(|t| {
            format!(
                "{} ({} {}, {}:{})",
                t.name,
                t.language.name(),
                t.kind.name(),
                t.file,
                t.line
            )
        })
        .collect();
    ToolError::Invalid(format!(
        "{what} \"{name}\" is ambiguous: {} types have that name: {}; pass one of these qualified names instead",
        candidates.len(),
        listed.join(", ")
    ))
}

/// File, function, language and extension counts come from the per-file rows; types,
/// modules, cycles, entry points and call edges from [`CodeService::module_graph`]; both
/// from one [`CodeService::overview`].
fn overview(service: &CodeService, _: NoArgs) -> Result<ToolOutput, ToolError> {
    let (stats, topology) = service.overview().map_err(index_error)?;
    let t = &Totals {
        files: stats.files,
        functions: stats.functions,
        ..topology.totals.clone()
    };
    let mut text = format!(
        "{} files: {} classes, {} structs, {} enums, {} protocols, {} extensions/categories, {} methods, {} functions; {} call edges ({} resolved)\n",
        t.files,
        t.classes,
        t.structs,
        t.enums,
        t.protocols,
        t.extensions,
        t.methods,
        t.functions,
        t.call_edges,
        t.resolved_call_edges
    );
    let langs: Vec<String> = stats
        .languages
        .iter()
        .map(|(l, n)| format!("{} {n}", l.name()))
        .collect();
    let _ = writeln!(text, "languages: {}", langs.join(", "));
    let mut modules: Vec<_> = topology.modules.modules.values().collect();
    modules.sort_by(|a, b| b.types.cmp(&a.types).then(a.name.cmp(&b.name)));
    let _ = writeln!(
        text,
        "modules ({}; layer 0 depends on nothing):",
        modules.len()
    );
    for m in modules.iter().take(15) {
        let _ = writeln!(
            text,
            "  {} — {} files, {} types, layer {}",
            m.name, m.files, m.types, m.layer
        );
    }
    let cycles = topology.modules.cycles();
    if !cycles.is_empty() {
        let shown = cycles.iter().take(MAX_OVERVIEW_LIST).map(|c| {
            let names: Vec<String> = c.iter().take(MAX_OVERVIEW_LIST).cloned().collect();
            first_of(&names, c.len(), " ↔ ")
        });
        let shown: Vec<String> = shown.collect();
        let _ = writeln!(
            text,
            "dependency cycles: {}",
            first_of(&shown, cycles.len(), "; ")
        );
    }
    let entries: Vec<String> = topology
        .entry_points
        .iter()
        .take(MAX_OVERVIEW_LIST)
        .map(|e| format!("{} ({})", e.file, e.symbol.as_deref().unwrap_or(e.kind)))
        .collect();
    let _ = write!(
        text,
        "entry points: {}",
        if entries.is_empty() {
            "none found".to_string()
        } else {
            first_of(&entries, topology.entry_points.len(), ", ")
        }
    );
    // A monorepo has thousands of modules: the data lists the largest, like the text.
    let modules_json: Vec<Value> = modules.iter().take(MAX_OVERVIEW_DATA).map(|m| json!({"name": m.name, "files": m.files, "types": m.types, "layer": m.layer, "dependencies": m.dependencies})).collect();
    let entry_points: Vec<_> = topology
        .entry_points
        .iter()
        .take(MAX_OVERVIEW_DATA)
        .collect();
    let data = json!({
        "totals": t, "languages": stats.languages, "extensions": stats.extensions, "modules": modules_json,
        "totalModules": modules.len(), "cycles": cycles, "entryPoints": entry_points,
        "totalEntryPoints": topology.entry_points.len(), "buildMs": service.graph_build_ms(),
    });
    Ok(ToolOutput::new(data, text))
}

fn hierarchy(service: &CodeService, args: MaybeClassArgs) -> Result<ToolOutput, ToolError> {
    let Some(name) = given(args.class_name.as_deref()) else {
        let roots = service.root_classes(MAX_ROOTS).map_err(index_error)?;
        return Ok(root_trees(&roots));
    };
    let g = focused(service, name, Reach::subclasses(Some(DESCENDANT_DEPTH)))?;
    let info = find_focused_type(service, &g, name, "class")?;
    let chain = g.inheritance_chain(&info.name);
    let subclasses = g.subclasses.get(&info.name).cloned().unwrap_or_default();
    let mut text = format!("{}\n", chain.join(" → "));
    if subclasses.is_empty() {
        text.push_str("no subclasses");
    } else {
        let _ = write!(text, "subclasses: {}", subclasses.join(", "));
    }
    let descendants: Vec<Value> = g
        .descendants(&info.name, DESCENDANT_DEPTH)
        .into_iter()
        .map(|(n, d)| json!({"name": n, "depth": d}))
        .collect();
    Ok(ToolOutput::new(
        json!({"className": info.name, "chain": chain, "subclasses": subclasses, "descendants": descendants}),
        text,
    ))
}

/// `shown` joined by `sep`, and how many more of `total` there are.
fn first_of(shown: &[String], total: usize, sep: &str) -> String {
    let mut out = shown.join(sep);
    if total > shown.len() {
        let _ = write!(out, "{sep}… {} more", total - shown.len());
    }
    out
}

fn root_trees(r: &RootClasses) -> ToolOutput {
    let mut text = format!("{} root classes\n", r.total);
    let mut trees = Vec::new();
    for root in &r.roots {
        let desc = r.graph.descendants(&root.key, usize::MAX);
        let base = root
            .superclass
            .as_ref()
            .map(|s| format!(" : {s}"))
            .unwrap_or_default();
        let _ = writeln!(
            text,
            "{}{base}{}",
            root.key,
            if desc.is_empty() {
                String::new()
            } else {
                format!(" ({} descendants)", desc.len())
            }
        );
        for (n, d) in desc.iter().take(MAX_TREE_CHILDREN) {
            let _ = writeln!(text, "{}└ {n}", "  ".repeat(*d));
        }
        trees.push(json!({"root": root.key, "superclass": root.superclass, "descendants": desc.iter().map(|(n, d)| json!({"name": n, "depth": d})).collect::<Vec<_>>()}));
    }
    if r.total > MAX_ROOTS {
        let _ = writeln!(text, "… {} more", r.total - MAX_ROOTS);
    }
    ToolOutput::new(
        json!({"roots": trees, "totalRoots": r.total}),
        text.trim_end().to_string(),
    )
}

fn class_info(service: &CodeService, args: ClassArgs) -> Result<ToolOutput, ToolError> {
    let name = non_blank(&args.class_name, "className")?;
    // Direct subclasses only.
    let g = focused(service, name, Reach::subclasses(Some(1)))?;
    let info = find_focused_type(service, &g, name, "class")?;
    let chain = g.inheritance_chain(&info.name);
    let subclasses = g.subclasses.get(&info.name).cloned().unwrap_or_default();
    let mut text = format!(
        "{} {} — {}:{}\n",
        info.kind.name(),
        info.name,
        info.file,
        info.line
    );
    if chain.len() > 1 {
        let _ = writeln!(text, "inherits: {}", chain[1..].join(" → "));
    }
    if !info.conformances.is_empty() {
        let _ = writeln!(text, "conforms to: {}", info.conformances.join(", "));
    }
    for p in &info.properties {
        let attrs = if p.attributes.is_empty() {
            String::new()
        } else {
            format!(" ({})", p.attributes.join(", "))
        };
        let _ = writeln!(
            text,
            "  {}{}: {}{attrs}",
            if p.is_static { "static " } else { "" },
            p.name,
            p.type_name.as_deref().unwrap_or("?")
        );
    }
    for m in &info.methods {
        let tag = if m.complexity > COMPLEXITY_TAG {
            format!(" [complexity {}]", m.complexity)
        } else {
            String::new()
        };
        let from = m
            .from_extension
            .as_ref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        let place = if m.file == info.file {
            format!(":{}", m.line)
        } else {
            format!("{}:{}", m.file, m.line)
        };
        let _ = writeln!(
            text,
            "  {}{tag}{from}  {place}",
            super::marked_signature(&m.signature, m.is_static)
        );
    }
    if !info.extensions.is_empty() {
        let ext: Vec<String> = info
            .extensions
            .iter()
            .map(|e| {
                format!(
                    "{} ({})",
                    e.category.as_deref().unwrap_or("extension"),
                    e.file
                )
            })
            .collect();
        let _ = writeln!(text, "extensions: {}", ext.join(", "));
    }
    let _ = write!(
        text,
        "subclasses: {}",
        if subclasses.is_empty() {
            "none".to_string()
        } else {
            subclasses.join(", ")
        }
    );
    let mut data = serde_json::to_value(info).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut data {
        map.insert("chain".into(), json!(chain));
        map.insert("subclasses".into(), json!(subclasses));
    }
    Ok(ToolOutput::new(super::access::camel(data), text))
}

fn protocol_info(service: &CodeService, args: ProtocolArgs) -> Result<ToolOutput, ToolError> {
    let name = non_blank(&args.protocol_name, "protocolName")?;
    let g = focused(service, name, Reach::all())?;
    let info = find_focused_type(service, &g, name, "protocol")?;
    if info.kind != TypeKind::Protocol {
        return Err(ToolError::Invalid(format!(
            "\"{name}\" is a {}, not a protocol/interface/trait; use get_class_info",
            info.kind.name()
        )));
    }
    let conformers = g.all_conformers(&info.name);
    let (optional, required_methods): (Vec<_>, Vec<_>) =
        info.methods.iter().partition(|m| m.is_optional);
    let mut text = format!("protocol {} — {}:{}\n", info.name, info.file, info.line);
    if !info.conformances.is_empty() {
        let _ = writeln!(text, "inherits: {}", info.conformances.join(", "));
    }
    for m in &required_methods {
        let label = if m.is_declaration {
            "required"
        } else {
            "default"
        };
        let _ = writeln!(text, "  {label}: {}", m.signature);
    }
    for m in &optional {
        let _ = writeln!(text, "  optional: {}", m.signature);
    }
    if conformers.is_empty() {
        text.push_str("⚠ no type in the project conforms to it");
    } else {
        let _ = write!(text, "conformers: {}", conformers.join(", "));
    }
    let names =
        |ms: &[&crate::graph::MethodInfo]| ms.iter().map(|m| m.name.clone()).collect::<Vec<_>>();
    let data = json!({"protocolName": info.name, "file": info.file, "line": info.line, "inherits": info.conformances, "requiredMethods": names(&required_methods), "optionalMethods": names(&optional), "conformers": conformers});
    Ok(ToolOutput::new(data, text))
}

fn method_overrides(service: &CodeService, args: OverridesArgs) -> Result<ToolOutput, ToolError> {
    let name = non_blank(&args.class_name, "className")?;
    let method = non_blank(&args.method_name, "methodName")?;
    let g = focused(service, name, Reach::all())?;
    let info = find_focused_type(service, &g, name, "class")?;
    let overrides = g.overrides_of(&info.name, method);
    let mut text = match g.lookup_method(&info.name, method) {
        Some((owner, m)) => format!("{}.{} — {}:{}\n", owner.name, m.name, m.file, m.line),
        None => format!(
            "{}.{} is not defined in the project (inherited from a library?)\n",
            info.name, method
        ),
    };
    if overrides.is_empty() {
        text.push_str("no overrides");
    }
    for o in &overrides {
        let tag = if o.complexity > COMPLEXITY_TAG {
            format!(" [complexity {}]", o.complexity)
        } else {
            String::new()
        };
        let _ = writeln!(
            text,
            "  {} ({}) — {}:{}{tag}",
            o.class_name, o.relation, o.file, o.line
        );
    }
    let data = json!({"className": info.name, "methodName": method, "overrides": overrides});
    Ok(ToolOutput::new(
        super::access::camel(data),
        text.trim_end().to_string(),
    ))
}

fn category_map(service: &CodeService, args: MaybeClassArgs) -> Result<ToolOutput, ToolError> {
    if let Some(name) = given(args.class_name.as_deref()) {
        // Only the type's own extensions.
        let g = focused(service, name, Reach::subclasses(Some(0)))?;
        let info = find_focused_type(service, &g, name, "class")?;
        let mut text = format!(
            "{} has {} extensions/categories\n",
            info.name,
            info.extensions.len()
        );
        for e in &info.extensions {
            let redundant = e.conformances.is_empty()
                || (e.conformances.len() == 1 && e.category.as_ref() == e.conformances.first());
            let conf = if redundant {
                String::new()
            } else {
                format!(" <{}>", e.conformances.join(", "))
            };
            let _ = writeln!(
                text,
                "  {}{conf} — {}:{}: {}",
                e.category.as_deref().unwrap_or("extension"),
                e.file,
                e.line,
                e.methods.join(", ")
            );
        }
        let data = json!({"className": info.name, "extensions": info.extensions});
        return Ok(ToolOutput::new(
            super::access::camel(data),
            text.trim_end().to_string(),
        ));
    }
    let (total, extended) = service
        .extended_types(MAX_CATEGORY_CLASSES)
        .map_err(index_error)?;
    let mut text = format!("{total} types have extensions/categories/impl blocks\n");
    let mut rows = Vec::new();
    for t in &extended {
        let (count, names) = (t.categories.len(), &t.categories);
        let _ = writeln!(text, "  {} ({count}): {}", t.key, names.join(", "));
        rows.push(json!({"className": t.key, "count": count, "extensions": names}));
    }
    Ok(ToolOutput::new(
        json!({"classes": rows, "total": total}),
        text.trim_end().to_string(),
    ))
}
