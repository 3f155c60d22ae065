//! Guard rules as data and the line-level compliance check.
//!
//! Built-in rules ship in `data/guard_rules.toml`; a project adds or overrides rules (same id)
//! and switches built-ins off in `.alembic/guard-rules.toml`. Checks run over source text;
//! every run and its violations are recorded in the knowledge base for `query_violations`.

use std::collections::BTreeMap;

use regex::{Regex, RegexBuilder};
use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::error::KnowledgeError;
use crate::model::{Entry, Kind, Status};
use crate::store::KnowledgeStore;

mod views;
pub use views::{FileViews, Scope};

/// The built-in rules file, compiled into the binary.
pub const BUILTIN_RULES: &str = include_str!("../data/guard_rules.toml");
/// Project rule file, relative to the project root.
pub const PROJECT_RULES_PATH: &str = ".alembic/guard-rules.toml";
/// Where stored overrides come from, in error messages.
pub const STORED_RULES_ORIGIN: &str = "the knowledge store's guard-rule overrides";
/// Longest regex program a rule may compile to (guards against pathological patterns).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// How serious a violation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One rule as written in a rules file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    pub id: String,
    pub description: String,
    /// Languages the rule applies to; `*` means any.
    pub languages: Vec<String>,
    pub pattern: String,
    #[serde(default)]
    pub literal: bool,
    pub severity: Severity,
    #[serde(default)]
    pub fix: Option<String>,
    /// Which text of a file the rule reads when the whole file is checked
    /// ([`GuardRules::check_views`]); `code` unless the rule says otherwise.
    #[serde(default)]
    pub scope: Scope,
    /// `built-in`, `project` or `knowledge` (a published rule entry); set by the loader.
    #[serde(default, skip_deserializing)]
    pub source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    rule: Vec<RuleSpec>,
    #[serde(default)]
    disabled: Vec<String>,
}

/// A rule with its compiled matcher.
#[derive(Debug, Clone)]
pub struct Rule {
    pub spec: RuleSpec,
    matcher: Regex,
}

impl Rule {
    fn compile(spec: RuleSpec) -> Result<Rule, KnowledgeError> {
        if spec.languages.is_empty() {
            return Err(KnowledgeError::BadRule {
                id: spec.id,
                reason: "languages is empty; use [\"*\"] for any language".into(),
            });
        }
        let source = if spec.literal {
            regex::escape(&spec.pattern)
        } else {
            spec.pattern.clone()
        };
        let matcher = RegexBuilder::new(&source)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| KnowledgeError::BadRule {
                id: spec.id.clone(),
                reason: format!("pattern does not compile: {e}"),
            })?;
        Ok(Rule { spec, matcher })
    }

    /// Whether the rule applies to code in `language` (an empty language matches every rule).
    pub fn applies_to(&self, language: &str) -> bool {
        language.is_empty()
            || self
                .spec
                .languages
                .iter()
                .any(|l| l == "*" || l.eq_ignore_ascii_case(language))
    }
}

/// One finding of a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    pub rule_id: String,
    pub message: String,
    pub severity: Severity,
    pub line: u32,
    pub snippet: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix_suggestion: Option<String>,
}

/// The active rule set.
#[derive(Debug, Clone, Default)]
pub struct GuardRules {
    rules: Vec<Rule>,
}

impl GuardRules {
    /// The built-in rules only.
    pub fn builtin() -> Result<GuardRules, KnowledgeError> {
        Self::load(None)
    }

    /// Built-ins overlaid with a project rules file's text (rules with the same id replace
    /// built-ins; `disabled` ids are dropped).
    pub fn load(project: Option<&str>) -> Result<GuardRules, KnowledgeError> {
        Self::load_layers(None, project)
    }

