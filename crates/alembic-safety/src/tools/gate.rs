//! [`PolicySafetyCheck`]: the SafetyGate's decision on normalised arguments.
//!
//! It reads the arguments after the registry's alias mapping (so
//! `{"path": "/etc/hosts"}` is seen as `filePath`), which closes the
//! reference's bypass where the gate looked only at the raw `filePath`.

use std::sync::Arc;

use alembic_tools::{EffectClass, PreparedCall, SafetyCheck, SafetyDecision};
use serde_json::Value;

use crate::command::CommandVerdict;
use crate::path::{Access, PathError};

use super::SafetyServices;

/// Argument keys that name project paths.
const PATH_KEYS: &[&str] = &[
    "filePath",
    "filePaths",
    "path",
    "directory",
    "file",
    "dir",
    "cwd",
];

/// Plugs [`crate::CommandPolicy`] and [`crate::PathGuard`] into the pipeline's SafetyGate.
#[derive(Debug, Clone)]
pub struct PolicySafetyCheck {
    services: Arc<SafetyServices>,
}

impl PolicySafetyCheck {
    /// A check over the guard and policy the tools were registered with, so the gate and the
    /// handlers decide by the same rules and the config is read once.
    pub fn new(services: Arc<SafetyServices>) -> Self {
        Self { services }
    }

    /// Builds the guard and policy for `root` (reads `.alembic/config.toml`).
    pub fn for_root(root: &std::path::Path) -> Result<Self, String> {
        SafetyServices::for_root(root).map(|s| Self::new(Arc::new(s)))
    }

    fn check_command(&self, call: &PreparedCall) -> SafetyDecision {
        let Some(command) = call.args.get("command").and_then(Value::as_str) else {
            return SafetyDecision::NeedsApproval {
                reason: format!(
                    "tool \"{}\" runs commands the policy cannot inspect",
                    call.name()
                ),
            };
        };
        let cwd = call.args.get("cwd").and_then(Value::as_str).unwrap_or(".");
        let cwd = match self.services.guard.check(cwd, Access::Read) {
            Ok(cwd) => cwd,
            Err(e) => return path_denial("cwd", &e),
        };
        match self
            .services
            .policy
            .evaluate_in(command, &self.services.guard, &cwd)
        {
            CommandVerdict::Allow => SafetyDecision::Allow,
            CommandVerdict::NeedsApproval { reason } => SafetyDecision::NeedsApproval { reason },
            CommandVerdict::Deny { reason, rule } => SafetyDecision::Deny { reason, rule },
        }
    }

    fn check_paths(&self, call: &PreparedCall, access: Access) -> SafetyDecision {
        for key in PATH_KEYS {
            let values: Vec<&str> = match call.args.get(*key) {
                Some(Value::String(s)) => vec![s.as_str()],
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
                _ => continue,
            };
            let access = if *key == "cwd" { Access::Read } else { access };
            for value in values {
                match self.services.guard.check(value, access) {
                    // A missing file is the tool's own error to report, not a safety matter.
                    Ok(_) | Err(PathError::NotFound { .. } | PathError::NotADirectory { .. }) => {}
                    // Empty or odd values may mean "the root" to a tool; only
                    // confinement is a safety matter.
                    Err(e) if e.is_confinement() => {
                        return path_denial(key, &e);
                    }
                    Err(_) => {}
                }
            }
        }
        SafetyDecision::Allow
    }
}

impl SafetyCheck for PolicySafetyCheck {
    fn check(&self, call: &PreparedCall) -> SafetyDecision {
        match call.effect() {
            EffectClass::RunsCommands => self.check_command(call),
            EffectClass::ReadsProjectFiles => self.check_paths(call, Access::Read),
            EffectClass::WritesProjectFiles => self.check_paths(call, Access::Write),
            // Alembic's own state (knowledge, memory) and LLM calls touch no project
            // file or process; the allowlist gate decides who may use them.
            _ => SafetyDecision::Allow,
        }
    }
}

fn path_denial(key: &str, error: &PathError) -> SafetyDecision {
    SafetyDecision::Deny {
        reason: format!("argument \"{key}\": {error}"),
        rule: error.rule().to_owned(),
    }
}
