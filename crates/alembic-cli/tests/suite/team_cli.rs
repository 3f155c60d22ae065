//! `alembic team status|push|pull` end to end against the tests' PostgreSQL server
//! (`ALEMBIC_TEST_PG_URL`, started by scripts/test).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::alembic;

fn pg_url() -> String {
    std::env::var("ALEMBIC_TEST_PG_URL").unwrap_or_else(|_| {
        panic!(
            "ALEMBIC_TEST_PG_URL is not set: this test needs a PostgreSQL server; run \
             `export ALEMBIC_TEST_PG_URL=$(scripts/setup-postgres)` (or scripts/test, which does it)"
        )
    })
}

fn run(dir: &std::path::Path, args: &[&str]) -> assert_cmd::assert::Assert {
    alembic(dir)
        .env("ALEMBIC_EMBEDDINGS", "none")
        .env_remove("ALEMBIC_TEAM_URL")
        .args(args)
        .assert()
}

fn json_out(a: &assert_cmd::assert::Assert) -> Value {
    serde_json::from_slice(&a.get_output().stdout).unwrap()
}

#[test]
fn push_moves_team_memories_to_the_server_and_another_checkout_pulls_them() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let team = format!("cli-{}-{nanos}", std::process::id());
    let (a, b) = (super::project_dir(), super::project_dir());
    // a team memory written before the team existed stays in a's file
    run(
        a.path(),
        &[
            "memory",
            "add",
            "Incidents are reviewed on Mondays",
            "--scope",
            "team",
        ],
    )
    .success();
    let config = format!(
        "[team]\nurl = \"{}\"\nteam = \"{team}\"\nauthor = \"ci\"\n",
        pg_url()
    );
    for dir in [a.path(), b.path()] {
        std::fs::create_dir_all(dir.join(".alembic")).unwrap();
        std::fs::write(dir.join(".alembic/config.toml"), &config).unwrap();
    }
    let status = json_out(&run(a.path(), &["team", "status", "--json"]).success());
    assert_eq!(status["memories"]["waitingToPush"], json!(1));
    assert_eq!(status["memories"]["teamMemories"], json!(0));

    let pushed = json_out(&run(a.path(), &["team", "push", "--json"]).success());
    assert_eq!(
        pushed["memories"],
        json!({"pushed": 1, "alreadyOnServer": 0})
    );
    let text = run(a.path(), &["team", "push"]).success();
    let text = String::from_utf8(text.get_output().stdout.clone()).unwrap();
    assert_eq!(
        text,
        "pushed 0 team memories, 0 were already on the server\n\
         moved 0 knowledge entries (0 edges, 0 proposals, 0 guard runs); 0 were already on the server; 0 local entries removed (the team holds them)\n"
    );

    let pulled = json_out(&run(b.path(), &["team", "pull", "--json"]).success());
    assert_eq!(pulled["memories"], json!({"pulled": 1, "alreadyLocal": 0}));
    let listed = json_out(&run(b.path(), &["memory", "list", "--json"]).success());
    assert_eq!(
        listed["memories"][0]["content"],
        json!("Incidents are reviewed on Mondays")
    );
}

#[test]
fn team_commands_without_a_team_fail_saying_how_to_configure_one() {
    let dir = super::project_dir();
    let out = run(dir.path(), &["team", "status"]).failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("no team is configured: add [team] url and team"),
        "{err}"
    );
    run(dir.path(), &["team", "--help"]).success();
}