    /// Built-ins, overlaid first with the overrides kept in the knowledge store (shared by
    /// a team), then with the project's rules file: a later layer replaces rules with the
    /// same id and drops its `disabled` ids.
    pub fn load_layers(
        stored: Option<&str>,
        project: Option<&str>,
    ) -> Result<GuardRules, KnowledgeError> {
        let builtin = parse_file(BUILTIN_RULES, "built-in rules")?;
        let mut by_id: BTreeMap<String, RuleSpec> = BTreeMap::new();
        let mut order = Vec::new();
        for mut spec in builtin.rule {
            spec.source = "built-in".into();
            order.push(spec.id.clone());
            by_id.insert(spec.id.clone(), spec);
        }
        let layers = [
            (STORED_RULES_ORIGIN, "store", stored),
            (PROJECT_RULES_PATH, "project", project),
        ];
        for (origin, source, text) in layers {
            let Some(text) = text else { continue };
            let file = parse_file(text, origin)?;
            for mut spec in file.rule {
                spec.source = source.into();
                if !by_id.contains_key(&spec.id) {
                    order.push(spec.id.clone());
                }
                by_id.insert(spec.id.clone(), spec);
            }
            for id in file.disabled {
                by_id.remove(&id);
            }
        }
        let rules = order
            .into_iter()
            .filter_map(|id| by_id.remove(&id))
            .map(Rule::compile)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(GuardRules { rules })
    }

    /// Checks the text of a rules file named `origin` as the loader reads it (the TOML shape,
    /// every rule's fields, every pattern compiles); returns how many rules it has. A bad
    /// file's error names the line and what is accepted.
    pub fn check_file(text: &str, origin: &str) -> Result<usize, KnowledgeError> {
        let file = parse_file(text, origin)?;
        let count = file.rule.len();
        for spec in file.rule {
            let id = spec.id.clone();
            Rule::compile(spec).map_err(|e| {
                let line = text
                    .lines()
                    .position(|l| l.contains(&format!("\"{id}\"")))
                    .map_or_else(String::new, |n| format!("line {}: ", n + 1));
                KnowledgeError::RuleFile {
                    path: origin.to_string(),
                    reason: format!("{line}{e}"),
                }
            })?;
        }
        Ok(count)
    }

