//! The system-interaction tools (`run_safe_command`, `write_project_file`,
//! `get_environment_info`) and [`PolicySafetyCheck`], the pipeline's SafetyGate policy.
//!
//! Each tool's arguments are a struct (the schema comes from it) and every handler is bound
//! to the [`SafetyServices`] it was registered with: the project's [`PathGuard`] and
//! [`CommandPolicy`], built once by the host (the policy from `.alembic/config.toml`; a bad
//! config fails closed). Blocking work runs on tokio's blocking pool.

mod env_info;
mod gate;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use alembic_tools::{
    EffectClass, RegistryError, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput,
    ToolRegistry,
};
use serde::Deserialize;
use serde_json::json;

use crate::command::{
    CommandPolicy, CommandVerdict, git_disabled_env, hardened_git_env, worktree_git_dirs,
};
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
    /// Set once the missing sandbox was reported, so it is said once, not on every call.
    sandbox_noted: Arc<AtomicBool>,
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
        Ok(Self {
            guard,
            policy,
            sandbox_noted: Arc::default(),
        })
    }

    /// Replaces the policy (tests use [`CommandPolicy::assume_no_landlock`]).
    pub fn with_policy(mut self, policy: CommandPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The one-time note that commands run without Landlock, or `None` (sandboxed, or said already).
    fn sandbox_note(&self, sandboxed: bool) -> Option<&'static str> {
        let missing = !sandboxed || !self.policy.has_second_layer();
        (missing && !self.sandbox_noted.swap(true, std::sync::atomic::Ordering::Relaxed)).then_some(
            "note: Landlock is not available, so commands run without the read and write sandbox; \
             the policy alone confines them, and refuses link-following recursion and globs that can match \"..\"",
        )
    }
}

/// Registers the three system-interaction tools, each bound to `services`.
pub fn register_tools(
    registry: &ToolRegistry,
    services: Arc<SafetyServices>,
) -> Result<(), RegistryError> {
    registry.register(run_safe_command(Arc::clone(&services)))?;
    registry.register(write_project_file(Arc::clone(&services)))?;
    registry.register(get_environment_info(services))?;
    Ok(())
}

fn default_cwd() -> String {
    ".".into()
}

fn default_timeout() -> i64 {
    DEFAULT_TIMEOUT_MS as i64
}

/// Arguments of `run_safe_command`.
#[derive(Deserialize, schemars::JsonSchema)]
struct RunCommandArgs {
    /// Shell command: plain read-only commands joined by &&, ||, ; or |.
    command: String,
    /// Working directory relative to the project root.
    #[serde(default = "default_cwd")]
    cwd: String,
    /// Timeout in milliseconds (at most 120000).
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1))]
    timeout: i64,
}

fn run_safe_command(services: Arc<SafetyServices>) -> ToolDefinition {
    ToolDefinition::typed::<RunCommandArgs>(
        "run_safe_command",
        "Run a read-only shell command in the project (ls, cat, grep, rg, find, git status/log/diff…). \
         Commands that write, delete, fetch or escape the project are refused. Output is truncated in the middle.",
        ToolModule::SystemInteraction,
        EffectClass::RunsCommands,
    )
    .timeout(spawn::MAX_TIMEOUT + Duration::from_secs(5))
    .handler(services, |services, args, ctx| async move {
        run_command(&services, args, &ctx).await
    })
}

/// The policy's verdict as the handler's answer: only `Allow` runs.
fn verdict_to_result(verdict: CommandVerdict) -> Result<(), ToolError> {
    match verdict {
        CommandVerdict::Allow => Ok(()),
        CommandVerdict::NeedsApproval { reason } => Err(ToolError::Refused {
            reason: format!("needs approval: {reason}"),
            rule: "needs_approval".into(),
        }),
        CommandVerdict::Deny { reason, rule } => Err(ToolError::Refused { reason, rule }),
    }
}

