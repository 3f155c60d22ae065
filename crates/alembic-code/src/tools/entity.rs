//! query_code_graph's `impact` and `entity_edges`: a module's answer comes from the whole
//! project's module graph; a type's or method's from a graph focused on the type and the
//! call edges of its methods, read through one [`CallView`].

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use alembic_tools::{ToolError, ToolOutput};
use serde_json::json;

use super::ast::find_type;
use super::graph_query::{MAX_AFFECTED_FILES, MAX_LIST, callee_label, first_joined};
use super::{index_error, not_found, similar};
use crate::call_view::CallView;
use crate::focus::Reach;
use crate::graph::{ProjectGraph, TypeInfo, method_key};
use crate::index::{IndexError, WideClosure};
use crate::service::CodeService;
use crate::summary::TypeKind;
use crate::topology::ModuleGraph;

const MAX_EDGES: usize = 10;

/// Answers about a type or method through one [`CallView`] (one refresh of the index);
/// `None` when `id` names a module, whose answer needs the whole project's module graph.
fn unless_module(
    service: &CodeService,
    id: &str,
    answer: impl FnOnce(&mut CallView<'_>) -> Result<ToolOutput, ToolError>,
) -> Result<Option<ToolOutput>, ToolError> {
    service
        .with_calls(|view| {
            if view.modules().contains(id) {
                return Ok(None);
            }
            answer(view).map(Some)
        })
        .map_err(index_error)?
}

/// The type `id` names, from a graph focused on it as far as `reach`; "not found"
/// suggestions come from every type key, as [`super::ast::find_type`]'s on the full graph.
fn focused_type(
    view: &mut CallView<'_>,
    id: &str,
    reach: Reach,
    what: &str,
) -> Result<(Arc<ProjectGraph>, TypeInfo), ToolError> {
    let g = view.around(id, reach).map_err(index_error)?;
    type_in(view, g, id, what)
}

/// The type `id` names in `g`, or "not found" with suggestions from every type key.
fn type_in(
    view: &CallView<'_>,
    g: Arc<ProjectGraph>,
    id: &str,
    what: &str,
) -> Result<(Arc<ProjectGraph>, TypeInfo), ToolError> {
    if g.types_named(id).is_empty() {
        let keys = view.type_keys().map_err(index_error)?;
        return Err(not_found(
            what,
            id,
            &similar(id, keys.iter().map(String::as_str)),
        ));
    }
    let t = find_type(&g, id, what)?.clone();
    Ok((g, t))
}

/// Keys of a type's methods.
fn method_keys(t: &TypeInfo) -> Vec<String> {
    t.methods
        .iter()
        .map(|m| method_key(&t.name, &m.name))
        .collect()
}

/// What a change to a type (or module) reaches: descendants, conformers, extensions,
/// callers of its methods, and dependent modules.
pub(super) fn impact(
    service: &CodeService,
    id: &str,
    depth: usize,
) -> Result<ToolOutput, ToolError> {
    if let Some(out) = unless_module(service, id, |view| type_impact(view, id, depth))? {
        return Ok(out);
    }
    let t = service.module_graph().map_err(index_error)?;
    Ok(module_impact(&t.modules, id))
}

fn type_impact(view: &mut CallView<'_>, id: &str, depth: usize) -> Result<ToolOutput, ToolError> {
    const WHAT: &str = "class, protocol or module";
    let g = match view.around(id, Reach::all()) {
        Err(IndexError::TooWide(wide)) => return wide_impact(view, id, &wide),
        other => other.map_err(index_error)?,
    };
    let (g, t) = type_in(view, g, id, WHAT)?;
    let mut affected: BTreeSet<String> = g
        .descendants(&t.name, depth)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    if t.kind == TypeKind::Protocol {
        affected.extend(g.all_conformers(&t.name));
    }
    let (callers, caller_files) = callers_and_files(view, &t, depth).map_err(index_error)?;
    let mut files: BTreeSet<String> = affected
        .iter()
        .filter_map(|n| g.types.get(n))
        .map(|x| x.file.clone())
        .collect();
    files.extend(t.extensions.iter().map(|e| e.file.clone()));
    files.extend(caller_files);
    let mut text = format!(
        "changing {} reaches {} types, {} callers, {} files\n",
        t.name,
        affected.len(),
        callers.len(),
        files.len()
    );
    let list = |s: &BTreeSet<String>| first_joined(s, MAX_LIST);
    let _ = writeln!(text, "types: {}", list(&affected));
    let _ = writeln!(text, "callers: {}", list(&callers));
    let _ = write!(text, "files: {}", first_joined(&files, MAX_AFFECTED_FILES));
    Ok(ToolOutput::new(
        json!({"entity": t.name, "types": affected, "callers": callers, "files": files}),
        text,
    ))
}

/// The impact of a type whose descendants and conformers are too many to load
/// ([`WideClosure`]): their count and first names from the rows, and how many files call
/// each of its methods' names (unresolved: resolving them would load those types).
fn wide_impact(
    view: &mut CallView<'_>,
    id: &str,
    wide: &WideClosure,
) -> Result<ToolOutput, ToolError> {
    let (_, t) = focused_type(
        view,
        id,
        Reach::subclasses(Some(0)),
        "class, protocol or module",
    )?;
    let index = view
        .index()
        .ok_or_else(|| ToolError::failed("a wide closure comes only from the index"))?;
    let mut calls: Vec<(String, usize)> = Vec::new();
    let mut seen = BTreeSet::new();
    for m in t.methods.iter().filter(|m| seen.insert(m.name.as_str())) {
        let files = index.count_files_calling(&m.name).map_err(index_error)?;
        calls.push((m.name.clone(), files));
    }
    let mut text = format!(
        "changing {} reaches {} types declared in more than {} files (the most one query \
         reads), so callers are not resolved\n",
        t.name, wide.types, wide.limit
    );
    let _ = writeln!(
        text,
        "types (first {}): {}",
        wide.first.len(),
        wide.first.join(", ")
    );
    let named: Vec<String> = calls
        .iter()
        .take(MAX_LIST)
        .map(|(m, n)| format!("{m} ({n} files)"))
        .collect();
    let _ = write!(
        text,
        "files calling its methods' names: {}",
        if named.is_empty() {
            "none".to_string()
        } else {
            named.join(", ")
        }
    );
    let calls_json: Vec<_> = calls
        .iter()
        .map(|(m, n)| json!({"method": m, "files": n}))
        .collect();
    Ok(ToolOutput::new(
        json!({
            "entity": t.name,
            "bounded": true,
            "limit": wide.limit,
            "typeCount": wide.types,
            "types": wide.first,
            "filesCallingMethodNames": calls_json,
        }),
        text,
    ))
}

/// Transitive callers of a type's methods down to `depth`, and the file of each caller's
/// first call site.
fn callers_and_files(
    view: &mut CallView<'_>,
    t: &TypeInfo,
    depth: usize,
) -> Result<(BTreeSet<String>, Vec<String>), IndexError> {
    let callers: BTreeSet<String> = view
        .transitive_callers_of_each(&method_keys(t), depth)?
        .into_iter()
        .flatten()
        .map(|(c, _)| c)
        .collect();
    let list: Vec<String> = callers.iter().cloned().collect();
    let g = view.edges(&[], &list)?;
    let files = callers
        .iter()
        .filter_map(|c| g.callees(c).first().map(|e| e.file.clone()))
        .collect();
    Ok((callers, files))
}

fn module_impact(g: &ModuleGraph, name: &str) -> ToolOutput {
    let dependents: Vec<&String> = g
        .modules
        .values()
        .filter(|x| x.dependencies.contains_key(name))
        .map(|x| &x.name)
        .collect();
    let text = format!(
        "module {name} is used by {} modules: {}",
        dependents.len(),
        dependents
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    ToolOutput::new(
        json!({"entity": name, "dependentModules": dependents}),
        text,
    )
}

/// Incoming and outgoing relations of a module, a method (`Type.method`) or a type.
pub(super) fn entity_edges(service: &CodeService, id: &str) -> Result<ToolOutput, ToolError> {
    if let Some(out) = unless_module(service, id, |view| type_or_method_edges(view, id))? {
        return Ok(out);
    }
    let g = service.module_graph().map_err(index_error)?.modules;
    let mut out: Vec<(String, String)> = Vec::new();
    let mut inc: Vec<(String, String)> = Vec::new();
    if let Some(m) = g.modules.get(id) {
        out.extend(
            m.dependencies
                .keys()
                .map(|d| ("depends_on".to_string(), d.clone())),
        );
        inc.extend(
            g.modules
                .values()
                .filter(|x| x.dependencies.contains_key(id))
                .map(|x| ("used_by".to_string(), x.name.clone())),
        );
    }
    Ok(render_edges(id, &out, &inc))
}

fn type_or_method_edges(view: &mut CallView<'_>, id: &str) -> Result<ToolOutput, ToolError> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut inc: Vec<(String, String)> = Vec::new();
    if let Some((ty, method)) = id.rsplit_once('.') {
        let key = method_key(ty, method);
        let keys = [key.clone()];
        let g = view.edges(&keys, &keys).map_err(index_error)?;
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
        return Ok(render_edges(id, &out, &inc));
    }
    let direct = Reach {
        depth: Some(1),
        conformers: true,
    };
    let (g, t) = focused_type(view, id, direct, "entity")?;
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
    let keys = method_keys(&t);
    let calls = view.edges(&keys, &[]).map_err(index_error)?;
    let callers: BTreeSet<String> = keys
        .iter()
        .flat_map(|k| calls.callers(k))
        .map(|e| e.caller.clone())
        .collect();
    inc.extend(callers.into_iter().map(|c| ("called_by".to_string(), c)));
    Ok(render_edges(id, &out, &inc))
}

fn render_edges(id: &str, out: &[(String, String)], inc: &[(String, String)]) -> ToolOutput {
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
    ToolOutput::new(
        json!({"entity": id, "outgoing": rows(out), "incoming": rows(inc)}),
        text.trim_end().to_string(),
    )
}
