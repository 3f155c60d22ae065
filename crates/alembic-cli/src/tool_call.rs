//! The CLI's one way to run a tool for a state-changing command: through the project's
//! pipeline as caller `cli` (validated, policy-checked, audited), and one way to show a
//! call that did not succeed.

use alembic_runtime::ProjectRuntime;
use alembic_runtime::tools::{ToolOutcome, ToolOutput};
use anyhow::Context as _;
use serde_json::Value;

use crate::exit::Exit;

/// Runs `tool` as caller `cli` and waits until its audit record is on disk. A refusal or
/// failure is printed (see [`print_failure`]) and comes back as the exit code to end with.
pub fn call_as_cli(
    rt: &ProjectRuntime,
    tool: &str,
    args: Value,
) -> anyhow::Result<Result<ToolOutput, Exit>> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let outcome = runtime.block_on(rt.call_as_cli(tool, args));
    rt.flush_audit()?;
    match outcome.output {
        Some(output) if outcome.is_ok() => Ok(Ok(output)),
        _ => {
            print_failure(&outcome);
            let code = outcome.status.exit_code();
            // A success without output never happens; treat it as a tool error, not success.
            Ok(Err(Exit::from_code(if code == 0 { 1 } else { code })))
        }
    }
}

/// Prints a call that did not succeed as `error (status, rule R): detail` on stderr.
pub fn print_failure(outcome: &ToolOutcome) {
    let rule = outcome
        .rule
        .as_deref()
        .map(|r| format!(", rule {r}"))
        .unwrap_or_default();
    eprintln!(
        "error ({}{rule}): {}",
        outcome.status.as_str(),
        outcome.error.as_deref().unwrap_or("no detail")
    );
}
