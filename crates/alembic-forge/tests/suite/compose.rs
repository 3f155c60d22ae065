//! Compose: specs from JSON/TOML, templates, for_each, validation. Over stand-in tools; seed
//! scenario 2 over the real code tools is in alembic-runtime's tests (`scenario2.rs`).

use std::collections::BTreeMap;

use alembic_forge::{CompositionSpec, ForgeError, ForgeMode, TemporaryToolRegistry, composed_tool};
use alembic_tools::{Allowlist, OutcomeStatus, ToolRegistry};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{data, harness};

const NETWORKKIT: &str = r#"{
  "name": "analyze_networkkit",
  "description": "Analyse the NetworkKit module: classes, call graph and design patterns in one call.",
  "merge_strategy": "sequential",
  "parameters": {"type": "object", "properties": {"module": {"type": "string", "default": "NetworkKit"}}},
  "steps": [
    {"tool": "get_module_classes", "args": {"module": "NetworkKit"}, "extract_key": "classes"},
    {"tool": "query_class_calls", "args": {"classes": "${steps.0.classes}"}, "extract_key": "callGraph"},
    {"tool": "detect_class_patterns", "args": {"classes": "${steps.0.classes}"}, "extract_key": "patterns"}
  ]
}"#;

fn validate(spec: &CompositionSpec, registry: &ToolRegistry) -> Result<(), ForgeError> {
    spec.validate(&|n| registry.contains(n), &BTreeMap::new())
}

#[test]
fn a_sequential_composition_is_one_call_of_three_audited_steps() {
    let h = harness();
    let spec = CompositionSpec::from_json(NETWORKKIT).unwrap();
    validate(&spec, &h.registry).unwrap();
    let temporary = TemporaryToolRegistry::new(h.registry.clone());
    let info = temporary
        .register(
            composed_tool(spec, &h.registry),
            ForgeMode::Compose,
            Some(alembic_forge::DEFAULT_TTL),
        )
        .unwrap();
    assert_eq!(
        info.expires_at_ms.unwrap() - info.registered_at_ms,
        30 * 60 * 1000
    );

    let out = h.call("analyze_networkkit", json!({}));
    assert_eq!(
        data(&out),
        json!({
            "classes": ["APIClient", "RequestBuilder"],
            "callGraph": [{"from": "APIClient", "to": "URLSession"}, {"from": "RequestBuilder", "to": "URLSession"}],
            "patterns": [{"pattern": "builder", "classes": ["APIClient", "RequestBuilder"]}],
        })
    );
    let entries = h.audit.entries();
    let tools: Vec<&str> = entries.iter().map(|e| e.tool.as_str()).collect();
    assert_eq!(
        tools,
        vec![
            "get_module_classes",
            "query_class_calls",
            "detect_class_patterns",
            "analyze_networkkit"
        ]
    );
    let parent = &entries[3].call_id;
    assert!(
        entries[..3]
            .iter()
            .all(|e| e.parent_call_id.as_ref() == Some(parent))
    );
    assert_eq!(
        entries[1].args,
        json!({"classes": ["APIClient", "RequestBuilder"]})
    );
}

#[test]
fn toml_specs_params_templates_and_parallel_merge() {
    let h = harness();
    let spec = CompositionSpec::from_toml(
        r#"
name = "module_overview"
description = "Classes and code matches of a module."
merge_strategy = "parallel"

[parameters]
type = "object"
required = ["module"]
[parameters.properties.module]
type = "string"

[[steps]]
tool = "get_module_classes"
args = { module = "${params.module}", depth = 2 }

[[steps]]
tool = "search_project_code"
args = { pattern = "class .* in ${params.module}" }
"#,
    )
    .unwrap();
    validate(&spec, &h.registry).unwrap();
    h.registry
        .register(composed_tool(spec, &h.registry))
        .unwrap();
    let out = h.call("module_overview", json!({"module": "NetworkKit"}));
    assert_eq!(
        data(&out),
        json!({
            "get_module_classes": {"module": "NetworkKit", "classes": ["APIClient", "RequestBuilder"], "depth": 2},
            "search_project_code": {"matches": [], "pattern": "class .* in NetworkKit"},
        })
    );
    // the composed tool's own schema is enforced
    assert_eq!(
        h.call("module_overview", json!({})).status,
        OutcomeStatus::InvalidArguments
    );
    // the composed tool takes the strongest effect of its steps
    assert_eq!(
        h.registry.get("module_overview").unwrap().definition.effect,
        alembic_tools::EffectClass::ReadsProjectFiles
    );
}

