//! Errors of reading, validating and writing skills.

use std::path::PathBuf;

/// What a valid skill name looks like, for error messages.
pub const NAME_RULE: &str = "a skill name is one kebab-case word such as \"retry-with-backoff\": lower-case letters, digits and single hyphens, starting with a letter, 3 to 64 characters";

#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("skill name \"{name}\" {reason}; {NAME_RULE}")]
    BadName { name: String, reason: &'static str },
    #[error("{origin}: {reason}")]
    Parse { origin: String, reason: String },
    #[error("skill \"{name}\": {reason}")]
    Invalid { name: String, reason: String },
    #[error("no skill named \"{name}\"; available skills: {available}")]
    NotFound { name: String, available: String },
    #[error(
        "skill \"{name}\" already exists in {path}; pass overwrite to replace it, or pick another name"
    )]
    Exists { name: String, path: PathBuf },
    #[error("\"{name}\" is the name of a built-in skill; a project skill needs another name")]
    Reserved { name: String },
    #[error(
        "{path} is a symbolic link; skills are written only to real directories beneath the project"
    )]
    Symlink { path: PathBuf },
    #[error("cannot read skill file {path}: {source}")]
    Confined {
        path: String,
        source: alembic_safety::PathError,
    },
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl SkillError {
    pub(crate) fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        SkillError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}
