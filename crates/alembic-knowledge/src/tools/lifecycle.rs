//! `lifecycle` tools (review, publish, deprecate, revise, usage, quality, validation,
//! feedback), after the submit tools of [`super::submit`].
//!
//! Agents propose: submissions enter review as `submitted`; approving, publishing and
//! deprecating are separate writes that presets grant only to reviewers.

use alembic_tools::{
    EffectClass, ToolArgs, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput,
    TypedTool,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::args::{AnyObject, Submission, Text, entry_id};
use super::query::line;
use super::submit::rejected;
use super::{Knowledge, bind};
use crate::error::KnowledgeError;
use crate::model::{Entry, Status};
use crate::quality::{UsageCounts, score, score_entry, validate};
use crate::similar::find_similar;
use crate::store::{Filter, Usage};

/// The entry a lifecycle tool acts on. Either id name is accepted (and `id`), so neither is
/// listed as required; the handler asks for one.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EntryRef {
    /// entry id
    #[serde(default)]
    recipe_id: Text,
    /// entry id
    #[serde(default)]
    candidate_id: Text,
    #[serde(default)]
    #[schemars(skip)]
    id: Text,
}

impl EntryRef {
    fn id(&self) -> Result<&str, ToolError> {
        entry_id([&self.recipe_id, &self.candidate_id, &self.id])
    }
}

/// An entry and an optional note of the approval.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = []))]
struct ApproveArgs {
    #[serde(flatten)]
    entry: EntryRef,
    #[serde(default)]
    note: Text,
}

/// An entry to publish. A note is taken too, unlisted, so the CLI's `--reason` is recorded.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = []))]
struct PublishArgs {
    #[serde(flatten)]
    entry: EntryRef,
    #[serde(default)]
    #[schemars(skip)]
    note: Text,
}

/// An entry and the reason of the move (reject, deprecate).
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = ["reason"]))]
struct ReasonArgs {
    #[serde(flatten)]
    entry: EntryRef,
    #[serde(default)]
    #[schemars(length(min = 1))]
    reason: Text,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = ["updates"]))]
struct UpdateArgs {
    #[serde(flatten)]
    entry: EntryRef,
    /// fields to change, as in submit_knowledge
    #[schemars(with = "Option<AnyObject>")]
    updates: Option<Value>,
    #[serde(default = "yes")]
    resubmit: bool,
}

fn adoption() -> String {
    "adoption".into()
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = []))]
struct UsageArgs {
    #[serde(flatten)]
    entry: EntryRef,
    #[serde(rename = "type", default = "adoption")]
    #[schemars(extend("enum" = ["adoption", "application", "view"]))]
    usage: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = []))]
struct QualityArgs {
    #[serde(flatten)]
    entry: EntryRef,
    /// a candidate, as in submit_knowledge
    #[schemars(with = "Option<AnyObject>")]
    recipe: Option<Value>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = ["candidate"]))]
struct ValidateArgs {
    #[schemars(with = "Option<AnyObject>")]
    candidate: Option<Value>,
}

