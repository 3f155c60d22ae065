//! `lifecycle` tools (submit, review, publish, deprecate, revise, usage, quality, validation,
//! feedback) and the composite `submit_with_check`.
//!
//! Agents propose: submissions enter review as `submitted`; approving, publishing and
//! deprecating are separate writes that presets grant only to reviewers. A rejected
//! submission answers `status: "rejected"` (what the SubmitDedup middleware reads), so the
//! loop may correct and resubmit it.

use std::sync::Arc;

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde_json::{Map, Value, json};

use super::args::{
    bool_arg, entry_id, f64_arg, new_entry, opt_str, req_str, submission_properties, usize_arg,
};
use super::query::line;
use super::{KnowledgeService, ServiceCache, tool};
use crate::error::KnowledgeError;
use crate::model::{Entry, NewEntry, Status};
use crate::quality::{UsageCounts, score, score_entry, validate};
use crate::similar::{DUPLICATE_THRESHOLD, find_similar};
use crate::store::{Filter, Usage};

pub(crate) fn tools(cache: &Arc<ServiceCache>) -> Vec<ToolDefinition> {
    let w = |name, desc, schema, body| {
        tool(
            cache,
            name,
            desc,
            schema,
            ToolModule::Lifecycle,
            EffectClass::WritesKnowledge,
            body,
        )
    };
    let r = |name, desc, schema, body| {
        tool(
            cache,
            name,
            desc,
            schema,
            ToolModule::Lifecycle,
            EffectClass::ReadOnly,
            body,
        )
    };
    vec![
        w(
            "submit_knowledge",
            "Submit a knowledge candidate for review: a title, content (markdown, code pattern, \
           rationale) and the project files it was found in. Refused with the reasons when \
           invalid or when an entry with the same title exists.",
            submit_schema(json!({"draft": {"type": "boolean", "default": false,
              "description": "store as draft instead of submitting for review"}})),
            submit_knowledge,
        ),
        tool(
            cache,
            "submit_with_check",
            "Like submit_knowledge, but first compares the candidate with existing knowledge and \
           refuses it when one is at least `threshold` similar (listing the similar entries).",
            submit_schema(
                json!({"threshold": {"type": "number", "minimum": 0.1, "maximum": 1, "default": DUPLICATE_THRESHOLD}}),
            ),
            ToolModule::Composite,
            EffectClass::WritesKnowledge,
            submit_with_check,
        ),
        w(
            "approve_candidate",
            "Approve a submitted candidate (submitted → approved).",
            id_schema(json!({"note": {"type": "string"}}), &["candidateId"]),
            approve_candidate,
        ),
        w(
            "reject_candidate",
            "Reject a candidate with a reason (submitted|approved → rejected).",
            id_schema(
                json!({"reason": {"type": "string", "minLength": 1}}),
                &["candidateId", "reason"],
            ),
            reject_candidate,
        ),
        w(
            "publish_recipe",
            "Publish an approved candidate as a recipe (approved → published).",
            id_schema(json!({}), &["recipeId"]),
            publish_recipe,
        ),
        w(
            "deprecate_recipe",
            "Deprecate a published recipe with a reason (published → deprecated).",
            id_schema(
                json!({"reason": {"type": "string", "minLength": 1}}),
                &["recipeId", "reason"],
            ),
            deprecate_recipe,
        ),
        w(
            "update_recipe",
            "Revise a candidate that is draft, submitted or rejected; by default it goes (back) \
           to review. Published recipes change only through propose_evolution.",
            id_schema(
                json!({"updates": {"type": "object", "description": "fields to change, as in submit_knowledge"},
                           "resubmit": {"type": "boolean", "default": true}}),
                &["recipeId", "updates"],
            ),
            update_recipe,
        ),
        w(
            "record_usage",
            "Count a use of a recipe: adoption (used as a model), application (applied to code) or view.",
            id_schema(
                json!({"type": {"type": "string", "enum": ["adoption", "application", "view"], "default": "adoption"}}),
                &["recipeId"],
            ),
            record_usage,
        ),
        r(
            "quality_score",
            "Score a stored entry (recipeId) or a candidate object: completeness, depth, code, \
           evidence and engagement, an overall value and a grade A–F.",
            id_schema(
                json!({"recipe": {"type": "object", "description": "a candidate, as in submit_knowledge"}}),
                &[],
            ),
            quality_score,
        ),
        r(
            "validate_candidate",
            "Check a candidate without storing it: errors (would be refused), warnings, quality, \
           and whether its title is taken.",
            json!({"type": "object", "properties": {"candidate": {"type": "object"}}, "required": ["candidate"]}),
            validate_candidate,
        ),
        r(
            "get_feedback_stats",
            "Usage of published recipes: totals, the most used recipes, and one recipe's counters.",
            json!({"type": "object", "properties": {
              "recipeId": {"type": "string"},
              "topN": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}}}),
            get_feedback_stats,
        ),
    ]
}

