//! Saving, loading at start (dependency order, TTL, errors) and promotion to skills.

use std::sync::Arc;

use alembic_forge::skill::{built_in_examples, skill_markdown, write_skill};
use alembic_forge::store::{Lifetime, SavedTool, ToolStore, load_into};
use alembic_forge::{AliasSpec, CompositionSpec, ManualClock, TemporaryToolRegistry};
use alembic_tools::ToolRegistry;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::test_tools;

const NETWORKKIT: &str = r#"{
  "name": "analyze_networkkit",
  "description": "Analyse the NetworkKit module: classes, call graph and design patterns in one call.",
  "steps": [
    {"tool": "get_module_classes", "args": {"module": "NetworkKit"}, "extract_key": "classes"},
    {"tool": "query_class_calls", "args": {"classes": "${steps.0.classes}"}, "extract_key": "callGraph"},
    {"tool": "detect_class_patterns", "args": {"classes": "${steps.0.classes}"}, "extract_key": "patterns"}
  ],
  "examples": [{}]
}"#;

fn registry() -> Arc<ToolRegistry> {
    let r = Arc::new(ToolRegistry::new());
    r.register_all(test_tools()).unwrap();
    r
}

#[test]
fn saved_tools_load_in_dependency_order_and_broken_ones_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store = ToolStore::new(dir.path());
    let spec = CompositionSpec::from_json(NETWORKKIT).unwrap();
    store.save(&SavedTool::Composed(spec)).unwrap();
    // a hand-written TOML composition over the saved one (sorted before it by name)
    std::fs::write(
        store.dir().join("a_wrapper.toml"),
        r#"
name = "a_wrapper"
description = "Wraps analyze_networkkit."
[[steps]]
tool = "analyze_networkkit"
"#,
    )
    .unwrap();
    std::fs::write(store.dir().join("broken.json"), "{ not json").unwrap();
    std::fs::write(store.dir().join("shadow.json"), r#"{"name": "detect_class_patterns", "description": "d", "steps": [{"tool": "get_module_classes", "args": {"module": "x"}}]}"#).unwrap();
    store
        .save(&SavedTool::Alias(AliasSpec {
            name: "search_network".into(),
            tool: "search_recipes".into(),
            preset_args: json!({"category": "Network"}).as_object().unwrap().clone(),
            description: None,
        }))
        .unwrap();

    let registry = registry();
    let temporary = TemporaryToolRegistry::new(registry.clone());
    let report = load_into(&registry, &temporary, dir.path(), false);
    assert_eq!(
        report.saved,
        vec!["analyze_networkkit", "search_network", "a_wrapper"]
    );
    assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
    assert!(
        report.errors[0].contains("broken.json")
            && report.errors[0].contains("key must be a string"),
        "{:?}",
        report.errors
    );
    assert!(report.errors[1].ends_with("tool name \"detect_class_patterns\" is taken by a built-in or saved tool; a forged tool never replaces one, pick another name"), "{:?}", report.errors);
    assert_eq!(
        registry
            .get("detect_class_patterns")
            .unwrap()
            .definition
            .description,
        "Detect design patterns used by classes."
    );
}

#[test]
fn temporary_tools_survive_restarts_until_they_expire() {
    let dir = tempfile::tempdir().unwrap();
    let store = ToolStore::new(dir.path());
    let spec = CompositionSpec::from_json(NETWORKKIT).unwrap();
    store
        .save_temporary(&SavedTool::Composed(spec.clone()), Some(10_000))
        .unwrap();

    let clock = Arc::new(ManualClock::new(5_000));
    let registry = registry();
    let temporary = TemporaryToolRegistry::with_clock(registry.clone(), clock.clone());
    let report = load_into(&registry, &temporary, dir.path(), false);
    assert_eq!(report.temporary, vec!["analyze_networkkit"]);
    assert_eq!(
        temporary.get("analyze_networkkit").unwrap().expires_at_ms,
        Some(10_000)
    );
    assert_eq!(
        store.find("analyze_networkkit", 5_000).map(|f| f.0),
        Some(Lifetime::Temporary)
    );

    // after expiry a new process neither loads nor keeps the file
    let registry = self::registry();
    let temporary =
        TemporaryToolRegistry::with_clock(registry.clone(), Arc::new(ManualClock::new(10_000)));
    assert!(
        load_into(&registry, &temporary, dir.path(), false)
            .temporary
            .is_empty()
    );
    assert!(
        !store
            .temporary_dir()
            .join("analyze_networkkit.json")
            .exists()
    );

    // saving makes it permanent and removes the temporary file
    store
        .save_temporary(&SavedTool::Composed(spec.clone()), Some(20_000))
        .unwrap();
    store.save(&SavedTool::Composed(spec)).unwrap();
    assert_eq!(
        store.find("analyze_networkkit", 0).map(|f| f.0),
        Some(Lifetime::Saved)
    );
    assert!(
        !store
            .temporary_dir()
            .join("analyze_networkkit.json")
            .exists()
    );
    assert_eq!(store.remove("analyze_networkkit").unwrap().len(), 1);
    assert!(store.find("analyze_networkkit", 0).is_none());
}

