//! The submit tools: `submit_knowledge` (lifecycle) and the composite `submit_with_check`.
//! Both take a [`Submission`]; a refused one answers `status: "rejected"` with the reasons
//! (what the SubmitDedup middleware reads), so the loop may correct and resubmit it.

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::Submission;
use super::{Knowledge, KnowledgeService, bind};
use crate::error::KnowledgeError;
use crate::model::{Entry, NewEntry, Status};
use crate::quality::{UsageCounts, score, validate};
use crate::similar::{DUPLICATE_THRESHOLD, find_similar};

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = ["title", "content"]))]
struct SubmitArgs {
    #[serde(flatten)]
    submission: Submission,
    /// store as draft instead of submitting for review
    #[serde(default)]
    draft: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = ["title", "content"]))]
struct SubmitCheckArgs {
    #[serde(flatten)]
    submission: Submission,
    #[serde(default = "duplicate_threshold")]
    #[schemars(range(min = 0.1, max = 1))]
    threshold: f64,
}

fn duplicate_threshold() -> f64 {
    DUPLICATE_THRESHOLD
}

pub(crate) fn tools(state: &Knowledge) -> Vec<ToolDefinition> {
    vec![
        bind(
            ToolDefinition::typed::<SubmitArgs>(
                "submit_knowledge",
                "Submit a knowledge candidate for review: a title, content (markdown, code pattern, \
                 rationale) and the project files it was found in. Refused with the reasons when \
                 invalid or when an entry with the same title exists.",
                ToolModule::Lifecycle,
                EffectClass::WritesKnowledge,
            ),
            state,
            submit_knowledge,
        ),
        bind(
            ToolDefinition::typed::<SubmitCheckArgs>(
                "submit_with_check",
                "Like submit_knowledge, but first compares the candidate with existing knowledge and \
                 refuses it when one is at least `threshold` similar (listing the similar entries).",
                ToolModule::Composite,
                EffectClass::WritesKnowledge,
            ),
            state,
            submit_with_check,
        ),
    ]
}

/// The answer to a refused submission.
pub(crate) fn rejected(
    reason: &str,
    errors: Vec<String>,
    warnings: Vec<String>,
    extra: Value,
) -> ToolOutput {
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

/// What `submit_knowledge` would store for `args`, checked as it checks (the fields, then a
/// live entry with the same title, unless `revisable` accepts that entry), without storing
/// anything: `Ok(Ok(entry))`, or `Ok(Err(refusal))` holding the answer the tool gives. The
/// LLM bootstrap stages its producers' submissions with this and writes them with the
/// dimension's checkpoint (which revises its own candidates that await review).
pub fn check_submission(
    kb: &KnowledgeService,
    args: Value,
    revisable: &dyn Fn(&Entry) -> bool,
) -> Result<Result<NewEntry, ToolOutput>, ToolError> {
    let args: SubmitArgs = alembic_tools::parse_args(args)?;
    let new = args.submission.into_new_entry()?;
    let v = validate(&new);
    if !v.is_valid() {
        return Ok(Err(rejected(
            "validation_failed",
            v.errors,
            v.warnings,
            json!({}),
        )));
    }
    let title = new.title.clone();
    let existing = kb.with(|kb| {
        kb.live_title(&title)?
            .map(|(id, status)| Ok((kb.get(&id)?, status)))
            .transpose()
    })?;
    if let Some((entry, status)) = existing.filter(|(e, _)| !revisable(e)) {
        let e = KnowledgeError::DuplicateTitle {
            existing_id: entry.id,
            title,
            status,
        };
        return Ok(Err(rejected(
            "duplicate_title",
            vec![e.to_string()],
            v.warnings,
            json!({}),
        )));
    }
    Ok(Ok(new))
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
    s: &Knowledge,
    args: SubmitArgs,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let new = args.submission.into_new_entry()?;
    let status = if args.draft {
        Status::Draft
    } else {
        Status::Submitted
    };
    Ok(
        match store_candidate(&s.kb, &new, status, &ctx.caller.id)? {
            Ok(entry) => submitted(&entry, validate(&new).warnings, json!({})),
            Err(refusal) => refusal,
        },
    )
}

fn submit_with_check(
    s: &Knowledge,
    args: SubmitCheckArgs,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let new = args.submission.into_new_entry()?;
    let threshold = args.threshold.clamp(0.1, 1.0);
    let live = s.kb.with(|kb| kb.live_entries())?;
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
        match store_candidate(&s.kb, &new, Status::Submitted, &ctx.caller.id)? {
            Ok(entry) => {
                let related = find_similar(&new, &live, 0.5_f64.min(threshold), 5, Some(&entry.id));
                submitted(&entry, validate(&new).warnings, json!({"similar": related}))
            }
            Err(refusal) => refusal,
        },
    )
}