fn submit_schema(extra: Value) -> Value {
    let mut props = submission_properties();
    if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    json!({"type": "object", "properties": props, "required": ["title", "content"]})
}

fn id_schema(extra: Value, required: &[&str]) -> Value {
    let mut props = json!({
        "recipeId": {"type": "string", "description": "entry id"},
        "candidateId": {"type": "string", "description": "entry id"}
    });
    if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    // Either id name is accepted, so neither is listed as required; the handler asks for one.
    let required: Vec<&str> = required
        .iter()
        .copied()
        .filter(|r| !r.ends_with("Id"))
        .collect();
    json!({"type": "object", "properties": props, "required": required})
}

/// The answer to a refused submission.
fn rejected(reason: &str, errors: Vec<String>, warnings: Vec<String>, extra: Value) -> ToolOutput {
    let mut data = json!({
        "status": "rejected", "reason": reason, "error": errors.join("; "),
        "errors": errors, "warnings": warnings,
        "hint": "fix the errors and submit again",
    });
    if let (Some(d), Some(e)) = (data.as_object_mut(), extra.as_object()) {
        d.extend(e.clone());
    }
    let mut text = format!("rejected ({reason}): {}", errors.join("; "));
    if !warnings.is_empty() {
        text.push_str(&format!("\nwarnings: {}", warnings.join("; ")));
    }
    ToolOutput::new(data, text)
}

/// Validates and stores `new`; a duplicate title or invalid fields become a rejection.
fn store_candidate(
    s: &KnowledgeService,
    new: &NewEntry,
    status: Status,
    by: &str,
) -> Result<Result<Entry, ToolOutput>, ToolError> {
    let v = validate(new);
    if !v.is_valid() {
        return Ok(Err(rejected(
            "validation_failed",
            v.errors,
            v.warnings,
            json!({}),
        )));
    }
    let quality = score(new, UsageCounts::default()).overall;
    match s.with(|kb| match kb.create(new, status, by, Some(quality)) {
        Err(e @ KnowledgeError::DuplicateTitle { .. }) => Ok(Err(e)),
        other => other.map(Ok),
    })? {
        Ok(entry) => Ok(Ok(entry)),
        Err(e) => Ok(Err(rejected(
            "duplicate_title",
            vec![e.to_string()],
            v.warnings,
            json!({}),
        ))),
    }
}

fn submitted(entry: &Entry, warnings: Vec<String>, extra: Value) -> ToolOutput {
    let mut data = json!({
        "status": entry.status, "id": entry.id, "title": entry.title,
        "quality": entry.quality, "warnings": warnings,
    });
    if let (Some(d), Some(e)) = (data.as_object_mut(), extra.as_object()) {
        d.extend(e.clone());
    }
    let mut text = format!(
        "{}: {} \"{}\" (quality {:.2})",
        entry.status,
        entry.id,
        entry.title,
        entry.quality.unwrap_or(0.0)
    );
    if !warnings.is_empty() {
        text.push_str(&format!("\nwarnings: {}", warnings.join("; ")));
    }
    ToolOutput::new(data, text)
}

fn submit_knowledge(
    s: &KnowledgeService,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let new = new_entry(args)?;
    let status = if bool_arg(args, "draft", false) {
        Status::Draft
    } else {
        Status::Submitted
    };
    Ok(match store_candidate(s, &new, status, &ctx.caller.id)? {
        Ok(entry) => submitted(&entry, validate(&new).warnings, json!({})),
        Err(refusal) => refusal,
    })
}

