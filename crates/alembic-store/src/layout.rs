//! What lives under `.alembic/`, and which of it a team shares through version control.
//!
//! Shared (committed): `config.toml`, `guard-rules.toml`, `skills/<name>/SKILL.md`,
//! `tools/<name>.json|toml` (saved forged tools). Local (ignored): the project database with
//! its WAL files (knowledge, memory, code index, sessions and the audit log all live in it),
//! temporary forged tools (`tools/.temporary/`, they expire) and half-written temporary files.
//!
//! [`GITIGNORE`] is the `.alembic/.gitignore` that `alembic init` writes; [`ensure_gitignore`]
//! writes it, and replaces the old generated one (`*`, which kept skills and saved tools out of
//! the repository) but never a file someone edited.

use std::path::{Path, PathBuf};

use crate::{STATE_DIR, StoreError};

/// Files and directories under `.alembic/` that a team shares, with what they hold.
pub const SHARED: &[(&str, &str)] = &[
    ("config.toml", "project configuration"),
    ("guard-rules.toml", "guard-rule overrides"),
    ("skills/", "skills (SKILL.md per skill)"),
    ("tools/", "saved forged tools"),
    ("forge/templates/", "the project's composition templates"),
];

/// Files and directories under `.alembic/` that stay on one machine, with what they hold.
pub const LOCAL: &[(&str, &str)] = &[
    (
        "alembic.db",
        "the project database: knowledge, memory, code index, sessions, audit log",
    ),
    (
        "alembic.db-*",
        "the database's WAL and shared-memory files, the audit key and the audit anchor",
    ),
    (
        "tools/.temporary/",
        "forged tools that are not saved yet (they expire)",
    ),
    ("*.tmp", "files being written"),
];

/// The `.alembic/.gitignore` written by `alembic init`: it ignores only [`LOCAL`].
pub const GITIGNORE: &str = "\
# Written by `alembic init`: ignores only what stays on this machine. The rest of .alembic/
# is shared with the team: config.toml, guard-rules.toml, skills/, tools/ (saved forged tools).

# the project database (knowledge, memory, code index, audit log) and its WAL files
/*.db
/*.db-*
# forged tools that are not saved yet (they expire)
/tools/.temporary/
# files being written
*.tmp
";

/// The `.alembic/.gitignore` that earlier versions of `alembic init` wrote.
pub const LEGACY_GITIGNORE: &str = "*\n";

/// What [`ensure_gitignore`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitignoreChange {
    /// There was none; [`GITIGNORE`] was written.
    Written,
    /// The old generated `*` was replaced by [`GITIGNORE`].
    Upgraded,
    /// The file is [`GITIGNORE`] already, or someone edited it; it was left alone.
    Kept,
}

/// Makes `<root>/.alembic/.gitignore` ignore only the local state: writes it when missing,
/// replaces it when it is exactly [`LEGACY_GITIGNORE`], and otherwise leaves it alone.
///
/// A `.gitignore` that is a link is left alone, neither read nor written through: it may point
/// anywhere. The file is replaced by renaming a new one over it, which never follows a link.
pub fn ensure_gitignore(root: &Path) -> Result<GitignoreChange, StoreError> {
    let dir = state_dir(root)?;
    let path = dir.join(".gitignore");
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(GitignoreChange::Kept);
    }
    let write = |change| {
        let tmp = dir.join(".gitignore.tmp");
        std::fs::write(&tmp, GITIGNORE)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map(|()| change)
            .map_err(|source| {
                let _ = std::fs::remove_file(&tmp);
                StoreError::Write {
                    path: path.clone(),
                    source,
                }
            })
    };
    match std::fs::read_to_string(&path) {
        Ok(text) if text == LEGACY_GITIGNORE => write(GitignoreChange::Upgraded),
        Ok(_) => Ok(GitignoreChange::Kept),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => write(GitignoreChange::Written),
        Err(source) => Err(StoreError::Write { path, source }),
    }
}

/// `<root>/.alembic`, created when missing. A link there (which a repository can ship) or a
/// file is refused: the database, keys and audit anchor must live inside the project.
pub fn state_dir(root: &Path) -> Result<PathBuf, StoreError> {
    let dir = root.join(STATE_DIR);
    if let Err(source) = std::fs::create_dir(&dir)
        && source.kind() != std::io::ErrorKind::AlreadyExists
    {
        return Err(StoreError::CreateDir { path: dir, source });
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|source| StoreError::CreateDir {
        path: dir.clone(),
        source,
    })?;
    if meta.file_type().is_symlink() {
        return Err(StoreError::Link { path: dir });
    }
    if !meta.is_dir() {
        return Err(StoreError::NotADirectory { path: dir });
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_upgrades_the_old_one_and_keeps_edited_ones() {
        let dir = tempfile::tempdir().unwrap();
        let ignore = dir.path().join(".alembic/.gitignore");
        std::fs::create_dir_all(ignore.parent().unwrap()).unwrap();
        assert_eq!(
            ensure_gitignore(dir.path()).unwrap(),
            GitignoreChange::Written
        );
        assert_eq!(std::fs::read_to_string(&ignore).unwrap(), GITIGNORE);
        assert_eq!(ensure_gitignore(dir.path()).unwrap(), GitignoreChange::Kept);

        std::fs::write(&ignore, LEGACY_GITIGNORE).unwrap();
        assert_eq!(
            ensure_gitignore(dir.path()).unwrap(),
            GitignoreChange::Upgraded
        );
        assert_eq!(std::fs::read_to_string(&ignore).unwrap(), GITIGNORE);

        std::fs::write(&ignore, "*\n!skills/\n").unwrap();
        assert_eq!(ensure_gitignore(dir.path()).unwrap(), GitignoreChange::Kept);
        assert_eq!(std::fs::read_to_string(&ignore).unwrap(), "*\n!skills/\n");
    }
}