#[test]
fn steps_run_under_the_callers_allowlist_and_failures_name_the_step() {
    let h = harness();
    let spec = CompositionSpec::from_json(NETWORKKIT).unwrap();
    h.registry
        .register(composed_tool(spec, &h.registry))
        .unwrap();
    // a caller who may use the composed tool but not its steps gets the steps refused
    let out = h.call_as(
        "analyze_networkkit",
        json!({}),
        Allowlist::only(["analyze_networkkit"]),
    );
    assert_eq!(out.status, OutcomeStatus::Blocked, "{out:?}");
    assert_eq!(out.rule.as_deref(), Some("allowlist"));
    assert!(out.error.unwrap().contains("step 0 (get_module_classes)"));
    // a step that needs a safety approval is refused as a direct call would be
    let spec = CompositionSpec::from_json(r#"{"name": "sneaky", "description": "d", "steps": [{"tool": "run_safe_command", "args": {"cmd": "rm -rf ~"}}]}"#).unwrap();
    h.registry
        .register(composed_tool(spec, &h.registry))
        .unwrap();
    let direct = h.call("run_safe_command", json!({"cmd": "rm -rf ~"}));
    let nested = h.call("sneaky", json!({}));
    assert_eq!(
        (direct.status, nested.status),
        (OutcomeStatus::Blocked, OutcomeStatus::Blocked)
    );
    assert_eq!(direct.rule, nested.rule);
    // a failing step
    let spec = CompositionSpec::from_json(
        r#"{"name": "doomed", "description": "d", "steps": [{"tool": "failing_tool"}]}"#,
    )
    .unwrap();
    h.registry
        .register(composed_tool(spec, &h.registry))
        .unwrap();
    let out = h.call("doomed", json!({}));
    assert_eq!(
        out.error.as_deref(),
        Some("step 0 (failing_tool): nested call to \"failing_tool\" ended error: disk on fire")
    );
    // extract_key missing from the result
    let spec = CompositionSpec::from_json(r#"{"name": "picky", "description": "d", "steps": [{"tool": "detect_class_patterns", "args": {"classes": []}, "extract_key": "nope"}]}"#).unwrap();
    h.registry
        .register(composed_tool(spec, &h.registry))
        .unwrap();
    let out = h.call("picky", json!({}));
    assert_eq!(
        out.error.as_deref(),
        Some("step 0 (detect_class_patterns): the result has no key \"nope\" to extract")
    );
}

#[test]
fn invalid_specs_are_refused_with_clear_errors() {
    let h = harness();
    let base = |steps: serde_json::Value, strategy: &str| {
        serde_json::from_value::<CompositionSpec>(json!({
            "name": "bad_one", "description": "d", "merge_strategy": strategy,
            "parameters": {"type": "object", "properties": {"module": {"type": "string"}}},
            "steps": steps,
        }))
        .unwrap()
    };
    let cases = [
        (
            base(json!([{"tool": "no_such_tool"}]), "sequential"),
            "step 0 (no_such_tool): unknown tool; steps may call registered tools only",
        ),
        (
            base(
                json!([{"tool": "detect_class_patterns", "args": {"classes": "${steps.1.classes}"}}, {"tool": "get_module_classes", "args": {"module": "x"}}]),
                "sequential",
            ),
            "step 0 (detect_class_patterns): ${steps.1.classes} reads step 1, which has not run yet; a step can read only earlier steps",
        ),
        (
            base(
                json!([{"tool": "get_module_classes", "args": {"module": "x"}}, {"tool": "detect_class_patterns", "args": {"classes": "${steps.0.classes}"}}]),
                "parallel",
            ),
            "step 1 (detect_class_patterns): ${steps.0.classes} reads another step, but parallel steps run at once and can read only ${params.*}",
        ),
        (
            base(
                json!([{"tool": "get_module_classes", "args": {"module": "${params.modul}"}}]),
                "sequential",
            ),
            "step 0 (get_module_classes): ${params.modul} reads parameter \"modul\", which \"parameters\" does not declare",
        ),
        (
            base(
                json!([{"tool": "get_module_classes", "args": {"module": "${env.HOME}"}}]),
                "sequential",
            ),
            "step 0 (get_module_classes): bad template ${env.HOME}: unknown source; use ${params.NAME}, ${steps.N.key} or ${item.key}",
        ),
        (
            base(
                json!([{"tool": "search_project_code", "args": {"pattern": "${item}"}}]),
                "sequential",
            ),
            "step 0 (search_project_code): ${item} reads the for_each element, but the step has no \"for_each\"",
        ),
        (
            base(
                json!([{"tool": "search_project_code", "for_each": "${params.module}", "args": {"pattern": "${item}"}}]),
                "parallel",
            ),
            "step 0 (search_project_code): \"for_each\" runs only in sequential compositions",
        ),
        (
            base(
                json!([{"tool": "search_project_code", "for_each": "all ${params.module}", "args": {"pattern": "${item}"}}]),
                "sequential",
            ),
            "step 0 (search_project_code): \"for_each\" must be one ${steps.N.path} or ${params.NAME} template, got \"all ${params.module}\"",
        ),
        (
            base(
                json!([{"tool": "search_project_code", "for_each": "${steps.0.classes}", "args": {"pattern": "${item}"}}]),
                "sequential",
            ),
            "step 0 (search_project_code): ${steps.0.classes} reads step 0, which has not run yet; a step can read only earlier steps",
        ),
        (
            base(json!([{"tool": "bad_one"}]), "sequential"),
            "step 0 (bad_one): a composition cannot call itself",
        ),
        (
            base(json!([]), "sequential"),
            "expected 1 to 16 steps, got 0",
        ),
        (
            base(
                json!([{"tool": "get_module_classes", "args": [1]}]),
                "sequential",
            ),
            "step 0 (get_module_classes): \"args\" must be a JSON object",
        ),
    ];
    for (spec, reason) in cases {
        let err = validate(&spec, &h.registry).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("composition \"bad_one\" is invalid: {reason}")
        );
    }
    assert!(
        CompositionSpec::from_json(r#"{"name": "x", "description": "d", "steps": [], "stepz": 1}"#)
            .unwrap_err()
            .contains("unknown field `stepz`")
    );
    assert!(
        CompositionSpec::from_json(
            r#"{"name": "x", "description": "d", "merge_strategy": "random", "steps": []}"#
        )
        .unwrap_err()
        .contains("unknown variant `random`")
    );
}

#[test]
fn cycles_through_other_compositions_are_refused() {
    let h = harness();
    let a = CompositionSpec::from_json(
        r#"{"name": "comp_a", "description": "d", "steps": [{"tool": "comp_b"}]}"#,
    )
    .unwrap();
    let b = CompositionSpec::from_json(
        r#"{"name": "comp_b", "description": "d", "steps": [{"tool": "comp_c"}]}"#,
    )
    .unwrap();
    let c = CompositionSpec::from_json(
        r#"{"name": "comp_c", "description": "d", "steps": [{"tool": "comp_a"}]}"#,
    )
    .unwrap();
    let known: BTreeMap<String, CompositionSpec> = [&a, &b, &c]
        .iter()
        .map(|s| (s.name.clone(), (*s).clone()))
        .collect();
    let err = a.validate(&|n| h.registry.contains(n), &known).unwrap_err();
    assert_eq!(
        err.to_string(),
        "composition \"comp_a\" is invalid: the steps form a cycle: comp_a -> comp_b -> comp_c -> comp_a"
    );
}

#[test]
fn for_each_calls_the_step_per_element_with_bound_parameters() {
    let h = harness();
    let spec = CompositionSpec::from_json(
        r#"{
  "name": "classes_in_code", "description": "Search the code for each class of a module.",
  "parameters": {"type": "object", "properties": {"module": {"type": "string"}}},
  "bound_params": {"module": "NetworkKit"},
  "steps": [
    {"tool": "get_module_classes", "args": {"module": "${params.module}"}},
    {"tool": "search_project_code", "for_each": "${steps.0.classes}", "max_items": 5,
     "args": {"pattern": "class ${item}\\b"}, "extract_key": "pattern"},
    {"tool": "failing_tool", "for_each": "${steps.0.classes}", "max_items": 1}
  ]
}"#,
    )
    .unwrap();
    validate(&spec, &h.registry).unwrap();
    h.registry
        .register(composed_tool(spec, &h.registry))
        .unwrap();
    // the bound module is used when the call gives none
    let out = h.call("classes_in_code", json!({}));
    assert_eq!(
        data(&out),
        json!({
            "get_module_classes": {"module": "NetworkKit", "classes": ["APIClient", "RequestBuilder"], "depth": null},
            "pattern": ["class APIClient\\b", "class RequestBuilder\\b"],
            "failing_tool": [{"item": "APIClient", "error": "nested call to \"failing_tool\" ended error: disk on fire"}],
        })
    );
    // one nested, audited call per element, each with the composed call as parent
    let entries = h.audit.entries();
    let tools: Vec<&str> = entries.iter().map(|e| e.tool.as_str()).collect();
    assert_eq!(
        tools,
        vec![
            "get_module_classes",
            "search_project_code",
            "search_project_code",
            "failing_tool",
            "classes_in_code"
        ]
    );
    let parent = &entries[4].call_id;
    assert!(
        entries[..4]
            .iter()
            .all(|e| e.parent_call_id.as_ref() == Some(parent))
    );
    // a call's own argument wins over the bound one
    let out = h.call("classes_in_code", json!({"module": "Other"}));
    assert_eq!(data(&out)["pattern"], json!([]));
}
