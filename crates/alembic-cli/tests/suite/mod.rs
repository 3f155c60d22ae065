mod agent_cli;
mod audit_cli;
mod bootstrap_cli;
mod forge_cli;
mod index_cli;
mod knowledge_cli;
mod mcp_conformance;
mod mcp_python;
mod mcp_robustness;
mod memory_cli;
mod safety_cli;
mod skills_cli;
mod tools_cli;

use assert_cmd::Command;

/// The alembic binary, run in `dir`.
pub fn alembic(dir: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("alembic").unwrap();
    c.current_dir(dir).env("ALEMBIC_LOG", "error");
    c
}
