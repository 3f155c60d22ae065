//! Agent guidelines the project already has (AGENTS.md, CLAUDE.md, Cursor rules, Copilot
//! instructions): what each file tells agents, as its headings and rules with `file:line`.
//! The block `alembic knowledge export` writes is left out (it is this tool's own output).

use super::{EVIDENCE_SHOWN, Finding};
use crate::facts::{Evidence, Facts, SourceFile};

/// Guideline files at fixed places, relative to the root.
pub const GUIDELINE_FILES: &[&str] = &[
    "AGENTS.md",
    "CLAUDE.md",
    ".cursorrules",
    ".github/copilot-instructions.md",
];

/// The directory of Cursor's rule files (`*.mdc`, `*.md`).
pub const CURSOR_RULES_DIR: &str = ".cursor/rules";

/// Rules listed in a finding's detail.
const RULES_LISTED: usize = 12;

/// Whether `path` is an agent guideline file.
pub fn is_guideline(path: &str) -> bool {
    GUIDELINE_FILES.contains(&path)
        || path
            .strip_prefix(CURSOR_RULES_DIR)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|name| {
                !name.contains('/') && (name.ends_with(".mdc") || name.ends_with(".md"))
            })
}

/// Paths of the guideline files under `root` (relative, `/`-separated).
pub fn find(root: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = GUIDELINE_FILES
        .iter()
        .filter(|p| root.join(p).is_file())
        .map(|p| p.to_string())
        .collect();
    if let Ok(dir) = std::fs::read_dir(root.join(CURSOR_RULES_DIR)) {
        for e in dir.flatten() {
            let path = format!("{CURSOR_RULES_DIR}/{}", e.file_name().to_string_lossy());
            if e.path().is_file() && is_guideline(&path) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// One finding per guideline file that states at least one rule.
pub fn extract(facts: &Facts, knowledge_type: &str) -> Vec<Finding> {
    facts
        .files
        .iter()
        .filter(|f| is_guideline(&f.path))
        .filter_map(|f| finding(f, knowledge_type))
        .collect()
}

/// Lines of a file with their 1-based numbers.
type Numbered = Vec<(usize, String)>;

/// Headings and rules (list items) outside the alembic export block.
fn outline(text: &str) -> (Numbered, Numbered) {
    let (mut headings, mut rules) = (Vec::new(), Vec::new());
    let mut in_export = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("<!-- alembic:begin") || t.starts_with("<!-- alembic:end") {
            in_export = t.starts_with("<!-- alembic:begin");
            continue;
        }
        if in_export {
            continue;
        }
        if let Some(h) = t.strip_prefix('#').filter(|_| !t.starts_with("#!")) {
            let h = h.trim_start_matches('#').trim();
            if !h.is_empty() {
                headings.push((i + 1, h.to_string()));
            }
        } else if let Some(rule) = list_item(t) {
            rules.push((i + 1, rule.to_string()));
        }
    }
    (headings, rules)
}

fn list_item(t: &str) -> Option<&str> {
    let rest = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| {
            let (n, rest) = t.split_once(". ")?;
            n.chars().all(|c| c.is_ascii_digit()).then_some(rest)
        })?;
    let rest = rest.trim();
    (rest.len() >= 3).then_some(rest)
}

fn finding(f: &SourceFile, kt: &str) -> Option<Finding> {
    let (headings, rules) = outline(&f.text);
    if rules.is_empty() {
        return None;
    }
    let topics: Vec<&str> = headings.iter().take(4).map(|(_, h)| h.as_str()).collect();
    let summary = format!(
        "{} gives agents {} rules{}.",
        f.path,
        rules.len(),
        if topics.is_empty() {
            String::new()
        } else {
            format!(" under {}", topics.join(", "))
        }
    );
    let mut detail = format!("{summary}\n\nWhat it says:\n");
    for (line, rule) in rules.iter().take(RULES_LISTED) {
        let rule: String = rule.chars().take(160).collect();
        detail.push_str(&format!("- `{}:{line}`: {rule}\n", f.path));
    }
    if rules.len() > RULES_LISTED {
        detail.push_str(&format!("- … {} more\n", rules.len() - RULES_LISTED));
    }
    let evidence = rules
        .iter()
        .take(EVIDENCE_SHOWN)
        .map(|(line, _)| Evidence {
            file: f.path.clone(),
            line: *line,
        })
        .collect();
    Some(Finding {
        title: format!("Agent guidelines in {}", f.path),
        summary,
        detail,
        knowledge_type: kt.to_string(),
        language: String::new(),
        evidence,
        importance: 7,
        entry: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outline_skips_the_export_block_and_code_fences_are_not_headings() {
        let text = "# Rules\n- Run cargo fmt before committing\n<!-- alembic:begin knowledge -->\n- exported\n<!-- alembic:end knowledge -->\n## Tests\n1. Never skip a test\n#!/bin/sh\n";
        let (headings, rules) = outline(text);
        assert_eq!(
            headings,
            [(1, "Rules".to_string()), (6, "Tests".to_string())]
        );
        assert_eq!(
            rules,
            [
                (2, "Run cargo fmt before committing".to_string()),
                (7, "Never skip a test".to_string())
            ]
        );
        assert!(is_guideline(".cursor/rules/style.mdc"));
        assert!(!is_guideline(".cursor/rules/nested/style.mdc"));
        assert!(!is_guideline("docs/AGENTS.md"));
    }
}
