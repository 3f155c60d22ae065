//! Coding standards: naming conventions of types and functions, file-size statistics.

use alembic_code::summary::TypeKind;

use super::{Finding, detail, importance};
use crate::detect::language_of;
use crate::facts::{Evidence, Facts, spread};

/// Share of names that must follow a convention before it is reported as the standard.
const DOMINANT: f64 = 0.8;

fn is_upper_camel(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_uppercase()) && !s.contains('_')
}
fn is_snake(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
}
fn is_lower_camel(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && !s.contains('_')
        && s.chars().any(|c| c.is_ascii_uppercase())
}

pub fn extract(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(type_naming(facts));
    out.extend(function_naming(facts));
    out.extend(file_sizes(facts));
    out
}

fn type_naming(facts: &Facts) -> Option<Finding> {
    let types: Vec<_> = facts
        .graph
        .types
        .values()
        .filter(|t| t.declared && !matches!(t.kind, TypeKind::Extension) && t.line > 0)
        .collect();
    let ok: Vec<Evidence> = types
        .iter()
        .filter(|t| is_upper_camel(&t.simple_name))
        .map(|t| Evidence {
            file: t.file.clone(),
            line: t.line,
        })
        .collect();
    if types.len() < 3 || (ok.len() as f64) < DOMINANT * types.len() as f64 {
        return None;
    }
    let summary = format!(
        "{} of {} declared types are named in UpperCamelCase.",
        ok.len(),
        types.len()
    );
    Some(make(
        facts,
        "Naming: types in UpperCamelCase",
        summary,
        &ok,
        "code-style",
    ))
}

fn function_naming(facts: &Facts) -> Vec<Finding> {
    let mut snake = Vec::new();
    let mut camel = Vec::new();
    let mut total = 0usize;
    let functions = facts
        .graph
        .functions
        .values()
        .flatten()
        .map(|f| (&f.name, &f.file, f.line));
    let methods = facts
        .graph
        .types
        .values()
        .flat_map(|t| t.methods.iter().map(|m| (&m.name, &m.file, m.line)));
    for (name, file, line) in functions.chain(methods) {
        if line == 0 || language_of(file).is_none() || name.len() < 3 {
            continue;
        }
        total += 1;
        let e = Evidence {
            file: file.clone(),
            line,
        };
        if is_snake(name) && name.contains('_') {
            snake.push(e);
        } else if is_lower_camel(name) {
            camel.push(e);
        }
    }
    let mut out = Vec::new();
    let styled = snake.len() + camel.len();
    if styled < 3 || total == 0 {
        return out;
    }
    for (hits, title, style) in [
        (&snake, "Naming: functions in snake_case", "snake_case"),
        (
            &camel,
            "Naming: functions in lowerCamelCase",
            "lowerCamelCase",
        ),
    ] {
        if hits.len() as f64 >= DOMINANT * styled as f64 {
            let summary = format!(
                "{} of {} multi-word function names are {style}.",
                hits.len(),
                styled
            );
            out.push(make(facts, title, summary, hits, "code-style"));
        }
    }
    out
}

fn file_sizes(facts: &Facts) -> Option<Finding> {
    let mut sizes: Vec<(usize, &str, usize)> = facts
        .sources()
        .filter(|f| !f.is_test)
        .map(|f| (f.line_count(), f.path.as_str(), f.first_code_line()))
        .filter(|(n, _, _)| *n > 0)
        .collect();
    if sizes.len() < 3 {
        return None;
    }
    sizes.sort_unstable();
    let at = |q: f64| sizes[((sizes.len() - 1) as f64 * q).round() as usize].0;
    let (median, p90) = (at(0.5), at(0.9));
    let max = sizes[sizes.len() - 1];
    let over = sizes.iter().filter(|(n, _, _)| *n > 600).count();
    let summary = format!(
        "{} source files: median {median} lines, 90th percentile {p90}, largest {} ({} lines); {over} files exceed 600 lines.",
        sizes.len(),
        max.1,
        max.0
    );
    let evidence: Vec<Evidence> = sizes
        .iter()
        .rev()
        .take(3)
        .map(|(_, p, line)| Evidence {
            file: p.to_string(),
            line: *line,
        })
        .collect();
    Some(make(
        facts,
        "Coding standards: source file sizes",
        summary,
        &evidence,
        "code-standard",
    ))
}

fn make(facts: &Facts, title: &str, summary: String, hits: &[Evidence], kt: &str) -> Finding {
    let shown = spread(hits, super::EVIDENCE_SHOWN);
    Finding {
        title: title.into(),
        detail: detail(facts, &summary, &shown),
        summary,
        knowledge_type: kt.into(),
        language: facts.profile.primary_language().unwrap_or("").into(),
        evidence: shown,
        importance: importance(hits.len()),
        entry: None,
    }
}
