//! Errors of forging, loading and saving tools.

use std::path::PathBuf;

use alembic_tools::RegistryError;

use crate::sandbox::SandboxError;

#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error("composition \"{name}\" is invalid: {reason}")]
    InvalidSpec { name: String, reason: String },
    #[error("cannot parse the tool spec {path}: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error(
        "tool name \"{name}\" is taken by a built-in or saved tool; a forged tool never replaces one, pick another name"
    )]
    NameTaken { name: String },
    #[error(
        "no composition template matches the intent (templates: {known}); name one of their keywords, or add a template in .alembic/forge/templates/"
    )]
    NoTemplate { known: String },
    #[error("no composition was offered")]
    NoComposition,
    #[error("the tool registry of the forge was closed (the project runtime ended)")]
    RegistryClosed,
    #[error("no forged tool named \"{name}\"")]
    UnknownTool { name: String },
    #[error(
        "no existing tool matches the request well enough (best score {best:.2}, need {threshold:.2})"
    )]
    NoReuseMatch { best: f64, threshold: f64 },
    #[error(
        "generate mode is off; set ALEMBIC_ENABLE_FORGE_GENERATE=true or `[forge] generate = true` in .alembic/config.toml"
    )]
    GenerateDisabled,
    #[error("the generated tool is invalid: {reason}")]
    InvalidGenerated { reason: String },
    #[error("the generated tool failed {failed} of {total} test cases: {details}")]
    TestsFailed {
        failed: usize,
        total: usize,
        details: String,
    },
    #[error("no forge mode could serve the request: {reasons}")]
    Exhausted { reasons: String },
    #[error("the code generator failed: {0}")]
    Generator(String),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("cannot promote \"{name}\" to a skill: {reason}")]
    Skill { name: String, reason: String },
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}
