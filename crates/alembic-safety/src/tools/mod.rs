//! The system-interaction tools (`run_safe_command`, `write_project_file`,
//! `get_environment_info`) and [`PolicySafetyCheck`], the pipeline's SafetyGate policy.
//!
//! Handlers find a [`PathGuard`] and a [`CommandPolicy`] in the pipeline's
//! services, or build them for the call's project root on first use (the
//! policy from `.alembic/config.toml`; a bad config fails closed). Blocking
//! work runs on tokio's blocking pool.

mod env_info;
mod gate;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use alembic_tools::{
    EffectClass, RegistryError, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput,
    ToolRegistry, handler_fn,
};
use serde_json::{Value, json};

use crate::command::{CommandPolicy, CommandVerdict, hardened_git_env};
use crate::path::{PathError, PathGuard, PathLimits, WriteMode};
use crate::spawn::{self, ProcessOutput, SpawnRequest};

pub use gate::PolicySafetyCheck;

/// Names of the tools this crate registers.
pub const TOOL_NAMES: [&str; 3] = [
    "run_safe_command",
    "write_project_file",
    "get_environment_info",
];

/// Default command timeout in milliseconds (the reference's default).
const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// Guard and policy for one project root.
#[derive(Debug, Clone)]
pub struct SafetyServices {
    /// Confinement for the root.
    pub guard: PathGuard,
    /// Command policy with the project's configured additions.
    pub policy: CommandPolicy,
}

impl SafetyServices {
    /// Builds both for `root`, reading `<root>/.alembic/config.toml` when present.
    pub fn for_root(root: &std::path::Path) -> Result<Self, String> {
        let config = CommandPolicy::load_config(root).map_err(|e| e.to_string())?;
        let policy = CommandPolicy::from_config(&config).map_err(|e| e.to_string())?;
        let limits = PathLimits {
            extra_protected: config.extra_protected_paths,
            ..PathLimits::default()
        };
        let guard = PathGuard::with_limits(root, limits).map_err(|e| e.to_string())?;
        Ok(Self { guard, policy })
    }
}

/// Services built on demand, one per project root.
#[derive(Default)]
struct ServiceCache {
    by_root: Mutex<HashMap<PathBuf, Arc<SafetyServices>>>,
}

impl ServiceCache {
    fn for_context(&self, ctx: &ToolContext) -> Result<Arc<SafetyServices>, ToolError> {
        if let Some(services) = ctx.service::<SafetyServices>() {
            return Ok(services);
        }
        let mut map = self.by_root.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(services) = map.get(&ctx.project_root) {
            return Ok(Arc::clone(services));
        }
        let services =
            Arc::new(SafetyServices::for_root(&ctx.project_root).map_err(ToolError::Failed)?);
        map.insert(ctx.project_root.clone(), Arc::clone(&services));
        Ok(services)
    }
}

/// Registers the three system-interaction tools.
pub fn register_tools(registry: &ToolRegistry) -> Result<(), RegistryError> {
    let cache = Arc::new(ServiceCache::default());
    registry.register(run_safe_command(Arc::clone(&cache)))?;
    registry.register(write_project_file(Arc::clone(&cache)))?;
    registry.register(get_environment_info(cache))?;
    Ok(())
}

fn run_safe_command(cache: Arc<ServiceCache>) -> ToolDefinition {
    let schema = json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Shell command: plain read-only commands joined by &&, ||, ; or |."},
            "cwd": {"type": "string", "description": "Working directory relative to the project root.", "default": "."},
            "timeout": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds (at most 120000).", "default": DEFAULT_TIMEOUT_MS}
        },
        "required": ["command"]
    });
    ToolDefinition::new(
        "run_safe_command",
        "Run a read-only shell command in the project (ls, cat, grep, rg, find, git status/log/diff…). \
         Commands that write, delete, fetch or escape the project are refused. Output is truncated in the middle.",
        schema,
        ToolModule::SystemInteraction,
        EffectClass::RunsCommands,
        handler_fn(move |args, ctx| {
            let cache = Arc::clone(&cache);
            async move { run_command(&cache, &args, &ctx).await }
        }),
    )
    .with_timeout(spawn::MAX_TIMEOUT + Duration::from_secs(5))
}

