//! Whole-file checks: each rule reads the view of the file its [`Scope`] names.

use serde::{Deserialize, Serialize};

use super::{GuardRules, Violation};

/// The text of a file a rule matches: a rule about code never counts a match inside a
/// comment or a string literal; a rule about literal values (a hard-coded secret) or about
/// comments (TODO notes) says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Code only: comments and literals blanked.
    #[default]
    Code,
    /// Code and literal values: only comments blanked.
    Literals,
    /// The text as written, comments included.
    Raw,
}

/// One file's text in the three views of [`Scope`], line for line the same file.
#[derive(Debug, Clone, Copy)]
pub struct FileViews<'a> {
    pub raw: &'a str,
    pub no_comments: &'a str,
    pub code: &'a str,
}

impl GuardRules {
    /// Checks a whole file written in `language` whose comments and literals were found in
    /// its syntax tree: each rule matches the view its [`Scope`] names, and a violation
    /// quotes the line as written.
    pub fn check_views(&self, file: FileViews<'_>, language: &str) -> Vec<Violation> {
        let rules = self.for_language(Some(language));
        let raw: Vec<&str> = file.raw.lines().collect();
        let no_comments: Vec<&str> = file.no_comments.lines().collect();
        let code: Vec<&str> = file.code.lines().collect();
        let mut out = Vec::new();
        for (i, line) in raw.iter().enumerate() {
            for rule in &rules {
                let view = match rule.spec.scope {
                    Scope::Code => code.get(i),
                    Scope::Literals => no_comments.get(i),
                    Scope::Raw => Some(line),
                };
                if view.is_some_and(|l| rule.matcher.is_match(l)) {
                    out.push(Violation {
                        rule_id: rule.spec.id.clone(),
                        message: rule.spec.description.clone(),
                        severity: rule.spec.severity,
                        line: (i + 1) as u32,
                        snippet: line.trim().chars().take(160).collect(),
                        fix_suggestion: rule.spec.fix.clone(),
                    });
                }
            }
        }
        out
    }
}
