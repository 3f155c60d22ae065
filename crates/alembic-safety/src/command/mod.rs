//! [`CommandPolicy`]: may this shell script run without asking a person?
//!
//! Order of decisions: a hard deny rule anywhere in the script (nested
//! commands included) gives [`CommandVerdict::Deny`]; otherwise the script is
//! [`CommandVerdict::Allow`]ed only when it is provably safe (plain word
//! lists joined by `&&`, `||`, `;`, `|`; every program on the safe list with
//! arguments that pass its checks; no path outside the root); everything
//! else is [`CommandVerdict::NeedsApproval`]. Fail closed: a parse problem is
//! never an allow.

mod brace;
mod deny;
mod git;
mod git_env;
mod glob;
mod operands;
mod options;
mod safe;
mod syntax;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::path::PathGuard;
pub use git_env::{GitEnvError, git_disabled_env, hardened_git_env, worktree_git_dirs};
use operands::Scope;
use safe::ExtraEntry;

/// The project config file, relative to the root.
const CONFIG_PATH: &str = ".alembic/config.toml";
/// Longest script the policy will consider for an allow.
const MAX_SCRIPT_BYTES: usize = 8 * 1024;

/// The policy's answer for one script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum CommandVerdict {
    /// Provably safe: may run without approval.
    Allow,
    /// Not provably safe: a person must approve (refused when no one can).
    NeedsApproval {
        /// What could not be proven safe.
        reason: String,
    },
    /// Matches a hard deny rule: never runs.
    Deny {
        /// What the script would do.
        reason: String,
        /// Stable rule id, for the audit log.
        rule: String,
    },
}

impl CommandVerdict {
    /// `allow`, `needs_approval` or `deny`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::NeedsApproval { .. } => "needs_approval",
            Self::Deny { .. } => "deny",
        }
    }

    /// True only for [`CommandVerdict::Allow`].
    pub fn is_allow(&self) -> bool {
        matches!(self, Self::Allow)
    }

    /// The reason, when not allowed.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Allow => None,
            Self::NeedsApproval { reason } | Self::Deny { reason, .. } => Some(reason),
        }
    }

    /// The rule id for denials.
    pub fn rule(&self) -> Option<&str> {
        match self {
            Self::Deny { rule, .. } => Some(rule),
            _ => None,
        }
    }
}

/// The `[safety]` table of `.alembic/config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Extra safe commands: `"program"` or `"program subcommand"`.
    #[serde(alias = "safe_commands")]
    pub extra_safe_commands: Vec<String>,
    /// Extra write-protected paths for [`PathGuard`] (see [`crate::PathLimits::extra_protected`]).
    #[serde(alias = "protected_paths")]
    pub extra_protected_paths: Vec<String>,
}

