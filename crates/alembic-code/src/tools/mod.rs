//! The project-access and ast-graph tools, registered into an
//! [`alembic_tools::ToolRegistry`].
//!
//! Handlers find their [`CodeService`] in the pipeline's services (so the host can
//! configure an embedder), or create one per project root on first use. Work runs on the
//! blocking pool; results are structured JSON plus a compact text for the model.

mod access;
mod ast;
mod graph_query;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use alembic_tools::{
    EffectClass, RegistryError, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput,
    ToolRegistry, handler_fn,
};
use serde_json::Value;

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

type ToolFn = fn(&CodeService, &Value) -> Result<ToolOutput, ToolError>;

/// Services created on demand, one per project root.
#[derive(Default)]
struct ServiceCache {
    by_root: Mutex<HashMap<PathBuf, Arc<CodeService>>>,
}

impl ServiceCache {
    fn for_context(&self, ctx: &ToolContext) -> Result<Arc<CodeService>, ToolError> {
        if let Some(s) = ctx.service::<CodeService>()
            && s.root() == ctx.project_root
        {
            return Ok(s);
        }
        let mut map = self
            .by_root
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(s) = map.get(&ctx.project_root) {
            return Ok(Arc::clone(s));
        }
        let service = Arc::new(
            CodeService::new(&ctx.project_root).map_err(|e| ToolError::failed(e.to_string()))?,
        );
        map.insert(ctx.project_root.clone(), Arc::clone(&service));
        Ok(service)
    }
}

/// Registers the 5 project-access and 8 ast-graph tools.
pub fn register_tools(registry: &ToolRegistry) -> Result<(), RegistryError> {
    let cache = Arc::new(ServiceCache::default());
    let specs = access::specs().into_iter().chain(ast::specs());
    for spec in specs {
        registry.register(spec.into_definition(Arc::clone(&cache)))?;
    }
    Ok(())
}

/// One tool before it is bound to the service cache.
pub(crate) struct Spec {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: Value,
    pub module: ToolModule,
    pub effect: EffectClass,
    pub run: ToolFn,
}

impl Spec {
    fn into_definition(self, cache: Arc<ServiceCache>) -> ToolDefinition {
        let run = self.run;
        let handler = handler_fn(move |args: Value, ctx: ToolContext| {
            let cache = Arc::clone(&cache);
            async move {
                let service = cache.for_context(&ctx)?;
                tokio::task::spawn_blocking(move || run(&service, &args))
                    .await
                    .map_err(|e| ToolError::failed(format!("code tool worker failed: {e}")))?
            }
        });
        ToolDefinition::new(
            self.name,
            self.description,
            self.parameters,
            self.module,
            self.effect,
            handler,
        )
    }
}

/// Runs a tool directly against a service, without a pipeline (tests, CLI, benches).
pub fn run_tool(service: &CodeService, name: &str, args: &Value) -> Result<ToolOutput, ToolError> {
    let spec = access::specs()
        .into_iter()
        .chain(ast::specs())
        .find(|s| s.name == name)
        .ok_or_else(|| ToolError::NotFound(format!("tool \"{name}\" is not a code tool")))?;
    (spec.run)(service, args)
}

/// A non-empty string argument.
pub(crate) fn str_arg<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

pub(crate) fn required<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    str_arg(args, name).ok_or_else(|| {
        ToolError::Invalid(format!("argument \"{name}\": expected a non-empty string"))
    })
}

/// An integer argument clamped to `min..=max` (the schema already rejected non-numbers).
pub(crate) fn int_arg(args: &Value, name: &str, default: usize, min: usize, max: usize) -> usize {
    args.get(name)
        .and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64)))
        .map_or(default, |v| usize::try_from(v).unwrap_or(max))
        .clamp(min, max)
}

pub(crate) fn bool_arg(args: &Value, name: &str, default: bool) -> bool {
    args.get(name).and_then(Value::as_bool).unwrap_or(default)
}

pub(crate) fn index_error(e: crate::index::IndexError) -> ToolError {
    ToolError::failed(format!("code index unavailable: {e}"))
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