fn submit_with_check(
    s: &KnowledgeService,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let new = new_entry(args)?;
    let threshold = f64_arg(args, "threshold", DUPLICATE_THRESHOLD).clamp(0.1, 1.0);
    let live = s.with(|kb| kb.live_entries())?;
    let dups = find_similar(&new, &live, threshold, 5, None);
    if let Some(top) = dups.first() {
        let error = format!(
            "\"{}\" is {:.0}% similar to {} \"{}\" ({})",
            new.title,
            top.similarity * 100.0,
            top.id,
            top.title,
            top.status
        );
        return Ok(rejected(
            "duplicate",
            vec![error],
            validate(&new).warnings,
            json!({"similar": dups, "highestSimilarity": top.similarity}),
        ));
    }
    Ok(
        match store_candidate(s, &new, Status::Submitted, &ctx.caller.id)? {
            Ok(entry) => {
                let related = find_similar(&new, &live, 0.5_f64.min(threshold), 5, Some(&entry.id));
                submitted(&entry, validate(&new).warnings, json!({"similar": related}))
            }
            Err(refusal) => refusal,
        },
    )
}

/// Applies one lifecycle move and reports it.
fn mv(
    s: &KnowledgeService,
    args: &Value,
    ctx: &ToolContext,
    to: Status,
    reason_key: Option<&str>,
) -> Result<ToolOutput, ToolError> {
    let id = entry_id(args)?;
    let reason = match reason_key {
        Some(k) if to.needs_reason() => Some(req_str(args, k)?),
        Some(k) => opt_str(args, k),
        None => None,
    };
    let before = s.with(|kb| kb.get(id))?.status;
    let entry = s.with(|kb| kb.transition(id, to, &ctx.caller.id, reason))?;
    let text = format!(
        "{} \"{}\": {before} -> {}",
        entry.id, entry.title, entry.status
    );
    Ok(ToolOutput::new(
        json!({"id": entry.id, "from": before, "status": entry.status, "by": ctx.caller.id, "reason": reason}),
        text,
    ))
}

fn approve_candidate(
    s: &KnowledgeService,
    a: &Value,
    c: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    mv(s, a, c, Status::Approved, Some("note"))
}
fn reject_candidate(
    s: &KnowledgeService,
    a: &Value,
    c: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    mv(s, a, c, Status::Rejected, Some("reason"))
}
fn publish_recipe(
    s: &KnowledgeService,
    a: &Value,
    c: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    mv(s, a, c, Status::Published, None)
}
fn deprecate_recipe(
    s: &KnowledgeService,
    a: &Value,
    c: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    mv(s, a, c, Status::Deprecated, Some("reason"))
}

/// An entry in the argument shape of a submission, so updates overlay it field by field.
fn as_submission(e: &Entry) -> Map<String, Value> {
    let mut m = e.extra.clone();
    let base = json!({
        "title": e.title, "description": e.description, "kind": e.kind,
        "knowledgeType": e.knowledge_type, "category": e.category, "language": e.language,
        "trigger": e.trigger, "tags": e.tags, "sources": e.sources,
        "content": {"markdown": e.content, "pattern": e.pattern, "rationale": e.rationale},
    });
    if let Some(b) = base.as_object() {
        m.extend(b.clone());
    }
    m
}