#[test]
fn generated_tools_load_only_when_generate_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = ToolStore::new(dir.path());
    let tool = SavedTool::parse(
        &json!({
            "kind": "generated", "name": "double_it", "description": "Doubles n.",
            "parameters": {"type": "object", "properties": {"n": {"type": "number"}}},
            "code": "function toolHandler(p) { return p.n * 2; }",
            "test_cases": [{"description": "2 -> 4", "input": {"n": 2}, "expected_output": 4}],
        })
        .to_string(),
        std::path::Path::new("x.json"),
    )
    .unwrap();
    store.save(&tool).unwrap();
    let registry = registry();
    let temporary = TemporaryToolRegistry::new(registry.clone());
    let off = load_into(&registry, &temporary, dir.path(), false);
    assert!(off.saved.is_empty());
    assert!(
        off.errors[0].contains("generate mode is off"),
        "{:?}",
        off.errors
    );
    let on = load_into(&registry, &temporary, dir.path(), true);
    assert_eq!(on.saved, vec!["double_it"]);
}

#[test]
fn promotion_writes_docs_schema_and_examples() {
    let dir = tempfile::tempdir().unwrap();
    let spec = CompositionSpec::from_json(NETWORKKIT).unwrap();
    let tool = SavedTool::Composed(spec.clone());
    let mut examples = built_in_examples(&tool);
    examples[0].result = Some(json!({"classes": ["APIClient"], "callGraph": [], "patterns": []}));
    let md = skill_markdown(&tool, &spec.parameters, &examples);
    insta::assert_snapshot!("skill_analyze_networkkit", md);
    let skill_md = write_skill(dir.path(), &tool, &spec.parameters, &examples).unwrap();
    assert_eq!(
        skill_md,
        dir.path()
            .join(".alembic/skills/analyze-networkkit/SKILL.md")
    );
    assert_eq!(std::fs::read_to_string(&skill_md).unwrap(), md);
    // read back through the one reader: the schema is the skill's arguments
    let read = alembic_skills::read_skill(dir.path(), "analyze-networkkit").unwrap();
    assert_eq!(read.skill.tool.as_deref(), Some("analyze_networkkit"));
    assert_eq!(read.skill.arguments, Some(spec.parameters.clone()));
    assert_eq!(read.skill.source, alembic_skills::SkillSource::Forged);

    // promoting again replaces the promotion, but never a skill someone wrote
    write_skill(dir.path(), &tool, &spec.parameters, &[]).unwrap();
    let mine = alembic_skills::Skill::new("analyze-networkkit", "hand-written", "mine\n");
    alembic_skills::write_skill(dir.path(), &mine, alembic_skills::WriteMode::Overwrite).unwrap();
    let err = write_skill(dir.path(), &tool, &spec.parameters, &examples).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot promote \"analyze_networkkit\" to a skill: the project already has a skill \"analyze-networkkit\" that is not a promotion of this tool; remove or rename it first"
    );
    assert_eq!(std::fs::read_to_string(&skill_md).unwrap(), mine.render());
}

/// A repository can ship `.alembic/tools/*.json`, temporary records and templates as links:
/// none is read through (its text would show in a parse error), a real file still loads.
#[test]
fn saved_tools_and_templates_linked_out_of_the_project_are_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    let outside = dir.path().join("o");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.json"), "OUTSIDE-SECRET not json").unwrap();
    std::fs::write(outside.join("secret.toml"), "OUTSIDE-SECRET = [").unwrap();
    let store = ToolStore::new(&root);
    store
        .save(&SavedTool::Composed(
            CompositionSpec::from_json(NETWORKKIT).unwrap(),
        ))
        .unwrap();
    std::os::unix::fs::symlink(outside.join("secret.json"), store.dir().join("leak.json")).unwrap();
    let loaded = store.load_saved();
    assert_eq!(loaded.len(), 2, "{loaded:?}");
    for (path, parsed) in &loaded {
        match parsed {
            Ok(tool) => assert_eq!(tool.name(), "analyze_networkkit"),
            Err(e) => {
                assert!(path.ends_with("leak.json"), "{path:?}: {e}");
                let text = e.to_string();
                assert!(text.contains("outside the project root"), "{text}");
                assert!(!text.contains("OUTSIDE-SECRET"), "{text}");
            }
        }
    }
    let templates = root.join(alembic_forge::compose::composer::PROJECT_TEMPLATES_DIR);
    std::fs::create_dir_all(&templates).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.toml"), templates.join("leak.toml")).unwrap();
    let composer = alembic_forge::compose::DynamicComposer::for_project(&root);
    assert_eq!(composer.problems.len(), 1, "{:?}", composer.problems);
    assert!(composer.problems[0].contains("outside the project root"));
    assert!(!composer.problems[0].contains("OUTSIDE-SECRET"));
}