async fn run_command(
    cache: &ServiceCache,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let services = cache.for_context(ctx)?;
    let command = args["command"].as_str().unwrap_or_default().to_owned();
    let cwd = args["cwd"].as_str().unwrap_or(".");
    let cwd = services
        .guard
        .check(cwd, crate::Access::Read)
        .map_err(refusal)?;
    // The SafetyGate already decided; the handler checks again so a direct call is never weaker.
    match services.policy.evaluate_in(&command, &services.guard, &cwd) {
        CommandVerdict::Allow => {}
        CommandVerdict::NeedsApproval { reason } => {
            return Err(ToolError::Refused {
                reason: format!("needs approval: {reason}"),
                rule: "needs_approval".into(),
            });
        }
        CommandVerdict::Deny { reason, rule } => return Err(ToolError::Refused { reason, rule }),
    }
    let timeout = Duration::from_millis(args["timeout"].as_u64().unwrap_or(DEFAULT_TIMEOUT_MS));
    let cancel = Arc::new(AtomicBool::new(false));
    let request = hardened_git_env()
        .into_iter()
        .fold(
            SpawnRequest::new("sh").args(["-c", command.as_str()]),
            |r, (k, v)| r.env(k, v),
        )
        .cwd(cwd.clone())
        .timeout(timeout)
        .cancel_flag(Arc::clone(&cancel))
        // Defence in depth: even an allowed command cannot write outside the root and the
        // temp dir, nor read home directories (for example through `grep -R` and a symlink).
        .sandbox(vec![std::env::temp_dir()]);
    let token = ctx.cancel.clone();
    let watcher = tokio::spawn(async move {
        token.cancelled().await;
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let guard = services.guard.clone();
    let result = tokio::task::spawn_blocking(move || spawn::run(&guard, request)).await;
    watcher.abort();
    let output = result
        .map_err(|e| ToolError::Failed(format!("command task failed: {e}")))?
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    Ok(command_output(&command, &cwd, &output))
}

fn command_output(command: &str, cwd: &str, out: &ProcessOutput) -> ToolOutput {
    let data = json!({
        "command": command,
        "cwd": cwd,
        "exitCode": out.exit_code,
        "signal": out.signal,
        "timedOut": out.timed_out,
        "stdout": out.stdout,
        "stderr": out.stderr,
        "truncated": out.truncated,
        "durationMs": out.duration_ms,
        "sandboxed": out.sandboxed,
    });
    let status = match (out.exit_code, out.timed_out) {
        (_, true) => format!(
            "timed out after {} ms; process group killed",
            out.duration_ms
        ),
        (Some(code), _) => format!("exit {code}"),
        (None, _) => format!("killed by signal {}", out.signal.unwrap_or(0)),
    };
    let mut text = format!("$ {command}\n{status}\n");
    if !out.stdout.is_empty() {
        text.push_str(&out.stdout);
        if !out.stdout.ends_with('\n') {
            text.push('\n');
        }
    }
    if !out.stderr.is_empty() {
        text.push_str("[stderr]\n");
        text.push_str(&out.stderr);
    }
    ToolOutput::new(data, text.trim_end().to_owned())
}

fn write_project_file(cache: Arc<ServiceCache>) -> ToolDefinition {
    let schema = json!({
        "type": "object",
        "properties": {
            "filePath": {"type": "string", "description": "Path relative to the project root."},
            "content": {"type": "string", "description": "Text to write (UTF-8)."},
            "append": {"type": "boolean", "default": false, "description": "Append instead of replacing the file."}
        },
        "required": ["filePath", "content"]
    });
    ToolDefinition::new(
        "write_project_file",
        "Create or replace a file inside the project (atomically), or append to it. \
         Control files (.git/, .alembic/, .env*, lock files) and paths outside the project are refused.",
        schema,
        ToolModule::SystemInteraction,
        EffectClass::WritesProjectFiles,
        handler_fn(move |args, ctx| {
            let cache = Arc::clone(&cache);
            async move {
                let services = cache.for_context(&ctx)?;
                tokio::task::spawn_blocking(move || write_file(&services.guard, &args))
                    .await
                    .map_err(|e| ToolError::Failed(format!("write task failed: {e}")))?
            }
        }),
    )
}

fn write_file(guard: &PathGuard, args: &Value) -> Result<ToolOutput, ToolError> {
    let path = args["filePath"].as_str().unwrap_or_default();
    let content = args["content"].as_str().unwrap_or_default();
    let append = args["append"].as_bool().unwrap_or(false);
    let mode = if append {
        WriteMode::Append
    } else {
        WriteMode::Replace
    };
    let report = guard
        .write(path, content.as_bytes(), mode)
        .map_err(refusal)?;
    let mode_name = if append { "append" } else { "overwrite" };
    let data = json!({
        "success": true,
        "filePath": report.path,
        "size": report.size,
        "bytesWritten": report.bytes_written,
        "created": report.created,
        "mode": mode_name,
    });
    let verb = match (report.created, append) {
        (true, _) => "created",
        (false, true) => "appended to",
        (false, false) => "replaced",
    };
    let text = format!(
        "{verb} {} ({} bytes written, {} bytes now)",
        report.path, report.bytes_written, report.size
    );
    Ok(ToolOutput::new(data, text))
}

fn get_environment_info(cache: Arc<ServiceCache>) -> ToolDefinition {
    let schema = json!({
        "type": "object",
        "properties": {
            "sections": {
                "type": "array",
                "items": {"type": "string", "enum": ["os", "toolchains", "git", "project", "all"]},
                "default": ["all"]
            }
        }
    });
    ToolDefinition::new(
        "get_environment_info",
        "Describe the environment: OS, installed toolchains, git branch/dirty state/last commit, \
         and project markers. Never reports environment variables or credentials.",
        schema,
        ToolModule::SystemInteraction,
        EffectClass::ReadsProjectFiles,
        handler_fn(move |args, ctx| {
            let cache = Arc::clone(&cache);
            async move {
                let services = cache.for_context(&ctx)?;
                tokio::task::spawn_blocking(move || env_info::collect(&services.guard, &args))
                    .await
                    .map_err(|e| ToolError::Failed(format!("environment task failed: {e}")))?
            }
        }),
    )
}

/// Confinement errors are refusals with the guard's rule; the rest are failures.
fn refusal(error: PathError) -> ToolError {
    if error.is_confinement() || matches!(error, PathError::TooLarge { .. }) {
        ToolError::Refused {
            reason: error.to_string(),
            rule: error.rule().to_owned(),
        }
    } else {
        ToolError::Failed(error.to_string())
    }
}
