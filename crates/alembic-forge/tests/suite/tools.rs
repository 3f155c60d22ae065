//! The operator tools `forge_save`, `forge_remove` and `forge_promote`: names are checked,
//! missing tools are reported, and the store changes only through them.

use std::sync::Arc;

use alembic_forge::store::{Lifetime, SavedTool, ToolStore};
use alembic_forge::tools::{ForgeService, register_tools};
use alembic_forge::{AliasSpec, ManualClock, composed_tool};
use alembic_tools::{
    AuditSink, OutcomeStatus, Pipeline, PreparedCall, SafetyCheck, SafetyDecision, ToolOutcome,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Harness, data, harness};

const NOW: u64 = 1_000_000;

/// The project's policy is not under test here: every call may run.
struct AllowAll;

impl SafetyCheck for AllowAll {
    fn check(&self, _call: &PreparedCall) -> SafetyDecision {
        SafetyDecision::Allow
    }
}

struct Forge {
    h: Harness,
    store: ToolStore,
    _dir: tempfile::TempDir,
}

fn forge() -> Forge {
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness();
    let service = ForgeService::with_clock(dir.path(), Arc::new(ManualClock::new(NOW as i64)));
    let store = service.store().clone();
    register_tools(&h.registry, Arc::new(service)).unwrap();
    h.pipeline = Pipeline::builder(Arc::clone(&h.registry), dir.path())
        .safety(Arc::new(AllowAll))
        .audit(Arc::clone(&h.audit) as Arc<dyn AuditSink>)
        .build();
    Forge {
        h,
        store,
        _dir: dir,
    }
}

fn alias(name: &str) -> SavedTool {
    SavedTool::Alias(AliasSpec {
        name: name.into(),
        tool: "search_recipes".into(),
        preset_args: json!({"category": "Network"}).as_object().unwrap().clone(),
        description: None,
    })
}

fn error(outcome: &ToolOutcome) -> (OutcomeStatus, String) {
    (outcome.status, outcome.error.clone().unwrap_or_default())
}

#[test]
fn the_tools_are_infrastructure_that_writes_project_files() {
    let f = forge();
    for name in ["forge_save", "forge_remove", "forge_promote"] {
        let def = f.h.registry.get(name).unwrap().definition.clone();
        assert_eq!(
            (def.module.as_str(), def.effect.as_str()),
            ("infrastructure", "writes_project_files"),
            "{name}"
        );
        assert_eq!(def.parameters["required"], json!(["name"]), "{name}");
    }
}

#[test]
fn a_bad_name_is_refused_with_what_is_accepted() {
    let f = forge();
    for tool in ["forge_save", "forge_remove", "forge_promote"] {
        let outcome = f.h.call(tool, json!({"name": "../escape"}));
        assert_eq!(
            error(&outcome),
            (
                OutcomeStatus::InvalidArguments,
                "argument \"name\": \"../escape\" is not a forged tool name; expected snake_case (lower-case letters, digits, single underscores, at most 64 characters)".into()
            ),
            "{tool}"
        );
    }
}

#[test]
fn a_missing_tool_is_reported() {
    let f = forge();
    let save = f.h.call("forge_save", json!({"name": "no_such_tool"}));
    assert_eq!(
        error(&save),
        (
            OutcomeStatus::InvalidArguments,
            "no temporary forged tool named \"no_such_tool\" (it may have expired); see `alembic forge list`".into()
        )
    );
    for tool in ["forge_remove", "forge_promote"] {
        let outcome = f.h.call(tool, json!({"name": "no_such_tool"}));
        assert_eq!(
            error(&outcome),
            (
                OutcomeStatus::InvalidArguments,
                "no forged tool named \"no_such_tool\"; see `alembic forge list`".into()
            ),
            "{tool}"
        );
    }
}

#[test]
fn an_expired_temporary_tool_cannot_be_saved() {
    let f = forge();
    f.store
        .save_temporary(&alias("search_network"), Some(NOW - 1))
        .unwrap();
    let outcome = f.h.call("forge_save", json!({"name": "search_network"}));
    assert_eq!(outcome.status, OutcomeStatus::InvalidArguments);
    assert!(f.store.find("search_network", NOW).is_none());
}