fn ten() -> i64 {
    10
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FeedbackArgs {
    #[serde(default)]
    recipe_id: Text,
    #[serde(default = "ten")]
    #[schemars(range(min = 1, max = 100))]
    top_n: i64,
}

fn lifecycle<A: ToolArgs>(name: &str, description: &str, effect: EffectClass) -> TypedTool<A> {
    ToolDefinition::typed::<A>(name, description, ToolModule::Lifecycle, effect)
}

/// Arguments of a plain lifecycle move: the entry, and the argument (with its name) that
/// says why.
trait MoveArgs: ToolArgs {
    fn parts(&self) -> (&EntryRef, &Text, &'static str);
}

impl MoveArgs for ApproveArgs {
    fn parts(&self) -> (&EntryRef, &Text, &'static str) {
        (&self.entry, &self.note, "note")
    }
}

impl MoveArgs for PublishArgs {
    fn parts(&self) -> (&EntryRef, &Text, &'static str) {
        (&self.entry, &self.note, "note")
    }
}

impl MoveArgs for ReasonArgs {
    fn parts(&self) -> (&EntryRef, &Text, &'static str) {
        (&self.entry, &self.reason, "reason")
    }
}

/// A tool that moves the entry to `to` (see [`mv`]).
fn move_tool<A: MoveArgs>(
    state: &Knowledge,
    name: &str,
    description: &str,
    to: Status,
) -> ToolDefinition {
    lifecycle::<A>(name, description, EffectClass::WritesKnowledge).handler(
        state.clone(),
        move |s, a, c| async move {
            let (entry, why, name) = a.parts();
            mv(&s, entry, &c, to, Some((why, name)))
        },
    )
}

pub(crate) fn tools(state: &Knowledge) -> Vec<ToolDefinition> {
    let w = EffectClass::WritesKnowledge;
    let r = EffectClass::ReadOnly;
    let mut tools = super::submit::tools(state);
    tools.extend([
        move_tool::<ApproveArgs>(
            state,
            "approve_candidate",
            "Approve a submitted candidate (submitted → approved).",
            Status::Approved,
        ),
        move_tool::<ReasonArgs>(
            state,
            "reject_candidate",
            "Reject a candidate with a reason (submitted|approved → rejected).",
            Status::Rejected,
        ),
        move_tool::<PublishArgs>(
            state,
            "publish_recipe",
            "Publish an approved candidate as a recipe (approved → published).",
            Status::Published,
        ),
        move_tool::<ReasonArgs>(
            state,
            "deprecate_recipe",
            "Deprecate a published recipe with a reason (published → deprecated).",
            Status::Deprecated,
        ),
        bind(
            lifecycle::<UpdateArgs>(
                "update_recipe",
                "Revise a candidate that is draft, submitted or rejected; by default it goes (back) \
                 to review. Published recipes change only through propose_evolution.",
                w,
            ),
            state,
            update_recipe,
        ),
        bind(
            lifecycle::<UsageArgs>(
                "record_usage",
                "Count a use of a recipe: adoption (used as a model), application (applied to code) or view.",
                w,
            ),
            state,
            record_usage,
        ),
        bind(
            lifecycle::<QualityArgs>(
                "quality_score",
                "Score a stored entry (recipeId) or a candidate object: completeness, depth, code, \
                 evidence and engagement, an overall value and a grade A–F.",
                r,
            ),
            state,
            quality_score,
        ),
        bind(
            lifecycle::<ValidateArgs>(
                "validate_candidate",
                "Check a candidate without storing it: errors (would be refused), warnings, quality, \
                 and whether its title is taken.",
                r,
            ),
            state,
            validate_candidate,
        ),
        bind(
            lifecycle::<FeedbackArgs>(
                "get_feedback_stats",
                "Usage of published recipes: totals, the most used recipes, and one recipe's counters.",
                r,
            ),
            state,
            get_feedback_stats,
        ),
    ]);
    tools
}

/// Applies one lifecycle move and reports it. `reason` is the argument (and its name) that
/// gives the why; it must not be blank where the target state needs a reason.
fn mv(
    s: &Knowledge,
    entry: &EntryRef,
    ctx: &ToolContext,
    to: Status,
    reason: Option<(&Text, &str)>,
) -> Result<ToolOutput, ToolError> {
    let id = entry.id()?;
    let reason = match reason {
        Some((text, name)) if to.needs_reason() => Some(text.required(name)?),
        Some((text, _)) => text.get(),
        None => None,
    };
    // the move applies to the entry as read here: if another reviewer moved it meanwhile,
    // this one fails with a conflict naming the entry instead of overriding their decision
    let read = s.kb.with(|kb| kb.get(id))?;
    let before = read.status;
    let entry =
        s.kb.with(|kb| kb.transition(id, to, &ctx.caller.id, reason, Some(read.version)))?;
    let text = format!(
        "{} \"{}\": {before} -> {}",
        entry.id, entry.title, entry.status
    );
    Ok(ToolOutput::new(
        json!({"id": entry.id, "from": before, "status": entry.status, "by": ctx.caller.id, "reason": reason}),
        text,
    ))
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
    s: &Knowledge,
    args: UpdateArgs,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = args.entry.id()?;
    let updates = args
        .updates
        .as_ref()
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ToolError::Invalid("\"updates\" must be an object of fields to change".into())
        })?;
    let current = s.kb.with(|kb| kb.get(id))?;
    let mut merged = as_submission(&current);
    for (k, v) in updates {
        match (k.as_str(), merged.get_mut("content"), v) {
            ("content", Some(Value::Object(old)), Value::Object(new)) => old.extend(new.clone()),
            _ => {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    let mut new = Submission::from_value(Value::Object(merged))?.into_new_entry()?;
    // A submission keeps only the extra fields it knows; an edit must not drop the others
    // (bootstrap's source, dimension and file:line evidence among them).
    for (k, v) in current.extra {
        new.extra.entry(k).or_insert(v);
    }
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
    let resubmit = args.resubmit.then_some(ctx.caller.id.as_str());
    let entry =
        s.kb.with(|kb| kb.update(id, &new, Some(quality), resubmit, Some(current.version)))?;
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

fn record_usage(s: &Knowledge, args: UsageArgs, _: &ToolContext) -> Result<ToolOutput, ToolError> {
    let id = args.entry.id()?;
    let usage: Usage = Text::from(args.usage.as_str())
        .get()
        .unwrap_or("adoption")
        .parse()
        .map_err(|e: KnowledgeError| ToolError::Invalid(e.to_string()))?;
    let e = s.kb.with(|kb| kb.record_usage(id, usage))?;
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
    s: &Knowledge,
    args: QualityArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let (target, q) = match args.recipe.filter(Value::is_object) {
        Some(recipe) => {
            let candidate = Submission::from_value(recipe)?.into_new_entry()?;
            (
                "candidate".to_string(),
                score(&candidate, UsageCounts::default()),
            )
        }
        None => {
            let id = args.entry.id().map_err(|_| {
                ToolError::Invalid("give \"recipeId\" or a \"recipe\" object".into())
            })?;
            let e = s.kb.with(|kb| kb.get(id))?;
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
    s: &Knowledge,
    args: ValidateArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let cand = args.candidate.filter(Value::is_object).ok_or_else(|| {
        ToolError::Invalid(
            "\"candidate\" must be an object with the fields of submit_knowledge".into(),
        )
    })?;
    let new = Submission::from_value(cand)?.into_new_entry()?;
    let mut v = validate(&new);
    let live = s.kb.with(|kb| kb.live_entries())?;
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
    s: &Knowledge,
    args: FeedbackArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let top_n = args.top_n.clamp(1, 100) as usize;
    let filter = Filter {
        statuses: vec![Status::Published],
        limit: 100_000,
        ..Filter::default()
    };
    let mut recipes = s.kb.with(|kb| kb.list(&filter))?;
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
    if let Some(id) = args.recipe_id.get() {
        let e = s.kb.with(|kb| kb.get(id))?;
        data["recipeStats"] = json!({"id": e.id, "views": e.views, "adoptions": e.adoptions, "applications": e.applications, "quality": score_entry(&e)});
        text.push_str(&format!(
            "{}: {} views, {} adoptions, {} applications",
            e.id, e.views, e.adoptions, e.applications
        ));
    }
    Ok(ToolOutput::new(data, text.trim_end()))
}
