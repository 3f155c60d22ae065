//! A registry of stand-in tools, a recording audit sink and a pipeline over them.

use std::sync::{Arc, Mutex};

use alembic_tools::*;
use serde_json::{Value, json};

/// Keeps every audit entry in memory.
#[derive(Default)]
pub struct Audit(pub Mutex<Vec<AuditEntry>>);

impl AuditSink for Audit {
    fn record(&self, entry: AuditEntry) {
        self.0.lock().unwrap().push(entry);
    }
}

impl Audit {
    pub fn entries(&self) -> Vec<AuditEntry> {
        self.0.lock().unwrap().clone()
    }
}

fn tool(
    name: &str,
    description: &str,
    schema: Value,
    effect: EffectClass,
    f: fn(&Value) -> Result<Value, String>,
) -> ToolDefinition {
    ToolDefinition::new(
        name,
        description,
        schema,
        ToolModule::AstGraph,
        effect,
        handler_fn(move |args, _ctx| async move {
            f(&args).map(ToolOutput::json).map_err(ToolError::Failed)
        }),
    )
}

/// Stand-in tools with fixed answers. Their names are not the real tools' (whose parameters
/// differ); compositions over the real tools are tested in alembic-runtime.
pub fn test_tools() -> Vec<ToolDefinition> {
    vec![
        tool(
            "get_module_classes",
            "Get the class hierarchy of a module or class.",
            json!({"type": "object", "properties": {"module": {"type": "string", "description": "module name"}, "depth": {"type": "integer"}}, "required": ["module"]}),
            EffectClass::ReadOnly,
            |a| match a["module"].as_str() {
                Some("NetworkKit") => Ok(
                    json!({"module": "NetworkKit", "classes": ["APIClient", "RequestBuilder"], "depth": a.get("depth")}),
                ),
                Some(m) => Ok(json!({"module": m, "classes": []})),
                None => Err("no module".into()),
            },
        ),
        tool(
            "query_class_calls",
            "Query callers and callees of classes.",
            json!({"type": "object", "properties": {"classes": {"type": "array", "items": {"type": "string"}}}, "required": ["classes"]}),
            EffectClass::ReadOnly,
            |a| {
                Ok(
                    json!({"callGraph": a["classes"].as_array().unwrap().iter().map(|c| json!({"from": c, "to": "URLSession"})).collect::<Vec<_>>()}),
                )
            },
        ),
        tool(
            "detect_class_patterns",
            "Detect design patterns used by classes.",
            json!({"type": "object", "properties": {"classes": {"type": "array", "items": {"type": "string"}}}, "required": ["classes"]}),
            EffectClass::ReadOnly,
            |a| Ok(json!({"patterns": [{"pattern": "builder", "classes": a["classes"]}]})),
        ),
        tool(
            "search_recipes",
            "Search knowledge recipes by keyword and category.",
            json!({"type": "object", "properties": {
                "keyword": {"type": "string", "description": "free-text query"},
                "category": {"type": "string", "description": "recipe category such as Network or UI"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50}
            }}),
            EffectClass::ReadOnly,
            |a| {
                Ok(
                    json!({"category": a.get("category"), "keyword": a.get("keyword"), "limit": a.get("limit")}),
                )
            },
        ),
        tool(
            "search_project_code",
            "Search the project's source code for a pattern.",
            json!({"type": "object", "properties": {"pattern": {"type": "string", "description": "regex to find"}}, "required": ["pattern"]}),
            EffectClass::ReadsProjectFiles,
            |a| Ok(json!({"matches": [], "pattern": a["pattern"]})),
        ),
        tool(
            "list_guard_rules",
            "List guard rules for a language.",
            json!({"type": "object", "properties": {"language": {"type": "string", "enum": ["swift", "kotlin", "rust"]}}}),
            EffectClass::ReadOnly,
            |a| Ok(json!({"rules": [], "language": a.get("language")})),
        ),
        tool(
            "run_safe_command",
            "Run a read-only shell command.",
            json!({"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}),
            EffectClass::RunsCommands,
            |_| Ok(json!("ran")),
        ),
        tool(
            "failing_tool",
            "Always fails.",
            json!({"type": "object", "properties": {}}),
            EffectClass::ReadOnly,
            |_| Err("disk on fire".into()),
        ),
    ]
}

pub struct Harness {
    pub registry: Arc<ToolRegistry>,
    pub pipeline: Arc<Pipeline>,
    pub audit: Arc<Audit>,
}

pub fn harness() -> Harness {
    let registry = Arc::new(ToolRegistry::new());
    registry.register_all(test_tools()).unwrap();
    let audit = Arc::new(Audit::default());
    let pipeline = Pipeline::builder(Arc::clone(&registry), ".")
        .audit(Arc::clone(&audit) as Arc<dyn AuditSink>)
        .build();
    Harness {
        registry,
        pipeline,
        audit,
    }
}

impl Harness {
    pub fn call(&self, name: &str, args: Value) -> ToolOutcome {
        self.call_as(name, args, Allowlist::All)
    }

    pub fn call_as(&self, name: &str, args: Value, allowlist: Allowlist) -> ToolOutcome {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(self.pipeline.execute(ToolCall::new(
            name,
            args,
            Caller::new("test", allowlist),
        )))
    }
}

pub fn data(outcome: &ToolOutcome) -> Value {
    assert!(outcome.is_ok(), "{outcome:?}");
    outcome.output.as_ref().unwrap().data.clone()
}
