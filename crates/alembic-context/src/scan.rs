//! `collect_scan_recipe` (module scan-recipe): validates a recipe a scan found and collects it
//! into the calling run's [`crate::RunResults`], refusing a second recipe with the same title
//! or trigger. The reference collected nothing itself (the orchestrator fished recipes out of
//! the tool-call log afterwards); here the run holds them, per run, never globally.
//!
//! A refused recipe is answered like a refused submission (`"status": "rejected"` with every
//! problem listed), so SubmitDedup and the exploration tracker treat it as not submitted.

use std::sync::Arc;

use alembic_tools::{EffectClass, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::middleware::LoopDirectory;

/// Fewest non-blank characters a core code skeleton must have.
const MIN_CORE_CODE: usize = 10;

/// The recipe kinds.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Rule,
    Pattern,
    Fact,
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
struct Content {
    /// explanation: a close-up of how this project does it, with a code block
    markdown: String,
    /// why the project does it this way
    rationale: String,
    /// the code pattern
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pattern: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Reasoning {
    /// why this is the project's standard
    why_standard: String,
    /// project files it was found in (at least one)
    sources: Vec<String>,
    /// 0 to 1 (0.8 when left out)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    confidence: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ScanRecipeArgs {
    /// short, specific title naming the project's own types
    title: String,
    /// language of the code
    language: String,
    /// one sentence: what this is
    description: String,
    content: Content,
    kind: Kind,
    /// "@kebab-case" shortcut
    trigger: String,
    /// imperative: what to do
    do_clause: String,
    /// 3-8 line code skeleton
    core_code: String,
    reasoning: Reasoning,
    /// what not to do
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dont_clause: Option<String>,
    /// when it applies
    #[serde(default, skip_serializing_if = "Option::is_none")]
    when_clause: Option<String>,
    /// import lines the code needs
    #[serde(default, skip_serializing_if = "Option::is_none")]
    headers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage_guide: Option<String>,
    /// View, Service, Network, Storage, Utility, ... ("Utility" when left out)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    category: Option<String>,
    /// code-pattern, architecture, best-practice, ... ("code-pattern" when left out)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    knowledge_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tags: Option<Vec<String>>,
    /// beginner, intermediate or advanced ("intermediate" when left out)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    complexity: Option<String>,
    /// universal, project-specific or target-specific ("project-specific" when left out)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
}

/// The `collect_scan_recipe` tool, bound to the directory runs attach to.
pub(crate) fn collect_scan_recipe(loops: Arc<LoopDirectory>) -> ToolDefinition {
    ToolDefinition::typed::<ScanRecipeArgs>(
        "collect_scan_recipe",
        "Collect a recipe this scan found into the run's results: a title, a close-up \
         markdown with rationale, the core code, an @trigger, a do-clause and the reasoning \
         with its source files. Refused with every problem listed when invalid, or when this \
         run already collected a recipe with the same title or trigger.",
        ToolModule::ScanRecipe,
        EffectClass::WritesMemory,
    )
    .handler(loops, |loops, args, ctx| async move {
        let memory = loops.get(&ctx.caller.id).ok_or_else(|| {
            ToolError::failed(
                "there is no run to collect into: collect_scan_recipe works only inside an \
                 agent run (a scan)",
            )
        })?;
        let problems = problems(&args);
        if !problems.is_empty() {
            return Ok(rejected("validation_failed", problems));
        }
        let (title, trigger) = (args.title.trim().to_string(), args.trigger.trim().to_string());
        let recipe = with_defaults(args);
        match memory.results.collect_recipe(&title, &trigger, recipe.clone()) {
            Ok(count) => Ok(ToolOutput::new(
                json!({"status": "collected", "title": title, "recipe": recipe, "collected": count}),
                format!("collected \"{title}\" ({count} in this run)"),
            )),
            Err(dup) => Ok(rejected("duplicate", vec![dup.to_string()])),
        }
    })
}

/// Every problem of `args`, empty when the recipe may be collected.
fn problems(args: &ScanRecipeArgs) -> Vec<String> {
    let mut p = Vec::new();
    let mut need = |value: &str, what: &str| {
        if value.trim().is_empty() {
            p.push(format!("{what} is empty"));
        }
    };
    need(&args.title, "title");
    need(&args.content.markdown, "content.markdown");
    need(&args.content.rationale, "content.rationale");
    need(&args.reasoning.why_standard, "reasoning.whyStandard");
    need(&args.do_clause, "doClause");
    let trigger = args.trigger.trim();
    if !trigger.starts_with('@') || trigger.len() < 2 {
        p.push(format!(
            "trigger \"{trigger}\" must start with '@' and name the recipe, e.g. @retry-policy"
        ));
    }
    let code_chars = args
        .core_code
        .chars()
        .filter(|c| !c.is_whitespace())
        .count();
    if code_chars < MIN_CORE_CODE {
        p.push(format!(
            "coreCode has {code_chars} non-blank characters; at least {MIN_CORE_CODE} are needed"
        ));
    }
    if args.reasoning.sources.iter().all(|s| s.trim().is_empty()) {
        p.push("reasoning.sources is empty: list the project files this was found in".into());
    }
    for s in &args.reasoning.sources {
        if s.starts_with('/') || s.split(['/', '\\']).any(|part| part == "..") {
            p.push(format!(
                "source \"{s}\" is not a project-relative path (no leading '/', no '..')"
            ));
        }
    }
    p
}

/// The recipe as collected: the arguments with the reference's defaults filled in.
fn with_defaults(mut args: ScanRecipeArgs) -> Value {
    let fill = |v: &mut Option<String>, default: &str| {
        if v.as_deref().is_none_or(|s| s.trim().is_empty()) {
            *v = Some(default.to_string());
        }
    };
    fill(&mut args.category, "Utility");
    fill(&mut args.knowledge_type, "code-pattern");
    fill(&mut args.complexity, "intermediate");
    fill(&mut args.scope, "project-specific");
    args.reasoning.confidence = Some(args.reasoning.confidence.unwrap_or(0.8).clamp(0.0, 1.0));
    args.title = args.title.trim().to_string();
    args.trigger = args.trigger.trim().to_string();
    serde_json::to_value(&args).unwrap_or(Value::Null)
}

fn rejected(reason: &str, errors: Vec<String>) -> ToolOutput {
    let text = format!("rejected ({reason}): {}", errors.join("; "));
    let data = json!({"status": "rejected", "reason": reason, "error": errors.join("; "),
        "errors": errors, "hint": "fix the problems and collect the recipe again"});
    ToolOutput::new(data, text)
}