fn update_recipe(
    s: &KnowledgeService,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = entry_id(args)?;
    let updates = args
        .get("updates")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ToolError::Invalid("\"updates\" must be an object of fields to change".into())
        })?;
    let current = s.with(|kb| kb.get(id))?;
    let mut merged = as_submission(&current);
    for (k, v) in updates {
        match (k.as_str(), merged.get_mut("content"), v) {
            ("content", Some(Value::Object(old)), Value::Object(new)) => old.extend(new.clone()),
            _ => {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    let new = new_entry(&Value::Object(merged))?;
    let v = validate(&new);
    if !v.is_valid() {
        return Ok(rejected(
            "validation_failed",
            v.errors,
            v.warnings,
            json!({"id": id}),
        ));
    }
    let quality = score(&new, UsageCounts::default()).overall;
    let resubmit = bool_arg(args, "resubmit", true).then_some(ctx.caller.id.as_str());
    let entry = s.with(|kb| kb.update(id, &new, Some(quality), resubmit))?;
    let changed: Vec<&String> = updates.keys().collect();
    let text = format!(
        "updated {} \"{}\" ({}); now {}",
        entry.id,
        entry.title,
        changed
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        entry.status
    );
    Ok(ToolOutput::new(
        json!({"id": entry.id, "status": entry.status, "updated": changed, "quality": entry.quality, "warnings": v.warnings}),
        text,
    ))
}

fn record_usage(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = entry_id(args)?;
    let usage: Usage = opt_str(args, "type")
        .unwrap_or("adoption")
        .parse()
        .map_err(|e: KnowledgeError| ToolError::Invalid(e.to_string()))?;
    let e = s.with(|kb| kb.record_usage(id, usage))?;
    let text = format!(
        "{}: {} views, {} adoptions, {} applications",
        e.id, e.views, e.adoptions, e.applications
    );
    Ok(ToolOutput::new(
        json!({"recipeId": e.id, "views": e.views, "adoptions": e.adoptions, "applications": e.applications}),
        text,
    ))
}

fn quality_score(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let (target, q) = match args.get("recipe").filter(|r| r.is_object()) {
        Some(recipe) => (
            "candidate".to_string(),
            score(&new_entry(recipe)?, UsageCounts::default()),
        ),
        None => {
            let id = entry_id(args).map_err(|_| {
                ToolError::Invalid("give \"recipeId\" or a \"recipe\" object".into())
            })?;
            let e = s.with(|kb| kb.get(id))?;
            (e.id.clone(), score_entry(&e))
        }
    };
    let text = format!(
        "{target}: grade {} (overall {:.2}; completeness {:.2}, depth {:.2}, code {:.2}, evidence {:.2}, engagement {:.2})",
        q.grade, q.overall, q.completeness, q.depth, q.code, q.evidence, q.engagement
    );
    Ok(ToolOutput::new(
        json!({"target": target, "quality": q}),
        text,
    ))
}

fn validate_candidate(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let cand = args
        .get("candidate")
        .filter(|c| c.is_object())
        .ok_or_else(|| {
            ToolError::Invalid(
                "\"candidate\" must be an object with the fields of submit_knowledge".into(),
            )
        })?;
    let new = new_entry(cand)?;
    let mut v = validate(&new);
    let live = s.with(|kb| kb.live_entries())?;
    if let Some(same) = find_similar(&new, &live, 1.0, 1, None)
        .into_iter()
        .find(|x| x.same_title)
    {
        v.errors.push(format!(
            "an entry titled '{}' already exists ({}, {})",
            same.title, same.id, same.status
        ));
    }
    let q = score(&new, UsageCounts::default());
    let verdict = if v.is_valid() { "valid" } else { "invalid" };
    let mut text = format!("{verdict} (grade {}, overall {:.2})", q.grade, q.overall);
    for e in &v.errors {
        text.push_str(&format!("\nerror: {e}"));
    }
    for w in &v.warnings {
        text.push_str(&format!("\nwarning: {w}"));
    }
    Ok(ToolOutput::new(
        json!({"valid": v.is_valid(), "errors": v.errors, "warnings": v.warnings, "quality": q}),
        text,
    ))
}

fn usage_weight(e: &Entry) -> f64 {
    e.adoptions as f64 * 2.0 + e.applications as f64 + e.views as f64 / 10.0
}

fn get_feedback_stats(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let top_n = usize_arg(args, "topN", 10, 100);
    let filter = Filter {
        statuses: vec![Status::Published],
        limit: 100_000,
        ..Filter::default()
    };
    let mut recipes = s.with(|kb| kb.list(&filter))?;
    let sum = |f: fn(&Entry) -> u64| recipes.iter().map(f).sum::<u64>();
    let global = json!({
        "recipes": recipes.len(), "views": sum(|e| e.views), "adoptions": sum(|e| e.adoptions),
        "applications": sum(|e| e.applications),
        "usedRecipes": recipes.iter().filter(|e| usage_weight(e) > 0.0).count(),
    });
    recipes.retain(|e| usage_weight(e) > 0.0);
    recipes.sort_by(|a, b| {
        usage_weight(b)
            .total_cmp(&usage_weight(a))
            .then(a.id.cmp(&b.id))
    });
    recipes.truncate(top_n);
    let top: Vec<Value> = recipes.iter().map(|e| json!({"id": e.id, "title": e.title, "views": e.views, "adoptions": e.adoptions, "applications": e.applications})).collect();
    let mut text = format!(
        "{} published recipes: {} views, {} adoptions, {} applications\n",
        global["recipes"], global["views"], global["adoptions"], global["applications"]
    );
    for e in &recipes {
        text.push_str(&line(e, None));
    }
    let mut data = json!({"global": global, "topRecipes": top});
    if let Some(id) = opt_str(args, "recipeId") {
        let e = s.with(|kb| kb.get(id))?;
        data["recipeStats"] = json!({"id": e.id, "views": e.views, "adoptions": e.adoptions, "applications": e.applications, "quality": score_entry(&e)});
        text.push_str(&format!(
            "{}: {} views, {} adoptions, {} applications",
            e.id, e.views, e.adoptions, e.applications
        ));
    }
    Ok(ToolOutput::new(data, text.trim_end()))
}
