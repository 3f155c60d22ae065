//! Every built-in tool's contract, as the model and MCP clients see it: name, module, effect,
//! description and JSON Schema (descriptions, defaults, bounds, enums). Keys are sorted, so
//! the snapshot changes only when the contract does, not when a schema is written in another
//! order or derived from a struct instead of written by hand.

use std::collections::BTreeMap;

use alembic_runtime::{ProjectConfig, ProjectServices, register_builtin_tools};
use alembic_tools::{Allowlist, ToolRegistry};
use serde_json::Value;

/// `value` with every object's keys in sorted order.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(ordered.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[test]
fn every_builtin_tool_schema_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::absolute(dir.path()).unwrap();
    let services =
        ProjectServices::for_project(&root, &ProjectConfig::load(&root).unwrap()).unwrap();
    let registry = ToolRegistry::new();
    register_builtin_tools(&registry, &services).unwrap();
    let mut text = String::new();
    for def in registry.definitions(&Allowlist::All) {
        text.push_str(&format!(
            "## {} ({}, {})\n{}\n{}\n\n",
            def.name,
            def.module,
            def.effect,
            def.description,
            serde_json::to_string_pretty(&sorted(&def.parameters)).unwrap()
        ));
    }
    insta::assert_snapshot!("builtin_tool_schemas", text);
}