async fn run_command(
    services: &SafetyServices,
    args: RunCommandArgs,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let command = args.command;
    let cwd = services
        .guard
        .check(&args.cwd, crate::Access::Read)
        .map_err(refusal)?;
    // The SafetyGate already decided; the handler checks again so a direct call is never weaker.
    verdict_to_result(services.policy.evaluate_in(&command, &services.guard, &cwd))?;
    // A negative timeout (refused by the schema before a pipeline call) means the default.
    let timeout_ms = u64::try_from(args.timeout).unwrap_or(DEFAULT_TIMEOUT_MS);
    let cancel = Arc::new(AtomicBool::new(false));
    let request = SpawnRequest::new("sh")
        .args(["-c", command.as_str()])
        .cwd(cwd.clone())
        .timeout(Duration::from_millis(timeout_ms))
        .cancel_flag(Arc::clone(&cancel))
        // Defence in depth: even an allowed command reads and writes only the root, its
        // private temp dir and the system paths programs need (never `/tmp`, `/proc`, homes).
        .sandbox(Vec::new());
    let token = ctx.cancel.clone();
    let watcher = tokio::spawn(async move {
        token.cancelled().await;
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let guard = services.guard.clone();
    // Any allowed program may run git (a configured tool can too), so every script gets
    // the hardened git environment, listed from the repository's config at run time. When
    // git cannot be made safe here, a script naming git is refused and any other script
    // runs with git finding no repository.
    let names_git = command.contains("git");
    let result = tokio::task::spawn_blocking(move || {
        let env = match hardened_git_env(&guard) {
            Ok(env) => env,
            Err(e) if names_git => return Err(e.to_string()),
            Err(_) => git_disabled_env(&guard),
        };
        let request = env
            .into_iter()
            .fold(request, |r, (k, v)| r.env(k, v))
            .readable(worktree_git_dirs(&guard));
        Ok(spawn::run(&guard, request))
    })
    .await;
    watcher.abort();
    let output = result
        .map_err(|e| ToolError::Failed(format!("command task failed: {e}")))?
        .map_err(|reason| ToolError::Refused {
            reason,
            rule: "git.unsafe_repository".into(),
        })?
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    let note = services.sandbox_note(output.sandboxed);
    Ok(command_output(&command, &cwd, &output, note))
}

fn command_output(command: &str, cwd: &str, out: &ProcessOutput, note: Option<&str>) -> ToolOutput {
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
        "sandboxNote": note,
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
    if let Some(note) = note {
        text.push_str(note);
        text.push('\n');
    }
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

/// Arguments of `write_project_file`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WriteFileArgs {
    /// Path relative to the project root.
    file_path: String,
    /// Text to write (UTF-8).
    content: String,
    /// Append instead of replacing the file.
    #[serde(default)]
    append: bool,
}

fn write_project_file(services: Arc<SafetyServices>) -> ToolDefinition {
    ToolDefinition::typed::<WriteFileArgs>(
        "write_project_file",
        "Create or replace a file inside the project (atomically), or append to it. \
         Control files (.git/, .alembic/, .env*, lock files) and paths outside the project are refused.",
        ToolModule::SystemInteraction,
        EffectClass::WritesProjectFiles,
    )
    .blocking(services, |services, args| write_file(&services.guard, &args))
}

fn write_file(guard: &PathGuard, args: &WriteFileArgs) -> Result<ToolOutput, ToolError> {
    let mode = if args.append {
        WriteMode::Append
    } else {
        WriteMode::Replace
    };
    let report = guard
        .write(&args.file_path, args.content.as_bytes(), mode)
        .map_err(refusal)?;
    let mode_name = if args.append { "append" } else { "overwrite" };
    let data = json!({
        "success": true,
        "filePath": report.path,
        "size": report.size,
        "bytesWritten": report.bytes_written,
        "created": report.created,
        "mode": mode_name,
    });
    let verb = match (report.created, args.append) {
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

fn get_environment_info(services: Arc<SafetyServices>) -> ToolDefinition {
    ToolDefinition::typed::<env_info::EnvInfoArgs>(
        "get_environment_info",
        "Describe the environment: OS, installed toolchains, git branch/dirty state/last commit, \
         and project markers. Never reports environment variables or credentials.",
        ToolModule::SystemInteraction,
        EffectClass::ReadsProjectFiles,
    )
    .blocking(services, |services, args| {
        env_info::collect(&services.guard, &args.sections)
    })
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
