//! `guard` tools: list the rules, check a file or snippet, recommend recipes, query recorded
//! violations. Files are read through PathGuard, like `read_project_file`.

use std::sync::Arc;

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde_json::{Value, json};

use super::args::{bool_arg, first_str, opt_str, usize_arg};
use super::query::{line, summary_json};
use super::{KnowledgeService, ServiceCache, file_guard, tool};
use crate::guard::language_of;
use crate::model::{Entry, Status};
use crate::store::Filter;

/// Largest snippet `guard_check_code` accepts inline, in bytes.
const MAX_CODE_BYTES: usize = 512 * 1024;

pub(crate) fn tools(cache: &Arc<ServiceCache>) -> Vec<ToolDefinition> {
    let g = |name, desc, schema, effect, body| {
        tool(cache, name, desc, schema, ToolModule::Guard, effect, body)
    };
    vec![
        g(
            "list_guard_rules",
            "List the guard rules (built-in and the project's .alembic/guard-rules.toml), \
           optionally for one language.",
            json!({"type": "object", "properties": {
              "language": {"type": "string"},
              "includeBuiltIn": {"type": "boolean", "default": true},
              "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}}}),
            EffectClass::ReadOnly,
            list_guard_rules,
        ),
        g(
            "guard_check_code",
            "Check a project file (filePath) or a code snippet (code + language) against the \
           guard rules; returns each violation with line, rule, severity and a fix. The check \
           is recorded for query_violations.",
            json!({"type": "object", "properties": {
              "filePath": {"type": "string", "description": "file relative to the project root"},
              "code": {"type": "string", "description": "snippet to check when no filePath is given"},
              "language": {"type": "string", "description": "defaults to the file's extension"}}}),
            EffectClass::ReadsProjectFiles,
            guard_check_code,
        ),
        g(
            "get_recommendations",
            "Recommend published recipes, most used and highest quality first, optionally for a \
           language or category.",
            json!({"type": "object", "properties": {
              "language": {"type": "string"}, "category": {"type": "string"},
              "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}}}),
            EffectClass::ReadOnly,
            get_recommendations,
        ),
        g(
            "query_violations",
            "Recorded guard checks: totals (statsOnly), the checks of one file, or the latest.",
            json!({"type": "object", "properties": {
              "file": {"type": "string"},
              "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20},
              "statsOnly": {"type": "boolean", "default": false}}}),
            EffectClass::ReadOnly,
            query_violations,
        ),
    ]
}

fn list_guard_rules(
    s: &KnowledgeService,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let rules = s.guard_rules(ctx)?;
    let include_builtin = bool_arg(args, "includeBuiltIn", true);
    let limit = usize_arg(args, "limit", 50, 500);
    let selected: Vec<_> = rules
        .for_language(opt_str(args, "language"))
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

fn guard_check_code(
    s: &KnowledgeService,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let (target, code, language) = match first_str(args, &["filePath", "file", "path"]) {
        Some(path) => {
            let guard = file_guard(ctx, s)?;
            let code = guard.read_to_string(path).map_err(read_error)?;
            let lang = opt_str(args, "language")
                .map(str::to_ascii_lowercase)
                .unwrap_or_else(|| language_of(path).to_string());
            (path.to_string(), code, lang)
        }
        None => {
            let code = args.get("code").and_then(Value::as_str).ok_or_else(|| {
                ToolError::Invalid(
                    "give \"filePath\" (a project file) or \"code\" (a snippet)".into(),
                )
            })?;
            if code.len() > MAX_CODE_BYTES {
                return Err(ToolError::Invalid(format!(
                    "code is {} bytes; at most {MAX_CODE_BYTES} are accepted",
                    code.len()
                )));
            }
            (
                "(inline)".to_string(),
                code.to_string(),
                opt_str(args, "language").unwrap_or("").to_ascii_lowercase(),
            )
        }
    };
    let rules = s.guard_rules(ctx)?;
    let violations = rules.check(&code, &language);
    let rules_applied = rules.for_language(Some(&language)).len();
    let run = s.with(|kb| kb.record_guard_run(&target, &language, &violations, &ctx.caller.id))?;
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
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let filter = Filter {
        statuses: vec![Status::Published],
        language: opt_str(args, "language").map(String::from),
        category: opt_str(args, "category").map(String::from),
        limit: 100_000,
        ..Filter::default()
    };
    let mut recipes = s.with(|kb| kb.list(&filter))?;
    recipes.sort_by(|a, b| rank(b).total_cmp(&rank(a)).then(a.id.cmp(&b.id)));
    recipes.truncate(usize_arg(args, "limit", 10, 50));
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
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let stats = s.with(|kb| kb.guard_stats())?;
    let mut text = format!(
        "{} check(s), {} violation(s) in {} file(s)\n",
        stats.runs, stats.violations, stats.files_with_violations
    );
    if bool_arg(args, "statsOnly", false) {
        for (rule, n) in &stats.by_rule {
            text.push_str(&format!("  {rule}: {n}\n"));
        }
        return Ok(ToolOutput::new(json!({"stats": stats}), text.trim_end()));
    }
    let file = opt_str(args, "file");
    let runs = s.with(|kb| kb.guard_runs(file, usize_arg(args, "limit", 20, 200)))?;
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
