//! The memory tools of two project checkouts that share one team: team-scoped memories go
//! to the server, project ones stay in each checkout's SQLite file.

use std::sync::Arc;

use alembic_memory::tools::{MemoryService, register_tools};
use alembic_memory::{MemoryConfig, NewMemory, Scope, SystemClock};
use alembic_team::{TeamConfig, team_opener};
use alembic_tools::{
    Allowlist, Caller, OutcomeStatus, Pipeline, PreparedCall, SafetyCheck, SafetyDecision,
    ToolCall, ToolOutcome, ToolRegistry,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{fresh_team, pg_url};

struct AllowAll;
impl SafetyCheck for AllowAll {
    fn check(&self, _: &PreparedCall) -> SafetyDecision {
        SafetyDecision::Allow
    }
}

/// One checkout: its own directory and SQLite file, the team store of `team`.
fn checkout(dir: &std::path::Path, team: TeamConfig) -> (Arc<Pipeline>, Arc<MemoryService>) {
    let (label, open) = team_opener(team, MemoryConfig::default(), Arc::new(SystemClock));
    let memory =
        Arc::new(MemoryService::for_project(dir, MemoryConfig::default()).with_team(label, open));
    let registry = Arc::new(ToolRegistry::new());
    register_tools(&registry, Arc::clone(&memory)).unwrap();
    let pipeline = Pipeline::builder(registry, dir)
        .safety(Arc::new(AllowAll))
        .build();
    (pipeline, memory)
}

async fn call(p: &Arc<Pipeline>, tool: &str, args: Value) -> ToolOutcome {
    let caller = Caller::new("mcp:test", Allowlist::All);
    p.execute(ToolCall::new(tool, args, caller)).await
}

fn contents(outcome: &ToolOutcome) -> Vec<String> {
    outcome.output.as_ref().unwrap().data["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_team_memory_added_in_one_checkout_is_recalled_in_the_other() {
    let team = fresh_team("checkouts");
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, _) = checkout(dir_a.path(), TeamConfig::new(pg_url(), team.clone(), "ana"));
    let (b, memory_b) = checkout(dir_b.path(), TeamConfig::new(pg_url(), team.clone(), "bo"));

    let added = call(
        &a,
        "memory_remember",
        json!({"content": "The staging database is rebuilt every night at 02:00", "scope": "team"}),
    )
    .await;
    assert_eq!(added.status, OutcomeStatus::Ok, "{added:?}");
    let local = call(
        &a,
        "memory_remember",
        json!({"content": "My checkout builds the staging database with make db"}),
    )
    .await;
    assert_eq!(local.status, OutcomeStatus::Ok);

    let recalled = call(
        &b,
        "memory_recall",
        json!({"query": "staging database rebuilt"}),
    )
    .await;
    assert_eq!(
        contents(&recalled),
        ["The staging database is rebuilt every night at 02:00"],
        "b sees the team memory, not a's project memory"
    );
    // b's own SQLite file holds nothing of it
    let local_rows = memory_b.read(|m| m.export()).unwrap().unwrap();
    assert!(local_rows.is_empty(), "{local_rows:?}");

    let id = added.output.unwrap().data["id"]
        .as_str()
        .unwrap()
        .to_string();
    let forgotten = call(&b, "memory_forget", json!({"id": id})).await;
    assert_eq!(forgotten.status, OutcomeStatus::Ok, "{forgotten:?}");
    let recalled = call(
        &a,
        "memory_recall",
        json!({"query": "staging database rebuilt"}),
    )
    .await;
    assert_eq!(
        contents(&recalled),
        ["My checkout builds the staging database with make db"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_server_down_local_memory_works_and_team_calls_say_why_they_fail() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = TeamConfig::new(
        format!("postgres://alembic@127.0.0.1:{port}/alembic"),
        "ops",
        "ana",
    );
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = checkout(dir.path(), down);
    let local = call(
        &p,
        "memory_remember",
        json!({"content": "Logs rotate daily on this box"}),
    )
    .await;
    assert_eq!(local.status, OutcomeStatus::Ok, "{local:?}");

    let team = call(
        &p,
        "memory_remember",
        json!({"content": "Deploys need two approvals", "scope": "team"}),
    )
    .await;
    assert_eq!(team.status, OutcomeStatus::Error);
    let err = team.error.unwrap();
    assert!(
        err.contains(&format!(
            "team server 127.0.0.1:{port}/alembic is unreachable"
        )),
        "{err}"
    );

    let recalled = call(&p, "memory_recall", json!({"query": "logs rotate"})).await;
    assert_eq!(recalled.status, OutcomeStatus::Ok);
    assert_eq!(contents(&recalled), ["Logs rotate daily on this box"]);
    let out = recalled.output.unwrap();
    let team_error = out.data["teamError"].as_str().unwrap();
    assert!(team_error.contains("is unreachable"), "{team_error}");
    assert!(
        out.text.contains("team memories unavailable:"),
        "{}",
        out.text
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn push_moves_local_team_memories_once_and_pull_copies_them_back() {
    let team = fresh_team("push");
    let dir = tempfile::tempdir().unwrap();
    // memories written with scope team before the project had a team stay local
    let (_, before) = checkout_without_team(dir.path());
    before
        .with_store(|m| {
            m.add(
                NewMemory::fact("Hotfixes go through the release captain").with_scope(Scope::Team),
            )?;
            m.add(NewMemory::fact("My editor config lives in dotfiles"))?;
            Ok(())
        })
        .unwrap();
    drop(before);
    let (p, memory) = checkout(dir.path(), TeamConfig::new(pg_url(), team.clone(), "ana"));
    let status = call(&p, "team_status", json!({})).await;
    let data = status.output.unwrap().data;
    assert_eq!(
        (data["teamMemories"].clone(), data["waitingToPush"].clone()),
        (json!(0), json!(1))
    );

    let pushed = call(&p, "team_push", json!({})).await;
    assert_eq!(
        pushed.output.unwrap().data,
        json!({"pushed": 1, "alreadyOnServer": 0})
    );
    let again = call(&p, "team_push", json!({})).await;
    assert_eq!(
        again.output.unwrap().data,
        json!({"pushed": 0, "alreadyOnServer": 0})
    );
    let local = memory.read(|m| m.export()).unwrap().unwrap();
    assert_eq!(
        local.len(),
        1,
        "only the project memory stays local: {local:?}"
    );
    let status = call(&p, "team_status", json!({})).await;
    let data = status.output.unwrap().data;
    assert_eq!(
        (data["teamMemories"].clone(), data["waitingToPush"].clone()),
        (json!(1), json!(0))
    );

    let pulled = call(&p, "team_pull", json!({})).await;
    assert_eq!(
        pulled.output.unwrap().data,
        json!({"pulled": 1, "alreadyLocal": 0})
    );
    let pulled = call(&p, "team_pull", json!({})).await;
    assert_eq!(
        pulled.output.unwrap().data,
        json!({"pulled": 0, "alreadyLocal": 1})
    );
    // in both stores now, recalled once
    let recalled = call(
        &p,
        "memory_recall",
        json!({"query": "hotfixes release captain"}),
    )
    .await;
    assert_eq!(
        contents(&recalled),
        ["Hotfixes go through the release captain"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn team_tools_without_a_team_say_how_to_configure_one() {
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = checkout_without_team(dir.path());
    for tool in ["team_status", "team_push", "team_pull"] {
        let outcome = call(&p, tool, json!({})).await;
        assert_eq!(outcome.status, OutcomeStatus::Error, "{tool}");
        let err = outcome.error.unwrap();
        assert!(
            err.contains("no team is configured: add [team] url and team"),
            "{tool}: {err}"
        );
    }
}

fn checkout_without_team(dir: &std::path::Path) -> (Arc<Pipeline>, Arc<MemoryService>) {
    let memory = Arc::new(MemoryService::for_project(dir, MemoryConfig::default()));
    let registry = Arc::new(ToolRegistry::new());
    register_tools(&registry, Arc::clone(&memory)).unwrap();
    let pipeline = Pipeline::builder(registry, dir)
        .safety(Arc::new(AllowAll))
        .build();
    (pipeline, memory)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_team_memory_never_pushed_is_consolidated_with_not_duplicated_or_lost() {
    let team = fresh_team("unpushed");
    let dir = tempfile::tempdir().unwrap();
    let (_, before) = checkout_without_team(dir.path());
    before
        .with_store(|m| {
            m.add(
                NewMemory::fact("Hotfixes go through the release captain").with_scope(Scope::Team),
            )?;
            Ok(())
        })
        .unwrap();
    drop(before);
    let (p, memory) = checkout(dir.path(), TeamConfig::new(pg_url(), team, "ana"));
    // the same fact again, with scope team: it updates the local one, now on the server
    let remembered = call(
        &p,
        "memory_remember",
        json!({"content": "Hotfixes go through the release captain", "scope": "team"}),
    )
    .await;
    assert_eq!(remembered.status, OutcomeStatus::Ok, "{remembered:?}");
    assert_eq!(remembered.output.unwrap().data["action"], json!("updated"));
    let on_server = memory
        .read_team(|t| t.export())
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect::<Vec<_>>();
    assert_eq!(on_server, ["Hotfixes go through the release captain"]);
    let local = memory.read(|m| m.export()).unwrap().unwrap();
    assert_eq!(local, [], "moved to the server, not copied");
    let status = call(&p, "team_status", json!({})).await;
    assert_eq!(status.output.unwrap().data["waitingToPush"], json!(0));
}
