//! `alembic mcp` driven by the official Python MCP SDK over stdio and streamable HTTP.
//!
//! Needs a venv with `pip install mcp` at `$ALEMBIC_PY_VENV` (default `/tmp/alembic-venv`);
//! `.ci/run` creates it. Without it these tests fail and say how to create it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::alembic;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../alembic-mcp/tests/python/interop.py"
);
const CLIENT_CALLER: &str = "mcp:alembic-interop-test";

/// The venv's python, after checking that the `mcp` package imports.
fn venv_python() -> PathBuf {
    let venv = std::env::var("ALEMBIC_PY_VENV").unwrap_or_else(|_| "/tmp/alembic-venv".into());
    let python = Path::new(&venv).join("bin/python");
    let how = format!(
        "the official Python MCP SDK is needed for this test: create the venv with \
         `python3 -m venv {venv} && {venv}/bin/pip install mcp` (or point ALEMBIC_PY_VENV at one)"
    );
    assert!(python.exists(), "{python:?} does not exist; {how}");
    let probe = assert_cmd::Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .unwrap();
    assert!(
        probe.status.success(),
        "`import mcp` failed in {venv}; {how}"
    );
    python
}

/// A small project: a README with a word to search for and a source file.
pub(super) fn project() -> tempfile::TempDir {
    let dir = super::project_dir();
    std::fs::write(
        dir.path().join("README.md"),
        "# Demo\nSearch target: needle_token\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    dir
}

fn alembic_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("alembic")
}

/// How long the temporary forged tool of [`add_surface`] lives after the project is made.
const PROBE_TTL_MS: u64 = 15_000;

/// What the script's `--surface` checks need: the skill `demo-skill` and the temporary forged
/// tool `expiring_probe`, which expires [`PROBE_TTL_MS`] from now.
fn add_surface(project: &Path) {
    let skill = project.join(".alembic/skills/demo-skill");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: demo-skill\ndescription: \"Greets someone\"\n---\n\nGreets someone by name.\n",
    )
    .unwrap();
    let schema = serde_json::json!({
        "name": "demo-skill",
        "description": "Greets someone",
        "parameters": {
            "type": "object",
            "properties": {"who": {"type": "string", "description": "whom to greet"}},
            "required": ["who"]
        }
    });
    std::fs::write(skill.join("schema.json"), schema.to_string()).unwrap();
    let temporary = project.join(".alembic/tools/.temporary");
    std::fs::create_dir_all(&temporary).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let record = serde_json::json!({
        "expires_at_ms": now + PROBE_TTL_MS,
        "tool": {
            "kind": "alias",
            "name": "expiring_probe",
            "tool": "search_project_code",
            "preset_args": {"pattern": "needle_token"}
        }
    });
    std::fs::write(temporary.join("expiring_probe.json"), record.to_string()).unwrap();
}

/// Runs the interop script and returns its report; the script's stderr explains failures.
fn run_script(python: &Path, target: &[&str], mode: &str, surface: Option<&Path>) -> Value {
    let mut cmd = assert_cmd::Command::new(python);
    cmd.arg(SCRIPT)
        .args(target)
        .args(["--mode", mode, "--memory"]);
    if let Some(project) = surface {
        cmd.arg("--surface").arg(project);
    }
    let out = cmd
        .env("ALEMBIC_LOG", "error")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "interop script failed ({mode}):\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every call the client made left one audit record, in order, with the client's identity and
/// a verdict matching what the client saw.
fn assert_audited(project: &Path, report: &Value) {
    assert_audited_as(project, report, CLIENT_CALLER);
}

/// As [`assert_audited`], for the caller `caller` (a token's `mcp:<name>`).
fn assert_audited_as(project: &Path, report: &Value, caller: &str) {
    let calls = report["calls"].as_array().unwrap();
    let out = alembic(project)
        .args(["audit", "tail", "-n", "100", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let rows: Vec<Value> = serde_json::from_slice(&out).unwrap();
    let audited: Vec<(String, bool)> = rows
        .iter()
        .filter(|r| r["caller"] == caller)
        .map(|r| {
            (
                r["tool"].as_str().unwrap().to_string(),
                r["verdict"] != "ok",
            )
        })
        .collect();
    let expected: Vec<(String, bool)> = calls
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap().to_string(),
                c["is_error"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(audited, expected);
    let escape = rows
        .iter()
        .find(|r| r["verdict"] == "blocked")
        .expect("the path escape has an audit record");
    assert_eq!(escape["tool"], "read_project_file");
    alembic(project)
        .args(["audit", "verify"])
        .assert()
        .success();
}

#[test]
fn python_client_over_stdio() {
    let python = venv_python();
    let exe = alembic_path();
    for mode in ["legacy", "auto"] {
        let dir = project();
        let surface = (mode == "legacy").then(|| dir.path());
        if let Some(p) = surface {
            add_surface(p);
        }
        let project = dir.path().to_str().unwrap();
        let report = run_script(
            &python,
            &["--stdio", exe.to_str().unwrap(), "--project", project],
            mode,
            surface,
        );
        assert_eq!(
            report["surface"].as_bool().unwrap_or(false),
            mode == "legacy",
            "{report}"
        );
        let expected_protocol = if mode == "legacy" {
            "2025-11-25"
        } else {
            "2026-07-28"
        };
        assert_eq!(report["protocol"], expected_protocol);
        assert_audited(dir.path(), &report);
    }
}

#[test]
fn python_client_with_a_bearer_token_is_audited_as_the_token() {
    let python = venv_python();
    for mode in ["legacy", "auto"] {
        let dir = project();
        let token = super::mcp_http_cli::create_token(dir.path(), "py-team", "ide");
        let server = super::mcp_http_cli::HttpServer::spawn(dir.path(), &["--http", "127.0.0.1:0"]);
        let report = run_script(
            &python,
            &["--url", &server.url, "--bearer", &token],
            mode,
            None,
        );
        assert_audited_as(dir.path(), &report, "mcp:py-team");
        drop(server);
    }
}

/// A running `alembic mcp --http` on a free loopback port; killed on drop.
pub(super) struct HttpServer {
    child: Child,
    pub(super) url: String,
}

impl HttpServer {
    pub(super) fn start(project: &Path) -> HttpServer {
        let mut child = std::process::Command::cargo_bin("alembic")
            .unwrap()
            .args(["mcp", "--http", "127.0.0.1:0", "--project"])
            .arg(project)
            .env("ALEMBIC_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut stderr = BufReader::new(stderr);
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        // Keep draining so that a later log line never meets a closed pipe.
        std::thread::spawn(move || stderr.lines().for_each(drop));
        let url = line
            .trim()
            .strip_prefix("alembic mcp: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from alembic mcp --http: {line:?}"))
            .to_string();
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn python_client_over_streamable_http() {
    let python = venv_python();
    for mode in ["legacy", "auto"] {
        let dir = project();
        let surface = (mode == "legacy").then(|| dir.path());
        if let Some(p) = surface {
            add_surface(p);
        }
        let server = HttpServer::start(dir.path());
        let report = run_script(&python, &["--url", &server.url], mode, surface);
        assert_eq!(
            report["surface"].as_bool().unwrap_or(false),
            mode == "legacy",
            "{report}"
        );
        // Records are committed before each answer, so they are there while the server runs.
        assert_audited(dir.path(), &report);
        drop(server);
    }
}
