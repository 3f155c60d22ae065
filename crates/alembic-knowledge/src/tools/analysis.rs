//! The `ai-analysis` tools: `enrich_candidate` and `refine_bootstrap_candidates`. The model
//! rewrites a candidate's summary (its description), rationale and tags: one bounded call per
//! candidate, whose JSON answer is validated before anything is written. Title, content,
//! pattern and evidence stay as they were, and the bootstrap's own tags (`bootstrap`,
//! `dimension:<id>`) are kept, so a re-run still recognises its candidates.
//!
//! Without a provider both tools fail with the text that says how to configure one.

use std::sync::Arc;

use alembic_llm::{ChatRequest, LlmProvider, Message};
use alembic_tools::{
    EffectClass, RegistryError, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput,
    ToolRegistry,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::KnowledgeService;
use crate::model::{Entry, NewEntry, Status};
use crate::store::Filter;

/// Output tokens one rewrite may use.
const MAX_ANSWER_TOKENS: u32 = 600;
const MAX_SUMMARY_CHARS: usize = 400;
const MAX_RATIONALE_CHARS: usize = 1200;
const MAX_TAGS: usize = 8;

/// The provider the tools call, or why there is none (the text shown to the caller).
pub type ProviderSlot = Result<Arc<dyn LlmProvider>, String>;

/// What the ai-analysis handlers are registered with.
#[derive(Clone)]
struct Analysis {
    kb: Arc<KnowledgeService>,
    llm: Arc<ProviderSlot>,
}

/// Arguments of `enrich_candidate`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EnrichArgs {
    /// Id of the candidate (draft or submitted) to rewrite.
    candidate_id: String,
}

/// Arguments of `refine_bootstrap_candidates`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct RefineArgs {
    /// Only candidates of this bootstrap dimension (e.g. "architecture").
    dimension: Option<String>,
    /// How many candidates to rewrite at most (one model call each).
    #[serde(default = "default_max")]
    #[schemars(range(min = 1, max = 50))]
    max_candidates: i64,
}

fn default_max() -> i64 {
    10
}

/// Registers the ai-analysis tools over `kb`, calling `llm` (or failing with its reason).
pub fn register_analysis_tools(
    registry: &ToolRegistry,
    kb: Arc<KnowledgeService>,
    llm: ProviderSlot,
) -> Result<(), RegistryError> {
    let state = Analysis {
        kb,
        llm: Arc::new(llm),
    };
    registry.register(enrich_candidate(state.clone()))?;
    registry.register(refine_bootstrap_candidates(state))
}

/// Names of the tools [`register_analysis_tools`] registers.
pub const ANALYSIS_TOOL_NAMES: &[&str] = &["enrich_candidate", "refine_bootstrap_candidates"];

fn enrich_candidate(state: Analysis) -> ToolDefinition {
    ToolDefinition::typed::<EnrichArgs>(
        "enrich_candidate",
        "Have the LLM rewrite one candidate's summary, rationale and tags from its content and \
         evidence (one bounded call; the answer is validated before it is saved). Title, content, \
         pattern and sources are kept.",
        ToolModule::AiAnalysis,
        EffectClass::CallsLlm,
    )
    .handler(state, |state, args, ctx| async move {
        let provider = state.provider()?;
        let entry = state.kb.with(|kb| kb.get(&args.candidate_id))?;
        let rewrite = enrich_one(&state, &provider, &entry, &ctx).await?;
        let text = format!("rewrote {} \"{}\"", entry.id, entry.title);
        Ok(ToolOutput::new(rewrite, text))
    })
}

fn refine_bootstrap_candidates(state: Analysis) -> ToolDefinition {
    ToolDefinition::typed::<RefineArgs>(
        "refine_bootstrap_candidates",
        "Have the LLM rewrite the summary, rationale and tags of the bootstrap's submitted \
         candidates (optionally of one dimension), one bounded call each. Reports what was \
         rewritten and what failed.",
        ToolModule::AiAnalysis,
        EffectClass::CallsLlm,
    )
    .handler(state, |state, args, ctx| async move {
        let provider = state.provider()?;
        let limit = usize::try_from(args.max_candidates.clamp(1, 50)).unwrap_or(10);
        let targets = bootstrap_candidates(&state.kb, args.dimension.as_deref(), limit)?;
        let (mut refined, mut failed) = (Vec::new(), Vec::new());
        for entry in &targets {
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            match enrich_one(&state, &provider, entry, &ctx).await {
                Ok(_) => refined.push(json!({"id": entry.id, "title": entry.title})),
                Err(e) => failed.push(json!({"id": entry.id, "error": e.to_string()})),
            }
        }
        let text = format!(
            "refined {} of {} bootstrap candidates{}",
            refined.len(),
            targets.len(),
            if failed.is_empty() {
                String::new()
            } else {
                format!(", {} failed", failed.len())
            }
        );
        let data = json!({"refined": refined, "failed": failed, "considered": targets.len()});
        Ok(ToolOutput::new(data, text))
    })
}

