//! `review_my_output` (module composite): checks the submissions of the calling run against
//! the reference's quality rules before the model finishes. It is fed the run's accepted
//! submissions from its [`crate::RunResults`]; the reference read a context field the
//! pipeline never supplied (so it always answered "no candidates") and ignored `check_rules`,
//! which is honoured here.

use std::sync::{Arc, LazyLock};

use alembic_tools::{EffectClass, ToolDefinition, ToolError, ToolModule, ToolOutput};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::middleware::LoopDirectory;
use crate::observation::{ToolObservation, str_field};

/// Phrases that make a description say nothing about this project.
const GENERIC_PHRASES: &[&str] = &[
    "this module",
    "this file",
    "this class",
    "this project",
    "本模块",
    "该模块",
    "该文件",
    "这个类",
    "本项目",
];

/// A source annotation in the markdown: `(File.ext:line)`.
static SOURCE_ANNOTATION: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\(\s*[\w./\\-]+\.\w+:\d+(-\d+)?\s*\)").ok());

/// The quality rules. Doc comments stay off the variants so the schema is a plain enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewRule {
    // the markdown has a fenced code block
    CodeBlock,
    // the prose (markdown without code and markup) has at least 50 characters
    ProseLength,
    // the markdown has at least 200 characters
    MarkdownLength,
    // the description has at least 15 characters
    DescriptionLength,
    // the description avoids "this module/file/class/project"
    GenericDescription,
    // code is annotated with where it comes from, as "(File.ext:line)"
    SourceAnnotation,
    // trigger, doClause and kind are present
    DeliveryFields,
}

impl ReviewRule {
    pub const ALL: [ReviewRule; 7] = [
        ReviewRule::CodeBlock,
        ReviewRule::ProseLength,
        ReviewRule::MarkdownLength,
        ReviewRule::DescriptionLength,
        ReviewRule::GenericDescription,
        ReviewRule::SourceAnnotation,
        ReviewRule::DeliveryFields,
    ];

    pub fn id(self) -> &'static str {
        match self {
            ReviewRule::CodeBlock => "code_block",
            ReviewRule::ProseLength => "prose_length",
            ReviewRule::MarkdownLength => "markdown_length",
            ReviewRule::DescriptionLength => "description_length",
            ReviewRule::GenericDescription => "generic_description",
            ReviewRule::SourceAnnotation => "source_annotation",
            ReviewRule::DeliveryFields => "delivery_fields",
        }
    }
}

/// The fields of a submission the rules read, from any submit tool's arguments.
struct Submitted<'a> {
    title: &'a str,
    description: &'a str,
    markdown: &'a str,
    code: &'a str,
    args: &'a Value,
}

impl<'a> Submitted<'a> {
    fn of(args: &'a Value) -> Self {
        let content = args.get("content").unwrap_or(&Value::Null);
        let markdown = content
            .as_str()
            .or_else(|| str_field(content, &["markdown"]))
            .or_else(|| str_field(args, &["markdown"]))
            .unwrap_or("");
        let code = str_field(content, &["pattern", "code"])
            .or_else(|| str_field(args, &["coreCode", "pattern", "code"]))
            .unwrap_or("");
        Submitted {
            title: str_field(args, &["title", "name"]).unwrap_or("(untitled)"),
            description: str_field(args, &["description"]).unwrap_or(""),
            markdown,
            code,
            args,
        }
    }
}

/// Markdown without fenced code, inline code and markup characters, whitespace collapsed.
fn prose(markdown: &str) -> String {
    let mut out = String::new();
    let mut in_fence = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code && !"#*_>|[]()-".contains(c) {
                out.push(c);
            }
        }
        out.push(' ');
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What `rule` finds wrong with `s`, if anything.
fn check(rule: ReviewRule, s: &Submitted<'_>) -> Option<String> {
    let chars = |t: &str| t.trim().chars().count();
    match rule {
        ReviewRule::CodeBlock => (!s.markdown.contains("```"))
            .then(|| "the markdown has no fenced code block (```)".to_string()),
        ReviewRule::ProseLength => {
            let n = chars(&prose(s.markdown));
            (n < 50).then(|| format!("the prose has {n} characters; explain in at least 50"))
        }
        ReviewRule::MarkdownLength => {
            let n = chars(s.markdown);
            (n < 200).then(|| format!("the markdown has {n} characters; at least 200 are expected"))
        }
        ReviewRule::DescriptionLength => {
            let n = chars(s.description);
            (n < 15)
                .then(|| format!("the description has {n} characters; at least 15 are expected"))
        }
        ReviewRule::GenericDescription => {
            let lower = s.description.to_lowercase();
            GENERIC_PHRASES
                .iter()
                .find(|p| lower.contains(*p))
                .map(|p| {
                    format!("the description says \"{p}\": name the project's own types instead")
                })
        }
        ReviewRule::SourceAnnotation => {
            let has_code = !s.code.trim().is_empty() || s.markdown.contains("```");
            let annotated = SOURCE_ANNOTATION
                .as_ref()
                .is_some_and(|re| re.is_match(s.markdown));
            (has_code && !annotated).then(|| {
                "code without a source annotation: say where it comes from as (File.ext:line)"
                    .to_string()
            })
        }
        ReviewRule::DeliveryFields => {
            let missing: Vec<&str> = ["trigger", "doClause", "kind"]
                .into_iter()
                .filter(|k| str_field(s.args, &[k]).is_none())
                .collect();
            (!missing.is_empty()).then(|| format!("missing {}", missing.join(", ")))
        }
    }
}

