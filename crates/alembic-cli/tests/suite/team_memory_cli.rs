//! Readers see team memories from the server (issue 18): two checkouts share a team on the
//! tests' PostgreSQL server (`ALEMBIC_TEST_PG_URL`, unset is a failure); a team memory added
//! in one is found in the other by `alembic memory search` and `list`, by the MCP resource
//! `alembic://memories/team`, and in the request `alembic ask` sends to the (fake) model,
//! each time marked as coming from the team store.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use alembic_llm::ProviderKind;
use alembic_llm::fake::{FakeServer, FakeTurn};
use assert_cmd::cargo::CommandCargoExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::agent_cli::{agent_cmd, extraction, output};
use super::alembic;
use super::hostile_corpus::init_line;

const FACT: &str = "Releases are cut on Tuesdays by the platform team";

fn pg_url() -> String {
    std::env::var("ALEMBIC_TEST_PG_URL").unwrap_or_else(|_| {
        panic!(
            "ALEMBIC_TEST_PG_URL is not set: this test needs a PostgreSQL server; run \
             `export ALEMBIC_TEST_PG_URL=$(scripts/setup-postgres)` (or scripts/test, which does it)"
        )
    })
}

/// Two checkouts configured for one new team.
fn checkouts() -> (tempfile::TempDir, tempfile::TempDir) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let team = format!("readers-{}-{nanos}", std::process::id());
    let config = format!(
        "[team]\nurl = \"{}\"\nteam = \"{team}\"\nauthor = \"ci\"\n",
        pg_url()
    );
    let (a, b) = (super::project_dir(), super::project_dir());
    for dir in [a.path(), b.path()] {
        std::fs::create_dir_all(dir.join(".alembic")).unwrap();
        std::fs::write(dir.join(".alembic/config.toml"), &config).unwrap();
    }
    (a, b)
}

fn memory_json(dir: &std::path::Path, args: &[&str]) -> Value {
    let out = alembic(dir)
        .env("ALEMBIC_EMBEDDINGS", "none")
        .env_remove("ALEMBIC_TEAM_URL")
        .arg("memory")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Reads `uri` from `alembic mcp` over stdio in `dir`; returns the JSON-RPC answer.
fn read_resource(dir: &std::path::Path, uri: &str) -> Value {
    let mut child = std::process::Command::cargo_bin("alembic")
        .unwrap()
        .args(["mcp", "--project"])
        .arg(dir)
        .env("ALEMBIC_LOG", "off")
        .env("ALEMBIC_EMBEDDINGS", "none")
        .env_remove("ALEMBIC_TEAM_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let read = json!({"jsonrpc": "2.0", "id": "read", "method": "resources/read",
                      "params": {"uri": uri}});
    for line in [
        init_line(),
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
        read.to_string().into_bytes(),
    ] {
        stdin.write_all(&line).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    stdin.flush().unwrap();
    let answer = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap())
        .find(|m| m["id"] == "read")
        .expect("no answer to resources/read");
    drop(stdin);
    child.kill().unwrap();
    child.wait().unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread")]
async fn a_team_memory_added_in_one_checkout_is_read_in_the_other() {
    let (a, b) = checkouts();
    let added = memory_json(a.path(), &["add", FACT, "--scope", "team"]);
    assert_eq!(added["added"], json!(1), "{added}");

    // alembic memory search and list
    let found = memory_json(b.path(), &["search", "releases tuesdays"]);
    assert_eq!(found["results"][0]["content"], json!(FACT), "{found}");
    assert_eq!(found["results"][0]["store"], json!("team"), "{found}");
    assert_eq!(found.get("teamError"), None, "{found}");
    let listed = memory_json(b.path(), &["list"]);
    let memories = listed["memories"].as_array().unwrap();
    assert_eq!(memories.len(), 1, "{listed}");
    assert_eq!(
        (&memories[0]["content"], &memories[0]["store"]),
        (&json!(FACT), &json!("team"))
    );

    // the MCP resource
    let answer = read_resource(b.path(), "alembic://memories/team");
    let text = answer["result"]["contents"][0]["text"].as_str().unwrap();
    let resource: Value = serde_json::from_str(text).unwrap();
    assert_eq!(resource[0]["content"], json!(FACT), "{answer}");
    assert_eq!(resource[0]["store"], json!("team"), "{answer}");

    // the agent loop: the recalled team memory is in the request the model gets
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server
        .push(FakeTurn::text("On Tuesdays."))
        .push(extraction(&[]));
    let home = tempfile::tempdir().unwrap();
    let mut cmd = agent_cmd(b.path(), home.path(), Some(&server));
    cmd.env("ALEMBIC_EMBEDDINGS", "none")
        .env_remove("ALEMBIC_TEAM_URL")
        .args(["ask", "When are releases cut?", "--no-stream"]);
    let out = output(cmd).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prompt = server.requests()[0].system_prompt();
    assert!(
        prompt.contains(&format!("- [fact, team] {FACT}")),
        "{prompt}"
    );
}

#[test]
fn with_the_team_server_down_local_memories_are_still_listed_and_the_reason_given() {
    let dir = super::project_dir();
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    // a port nothing listens on: the connection is refused at once
    std::fs::write(
        dir.path().join(".alembic/config.toml"),
        "[team]\nurl = \"postgres://alembic@127.0.0.1:1/none\"\nteam = \"down\"\n\
         author = \"ci\"\nconnect_timeout_secs = 2\n",
    )
    .unwrap();
    memory_json(dir.path(), &["add", "The local cache is warmed at start"]);
    let listed = memory_json(dir.path(), &["list"]);
    assert_eq!(
        listed["memories"][0]["content"],
        json!("The local cache is warmed at start")
    );
    assert_eq!(listed["memories"][0]["store"], json!("local"));
    let error = listed["teamError"].as_str().unwrap();
    assert!(
        error.contains("team server 127.0.0.1:1/none is unreachable"),
        "{error}"
    );
    let answer = read_resource(dir.path(), "alembic://memories/team");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("team memories unavailable"), "{answer}");
}
