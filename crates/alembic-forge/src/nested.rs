//! Turning the outcome of a nested pipeline call into a handler result.

use alembic_tools::{OutcomeStatus, ToolError, ToolOutcome, ToolOutput};

/// The nested call's output, or its failure as a [`ToolError`] that names the inner tool.
pub fn outcome_to_result(outcome: ToolOutcome) -> Result<ToolOutput, ToolError> {
    if outcome.is_ok() {
        return Ok(outcome
            .output
            .unwrap_or_else(|| ToolOutput::json(serde_json::Value::Null)));
    }
    let error = outcome.error.unwrap_or_else(|| "no detail".into());
    let tool = outcome.tool;
    Err(match outcome.status {
        OutcomeStatus::Blocked => ToolError::Refused {
            rule: outcome.rule.unwrap_or_else(|| "unknown".into()),
            reason: format!("nested call to \"{tool}\": {error}"),
        },
        OutcomeStatus::InvalidArguments => {
            ToolError::Invalid(format!("nested call to \"{tool}\": {error}"))
        }
        OutcomeStatus::Cancelled => ToolError::Cancelled,
        status => ToolError::Failed(format!(
            "nested call to \"{tool}\" ended {}: {error}",
            status.as_str()
        )),
    })
}
