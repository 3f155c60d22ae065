//! `set_guard_overrides`: the operator tool behind `alembic knowledge guard-overrides
//! set|clear` (caller `cli`, audited; in no agent preset). It stores the text of a guard
//! rules file as the knowledge base's guard-rule overrides, layered between the built-ins and
//! the project's `.alembic/guard-rules.toml` by every guard check
//! ([`KnowledgeService::guard_rules`]): in the team's store when a team is configured, so
//! every checkout of the team checks with them, else in the project database. The text is
//! checked as the loader reads it before anything is stored.

use std::sync::Arc;

use alembic_tools::{EffectClass, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::json;

use super::KnowledgeService;
use crate::guard::{GuardRules, STORED_RULES_ORIGIN};

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OverridesArgs {
    /// The text of a guard rules file (as .alembic/guard-rules.toml: [[rule]] tables and a
    /// disabled list); it replaces the stored overrides
    #[schemars(length(max = 1048576))]
    rules: Option<String>,
    /// Remove the stored overrides instead (leave rules out)
    #[serde(default)]
    clear: bool,
}

/// The tool (see the module docs).
pub(super) fn overrides_tool(kb: Arc<KnowledgeService>) -> ToolDefinition {
    ToolDefinition::typed::<OverridesArgs>(
        "set_guard_overrides",
        "Store guard-rule overrides (the text of a rules file: [[rule]] tables and a disabled \
         list) in the knowledge base, the team's when a team is configured, or remove them \
         with clear. Every guard check applies them over the built-in rules and under the \
         project's .alembic/guard-rules.toml. The text is validated before it is stored.",
        ToolModule::Infrastructure,
        EffectClass::WritesKnowledge,
    )
    .handler(kb, |kb, args: OverridesArgs, ctx| async move {
        set(&kb, args, &ctx.caller.id)
    })
}

fn set(kb: &KnowledgeService, args: OverridesArgs, by: &str) -> Result<ToolOutput, ToolError> {
    let rules = match (args.rules, args.clear) {
        (Some(_), true) => {
            return Err(ToolError::Invalid(
                "give either rules or clear, not both".into(),
            ));
        }
        (None, false) => {
            return Err(ToolError::Invalid(
                "give rules (the text of a rules file) or clear: true".into(),
            ));
        }
        (rules, _) => rules,
    };
    let count = match &rules {
        Some(text) => Some(
            GuardRules::check_file(text, STORED_RULES_ORIGIN)
                .map_err(|e| ToolError::Invalid(e.to_string()))?,
        ),
        None => None,
    };
    let store = kb.with(|b| {
        b.set_guard_overrides(rules.as_deref(), by)?;
        Ok(b.describe())
    })?;
    let text = match count {
        Some(n) => format!("stored guard-rule overrides ({n} rules) in {store}"),
        None => format!("removed the guard-rule overrides from {store}"),
    };
    Ok(ToolOutput::new(
        json!({"store": store, "rules": count, "cleared": count.is_none(), "by": by}),
        text,
    ))
}
