mod agent_cli;
mod audit_cli;
mod bootstrap_cli;
mod bootstrap_llm_cli;
mod forge_cli;
mod hostile_corpus;
mod index_cli;
mod knowledge_cli;
mod knowledge_review_cli;
mod knowledge_team_cli;
mod mcp_conformance;
mod mcp_http_cli;
mod mcp_http_robustness;
mod mcp_python;
mod mcp_robustness;
mod memory_cli;
mod project_required;
mod safety_cli;
mod skills_cli;
mod team_cli;
mod team_memory_cli;
mod tools_cli;

use assert_cmd::Command;

/// The alembic binary, run in `dir`.
pub fn alembic(dir: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("alembic").unwrap();
    c.current_dir(dir).env("ALEMBIC_LOG", "error");
    c
}

/// A composition spec the forge and skills tests create: a search plus the layout, in one call.
pub const FIND_WITH_LAYOUT_SPEC: &str = r#"
name = "find_with_layout"
description = "Search the code for a pattern and show the project layout in one call."
merge_strategy = "parallel"

[parameters]
type = "object"
required = ["pattern"]
[parameters.properties.pattern]
type = "string"
description = "text to find"

[[steps]]
tool = "search_project_code"
args = { pattern = "${params.pattern}", maxResults = 3 }
extract_key = "matches"

[[steps]]
tool = "list_project_structure"
args = { depth = 1 }
"#;
mod server_reads_cli;

/// A temporary directory alembic takes as a project (it has `.alembic/`): commands refuse a
/// bare directory, so every test project starts here or gets its own marker.
pub fn project_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    dir
}
