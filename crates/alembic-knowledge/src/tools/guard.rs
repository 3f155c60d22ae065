//! `guard` tools: list the rules, check a file or snippet, recommend recipes, query recorded
//! violations. Files are read through PathGuard, like `read_project_file`.

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::Text;
use super::query::{line, summary_json};
use super::{Knowledge, bind};
use crate::guard::language_of;
use crate::model::{Entry, Status};
use crate::store::Filter;

/// Largest snippet `guard_check_code` accepts inline, in bytes.
const MAX_CODE_BYTES: usize = 512 * 1024;

fn yes() -> bool {
    true
}

fn fifty() -> i64 {
    50
}

fn ten() -> i64 {
    10
}

fn twenty() -> i64 {
    20
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct RulesArgs {
    #[serde(default)]
    language: Text,
    #[serde(rename = "includeBuiltIn", default = "yes")]
    include_builtin: bool,
    #[serde(default = "fifty")]
    #[schemars(range(min = 1, max = 500))]
    limit: i64,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct CheckArgs {
    /// file relative to the project root
    #[serde(default)]
    file_path: Text,
    /// snippet to check when no filePath is given
    code: Option<String>,
    /// defaults to the file's extension
    #[serde(default)]
    language: Text,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct RecommendArgs {
    #[serde(default)]
    language: Text,
    #[serde(default)]
    category: Text,
    #[serde(default = "ten")]
    #[schemars(range(min = 1, max = 50))]
    limit: i64,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ViolationArgs {
    #[serde(default)]
    file: Text,
    #[serde(default = "twenty")]
    #[schemars(range(min = 1, max = 200))]
    limit: i64,
    #[serde(default)]
    stats_only: bool,
}

fn guard_tool<A: alembic_tools::ToolArgs>(
    name: &str,
    description: &str,
    effect: EffectClass,
) -> alembic_tools::TypedTool<A> {
    ToolDefinition::typed::<A>(name, description, ToolModule::Guard, effect)
}

pub(crate) fn tools(state: &Knowledge) -> Vec<ToolDefinition> {
    vec![
        bind(
            guard_tool::<RulesArgs>(
                "list_guard_rules",
                "List the guard rules (built-in and the project's .alembic/guard-rules.toml), \
                 optionally for one language.",
                EffectClass::ReadOnly,
            ),
            state,
            list_guard_rules,
        ),
        bind(
            guard_tool::<CheckArgs>(
                "guard_check_code",
                "Check a project file (filePath) or a code snippet (code + language) against the \
                 guard rules; returns each violation with line, rule, severity and a fix. The check \
                 is recorded for query_violations.",
                EffectClass::ReadsProjectFiles,
            ),
            state,
            guard_check_code,
        ),
        bind(
            guard_tool::<RecommendArgs>(
                "get_recommendations",
                "Recommend published recipes, most used and highest quality first, optionally for a \
                 language or category.",
                EffectClass::ReadOnly,
            ),
            state,
            get_recommendations,
        ),
        bind(
            guard_tool::<ViolationArgs>(
                "query_violations",
                "Recorded guard checks: totals (statsOnly), the checks of one file, or the latest.",
                EffectClass::ReadOnly,
            ),
            state,
            query_violations,
        ),
    ]
}

fn list_guard_rules(
    s: &Knowledge,
    args: RulesArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let rules = s.kb.guard_rules(&s.safety.guard)?;
    let include_builtin = args.include_builtin;
    let limit = args.limit.clamp(1, 500) as usize;
    let selected: Vec<_> = rules
        .for_language(args.language.get())
        .into_iter()
        .filter(|r| include_builtin || r.spec.source != "built-in")
        .collect();
    let total = selected.len();
    let shown: Vec<_> = selected
        .into_iter()
        .take(limit)
        .map(|r| r.spec.clone())
        .collect();
    let mut text = format!("{total} rule(s)\n");
    for r in &shown {
        text.push_str(&format!(
            "  {} [{}] ({}) {}: {}\n",
            r.id,
            r.severity.as_str(),
            r.languages.join(","),
            r.source,
            r.description
        ));
    }
    Ok(ToolOutput::new(
        json!({"total": total, "rules": shown}),
        text.trim_end(),
    ))
}

/// What `guard_check_code` (and `analyze_code`) checks: the file at `file_path` (through
/// PathGuard), else the snippet `code`; returns the target's name, its code and language.
pub(super) fn check_target(
    s: &Knowledge,
    file_path: &Text,
    code: Option<String>,
    language: &Text,
) -> Result<(String, String, String), ToolError> {
    if let Some(path) = file_path.get() {
        let code = s.safety.guard.read_to_string(path).map_err(read_error)?;
        let lang = language
            .get()
            .map(str::to_ascii_lowercase)
            .unwrap_or_else(|| language_of(path).to_string());
        return Ok((path.to_string(), code, lang));
    }
    let code = code.ok_or_else(|| {
        ToolError::Invalid("give \"filePath\" (a project file) or \"code\" (a snippet)".into())
    })?;
    if code.len() > MAX_CODE_BYTES {
        return Err(ToolError::Invalid(format!(
            "code is {} bytes; at most {MAX_CODE_BYTES} are accepted",
            code.len()
        )));
    }
    let lang = language.get().unwrap_or("").to_ascii_lowercase();
    Ok(("(inline)".to_string(), code, lang))
}

fn guard_check_code(
    s: &Knowledge,
    args: CheckArgs,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let (target, code, language) = check_target(s, &args.file_path, args.code, &args.language)?;
    let rules = s.kb.guard_rules(&s.safety.guard)?;
    let violations = rules.check(&code, &language);
    let rules_applied = rules.for_language(Some(&language)).len();
    let run =
        s.kb.with(|kb| kb.record_guard_run(&target, &language, &violations, &ctx.caller.id))?;
    let mut text = format!(
        "{target} ({}): {} violation(s) from {rules_applied} rule(s)\n",
        if language.is_empty() {
            "language unknown"
        } else {
            &language
        },
        violations.len()
    );
    for v in &violations {
        text.push_str(&format!(
            "  line {} [{}] {}: {} — `{}`",
            v.line,
            v.severity.as_str(),
            v.rule_id,
            v.message,
            v.snippet
        ));
        if let Some(fix) = &v.fix_suggestion {
            text.push_str(&format!(" (fix: {fix})"));
        }
        text.push('\n');
    }
    let data = json!({"target": target, "language": language, "violationCount": violations.len(),
        "violations": violations, "rulesApplied": rules_applied, "run": run});
    Ok(ToolOutput::new(data, text.trim_end()))
}

/// A PathGuard refusal stays a refusal; a missing file is "not found"; the rest failed.
fn read_error(e: alembic_safety::PathError) -> ToolError {
    match e {
        e if e.is_confinement() => ToolError::refused(e.rule(), e.to_string()),
        e @ alembic_safety::PathError::NotFound { .. } => ToolError::NotFound(e.to_string()),
        e => ToolError::failed(e.to_string()),
    }
}

fn rank(e: &Entry) -> f64 {
    let used = e.adoptions as f64 * 2.0 + e.applications as f64 + e.views as f64 / 10.0;
    (used / 10.0).min(1.0) * 0.6 + e.quality.unwrap_or(0.0) * 0.4
}

fn get_recommendations(
    s: &Knowledge,
    args: RecommendArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let filter = Filter {
        statuses: vec![Status::Published],
        language: args.language.get().map(String::from),
        category: args.category.get().map(String::from),
        limit: 100_000,
        ..Filter::default()
    };
    let mut recipes = s.kb.with(|kb| kb.list(&filter))?;
    recipes.sort_by(|a, b| rank(b).total_cmp(&rank(a)).then(a.id.cmp(&b.id)));
    recipes.truncate(args.limit.clamp(1, 50) as usize);
    let mut text = format!("{} recommendation(s)\n", recipes.len());
    for e in &recipes {
        text.push_str(&line(e, Some(rank(e))));
    }
    let items: Vec<Value> = recipes
        .iter()
        .map(|e| summary_json(e, Some((rank(e) * 100.0).round() / 100.0)))
        .collect();
    Ok(ToolOutput::new(
        json!({"items": items, "total": items.len()}),
        text.trim_end(),
    ))
}

fn query_violations(
    s: &Knowledge,
    args: ViolationArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let stats = s.kb.with(|kb| kb.guard_stats())?;
    let mut text = format!(
        "{} check(s), {} violation(s) in {} file(s)\n",
        stats.runs, stats.violations, stats.files_with_violations
    );
    if args.stats_only {
        for (rule, n) in &stats.by_rule {
            text.push_str(&format!("  {rule}: {n}\n"));
        }
        return Ok(ToolOutput::new(json!({"stats": stats}), text.trim_end()));
    }
    let file = args.file.get();
    let limit = args.limit.clamp(1, 200) as usize;
    let runs = s.kb.with(|kb| kb.guard_runs(file, limit))?;
    for r in &runs {
        text.push_str(&format!(
            "  run {} {} ({}): {} violation(s)\n",
            r.run, r.target, r.checked_by, r.violation_count
        ));
        for v in r.violations.iter().take(10) {
            text.push_str(&format!(
                "    line {} [{}] {}\n",
                v.line,
                v.severity.as_str(),
                v.rule_id
            ));
        }
    }
    Ok(ToolOutput::new(
        json!({"stats": stats, "file": file, "runs": runs}),
        text.trim_end(),
    ))
}