    /// Adds the guards of published `rule` entries: each entry's `extra.guards` is a list of
    /// `{pattern, literal?, severity?, message?}`; the rule id is `<entry id>:<n>`, the
    /// message defaults to the entry's title and the fix to its `doClause`. A guard whose
    /// pattern does not compile is skipped (and logged): one bad entry must not disable
    /// every check.
    pub fn with_entries(mut self, entries: &[Entry]) -> GuardRules {
        for e in entries
            .iter()
            .filter(|e| e.status == Status::Published && e.kind == Kind::Rule)
        {
            let guards = e.extra.get("guards").and_then(|g| g.as_array());
            for (n, g) in guards.into_iter().flatten().enumerate() {
                match entry_rule(e, n, g) {
                    Some(Ok(rule)) => self.rules.push(rule),
                    Some(Err(err)) => tracing::warn!(entry = %e.id, error = %err, "guard skipped"),
                    None => {}
                }
            }
        }
        self
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Rules for `language` (all when `None`).
    pub fn for_language(&self, language: Option<&str>) -> Vec<&Rule> {
        self.rules
            .iter()
            .filter(|r| language.is_none_or(|l| r.applies_to(l)))
            .collect()
    }

    /// Checks `code` written in `language`, line by line, skipping comment lines. This is
    /// the path for a snippet without its file (the `guard_check` tool): a line test, so a
    /// block comment whose lines do not start with `*` is read as code. A whole file goes
    /// through [`GuardRules::check_views`] (the bootstrap's guard audit does).
    pub fn check(&self, code: &str, language: &str) -> Vec<Violation> {
        let rules = self.for_language(Some(language));
        let mut out = Vec::new();
        for (i, line) in code.lines().enumerate() {
            if is_comment(line) {
                continue;
            }
            for rule in &rules {
                if rule.matcher.is_match(line) {
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

/// The rule of guard `n` of entry `e` (`None` when it has no pattern).
fn entry_rule(e: &Entry, n: usize, g: &serde_json::Value) -> Option<Result<Rule, KnowledgeError>> {
    let pattern = g.get("pattern")?.as_str()?.to_string();
    let text = |k: &str| g.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let severity = match text("severity").as_deref() {
        Some("error") => Severity::Error,
        Some("info") => Severity::Info,
        _ => Severity::Warning,
    };
    let language = if e.language.is_empty() {
        "*".to_string()
    } else {
        e.language.clone()
    };
    let spec = RuleSpec {
        id: format!("{}:{}", e.id, n + 1),
        description: text("message").unwrap_or_else(|| e.title.clone()),
        languages: vec![language],
        pattern,
        literal: g.get("literal").and_then(|v| v.as_bool()).unwrap_or(false),
        severity,
        fix: e
            .extra
            .get("doClause")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        scope: Scope::Code,
        source: "knowledge".to_string(),
    };
    Some(Rule::compile(spec))
}

/// What a rules file may hold, for error messages.
const ACCEPTED: &str = "a rules file holds `disabled = [\"<rule id>\", ...]` and [[rule]] tables with id, description, languages, pattern, severity (error, warning or info), and optionally literal, fix and scope (code, literals or raw)";

fn parse_file(text: &str, origin: &str) -> Result<RuleFile, KnowledgeError> {
    toml::from_str(text).map_err(|e| KnowledgeError::RuleFile {
        path: origin.to_string(),
        reason: format!("{}; {ACCEPTED}", e.to_string().trim_end()),
    })
}

fn is_comment(line: &str) -> bool {
    let t = line.trim_start();
    ["//", "#", "/*", "*", "--"]
        .iter()
        .any(|p| t.starts_with(p))
        && !t.starts_with("#[")
        && !t.starts_with("#include")
        && !t.starts_with("#import")
}

/// The language of a file, from its extension (empty when unknown).
pub fn language_of(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext.to_ascii_lowercase().as_str() {
        "rs" => "rust",
        "swift" => "swift",
        "m" | "mm" | "h" => "objectivec",
        "js" | "jsx" | "mjs" | "cjs" => "javascript",
        "ts" | "tsx" => "typescript",
        "py" => "python",
        "go" => "go",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "dart" => "dart",
        "c" => "c",
        "cc" | "cpp" | "hpp" => "cpp",
        "rb" => "ruby",
        _ => "",
    }
}

/// Writes `run` and its violations inside the caller's transaction; returns its number.
pub(crate) fn insert_run(
    conn: &rusqlite::Connection,
    run: &GuardRun,
) -> Result<i64, KnowledgeError> {
    conn.execute(
        "insert into guard_runs (target, language, violation_count, checked_at, checked_by) \
         values (?1, ?2, ?3, ?4, ?5)",
        params![
            run.target,
            run.language,
            run.violation_count as i64,
            run.checked_at,
            run.checked_by
        ],
    )?;
    let seq = conn.last_insert_rowid();
    for v in &run.violations {
        conn.execute(
            "insert into guard_violations (run_seq, rule_id, severity, line, snippet, message) \
             values (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                seq,
                v.rule_id,
                v.severity.as_str(),
                v.line,
                v.snippet,
                v.message
            ],
        )?;
    }
    Ok(seq)
}

/// A recorded check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardRun {
    pub run: i64,
    pub target: String,
    pub language: String,
    pub violation_count: u64,
    pub checked_at: i64,
    pub checked_by: String,
    pub violations: Vec<Violation>,
}

/// Totals over all recorded checks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardStats {
    pub runs: u64,
    pub violations: u64,
    pub by_severity: BTreeMap<String, u64>,
    pub by_rule: BTreeMap<String, u64>,
    pub files_with_violations: u64,
}

impl KnowledgeStore {
    pub(crate) fn stored_guard_overrides(&self) -> Result<Option<String>, KnowledgeError> {
        Ok(self
            .conn
            .query_row("select rules from guard_overrides where id = 1", [], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// Replaces the stored overrides after checking that they parse and compile.
    pub(crate) fn store_guard_overrides(
        &mut self,
        text: Option<&str>,
        by: &str,
    ) -> Result<(), KnowledgeError> {
        let now = self.now();
        match text {
            Some(text) => {
                GuardRules::load_layers(Some(text), None)?;
                self.conn.execute(
                    "insert into guard_overrides (id, rules, updated_by, updated_at) \
                     values (1, ?1, ?2, ?3) on conflict (id) do update set rules = ?1, \
                     updated_by = ?2, updated_at = ?3",
                    params![text, by, now],
                )?;
            }
            None => {
                self.conn.execute("delete from guard_overrides", [])?;
            }
        }
        Ok(())
    }

    /// Records one check of `target` and its violations.
    pub(crate) fn insert_guard_run(
        &mut self,
        target: &str,
        language: &str,
        violations: &[Violation],
        by: &str,
    ) -> Result<i64, KnowledgeError> {
        let run = GuardRun {
            run: 0,
            target: target.to_string(),
            language: language.to_string(),
            violation_count: violations.len() as u64,
            checked_at: self.now(),
            checked_by: by.to_string(),
            violations: violations.to_vec(),
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let seq = insert_run(&tx, &run)?;
        tx.commit()?;
        Ok(seq)
    }

    /// The latest runs, newest first, optionally only those of `target`.
    pub(crate) fn latest_guard_runs(
        &self,
        target: Option<&str>,
        limit: usize,
    ) -> Result<Vec<GuardRun>, KnowledgeError> {
        let mut stmt = self.conn.prepare(
            "select seq, target, language, violation_count, checked_at, checked_by from guard_runs \
             where ?1 is null or target = ?1 order by seq desc limit ?2",
        )?;
        let rows = stmt.query_map(params![target, limit as i64], |r| {
            Ok(GuardRun {
                run: r.get(0)?,
                target: r.get(1)?,
                language: r.get(2)?,
                violation_count: r.get::<_, i64>(3)?.max(0) as u64,
                checked_at: r.get(4)?,
                checked_by: r.get(5)?,
                violations: Vec::new(),
            })
        })?;
        let mut runs = rows.collect::<Result<Vec<_>, _>>()?;
        for run in &mut runs {
            run.violations = self.run_violations(run.run)?;
        }
        Ok(runs)
    }

    fn run_violations(&self, run: i64) -> Result<Vec<Violation>, KnowledgeError> {
        let mut stmt = self.conn.prepare(
            "select rule_id, message, severity, line, snippet from guard_violations \
             where run_seq = ?1 order by line, seq",
        )?;
        let rows = stmt.query_map([run], |r| {
            let severity: String = r.get(2)?;
            Ok(Violation {
                rule_id: r.get(0)?,
                message: r.get(1)?,
                severity: match severity.as_str() {
                    "error" => Severity::Error,
                    "info" => Severity::Info,
                    _ => Severity::Warning,
                },
                line: r.get(3)?,
                snippet: r.get(4)?,
                fix_suggestion: None,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Totals over every recorded run.
    pub(crate) fn guard_totals(&self) -> Result<GuardStats, KnowledgeError> {
        let mut stats = GuardStats {
            runs: self.count("select count(*) from guard_runs")?,
            violations: self.count("select count(*) from guard_violations")?,
            files_with_violations: self
                .count("select count(distinct target) from guard_runs where violation_count > 0")?,
            ..GuardStats::default()
        };
        let mut stmt = self
            .conn
            .prepare("select severity, rule_id, count(*) from guard_violations group by 1, 2")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })?;
        for row in rows {
            let (severity, rule, n) = row?;
            let n = n.max(0) as u64;
            *stats.by_severity.entry(severity).or_default() += n;
            *stats.by_rule.entry(rule).or_default() += n;
        }
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn builtin_rules_compile_and_apply_by_language() {
        let rules = GuardRules::builtin().unwrap_or_default();
        assert!(rules.rules().len() >= 10);
        let v = rules.check("let x = y.unwrap();\n// z.unwrap()\n", "rust");
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].rule_id.as_str(), v[0].line), ("rust-unwrap", 1));
        assert!(rules.check("let x = y.unwrap();", "python").is_empty());
    }

    #[test]
    fn project_file_overrides_and_disables() {
        let project = r#"
disabled = ["rust-dbg"]
[[rule]]
id = "rust-unwrap"
description = "no unwrap here"
languages = ["rust"]
pattern = "unwrap"
literal = true
severity = "error"
"#;
        let rules = GuardRules::load(Some(project)).unwrap_or_default();
        assert!(rules.rules().iter().all(|r| r.spec.id != "rust-dbg"));
        let v = rules.check("a.unwrap()", "rust");
        assert_eq!(v[0].severity, Severity::Error);
        assert_eq!(v[0].message, "no unwrap here");
    }

    #[test]
    fn bad_patterns_are_named() {
        let bad = "[[rule]]\nid = \"x\"\ndescription = \"d\"\nlanguages = [\"*\"]\npattern = \"(\"\nseverity = \"info\"\n";
        let err = GuardRules::load(Some(bad)).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("invalid guard rule 'x'")));
    }
}