/// The issues of one submission under `rules`.
fn review(sub: &ToolObservation, rules: &[ReviewRule]) -> Value {
    let s = Submitted::of(&sub.args);
    let issues: Vec<Value> = rules
        .iter()
        .filter_map(|r| check(*r, &s).map(|m| json!({"rule": r.id(), "message": m})))
        .collect();
    json!({"tool": sub.tool, "title": s.title, "issues": issues})
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ReviewArgs {
    /// rules to check; all when left out
    check_rules: Option<Vec<ReviewRule>>,
}

/// The `review_my_output` tool, bound to the directory runs attach to.
pub(crate) fn review_my_output(loops: Arc<LoopDirectory>) -> ToolDefinition {
    ToolDefinition::typed::<ReviewArgs>(
        "review_my_output",
        "Review what you submitted in this run against the quality rules (code block, prose \
         and markdown length, a specific description, source annotations, trigger/doClause/\
         kind) and list the issues per submission, before you finish.",
        ToolModule::Composite,
        EffectClass::ReadOnly,
    )
    .handler(loops, |loops, args, ctx| async move {
        let memory = loops.get(&ctx.caller.id).ok_or_else(|| {
            ToolError::failed(
                "there is no run to review: review_my_output works only inside an agent run",
            )
        })?;
        let rules = match args.check_rules {
            Some(r) if !r.is_empty() => r,
            _ => ReviewRule::ALL.to_vec(),
        };
        Ok(render(&memory.results.submissions(), &rules))
    })
}

fn render(submissions: &[ToolObservation], rules: &[ReviewRule]) -> ToolOutput {
    if submissions.is_empty() {
        return ToolOutput::new(
            json!({"status": "no_submissions", "checked": 0, "details": []}),
            "nothing submitted in this run yet",
        );
    }
    let details: Vec<Value> = submissions.iter().map(|s| review(s, rules)).collect();
    let flawed: Vec<&Value> = details
        .iter()
        .filter(|d| d["issues"].as_array().is_some_and(|i| !i.is_empty()))
        .collect();
    let status = if flawed.is_empty() {
        "all_passed"
    } else {
        "issues_found"
    };
    let mut text = format!(
        "{} submission(s) reviewed against {} rule(s): {}\n",
        details.len(),
        rules.len(),
        if flawed.is_empty() {
            "all passed".to_string()
        } else {
            format!("{} with issues", flawed.len())
        }
    );
    for d in &flawed {
        text.push_str(&format!(
            "- \"{}\" ({}):\n",
            d["title"].as_str().unwrap_or(""),
            d["tool"].as_str().unwrap_or("")
        ));
        for i in d["issues"].as_array().into_iter().flatten() {
            text.push_str(&format!(
                "    {}: {}\n",
                i["rule"].as_str().unwrap_or(""),
                i["message"].as_str().unwrap_or("")
            ));
        }
    }
    let message = if flawed.is_empty() {
        "all submissions pass the quality rules"
    } else {
        "fix the issues listed (correct the stored candidate, or submit a corrected one under a new title) before you finish"
    };
    text.push_str(message);
    let rule_ids: Vec<&str> = rules.iter().map(|r| r.id()).collect();
    let data = json!({"status": status, "checked": details.len(), "rules": rule_ids,
        "details": details, "message": message});
    ToolOutput::new(data, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn prose_drops_code_and_markup() {
        let md = "## Retry\nUse `retry(3)` here.\n```swift\nlet x = 1\n```\n- **done**";
        assert_eq!(prose(md), "Retry Use here. done");
    }

    #[test]
    fn source_annotations_are_recognised() {
        let re = SOURCE_ANNOTATION.as_ref().unwrap();
        assert!(re.is_match("as in (Net/Client.swift:42)"));
        assert!(re.is_match("see (APIClient.m:10-20)"));
        assert!(!re.is_match("see Client.swift line 42"));
    }
}
