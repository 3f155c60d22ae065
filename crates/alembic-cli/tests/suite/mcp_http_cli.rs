//! `alembic mcp --http` for a team, through the real binary: a network address without
//! credentials is refused with the way to set them up, `--insecure-no-auth` and clear text
//! warn, `alembic mcp token create|list|revoke` work as named, and a created token opens the
//! server while a missing one gets 401.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::alembic;

/// A running `alembic mcp --http` child; killed when dropped.
pub struct HttpServer {
    child: Child,
    pub url: String,
    /// stderr lines printed before the `listening on` line (warnings).
    pub before: Vec<String>,
}

impl HttpServer {
    pub fn spawn(dir: &std::path::Path, extra: &[&str]) -> HttpServer {
        let mut child = std::process::Command::cargo_bin("alembic")
            .unwrap()
            .args(["mcp", "--project"])
            .arg(dir)
            .args(extra)
            .env("ALEMBIC_LOG", "warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut before = Vec::new();
        let url = loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "no listening line: {before:?}"
            );
            match line.trim().strip_prefix("alembic mcp: listening on ") {
                Some(url) => break url.to_string(),
                None => before.push(line.trim().to_string()),
            }
        };
        // Keep draining so that a later log line never meets a closed pipe.
        std::thread::spawn(move || stderr.lines().for_each(drop));
        HttpServer { child, url, before }
    }

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Creates a token with the CLI and returns its secret.
pub fn create_token(dir: &std::path::Path, name: &str, preset: &str) -> String {
    let out = alembic(dir)
        .args(["mcp", "token", "create", name, "--preset", preset, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["token"].as_str().unwrap().to_string()
}

#[test]
fn a_network_address_without_credentials_is_refused_with_the_way_out() {
    let dir = super::project_dir();
    let out = alembic(dir.path())
        .args(["mcp", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to serve MCP on 0.0.0.0:0 without authentication")
            && err.contains("alembic mcp token create NAME")
            && err.contains("[mcp.http.oauth]")
            && err.contains("--insecure-no-auth"),
        "{err}"
    );
}

#[test]
fn insecure_no_auth_serves_and_warns_about_authentication_and_clear_text() {
    let dir = super::project_dir();
    let server = HttpServer::spawn(dir.path(), &["--http", "0.0.0.0:0", "--insecure-no-auth"]);
    let warnings = server.before.join("\n");
    assert!(
        warnings.contains("WITHOUT authentication (--insecure-no-auth)"),
        "{warnings}"
    );
    assert!(
        warnings.contains("bearer tokens travel in clear text"),
        "{warnings}"
    );
}

#[test]
fn tokens_are_created_once_listed_and_revoked() {
    let dir = super::project_dir();
    let secret = create_token(dir.path(), "alice", "chat");
    assert!(secret.starts_with("alm_") && secret.len() == 68, "{secret}");
    let out = alembic(dir.path())
        .args(["mcp", "token", "create", "bob", "--expires", "7"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("token \"bob\" (preset ide, expires 20"),
        "{text}"
    );
    // The database holds no secret.
    let db = std::fs::read(dir.path().join(".alembic/alembic.db")).unwrap();
    assert!(!db.windows(64).any(|w| w == &secret.as_bytes()[4..]));
    let list = |dir: &std::path::Path| -> Value {
        let out = alembic(dir)
            .args(["mcp", "token", "list", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let rows = list(dir.path());
    let brief: Vec<(Value, Value, Value)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].clone(), r["preset"].clone(), r["state"].clone()))
        .collect();
    assert_eq!(
        brief,
        [
            (json!("alice"), json!("chat"), json!("active")),
            (json!("bob"), json!("ide"), json!("active"))
        ]
    );
    alembic(dir.path())
        .args(["mcp", "token", "revoke", "alice"])
        .assert()
        .success()
        .stdout("revoked token \"alice\": the server refuses it from the next request on\n");
    assert_eq!(list(dir.path())[0]["state"], "revoked");
    let out = alembic(dir.path())
        .args(["mcp", "token", "create", "x", "--preset", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown preset \"nope\""));
    let out = alembic(dir.path())
        .args(["mcp", "token", "revoke", "nobody"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_opens_the_server_and_its_absence_gets_401() {
    let dir = super::project_dir();
    let secret = create_token(dir.path(), "alice", "ide");
    let server = HttpServer::spawn(dir.path(), &["--http", "127.0.0.1:0"]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "cli-test", "version": "1"}}});
    let post = |token: Option<&str>| {
        let mut req = reqwest::Client::new()
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string());
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    let resp = post(None).await.unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert_eq!(
        resp.headers()["www-authenticate"],
        "Bearer realm=\"alembic\""
    );
    let resp = post(Some(&secret)).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(resp.headers().contains_key("mcp-session-id"));
    let body = resp.text().await.unwrap();
    assert!(
        body.contains("\"serverInfo\":{\"name\":\"alembic\""),
        "{body}"
    );
}
