//! The `[memory]` section of `.alembic/config.toml` reaches the memory tools of a
//! [`ProjectRuntime`], and a bad value stops the runtime with a message naming the key.

use alembic_memory::{ListFilter, MemoryConfig, PersistentMemory};
use alembic_runtime::ProjectRuntime;
use alembic_tools::ToolCall;
use pretty_assertions::assert_eq;
use serde_json::json;

fn project(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    std::fs::write(dir.path().join(".alembic/config.toml"), config).unwrap();
    dir
}

/// Remembers three unrelated facts through the pipeline; returns the current memories.
fn remember_three(dir: &std::path::Path) -> usize {
    let rt = ProjectRuntime::open(dir).unwrap();
    let pipeline = rt.pipeline();
    let caller = rt.caller("test", Some("all")).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for fact in [
        "The payment module retries failed charges three times",
        "Release builds are signed on the CI machine",
        "Logging goes through the tracing crate",
    ] {
        let call = ToolCall::new("memory_remember", json!({"content": fact}), caller.clone());
        let outcome = runtime.block_on(pipeline.execute(call));
        assert!(outcome.is_ok(), "{}", outcome.text_for_model());
    }
    drop(rt);
    PersistentMemory::open_project(dir, MemoryConfig::default())
        .unwrap()
        .list(&ListFilter::default())
        .unwrap()
        .len()
}

#[test]
fn max_memories_from_the_config_caps_the_memory_tools() {
    let default = project("");
    assert_eq!(remember_three(default.path()), 3);
    let capped = project("[memory]\nmax_memories = 2\n");
    assert_eq!(remember_three(capped.path()), 2);
}

#[test]
fn a_bad_memory_setting_stops_the_runtime_with_the_key_and_accepted_values() {
    let dir = project("[memory]\narchive_days = \"soon\"\n");
    let err = ProjectRuntime::open(dir.path()).unwrap_err().to_string();
    assert!(
        err.ends_with(
            "config.toml is not valid: [memory] archive_days = \"soon\": accepted a number of days greater than 0"
        ),
        "{err}"
    );
}