#[test]
fn save_keeps_a_temporary_tool_and_remove_deletes_it() {
    let f = forge();
    f.store
        .save_temporary(&alias("search_network"), Some(NOW + 60_000))
        .unwrap();
    let saved = data(&f.h.call("forge_save", json!({"name": "search_network"})));
    let path = f.store.dir().join("search_network.json");
    assert_eq!(
        saved,
        json!({"name": "search_network", "path": path, "alreadySaved": false})
    );
    let (lifetime, tool, _) = f.store.find("search_network", NOW).unwrap();
    assert_eq!((lifetime, tool), (Lifetime::Saved, alias("search_network")));
    assert!(!f.store.temporary_dir().join("search_network.json").exists());

    let again = f.h.call("forge_save", json!({"name": "search_network"}));
    assert_eq!(
        again.output.unwrap().text,
        format!("\"search_network\" is already saved in {}", path.display())
    );

    let removed = f.h.call("forge_remove", json!({"name": "search_network"}));
    assert_eq!(
        removed.output.clone().unwrap().text,
        "removed \"search_network\" (1 file(s))"
    );
    assert!(f.store.find("search_network", NOW).is_none());
    assert_eq!(
        f.h.call("forge_remove", json!({"name": "search_network"}))
            .status,
        OutcomeStatus::InvalidArguments
    );
}

#[test]
fn promote_runs_each_example_as_a_nested_audited_call() {
    let f = forge();
    let spec = alembic_forge::CompositionSpec::from_json(
        r#"{"name": "network_classes", "description": "Classes of a module.",
            "parameters": {"type": "object", "required": ["module"],
                           "properties": {"module": {"type": "string"}}},
            "steps": [{"tool": "get_module_classes", "args": {"module": "${params.module}"}}]}"#,
    )
    .unwrap();
    f.h.registry
        .register(composed_tool(spec.clone(), &f.h.registry))
        .unwrap();
    f.store.save(&SavedTool::Composed(spec)).unwrap();

    let outcome = f.h.call(
        "forge_promote",
        json!({"name": "network_classes", "examples": [{"module": "NetworkKit"}]}),
    );
    let promoted = data(&outcome);
    assert_eq!(promoted["examples"], json!(1));
    let skill = f.store.skills_dir().join("network-classes");
    assert_eq!(promoted["path"], json!(skill.join("SKILL.md")));
    let md = std::fs::read_to_string(skill.join("SKILL.md")).unwrap();
    assert!(
        md.contains("### example call 1") && md.contains("APIClient"),
        "{md}"
    );
    // the one skill format: the tool's schema is the skill's arguments
    let read = alembic_skills::read_skill(f.store.root(), "network-classes").unwrap();
    assert_eq!(
        (read.skill.tool.as_deref(), read.skill.arguments.as_ref()),
        (
            Some("network_classes"),
            Some(
                &f.h.registry
                    .get("network_classes")
                    .unwrap()
                    .definition
                    .parameters
            )
        )
    );

    let audit = f.h.audit.entries();
    let example = audit
        .iter()
        .find(|e| e.tool == "network_classes")
        .expect("the example call is audited");
    assert_eq!(example.parent_call_id.as_deref(), Some(&*outcome.call_id));

    // a failing example stops the promotion and names the example
    let bad = f.h.call(
        "forge_promote",
        json!({"name": "network_classes", "examples": [{"depth": 2}]}),
    );
    assert_eq!(bad.status, OutcomeStatus::InvalidArguments);
    assert!(
        error(&bad).1.starts_with("example {\"depth\":2} failed:"),
        "{bad:?}"
    );
}

#[test]
fn a_stored_tool_that_did_not_load_cannot_be_promoted() {
    let f = forge();
    f.store.save(&alias("search_network")).unwrap();
    let outcome = f.h.call("forge_promote", json!({"name": "search_network"}));
    assert_eq!(
        error(&outcome),
        (
            OutcomeStatus::InvalidArguments,
            "forged tool \"search_network\" is stored but could not be loaded; see `alembic forge show search_network`".into()
        )
    );
}
