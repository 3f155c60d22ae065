//! The three system-interaction tools through the real registry, pipeline and SafetyGate.

use std::sync::Arc;

use alembic_safety::spawn::{SpawnRequest, run};
use alembic_safety::tools::TOOL_NAMES;
use alembic_safety::{PathGuard, PolicySafetyCheck, SafetyServices, register_tools};
use alembic_tools::{
    Allowlist, Caller, OutcomeStatus, Pipeline, ToolCall, ToolOutcome, ToolRegistry,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::fixture::Fixture;

struct Harness {
    fx: Fixture,
    pipeline: Arc<Pipeline>,
}

impl Harness {
    fn new() -> Self {
        Self::with_config(None)
    }

    fn with_config(config: Option<&str>) -> Self {
        let fx = Fixture::new();
        if let Some(config) = config {
            std::fs::create_dir(fx.path(".alembic")).unwrap();
            std::fs::write(fx.path(".alembic/config.toml"), config).unwrap();
        }
        let registry = Arc::new(ToolRegistry::new());
        let services = Arc::new(SafetyServices::for_root(&fx.root).unwrap());
        register_tools(&registry, Arc::clone(&services)).unwrap();
        let check = PolicySafetyCheck::new(services);
        let pipeline = Pipeline::builder(registry, &fx.root)
            .safety(Arc::new(check))
            .build();
        Self { fx, pipeline }
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        let caller = Caller::new("test", Allowlist::only(TOOL_NAMES));
        self.pipeline
            .execute(ToolCall::new(tool, args, caller))
            .await
    }

    /// Runs a setup command directly through the spawner (tests need git, not the policy).
    fn sh(&self, script: &str) {
        let guard = PathGuard::new(&self.fx.root).unwrap();
        let out = run(&guard, SpawnRequest::new("sh").args(["-c", script])).unwrap();
        assert_eq!(out.exit_code, Some(0), "{script}: {}", out.stderr);
    }
}

fn data(outcome: &ToolOutcome) -> &Value {
    &outcome
        .output
        .as_ref()
        .unwrap_or_else(|| panic!("no output: {outcome:?}"))
        .data
}

#[tokio::test]
async fn run_safe_command_runs_allowed_commands() {
    let h = Harness::new();
    let outcome = h
        .call(
            "run_safe_command",
            json!({"command": "ls && cat README.md"}),
        )
        .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(data(&outcome)["exitCode"], 0);
    assert_eq!(data(&outcome)["stdout"], "README.md\nsrc\ninside\n");
    assert_eq!(
        data(&outcome)["sandboxed"],
        alembic_safety::spawn::landlock_available()
    );
    let outcome = h
        .call("run_safe_command", json!({"command": "ls", "cwd": "src"}))
        .await;
    assert_eq!(data(&outcome)["stdout"], "main.rs\n");
    let outcome = h
        .call("run_safe_command", json!({"command": "ls missing"}))
        .await;
    assert!(outcome.is_ok());
    assert_eq!(data(&outcome)["exitCode"], 2);
}

#[tokio::test]
async fn run_safe_command_refuses_through_the_gate() {
    let h = Harness::new();
    let outcome = h
        .call("run_safe_command", json!({"command": "rm -rf /"}))
        .await;
    assert_eq!(outcome.status, OutcomeStatus::Blocked);
    assert_eq!(outcome.rule.as_deref(), Some("rm.recursive_root"));
    let outcome = h
        .call("run_safe_command", json!({"command": "ls > out.txt"}))
        .await;
    assert_eq!(outcome.status, OutcomeStatus::Blocked);
    assert_eq!(outcome.rule.as_deref(), Some("needs_approval"));
    assert!(!h.fx.path("out.txt").exists());
    let outcome = h
        .call("run_safe_command", json!({"command": "ls", "cwd": "../"}))
        .await;
    assert_eq!(outcome.status, OutcomeStatus::Blocked);
    assert_eq!(outcome.rule.as_deref(), Some("path.escape"));
}

#[tokio::test]
async fn git_status_does_not_run_a_repository_fsmonitor() {
    let h = Harness::new();
    h.sh("git init -q . && printf '#!/bin/sh\\ntouch pwned\\n' > evil.sh && chmod +x evil.sh && git config core.fsmonitor ./evil.sh");
    let outcome = h
        .call("run_safe_command", json!({"command": "git status --short"}))
        .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert!(!h.fx.path("pwned").exists(), "core.fsmonitor ran");
}

#[tokio::test]
async fn configured_commands_time_out_with_the_group_killed() {
    let h = Harness::with_config(Some("[safety]\nextra_safe_commands = [\"sleep\"]\n"));
    let outcome = h
        .call(
            "run_safe_command",
            json!({"command": "sleep 100", "timeout": 200}),
        )
        .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(data(&outcome)["timedOut"], true);
    assert!(outcome.text_for_model().contains("timed out"));
}

#[tokio::test]
async fn write_project_file_writes_appends_and_refuses_control_paths() {
    let h = Harness::new();
    let outcome = h
        .call(
            "write_project_file",
            json!({"filePath": "notes/a.md", "content": "one\n"}),
        )
        .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(data(&outcome)["created"], true);
    let outcome = h
        .call(
            "write_project_file",
            json!({"filePath": "notes/a.md", "content": "two\n", "append": true}),
        )
        .await;
    assert_eq!(data(&outcome)["mode"], "append");
    assert_eq!(
        std::fs::read_to_string(h.fx.path("notes/a.md")).unwrap(),
        "one\ntwo\n"
    );
    for (args, rule) in [
        (
            json!({"filePath": ".git/config", "content": "x"}),
            "path.protected",
        ),
        (
            json!({"filePath": ".ENV", "content": "x"}),
            "path.protected",
        ),
        (
            json!({"filePath": "../escape.txt", "content": "x"}),
            "path.escape",
        ),
        // The alias is normalised to filePath before the gate looks, so it cannot slip past.
        (
            json!({"path": "/etc/alembic-test", "content": "x"}),
            "path.escape",
        ),
    ] {
        let outcome = h.call("write_project_file", args.clone()).await;
        assert_eq!(outcome.status, OutcomeStatus::Blocked, "{args}");
        assert_eq!(outcome.rule.as_deref(), Some(rule), "{args}");
    }
    assert!(!h.fx.root.join(".git").exists());
}

#[tokio::test]
async fn environment_info_reports_git_without_credentials_or_variables() {
    let h = Harness::new();
    h.sh("git init -q -b main . && git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m first \
          && git remote add origin https://someone:ghp_SECRETTOKEN@github.com/o/r.git && touch Cargo.toml");
    let outcome = h.call("get_environment_info", json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let git = &data(&outcome)["git"];
    assert_eq!(git["branch"], "main");
    assert_eq!(git["dirty"], true);
    assert_eq!(git["remote"], "https://github.com/o/r.git");
    assert!(git["lastCommit"].as_str().unwrap().contains("first"));
    assert_eq!(data(&outcome)["project"]["buildSystems"], json!(["cargo"]));
    let everything = format!("{} {}", outcome.text_for_model(), data(&outcome));
    assert!(!everything.contains("SECRETTOKEN") && !everything.contains("someone"));
    assert!(!everything.contains("PATH=") && !everything.contains("HOME"));
    let outcome = h
        .call("get_environment_info", json!({"sections": ["os"]}))
        .await;
    assert_eq!(
        data(&outcome)
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        vec!["os"]
    );
}

#[tokio::test]
async fn environment_info_names_the_branch_of_a_repository_without_commits() {
    let h = Harness::new();
    h.sh("git init -q -b trunk .");
    let outcome = h
        .call("get_environment_info", json!({"sections": ["git"]}))
        .await;
    let git = &data(&outcome)["git"];
    assert_eq!(git["repository"], true);
    assert_eq!(git["branch"], "trunk");
    assert_eq!(git["lastCommit"], Value::Null);
    let h = Harness::new();
    let outcome = h
        .call("get_environment_info", json!({"sections": ["git"]}))
        .await;
    assert_eq!(data(&outcome)["git"], json!({"repository": false}));
}

#[tokio::test]
async fn the_gate_checks_path_arguments_of_other_file_tools() {
    use alembic_tools::{EffectClass, ToolDefinition, ToolModule, ToolOutput, handler_fn};
    let fx = Fixture::new();
    fx.symlink("../outside/secret.txt", "leak");
    let registry = Arc::new(ToolRegistry::new());
    let schema = json!({"type": "object", "properties": {
        "filePath": {"type": "string"}, "filePaths": {"type": "array", "items": {"type": "string"}}}});
    registry
        .register(ToolDefinition::new(
            "peek",
            "test reader",
            schema,
            ToolModule::ProjectAccess,
            EffectClass::ReadsProjectFiles,
            handler_fn(|_args, _ctx| async move { Ok(ToolOutput::new(json!({}), "read")) }),
        ))
        .unwrap();
    let check = PolicySafetyCheck::for_root(&fx.root).unwrap();
    let pipeline = Pipeline::builder(registry, &fx.root)
        .safety(Arc::new(check))
        .build();
    let call = |args: Value| {
        let caller = Caller::new("test", Allowlist::only(["peek"]));
        pipeline.execute(ToolCall::new("peek", args, caller))
    };
    assert!(call(json!({"filePath": "README.md"})).await.is_ok());
    assert!(
        call(json!({"filePath": "missing.md"})).await.is_ok(),
        "missing files are the tool's business"
    );
    for args in [
        json!({"filePath": "leak"}),
        json!({"filePath": "/etc/passwd"}),
        json!({"filePaths": ["README.md", "../outside/secret.txt"]}),
    ] {
        let outcome = call(args.clone()).await;
        assert_eq!(outcome.status, OutcomeStatus::Blocked, "{args}");
        assert_eq!(outcome.rule.as_deref(), Some("path.escape"), "{args}");
    }
}
