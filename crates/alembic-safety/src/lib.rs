//! Safety layer of Alembic: what tools may touch and what they may run.
//!
//! - [`PathGuard`] confines every file access of a tool beneath the project
//!   root with directory handles (`openat2` with `RESOLVE_BENEATH |
//!   RESOLVE_NO_MAGICLINKS`, or a component walk that holds directory
//!   handles). Writes refuse control paths (`.git/`, `.alembic/`, `.env*`,
//!   lock files), symlinks and hard links.
//! - [`CommandPolicy`] parses shell scripts with tree-sitter-bash and answers
//!   [`CommandVerdict::Allow`] only for plain read-only commands on the safe
//!   list, [`CommandVerdict::Deny`] (with a rule id) for catastrophic ones and
//!   [`CommandVerdict::NeedsApproval`] for everything else.
//! - [`spawn::run`] is the one function that starts processes: confined
//!   working directory, environment allow-list, no stdin, process group killed
//!   on timeout (clamped to 120 s), head+tail output truncation.
//! - [`tools`] registers `run_safe_command`, `write_project_file` and
//!   `get_environment_info` (module system-interaction), and
//!   [`PolicySafetyCheck`] plugs the policy into the pipeline's SafetyGate.
//!
//! ```
//! use alembic_safety::{Access, PathGuard, WriteMode};
//! # let dir = tempfile::tempdir()?;
//! let guard = PathGuard::new(dir.path())?;
//! guard.write("notes/todo.md", b"- ship\n", WriteMode::Replace)?;
//! assert_eq!(guard.read_to_string("notes/todo.md")?, "- ship\n");
//! assert!(guard.check("../outside", Access::Read).is_err());
//! assert!(guard.check(".git/config", Access::Write).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layers and their limits
//!
//! The command policy is an approval aid, not the boundary: it proves a
//! script harmless only in a narrow, parse-checked form and otherwise asks.
//! What bounds a command that was allowed is [`spawn::run`]: Landlock (where
//! the kernel has it, reported as `sandboxed`) limits writes to the root and a
//! fresh private temp directory (`TMPDIR`), and reads to those plus the system
//! program and library trees and a few start-up files (`ld.so.cache`,
//! `passwd`, `localtime`); `/tmp`, `/proc`, `/sys`, homes and toolchain caches
//! are unreadable, even through an in-root link. Before that the policy
//! resolves every operand physically (`link/..` as the kernel does), checks
//! globs that could match `..` and refuses link-following recursion while a
//! link in the project leads out. Known gaps, stated so nobody relies on them:
//! Landlock cannot forbid writes to `.git/` inside the root (the policy and
//! [`PathGuard`] do), and without Landlock (old kernels) only the policy
//! stands between an allowed read-only program and the rest of the file
//! system; the policy then refuses what only the sandbox could contain
//! (link-following recursion, globs that may match `..`) and the tool says so
//! once.

pub mod command;
pub mod path;
pub mod spawn;
pub mod tools;

pub use command::{CommandPolicy, CommandVerdict, PolicyConfig, PolicyError};
pub use path::{
    Access, DirEntryInfo, EntryKind, FileInfo, PathError, PathGuard, PathLimits, RemoveReport,
    Strategy, WriteMode, WriteReport,
};
pub use tools::{PolicySafetyCheck, SafetyServices, register_tools};