/// Why a policy configuration was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The entry names a program that can run arbitrary code.
    #[error(
        "extra_safe_commands entry {entry:?} is rejected: {program} can run arbitrary code ({why}), so allowing it would allow everything"
    )]
    ExecCapable {
        /// Entry as written.
        entry: String,
        /// Program it names.
        program: String,
        /// How it runs code.
        why: &'static str,
    },
    /// The entry is not a program name or program plus one word.
    #[error(
        "extra_safe_commands entry {entry:?} is invalid: {why}; expected \"program\" or \"program subcommand\""
    )]
    InvalidEntry {
        /// Entry as written.
        entry: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The configuration file could not be read or parsed.
    #[error("cannot read safety config {path:?}: {message}")]
    Config {
        /// File path.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// Programs that run code given to them, and how. Config entries naming them are refused.
const EXEC_CAPABLE: &[(&str, &str)] = &[
    ("sh", "it is a shell"),
    ("bash", "it is a shell"),
    ("zsh", "it is a shell"),
    ("dash", "it is a shell"),
    ("ksh", "it is a shell"),
    ("fish", "it is a shell"),
    ("csh", "it is a shell"),
    ("tcsh", "it is a shell"),
    ("ash", "it is a shell"),
    ("python", "it is an interpreter"),
    ("node", "it is an interpreter"),
    ("nodejs", "it is an interpreter"),
    ("deno", "it is an interpreter"),
    ("bun", "it is an interpreter"),
    ("perl", "it is an interpreter"),
    ("ruby", "it is an interpreter"),
    ("php", "it is an interpreter"),
    ("lua", "it is an interpreter"),
    ("awk", "its programs can call system()"),
    ("gawk", "its programs can call system()"),
    ("env", "it runs any command"),
    ("sudo", "it runs any command as root"),
    ("doas", "it runs any command as root"),
    ("su", "it runs a shell as another user"),
    ("xargs", "it runs any command"),
    ("eval", "it runs its arguments"),
    ("exec", "it runs any command"),
    ("command", "it runs any command"),
    ("builtin", "it runs any builtin"),
    ("nohup", "it runs any command"),
    ("time", "it runs any command"),
    ("timeout", "it runs any command"),
    ("nice", "it runs any command"),
    ("ionice", "it runs any command"),
    ("setsid", "it runs any command"),
    ("stdbuf", "it runs any command"),
    ("watch", "it runs any command"),
    ("busybox", "it contains every tool"),
    ("toybox", "it contains every tool"),
    ("chroot", "it runs any command"),
    ("unshare", "it runs any command"),
    ("nsenter", "it runs any command"),
    ("strace", "it runs any command"),
    ("gdb", "it runs any command"),
    ("make", "Makefiles run commands"),
    ("npx", "it downloads and runs packages"),
    ("source", "it runs a script"),
    (".", "it runs a script"),
    ("ssh", "it runs commands on other hosts"),
    ("docker", "containers run any code"),
    ("podman", "containers run any code"),
];

/// Decides whether shell scripts may run.
#[derive(Debug, Clone, Default)]
pub struct CommandPolicy {
    extra: Vec<ExtraEntry>,
    /// Treat the kernel as having no Landlock, so the policy is the only layer.
    no_landlock: bool,
}

impl CommandPolicy {
    /// The default safe list only.
    pub fn new() -> Self {
        Self::default()
    }

    /// The default list plus configured entries; exec-capable entries are refused.
    pub fn from_config(config: &PolicyConfig) -> Result<Self, PolicyError> {
        let extra = config
            .extra_safe_commands
            .iter()
            .map(|e| parse_entry(e))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            extra,
            no_landlock: false,
        })
    }

    /// Decides as if the kernel had no Landlock (tests use it on kernels that have it):
    /// what only the sandbox could stop is refused instead (see [`Self::has_second_layer`]).
    pub fn assume_no_landlock(mut self) -> Self {
        self.no_landlock = true;
        self
    }

    /// Whether allowed commands also run under Landlock. Without it, the policy refuses
    /// what it cannot resolve inside the root itself: link-following recursion (the
    /// scan for outward links could race) and globs that may match `..`.
    pub fn has_second_layer(&self) -> bool {
        !self.no_landlock && crate::spawn::landlock_available()
    }

    /// Reads the `[safety]` table of `<root>/.alembic/config.toml` (absent file → defaults).
    pub fn load_config(root: &Path) -> Result<PolicyConfig, PolicyError> {
        let path = root.join(CONFIG_PATH);
        // Through the guard: a config linked out of the project is refused, never read.
        let text = match PathGuard::new(root).and_then(|g| g.read_text_if_exists(CONFIG_PATH)) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(PolicyConfig::default()),
            Err(e) => return Err(config_error(&path, e.to_string())),
        };
        #[derive(Deserialize)]
        struct File {
            #[serde(default)]
            safety: PolicyConfig,
        }
        let file: File = toml::from_str(&text).map_err(|e| config_error(&path, e.to_string()))?;
        Ok(file.safety)
    }

    /// Names on the default safe list.
    pub fn default_safe_list() -> Vec<&'static str> {
        safe::default_names()
    }

    /// Verdict for `script` run in the project root.
    pub fn evaluate(&self, script: &str, guard: &PathGuard) -> CommandVerdict {
        self.evaluate_in(script, guard, ".")
    }

    /// Verdict for `script` run in `cwd` (relative to the root, already confined).
    pub fn evaluate_in(&self, script: &str, guard: &PathGuard, cwd: &str) -> CommandVerdict {
        if script.trim().is_empty() {
            return needs("the command is empty");
        }
        let analysis = syntax::analyse(script);
        if let Some(denial) = deny::check(&analysis) {
            return CommandVerdict::Deny {
                reason: denial.reason,
                rule: denial.rule.to_owned(),
            };
        }
        if script.len() > MAX_SCRIPT_BYTES {
            return needs(format!(
                "the script is longer than {MAX_SCRIPT_BYTES} bytes"
            ));
        }
        if let Some(obstacle) = analysis.obstacles.first() {
            return needs(format!(
                "the script contains {obstacle}; only plain commands joined by &&, ||, ; and | run without approval"
            ));
        }
        if analysis.commands.is_empty() {
            return needs("the script contains no command");
        }
        let scope = Scope {
            guard,
            cwd,
            strict: !self.has_second_layer(),
        };
        for command in &analysis.commands {
            if let Err(reason) = safe::check(command, &self.extra, &scope) {
                return needs(reason);
            }
        }
        CommandVerdict::Allow
    }
}

