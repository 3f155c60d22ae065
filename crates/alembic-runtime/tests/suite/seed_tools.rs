//! 60 of 60: the seed's tool table (12 modules, 60 names) as data, checked against the
//! registry of a project runtime. Every seed tool must be registered in its seed module; the
//! tools Alembic adds beyond the seed are listed apart, so a new tool is a deliberate entry
//! here and never silently counted as a seed tool.

use std::collections::BTreeMap;

use alembic_runtime::{ProjectConfig, ProjectServices, register_builtin_tools};
use alembic_tools::{Allowlist, ToolModule, ToolRegistry};
use pretty_assertions::assert_eq;

/// The seed's module table (tool counts per module, in the seed's order) with each tool name
/// (names from the reference's `ALL_TOOLS`, `../shared/reference/ref-tools.md` §1).
const SEED_TOOLS: &[(&str, usize, &[&str])] = &[
    (
        "ast-graph",
        11,
        &[
            "get_project_overview",
            "get_class_hierarchy",
            "get_class_info",
            "get_protocol_info",
            "get_method_overrides",
            "get_category_map",
            "get_previous_analysis",
            "note_finding",
            "get_previous_evidence",
            "query_code_graph",
            "query_call_graph",
        ],
    ),
    (
        "lifecycle",
        10,
        &[
            "submit_knowledge",
            "approve_candidate",
            "reject_candidate",
            "publish_recipe",
            "deprecate_recipe",
            "update_recipe",
            "record_usage",
            "quality_score",
            "validate_candidate",
            "get_feedback_stats",
        ],
    ),
    (
        "infrastructure",
        7,
        &[
            "graph_impact_analysis",
            "rebuild_index",
            "query_audit_log",
            "load_skill",
            "create_skill",
            "suggest_skills",
            "bootstrap_knowledge",
        ],
    ),
    (
        "query",
        6,
        &[
            "search_recipes",
            "search_candidates",
            "get_recipe_detail",
            "get_project_stats",
            "search_knowledge",
            "get_related_recipes",
        ],
    ),
    (
        "composite",
        6,
        &[
            "analyze_code",
            "knowledge_overview",
            "submit_with_check",
            "get_tool_details",
            "plan_task",
            "review_my_output",
        ],
    ),
    (
        "project-access",
        5,
        &[
            "search_project_code",
            "read_project_file",
            "list_project_structure",
            "get_file_summary",
            "semantic_search_code",
        ],
    ),
    (
        "guard",
        4,
        &[
            "list_guard_rules",
            "guard_check_code",
            "get_recommendations",
            "query_violations",
        ],
    ),
    (
        "system-interaction",
        3,
        &[
            "run_safe_command",
            "write_project_file",
            "get_environment_info",
        ],
    ),
    (
        "evolution-tools",
        3,
        &["propose_evolution", "confirm_deprecation", "skip_evolution"],
    ),
    ("knowledge-graph", 2, &["check_duplicate", "add_graph_edge"]),
    (
        "ai-analysis",
        2,
        &["enrich_candidate", "refine_bootstrap_candidates"],
    ),
    ("scan-recipe", 1, &["collect_scan_recipe"]),
];

/// Tools Alembic registers beyond the seed's sixty, with their module: persistent memory
/// (the seed's memory system exposed as tools), the forge's operator tools and `forge_tool`
/// (ToolForge in the agent loop), the team store's operator tools (`alembic team`) and the
/// guard-rule overrides' (`alembic knowledge guard-overrides`).
const EXTRA_TOOLS: &[(&str, &str)] = &[
    ("forge_promote", "infrastructure"),
    ("forge_remove", "infrastructure"),
    ("forge_save", "infrastructure"),
    ("forge_tool", "composite"),
    ("memory_forget", "infrastructure"),
    ("memory_gc", "infrastructure"),
    ("memory_import", "infrastructure"),
    ("memory_recall", "query"),
    ("memory_remember", "infrastructure"),
    ("set_guard_overrides", "infrastructure"),
    ("team_knowledge_pull", "infrastructure"),
    ("team_knowledge_push", "infrastructure"),
    ("team_knowledge_status", "infrastructure"),
    ("team_pull", "infrastructure"),
    ("team_push", "infrastructure"),
    ("team_status", "infrastructure"),
];

fn registered() -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::absolute(dir.path()).unwrap();
    let services =
        ProjectServices::for_project(&root, &ProjectConfig::load(&root).unwrap()).unwrap();
    let registry = ToolRegistry::new();
    register_builtin_tools(&registry, &services).unwrap();
    registry
        .definitions(&Allowlist::All)
        .into_iter()
        .map(|d| (d.name, d.module.to_string()))
        .collect()
}

#[test]
fn the_seed_table_has_twelve_modules_and_sixty_tools() {
    let modules: Vec<&str> = SEED_TOOLS.iter().map(|(m, _, _)| *m).collect();
    let known: Vec<&str> = ToolModule::ALL.iter().map(|m| m.as_str()).collect();
    assert_eq!(modules, known);
    for (module, count, names) in SEED_TOOLS {
        assert_eq!(names.len(), *count, "module {module}");
    }
    let total: usize = SEED_TOOLS.iter().map(|(_, n, _)| n).sum();
    assert_eq!(total, 60);
}

#[test]
fn every_seed_tool_is_registered_in_its_module() {
    let registry = registered();
    let mut missing = Vec::new();
    let mut misplaced = Vec::new();
    for (module, _, names) in SEED_TOOLS {
        for name in *names {
            match registry.get(*name) {
                None => missing.push(format!("{name} ({module})")),
                Some(m) if m != module => {
                    misplaced.push(format!("{name}: registered in {m}, seed says {module}"))
                }
                Some(_) => {}
            }
        }
    }
    assert!(
        missing.is_empty() && misplaced.is_empty(),
        "{} of 60 seed tools missing: {}\nin another module: {}",
        missing.len(),
        missing.join(", "),
        misplaced.join("; ")
    );
}

#[test]
fn tools_beyond_the_seed_are_exactly_the_listed_extras() {
    let registry = registered();
    let seed: Vec<&str> = SEED_TOOLS
        .iter()
        .flat_map(|(_, _, names)| names.iter().copied())
        .collect();
    let extras: Vec<(&str, &str)> = registry
        .iter()
        .filter(|(name, _)| !seed.contains(&name.as_str()))
        .map(|(name, module)| (name.as_str(), module.as_str()))
        .collect();
    assert_eq!(extras, EXTRA_TOOLS);
}
