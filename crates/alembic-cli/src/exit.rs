//! Exit codes: 0 ok, 1 tool error, 2 usage or validation error, 3 refused by policy.

/// The process exit status of a command that ran to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok,
    ToolError,
    Usage,
    Refused,
}

impl Exit {
    pub fn code(self) -> i32 {
        match self {
            Exit::Ok => 0,
            Exit::ToolError => 1,
            Exit::Usage => 2,
            Exit::Refused => 3,
        }
    }

    pub fn from_code(code: i32) -> Self {
        match code {
            0 => Exit::Ok,
            2 => Exit::Usage,
            3 => Exit::Refused,
            _ => Exit::ToolError,
        }
    }
}

/// A usage problem found after argument parsing (bad JSON, unknown preset...): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Prints an error chain and maps it to an exit code.
pub fn report(result: anyhow::Result<Exit>) -> i32 {
    match result {
        Ok(exit) => exit.code(),
        Err(err) => {
            eprintln!("error: {err:#}");
            if is_usage(&err) {
                Exit::Usage.code()
            } else {
                Exit::ToolError.code()
            }
        }
    }
}

/// Errors that are the user's input rather than a failure: a missing project, a bad config.
fn is_usage(err: &anyhow::Error) -> bool {
    use alembic_runtime::RuntimeError as R;
    err.downcast_ref::<UsageError>().is_some()
        || matches!(
            err.downcast_ref::<R>(),
            Some(R::NoProject { .. } | R::NotAProject { .. } | R::Config(_) | R::Preset(_))
        )
}
