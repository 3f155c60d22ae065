//! Errors of [`PathGuard`](crate::PathGuard).
//!
//! Invariant: no message depends on anything outside the project root. An
//! escape is reported the same way whether the outside target exists or not,
//! because resolution stops at the root boundary before the target is looked up.

use std::path::PathBuf;

/// Why a path was refused or an operation failed.
///
/// [`PathError::rule`] gives a stable identifier for audit records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The project root itself could not be opened.
    #[error("project root {root:?} cannot be opened as a directory: {source}")]
    Root {
        /// Root as given.
        root: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Empty or blank path argument.
    #[error("path is empty: give a path relative to the project root, such as \"src/main.rs\"")]
    Empty,
    /// The path contains a NUL byte.
    #[error("path {path:?} contains a NUL byte, which no file name may contain")]
    Nul {
        /// Path as given.
        path: String,
    },
    /// The path or one of its components is too long.
    #[error("path {path:?} is too long: at most {limit} bytes are accepted")]
    TooLong {
        /// Path as given (shortened).
        path: String,
        /// The limit that was exceeded.
        limit: usize,
    },
    /// The path leads outside the project root.
    #[error(
        "path {path:?} is outside the project root: only paths beneath the root are accepted \
         (relative, or absolute inside the root; \"~\" and \"$VAR\" are not expanded)"
    )]
    Escape {
        /// Path as given.
        path: String,
    },
    /// Nothing exists at this path inside the root.
    #[error("{path:?} does not exist inside the project root")]
    NotFound {
        /// Normalised relative path.
        path: String,
    },
    /// A component that must be a directory is not one.
    #[error("{path:?}: a component of the path is not a directory")]
    NotADirectory {
        /// Normalised relative path.
        path: String,
    },
    /// The target is a directory but a file was expected.
    #[error("{path:?} is a directory, not a file")]
    IsADirectory {
        /// Normalised relative path.
        path: String,
    },
    /// Reads and writes accept regular files only.
    #[error("{path:?} is a {kind}, not a regular file: only regular files can be read or written")]
    NotRegular {
        /// Normalised relative path.
        path: String,
        /// What it is instead (fifo, socket, device, symlink...).
        kind: &'static str,
    },
    /// Too many symbolic links, or a symlink loop.
    #[error("{path:?}: too many levels of symbolic links (a loop or a chain longer than {limit})")]
    SymlinkLoop {
        /// Normalised relative path.
        path: String,
        /// Expansion limit.
        limit: usize,
    },
    /// Writes never go through symbolic links.
    #[error(
        "{path:?} goes through a symbolic link: writes never follow symlinks; write to the real path instead"
    )]
    WriteThroughSymlink {
        /// Normalised relative path.
        path: String,
    },
    /// The file has more than one hard link, so writing could change a file elsewhere.
    #[error(
        "{path:?} has {links} hard links: writing it could modify a file outside the project, so it is refused"
    )]
    HardLink {
        /// Normalised relative path.
        path: String,
        /// Link count.
        links: u64,
    },
    /// The file is bigger than the configured cap.
    #[error("{path:?} is {size} bytes, over the {limit}-byte limit for this operation")]
    TooLarge {
        /// Normalised relative path.
        path: String,
        /// Size in bytes (at least this much).
        size: u64,
        /// Configured limit.
        limit: u64,
    },
    /// A scan of the tree stopped at its entry budget, so it proved nothing.
    #[error(
        "the project holds more than {limit} entries, too many to scan for symlinks that lead out"
    )]
    TreeTooLarge {
        /// Entries the scan may visit.
        limit: usize,
    },
    /// A control file (`.git/`, `.alembic/`, `.env*`, lock files...) may not be written.
    #[error("{path:?} is a protected control path ({reason}): agents may not write it")]
    Protected {
        /// Normalised relative path.
        path: String,
        /// Which rule matched.
        reason: String,
    },
    /// The operating system refused or failed the operation.
    #[error("{op} {path:?} failed: {source}")]
    Io {
        /// Operation name (open, read, write, rename...).
        op: &'static str,
        /// Normalised relative path.
        path: String,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl PathError {
    /// Stable identifier of the rule that refused the path, for audit records.
    pub fn rule(&self) -> &'static str {
        match self {
            Self::Root { .. } => "path.root",
            Self::Empty => "path.empty",
            Self::Nul { .. } => "path.nul",
            Self::TooLong { .. } => "path.too_long",
            Self::Escape { .. } => "path.escape",
            Self::NotFound { .. } => "path.not_found",
            Self::NotADirectory { .. } => "path.not_a_directory",
            Self::IsADirectory { .. } => "path.is_a_directory",
            Self::NotRegular { .. } => "path.not_regular",
            Self::SymlinkLoop { .. } => "path.symlink_loop",
            Self::WriteThroughSymlink { .. } => "path.write_through_symlink",
            Self::HardLink { .. } => "path.hard_link",
            Self::TooLarge { .. } => "path.too_large",
            Self::TreeTooLarge { .. } => "path.tree_too_large",
            Self::Protected { .. } => "path.protected",
            Self::Io { .. } => "path.io",
        }
    }

    /// True when the path was refused by confinement (as opposed to a missing
    /// file or an I/O failure).
    pub fn is_confinement(&self) -> bool {
        matches!(
            self,
            Self::Escape { .. }
                | Self::Nul { .. }
                | Self::SymlinkLoop { .. }
                | Self::WriteThroughSymlink { .. }
                | Self::HardLink { .. }
                | Self::Protected { .. }
                | Self::NotRegular { .. }
        )
    }
}
