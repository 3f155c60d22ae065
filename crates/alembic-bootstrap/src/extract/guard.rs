//! The guard audit: the project's guard rules (the built-ins of alembic-knowledge overlaid
//! with `.alembic/guard-rules.toml`) run over every scanned non-test source. Each rule that
//! is violated becomes a measured fact — its id, how many lines break it, where — for the
//! dimension the rule belongs to (security rules to security-auth, crash-prone error handling
//! to error-resilience, the rest to coding-standards).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use alembic_knowledge::guard::{FileViews, GuardRules, PROJECT_RULES_PATH, Severity, language_of};

use super::{EVIDENCE_SHOWN, Finding, detail, importance};
use crate::error::BootstrapError;
use crate::facts::{Evidence, Facts, SourceFile, spread};

/// The lines that break one rule.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleHits {
    pub rule_id: String,
    pub description: String,
    pub severity: Severity,
    /// `built-in` or `project`.
    pub source: String,
    pub fix: Option<String>,
    pub hits: Vec<Evidence>,
}

/// What the guard audit measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuardAudit {
    pub rules_checked: usize,
    pub files_checked: usize,
    /// Violated rules, in rule order.
    pub violated: Vec<RuleHits>,
}

/// Runs the project's guard rules over the non-test sources of `files`. A project rules file
/// that does not parse is an error naming the file.
pub fn audit(root: &Path, files: &[SourceFile]) -> Result<GuardAudit, BootstrapError> {
    // Through the guard: a rules file linked out of the project is refused, never read.
    let read = alembic_safety::PathGuard::new(root)
        .and_then(|guard| guard.read_text_if_exists(PROJECT_RULES_PATH));
    let project = match read {
        Ok(text) => text,
        Err(e) => {
            return Err(BootstrapError::Config(format!(
                "{PROJECT_RULES_PATH}: cannot read it: {e}"
            )));
        }
    };
    let rules = GuardRules::load(project.as_deref())
        .map_err(|e| BootstrapError::Config(format!("guard audit: {e}")))?;
    let mut by_rule: BTreeMap<String, Vec<Evidence>> = BTreeMap::new();
    let mut files_checked = 0;
    for f in files.iter().filter(|f| f.language.is_some() && !f.is_test) {
        // Rules are keyed by the guard's language names; a file it has no name for is not
        // checked (every rule would apply to it).
        let language = language_of(&f.path);
        if language.is_empty() {
            continue;
        }
        files_checked += 1;
        // The whole file: each rule reads code only, or the view its scope names.
        let views = FileViews {
            raw: &f.text,
            no_comments: &f.no_comments,
            code: &f.code,
        };
        for v in rules.check_views(views, language) {
            by_rule.entry(v.rule_id).or_default().push(Evidence {
                file: f.path.clone(),
                line: v.line as usize,
            });
        }
    }
    let violated = rules
        .rules()
        .iter()
        .filter_map(|r| {
            let hits = by_rule.remove(&r.spec.id)?;
            Some(RuleHits {
                rule_id: r.spec.id.clone(),
                description: r.spec.description.clone(),
                severity: r.spec.severity,
                source: r.spec.source.clone(),
                fix: r.spec.fix.clone(),
                hits,
            })
        })
        .collect();
    Ok(GuardAudit {
        rules_checked: rules.rules().len(),
        files_checked,
        violated,
    })
}

/// The dimension a rule's violations feed, from its id: security rules, crash-prone error
/// handling, or coding standards.
pub fn dimension_of(rule_id: &str) -> &'static str {
    let id = rule_id.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| id.contains(w));
    if has(&[
        "secret",
        "password",
        "token",
        "eval",
        "inner-html",
        "sql",
        "crypto",
        "unsafe",
        "xss",
    ]) {
        "security-auth"
    } else if has(&[
        "unwrap",
        "expect",
        "force",
        "bang",
        "except",
        "panic",
        "error",
        "stack-trace",
    ]) {
        "error-resilience"
    } else {
        "coding-standards"
    }
}

/// One finding per violated rule that belongs to `dimension`.
pub fn extract(facts: &Facts, dimension: &str, knowledge_type: &str) -> Vec<Finding> {
    facts
        .guard
        .violated
        .iter()
        .filter(|r| dimension_of(&r.rule_id) == dimension)
        .map(|r| finding(facts, r, knowledge_type))
        .collect()
}

fn finding(facts: &Facts, r: &RuleHits, kt: &str) -> Finding {
    let files = r
        .hits
        .iter()
        .map(|e| e.file.as_str())
        .collect::<BTreeSet<_>>()
        .len();
    let summary = format!(
        "Guard audit: {} lines in {files} files break {} rule `{}` ({}): {}.",
        r.hits.len(),
        r.source,
        r.rule_id,
        r.severity.as_str(),
        r.description.trim_end_matches('.')
    );
    let evidence = spread(&r.hits, EVIDENCE_SHOWN);
    let mut body = detail(facts, &summary, &evidence);
    if let Some(fix) = &r.fix {
        body.push_str(&format!("\nFix: {fix}\n"));
    }
    let language = evidence
        .first()
        .map(|e| language_of(&e.file).to_string())
        .unwrap_or_default();
    let weight = match r.severity {
        Severity::Error => 8,
        Severity::Warning => 6,
        Severity::Info => 4,
    };
    Finding {
        title: format!(
            "Guard rule {}: {}",
            r.rule_id,
            r.description.trim_end_matches('.')
        ),
        summary,
        detail: body,
        knowledge_type: kt.to_string(),
        language,
        evidence,
        importance: importance(r.hits.len()).max(weight),
        entry: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_go_to_the_dimension_they_are_about() {
        assert_eq!(dimension_of("hardcoded-secret"), "security-auth");
        assert_eq!(dimension_of("js-eval"), "security-auth");
        assert_eq!(dimension_of("rust-unwrap"), "error-resilience");
        assert_eq!(dimension_of("swift-force-try"), "error-resilience");
        assert_eq!(dimension_of("python-bare-except"), "error-resilience");
        assert_eq!(dimension_of("rust-todo"), "coding-standards");
        assert_eq!(dimension_of("js-console-log"), "coding-standards");
    }
}
