//! Calling one code tool's handler directly: the registered definition with its typed
//! argument parsing, without the pipeline's gates (so handler errors come back as they are).

use std::sync::Arc;

use alembic_code::{CodeService, register_tools};
use alembic_tools::{
    Allowlist, Caller, Pipeline, ToolContext, ToolError, ToolOutput, ToolRegistry,
};
use serde_json::Value;

/// Runs `name` with `args` against `service` through the handler it was registered with.
pub fn run_tool(
    service: &Arc<CodeService>,
    name: &str,
    args: &Value,
) -> Result<ToolOutput, ToolError> {
    let registry = Arc::new(ToolRegistry::new());
    register_tools(&registry, Arc::clone(service)).unwrap();
    let tool = registry
        .get(name)
        .unwrap_or_else(|| panic!("{name} is not a code tool"));
    let pipeline = Pipeline::builder(registry, service.root()).build();
    let ctx = ToolContext::detached(pipeline, Caller::new("test", Allowlist::All));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(tool.definition.handler.call(args.clone(), ctx))
}