impl Analysis {
    fn provider(&self) -> Result<Arc<dyn LlmProvider>, ToolError> {
        match self.llm.as_ref() {
            Ok(p) => Ok(Arc::clone(p)),
            Err(why) => Err(ToolError::failed(format!(
                "this tool needs an llm provider: {why}"
            ))),
        }
    }
}

/// Submitted candidates written by the bootstrap (`extra.source == "bootstrap"`), of one
/// dimension (`extra.dimensionId`) when given, newest first.
fn bootstrap_candidates(
    kb: &KnowledgeService,
    dimension: Option<&str>,
    limit: usize,
) -> Result<Vec<Entry>, ToolError> {
    let filter = Filter {
        statuses: vec![Status::Submitted],
        limit: 100_000,
        ..Filter::default()
    };
    let all = kb.with(|kb| kb.list(&filter))?;
    Ok(all
        .into_iter()
        .filter(|e| e.extra.get("source").and_then(Value::as_str) == Some("bootstrap"))
        .filter(|e| {
            dimension.is_none_or(|d| e.extra.get("dimensionId").and_then(Value::as_str) == Some(d))
        })
        .take(limit)
        .collect())
}

/// One model call for `entry`, its answer validated, then saved. Returns the new fields.
async fn enrich_one(
    state: &Analysis,
    provider: &Arc<dyn LlmProvider>,
    entry: &Entry,
    ctx: &ToolContext,
) -> Result<Value, ToolError> {
    if !matches!(entry.status, Status::Draft | Status::Submitted) {
        return Err(ToolError::Invalid(format!(
            "entry '{}' is {}: only draft or submitted candidates are rewritten",
            entry.id, entry.status
        )));
    }
    let mut request = ChatRequest::new("", vec![Message::user(prompt(entry))]);
    request.system = SYSTEM_PROMPT.to_owned();
    request.max_tokens = Some(MAX_ANSWER_TOKENS);
    let reply = provider
        .chat(&request, &ctx.cancel)
        .await
        .map_err(|e| ToolError::failed(format!("the llm call failed: {e}")))?;
    let rewrite = Rewrite::parse(&reply.text).map_err(|why| {
        ToolError::failed(format!(
            "the model's answer for '{}' was not used: {why}",
            entry.id
        ))
    })?;
    let updated = rewrite.apply(entry);
    let (id, version) = (entry.id.clone(), entry.version);
    state
        .kb
        .with(move |kb| kb.update(&id, &updated, None, None, Some(version)))?;
    Ok(json!({
        "id": entry.id,
        "summary": rewrite.summary,
        "rationale": rewrite.rationale,
        "tags": rewrite.tags,
        "usage": {"input": reply.usage.input_tokens, "output": reply.usage.output_tokens},
    }))
}

const SYSTEM_PROMPT: &str = "You edit entries of a project's knowledge base for reviewers. \
Answer with one JSON object and nothing else: {\"summary\": \"one or two sentences: what the \
code does and where\", \"rationale\": \"why the project does it this way, from the evidence\", \
\"tags\": [\"2 to 8 short lower-case tags\"]}. Use only facts present in the entry.";

fn prompt(e: &Entry) -> String {
    format!(
        "Title: {}\nKnowledge type: {}\nLanguage: {}\nCurrent summary: {}\nCurrent rationale: {}\n\
         Tags: {}\nEvidence files: {}\n\nContent:\n{}\n\nPattern:\n{}",
        e.title,
        e.knowledge_type,
        e.language,
        e.description,
        e.rationale,
        e.tags.join(", "),
        e.sources.join(", "),
        clip(&e.content, 4000),
        clip(&e.pattern, 1500),
    )
}

fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// The validated answer of the model.
#[derive(Debug, PartialEq)]
struct Rewrite {
    summary: String,
    rationale: String,
    tags: Vec<String>,
}

impl Rewrite {
    /// Parses the answer: a JSON object (optionally in a code fence) with a non-empty
    /// `summary` and `rationale` within their lengths and 1..=8 tags. Says what was wrong.
    fn parse(answer: &str) -> Result<Rewrite, String> {
        let body = alembic_llm::json_answer(answer);
        let value: Value = serde_json::from_str(body).map_err(|e| {
            format!("expected a JSON object with summary, rationale and tags ({e})")
        })?;
        let field = |name: &str, max: usize| -> Result<String, String> {
            let text = value
                .get(name)
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or("");
            match text.chars().count() {
                0 => Err(format!("\"{name}\" must be a non-empty string")),
                n if n > max => Err(format!(
                    "\"{name}\" has {n} characters, at most {max} are accepted"
                )),
                _ => Ok(text.to_owned()),
            }
        };
        let summary = field("summary", MAX_SUMMARY_CHARS)?;
        let rationale = field("rationale", MAX_RATIONALE_CHARS)?;
        let tags = tags(value.get("tags"))?;
        Ok(Rewrite {
            summary,
            rationale,
            tags,
        })
    }

    /// The entry with the rewritten fields; the bootstrap's own tags stay first.
    fn apply(&self, e: &Entry) -> NewEntry {
        let mut tags: Vec<String> = e
            .tags
            .iter()
            .filter(|t| *t == "bootstrap" || t.starts_with("dimension:"))
            .cloned()
            .collect();
        for t in &self.tags {
            if !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        NewEntry {
            description: self.summary.clone(),
            rationale: self.rationale.clone(),
            tags,
            ..NewEntry::from(e)
        }
    }
}

fn tags(value: Option<&Value>) -> Result<Vec<String>, String> {
    let Some(items) = value.and_then(Value::as_array) else {
        return Err("\"tags\" must be an array of strings".into());
    };
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let tag = item
            .as_str()
            .map(|s| s.trim().to_lowercase())
            .filter(|s| !s.is_empty() && s.chars().count() <= 40)
            .ok_or_else(|| {
                format!("tag {item} is not a non-empty string of at most 40 characters")
            })?;
        if !out.contains(&tag) {
            out.push(tag);
        }
    }
    match out.len() {
        0 => Err("\"tags\" is empty: 1 to 8 tags are accepted".into()),
        n if n > MAX_TAGS => Err(format!(
            "\"tags\" has {n} tags, 1 to {MAX_TAGS} are accepted"
        )),
        _ => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_validated_and_name_what_is_wrong() {
        let ok = Rewrite::parse(
            "```json\n{\"summary\": \"S\", \"rationale\": \"R\", \"tags\": [\"Net\", \"net\", \"retry\"]}\n```",
        );
        assert_eq!(
            ok,
            Ok(Rewrite {
                summary: "S".into(),
                rationale: "R".into(),
                tags: vec!["net".into(), "retry".into()]
            })
        );
        let cases = [
            ("not json", "expected a JSON object"),
            (
                "{\"summary\": \"\", \"rationale\": \"R\", \"tags\": [\"a\"]}",
                "\"summary\" must be a non-empty string",
            ),
            (
                "{\"summary\": \"S\", \"rationale\": \"R\", \"tags\": []}",
                "\"tags\" is empty",
            ),
            (
                "{\"summary\": \"S\", \"rationale\": \"R\", \"tags\": \"a\"}",
                "\"tags\" must be an array",
            ),
            (
                "{\"summary\": \"S\", \"rationale\": \"R\", \"tags\": [1]}",
                "tag 1 is not a non-empty string",
            ),
        ];
        for (answer, expected) in cases {
            let err = Rewrite::parse(answer).unwrap_err();
            assert!(err.contains(expected), "{answer}: {err}");
        }
        let long = format!(
            "{{\"summary\": \"{}\", \"rationale\": \"R\", \"tags\": [\"a\"]}}",
            "x".repeat(500)
        );
        assert_eq!(
            Rewrite::parse(&long).unwrap_err(),
            "\"summary\" has 500 characters, at most 400 are accepted"
        );
    }
}
