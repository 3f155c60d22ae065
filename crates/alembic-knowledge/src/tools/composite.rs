//! The composite tool `analyze_code`: a guard check and a search for related published
//! recipes, run in parallel. The reference swallowed every failure (a broken rule file gave
//! "0 violations"); here a half that fails is named in the result, which then says
//! `"status": "partial"`, and the call fails when both halves fail. Nothing is recorded (unlike
//! `guard_check_code`), so the tool only reads.

use alembic_tools::{EffectClass, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Knowledge;
use super::args::Text;
use super::guard::check_target;
use super::query::{line, summary_json};
use crate::guard::language_of;
use crate::model::Status;
use crate::store::Filter;

/// Characters of the code used as the related-recipes query (as the reference did).
const QUERY_CHARS: usize = 200;
/// Related recipes shown.
const RELATED_LIMIT: usize = 5;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct AnalyzeArgs {
    /// the code to analyse (or give filePath to analyse a project file)
    code: Option<String>,
    /// project file to analyse when no code is given; otherwise names the snippet
    #[serde(default)]
    file_path: Text,
    /// defaults to the file's extension
    #[serde(default)]
    language: Text,
}

pub(crate) fn tools(state: &Knowledge) -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::typed::<AnalyzeArgs>(
            "analyze_code",
            "Analyse code in one step: check it against the guard rules and find related \
             published recipes, in parallel. Give code (a snippet) or filePath (a project \
             file). If one half fails, the result says which and why.",
            ToolModule::Composite,
            EffectClass::ReadsProjectFiles,
        )
        .handler(state.clone(), |state, args, _ctx| analyze(state, args)),
    ]
}

/// Runs `f` with the state on the blocking pool (SQLite, file reads).
async fn blocking<T: Send + 'static>(
    state: Knowledge,
    f: impl FnOnce(&Knowledge) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(move || f(&state))
        .await
        .map_err(|e| ToolError::failed(format!("analysis worker failed: {e}")))?
}

/// The analysed target's name, code and language.
fn target(s: &Knowledge, args: AnalyzeArgs) -> Result<(String, String, String), ToolError> {
    match args.code.filter(|c| !c.trim().is_empty()) {
        Some(code) => {
            let (_, code, language) =
                check_target(s, &Text::default(), Some(code), &args.language)?;
            let label = args.file_path.get().unwrap_or("(inline)").to_string();
            let language = match (language.is_empty(), args.file_path.get()) {
                (true, Some(path)) => language_of(path).to_string(),
                _ => language,
            };
            Ok((label, code, language))
        }
        None if args.file_path.get().is_some() => {
            check_target(s, &args.file_path, None, &args.language)
        }
        None => Err(ToolError::Invalid(
            "give \"code\" (a snippet) or \"filePath\" (a project file)".into(),
        )),
    }
}

fn guard_half(s: &Knowledge, code: &str, language: &str) -> Result<Value, ToolError> {
    let rules = s.kb.guard_rules(&s.safety.guard)?;
    let violations = rules.check(code, language);
    Ok(json!({
        "violationCount": violations.len(),
        "violations": violations,
        "rulesApplied": rules.for_language(Some(language)).len(),
    }))
}

fn related_half(s: &Knowledge, code: &str) -> Result<Value, ToolError> {
    let query: String = code
        .chars()
        .take(QUERY_CHARS)
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    let filter = Filter {
        statuses: vec![Status::Published],
        limit: RELATED_LIMIT,
        ..Filter::default()
    };
    let hits = s.kb.with(|kb| kb.search(&query, &filter))?;
    let lines: String = hits.iter().map(|h| line(&h.entry, Some(h.score))).collect();
    let results: Vec<Value> = hits
        .iter()
        .map(|h| summary_json(&h.entry, Some(h.score)))
        .collect();
    Ok(json!({"results": results, "total": results.len(), "lines": lines}))
}

async fn analyze(state: Knowledge, args: AnalyzeArgs) -> Result<ToolOutput, ToolError> {
    let (target, code, language) = blocking(state.clone(), move |s| target(s, args)).await?;
    let (guard_code, guard_lang) = (code.clone(), language.clone());
    let (guard, related) = tokio::join!(
        blocking(state.clone(), move |s| guard_half(
            s,
            &guard_code,
            &guard_lang
        )),
        blocking(state, move |s| related_half(s, &code)),
    );
    if let (Err(g), Err(r)) = (&guard, &related) {
        return Err(ToolError::failed(format!(
            "analysis failed: guard check: {g}; related recipes: {r}"
        )));
    }
    Ok(render(&target, &language, guard, related))
}

fn render(
    target: &str,
    language: &str,
    guard: Result<Value, ToolError>,
    related: Result<Value, ToolError>,
) -> ToolOutput {
    let mut errors = Vec::new();
    let mut text = String::new();
    let guard = match guard {
        Ok(g) => {
            text.push_str(&format!(
                "{target}: {} guard violation(s)\n",
                g["violationCount"]
            ));
            for v in g["violations"].as_array().into_iter().flatten() {
                text.push_str(&format!(
                    "  line {} [{}] {}: {}\n",
                    v["line"],
                    v["severity"].as_str().unwrap_or(""),
                    v["ruleId"].as_str().unwrap_or(""),
                    v["message"].as_str().unwrap_or("")
                ));
            }
            g
        }
        Err(e) => half_failed("guard check", &e, &mut errors, &mut text),
    };
    let related = match related {
        Ok(mut r) => {
            text.push_str(&format!("{} related recipe(s)\n", r["total"]));
            text.push_str(r["lines"].as_str().unwrap_or(""));
            if let Some(map) = r.as_object_mut() {
                map.remove("lines");
            }
            r
        }
        Err(e) => half_failed("related recipes", &e, &mut errors, &mut text),
    };
    let status = if errors.is_empty() { "ok" } else { "partial" };
    let data = json!({"status": status, "filePath": target, "language": language,
        "guard": guard, "relatedRecipes": related, "errors": errors});
    ToolOutput::new(data, text.trim_end())
}

/// Notes a failed half in `errors` and the text; its JSON is `{"error": ..}`.
fn half_failed(
    half: &str,
    error: &ToolError,
    errors: &mut Vec<String>,
    text: &mut String,
) -> Value {
    let message = format!("{half} failed: {error}");
    text.push_str(&format!("⚠ {message}\n"));
    errors.push(message);
    json!({"error": error.to_string()})
}
