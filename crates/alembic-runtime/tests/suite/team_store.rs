//! `[team]` in two project checkouts: a team memory remembered in one is recalled in the
//! other, through each project's runtime (config, services, pipeline), against the real
//! PostgreSQL server of the tests (`ALEMBIC_TEST_PG_URL`, started by scripts/test).

use alembic_runtime::ProjectRuntime;
use pretty_assertions::assert_eq;
use serde_json::json;

fn pg_url() -> String {
    std::env::var("ALEMBIC_TEST_PG_URL").unwrap_or_else(|_| {
        panic!(
            "ALEMBIC_TEST_PG_URL is not set: this test needs a PostgreSQL server; run \
             `export ALEMBIC_TEST_PG_URL=$(scripts/setup-postgres)` (or scripts/test, which does it)"
        )
    })
}

fn checkout(team: &str, author: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    let config = format!(
        "[team]\nurl = \"{}\"\nteam = \"{team}\"\nauthor = \"{author}\"\n",
        pg_url()
    );
    std::fs::write(dir.path().join(".alembic/config.toml"), config).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn two_checkouts_of_one_team_share_team_memories() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let team = format!("runtime-{}-{nanos}", std::process::id());
    let (a, b) = (checkout(&team, "ana"), checkout(&team, "bo"));
    let (a, b) = (
        ProjectRuntime::open(a.path()).unwrap(),
        ProjectRuntime::open(b.path()).unwrap(),
    );
    let args = json!({"content": "Feature flags are cleaned up every sprint", "scope": "team"});
    let added = a.call_as_cli("memory_remember", args).await;
    assert!(added.is_ok(), "{}", added.text_for_model());
    let recalled = b
        .call_as_cli("memory_recall", json!({"query": "feature flags cleaned"}))
        .await;
    assert!(recalled.is_ok(), "{}", recalled.text_for_model());
    let memories = &recalled.output.unwrap().data["memories"];
    assert_eq!(memories.as_array().unwrap().len(), 1, "{memories}");
    assert_eq!(
        memories[0]["content"],
        "Feature flags are cleaned up every sprint"
    );
}

#[test]
fn a_password_in_a_readable_config_stops_the_runtime() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".alembic/config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        "[team]\nurl = \"postgres://ana:pw@db/alembic\"\nteam = \"platform\"\nauthor = \"ana\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = ProjectRuntime::open(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("holds a database password and others can read it (mode 644)"),
        "{err}"
    );
}