fn needs(reason: impl Into<String>) -> CommandVerdict {
    CommandVerdict::NeedsApproval {
        reason: reason.into(),
    }
}

fn config_error(path: &Path, message: String) -> PolicyError {
    PolicyError::Config {
        path: path.display().to_string(),
        message,
    }
}

fn parse_entry(entry: &str) -> Result<ExtraEntry, PolicyError> {
    let invalid = |why| PolicyError::InvalidEntry {
        entry: entry.to_owned(),
        why,
    };
    let words: Vec<&str> = entry.split_whitespace().collect();
    let (program, first_arg) = match words.as_slice() {
        [program] => (*program, None),
        [program, sub] => (*program, Some((*sub).to_owned())),
        [] => return Err(invalid("it is empty")),
        _ => return Err(invalid("it has more than two words")),
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if let Some((p, why)) = EXEC_CAPABLE.iter().find(|(p, _)| *p == name || *p == stem) {
        return Err(exec_capable(entry, p, why));
    }
    let bare = program
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
    if !bare || program.contains('/') {
        return Err(invalid(
            "the program must be a bare name without paths, globs or shell syntax",
        ));
    }
    if program == "git"
        && first_arg
            .as_deref()
            .is_none_or(|s| !git::GIT_READ_ONLY.contains(&s))
    {
        return Err(exec_capable(
            entry,
            "git",
            "write subcommands and repository config can run programs",
        ));
    }
    Ok(ExtraEntry {
        program: program.to_owned(),
        first_arg,
    })
}

fn exec_capable(entry: &str, program: &str, why: &'static str) -> PolicyError {
    PolicyError::ExecCapable {
        entry: entry.to_owned(),
        program: program.to_owned(),
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn exec_capable_entries_are_rejected_at_load() {
        for entry in [
            "sh",
            "bash -c",
            "python3",
            "python3.12",
            "node",
            "env",
            "sudo",
            "xargs",
            "eval",
            "/bin/sh",
            "busybox",
            "git push",
            "git",
        ] {
            let config = PolicyConfig {
                extra_safe_commands: vec![entry.to_owned()],
                ..PolicyConfig::default()
            };
            let err = CommandPolicy::from_config(&config).unwrap_err();
            assert!(
                matches!(err, PolicyError::ExecCapable { .. }),
                "{entry}: {err}"
            );
        }
    }

    #[test]
    fn plain_entries_load() {
        let config = PolicyConfig {
            extra_safe_commands: vec!["cargo check".into(), "jq".into()],
            ..PolicyConfig::default()
        };
        let policy = CommandPolicy::from_config(&config).unwrap();
        assert_eq!(policy.extra.len(), 2);
        let err = CommandPolicy::from_config(&PolicyConfig {
            extra_safe_commands: vec!["a b c".into()],
            ..PolicyConfig::default()
        })
        .unwrap_err();
        assert!(matches!(err, PolicyError::InvalidEntry { .. }));
    }
}
