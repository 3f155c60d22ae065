//! Shared test tools and spies.

use std::sync::{Arc, Mutex};

use alembic_tools::*;
use serde_json::{Value, json};

/// Records the order in which hooks run.
#[derive(Default, Clone)]
pub struct Journal(pub Arc<Mutex<Vec<String>>>);

impl Journal {
    pub fn push(&self, s: impl Into<String>) {
        self.0.lock().unwrap().push(s.into());
    }
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

pub enum SpyMode {
    Pass,
    Block,
    Fail,
    Respond(Value),
}

pub struct Spy {
    pub name: String,
    pub slot: MiddlewareSlot,
    pub mode: Mutex<SpyMode>,
    pub journal: Journal,
}

impl Spy {
    pub fn new(name: &str, slot: MiddlewareSlot, mode: SpyMode, journal: &Journal) -> Arc<Self> {
        Arc::new(Spy {
            name: name.into(),
            slot,
            mode: Mutex::new(mode),
            journal: journal.clone(),
        })
    }
}

#[async_trait]
impl Middleware for Spy {
    fn name(&self) -> &str {
        &self.name
    }
    fn slot(&self) -> MiddlewareSlot {
        self.slot
    }
    async fn before(
        &self,
        _call: &PreparedCall,
        _meta: &mut ToolMetadata,
    ) -> Result<BeforeVerdict, MiddlewareError> {
        self.journal.push(format!("before:{}", self.name));
        match &*self.mode.lock().unwrap() {
            SpyMode::Pass => Ok(BeforeVerdict::Continue),
            SpyMode::Block => Ok(BeforeVerdict::Block {
                reason: format!("{} says no", self.name),
                rule: format!("spy.{}", self.name),
            }),
            SpyMode::Fail => Err(MiddlewareError("spy broke".into())),
            SpyMode::Respond(v) => Ok(BeforeVerdict::Respond(ToolOutput::json(v.clone()))),
        }
    }
    async fn after(
        &self,
        _call: &PreparedCall,
        result: &CallResult,
        _meta: &mut ToolMetadata,
    ) -> Result<(), MiddlewareError> {
        let tag = match result {
            CallResult::Ok(_) => "ok".to_string(),
            CallResult::Failed { status, .. } => status.as_str().to_string(),
        };
        self.journal.push(format!("after:{}:{tag}", self.name));
        Ok(())
    }
}

/// A tool that journals its own execution and echoes its arguments.
pub fn echo_tool(journal: &Journal, effect: EffectClass) -> ToolDefinition {
    let j = journal.clone();
    ToolDefinition::new(
        "echo_args",
        "Echo the arguments.",
        json!({
            "type": "object",
            "properties": {
                "filePath": {"type": "string"},
                "pattern": {"type": "string"},
                "maxResults": {"type": "integer", "minimum": 1, "maximum": 200},
                "isRegex": {"type": "boolean"},
                "filePaths": {"type": "array", "items": {"type": "string"}},
                "mode": {"type": "string", "enum": ["fast", "full"]}
            }
        }),
        ToolModule::ProjectAccess,
        effect,
        handler_fn(move |args, _ctx| {
            let j = j.clone();
            async move {
                j.push("handler");
                Ok(ToolOutput::json(args))
            }
        }),
    )
}

pub fn tool_with(
    name: &str,
    effect: EffectClass,
    handler: std::sync::Arc<dyn ToolHandler>,
) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "test tool",
        json!({"type": "object", "properties": {}}),
        ToolModule::Composite,
        effect,
        handler,
    )
}

/// An audit sink that keeps entries in memory.
#[derive(Default)]
pub struct MemoryAudit(pub Mutex<Vec<AuditEntry>>);

impl AuditSink for MemoryAudit {
    fn record(&self, entry: AuditEntry) {
        self.0.lock().unwrap().push(entry);
    }
}
