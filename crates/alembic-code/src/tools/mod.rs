//! The project-access and ast-graph tools, registered into an
//! [`alembic_tools::ToolRegistry`].
//!
//! Each tool's arguments are a struct (its schema comes from the struct) and every handler
//! is bound to the [`CodeService`] it was registered with, which the host configures (an
//! embedder, say). Work runs on the blocking pool; results are structured JSON plus a compact
//! text for the model.

mod access;
mod ast;
mod call_graph;
mod entity;
mod graph_query;

use std::sync::Arc;

use alembic_tools::{
    EffectClass, RegistryError, ToolArgs, ToolDefinition, ToolError, ToolModule, ToolOutput,
    ToolRegistry,
};

use crate::service::CodeService;

/// Names of the tools this crate registers, in registration order.
pub const TOOL_NAMES: [&str; 13] = [
    "search_project_code",
    "read_project_file",
    "list_project_structure",
    "get_file_summary",
    "semantic_search_code",
    "get_project_overview",
    "get_class_hierarchy",
    "get_class_info",
    "get_protocol_info",
    "get_method_overrides",
    "get_category_map",
    "query_code_graph",
    "query_call_graph",
];

/// Registers the 5 project-access and 8 ast-graph tools, each bound to `service`.
pub fn register_tools(
    registry: &ToolRegistry,
    service: Arc<CodeService>,
) -> Result<(), RegistryError> {
    let tools = access::tools(&service)
        .into_iter()
        .chain(ast::tools(&service))
        .chain([graph_query::tool(&service), call_graph::tool(&service)]);
    for tool in tools {
        registry.register(tool)?;
    }
    Ok(())
}

/// What a code tool does with its typed arguments.
type Run<A> = fn(&CodeService, A) -> Result<ToolOutput, ToolError>;

/// A code tool: it reads project files and runs on the blocking pool with `service`.
fn code_tool<A: ToolArgs>(
    service: &Arc<CodeService>,
    module: ToolModule,
    name: &'static str,
    description: &'static str,
    run: Run<A>,
) -> ToolDefinition {
    ToolDefinition::typed::<A>(name, description, module, EffectClass::ReadsProjectFiles)
        .blocking(Arc::clone(service), move |service, args| run(service, args))
}

/// A string argument, or `None` when it is absent or blank (the tools treat both alike).
pub(crate) fn given(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|s| !s.is_empty())
}

/// A required string argument, trimmed; blank is refused like a missing one.
pub(crate) fn non_blank<'a>(value: &'a str, name: &str) -> Result<&'a str, ToolError> {
    given(Some(value)).ok_or_else(|| {
        ToolError::Invalid(format!("argument \"{name}\": expected a non-empty string"))
    })
}

/// A count clamped to `min..=max`. The schema bounds pipeline calls already; the clamp keeps
/// out-of-range values from other callers harmless, as before.
pub(crate) fn clamped(value: i64, min: usize, max: usize) -> usize {
    usize::try_from(value.max(0)).map_or(max, |v| v.clamp(min, max))
}

pub(crate) fn index_error(e: crate::index::IndexError) -> ToolError {
    match e {
        // The question is too wide for one query; the message says what to ask instead.
        crate::index::IndexError::TooWide(wide) => ToolError::Invalid(wide.to_string()),
        e => ToolError::failed(format!("code index unavailable: {e}")),
    }
}

/// Names close to `query` (case-insensitive substring, then edit distance), for
/// "not found" messages.
pub(crate) fn similar<'a>(query: &str, names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let q = query.to_lowercase();
    let mut scored: Vec<(usize, &str)> = names
        .filter_map(|n| {
            let l = n.to_lowercase();
            if l.contains(&q) || q.contains(&l) {
                Some((0, n))
            } else {
                let d = strsim::levenshtein(&q, &l);
                (d <= 2.max(q.len() / 4)).then_some((d, n))
            }
        })
        .collect();
    scored.sort();
    scored.into_iter().take(5).map(|(_, n)| n).collect()
}

/// `- signature` / `+ signature`, unless the signature already starts with its marker
/// (Objective-C).
pub(crate) fn marked_signature(signature: &str, is_static: bool) -> String {
    if signature.starts_with('-') || signature.starts_with('+') {
        signature.to_string()
    } else {
        format!("{} {signature}", if is_static { "+" } else { "-" })
    }
}

pub(crate) fn not_found(what: &str, name: &str, suggestions: &[&str]) -> ToolError {
    if suggestions.is_empty() {
        ToolError::NotFound(format!("{what} \"{name}\" is not in the project graph"))
    } else {
        ToolError::NotFound(format!(
            "{what} \"{name}\" is not in the project graph; similar: {}",
            suggestions.join(", ")
        ))
    }
}
