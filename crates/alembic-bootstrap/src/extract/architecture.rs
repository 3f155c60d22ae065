//! Architecture: module layers and dependency cycles from the module topology, and the
//! program's entry points.

use regex::Regex;

use super::{Finding, detail, importance};
use crate::facts::{Evidence, Facts, spread};

/// Modules named per layer in a summary.
const NAMES_PER_LAYER: usize = 6;

pub fn extract(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(layers(facts));
    out.extend(cycles(facts));
    out.extend(entry_points(facts));
    out
}

/// The first code line of the first scanned file of `module` (a module is a directory).
fn module_evidence(facts: &Facts, module: &str) -> Option<Evidence> {
    facts
        .sources()
        .find(|f| alembic_code::topology::module_of(&f.path) == module)
        .map(|f| Evidence {
            file: f.path.clone(),
            line: f.first_code_line(),
        })
}

fn layers(facts: &Facts) -> Option<Finding> {
    let modules = &facts.graph.modules;
    let linked = modules
        .modules
        .values()
        .filter(|m| !m.dependencies.is_empty())
        .count();
    if modules.modules.len() < 2 || linked == 0 {
        return None;
    }
    let mut parts = Vec::new();
    let mut evidence = Vec::new();
    for (layer, names) in modules.layers() {
        let shown: Vec<&str> = names
            .iter()
            .take(NAMES_PER_LAYER)
            .map(String::as_str)
            .collect();
        let more = names.len().saturating_sub(NAMES_PER_LAYER);
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        parts.push(format!("layer {layer}: {}{tail}", shown.join(", ")));
        evidence.extend(
            names
                .iter()
                .filter_map(|m| module_evidence(facts, m))
                .take(1),
        );
    }
    let summary = format!(
        "{} modules in {} layers ({} with project dependencies); {}.",
        modules.modules.len(),
        parts.len(),
        linked,
        parts.join("; ")
    );
    let shown = spread(&evidence, super::EVIDENCE_SHOWN);
    Some(Finding {
        title: "Architecture: module layers".into(),
        detail: detail(facts, &summary, &shown),
        summary,
        knowledge_type: "architecture".into(),
        language: facts.profile.primary_language().unwrap_or("").into(),
        evidence: shown,
        importance: 8,
        entry: None,
    })
}

fn cycles(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    for cycle in facts.graph.modules.cycles() {
        let evidence: Vec<Evidence> = cycle
            .iter()
            .filter_map(|m| module_evidence(facts, m))
            .collect();
        if evidence.is_empty() {
            continue;
        }
        let names = cycle.join(", ");
        let summary = format!(
            "Modules {names} depend on each other (a dependency cycle of {} modules).",
            cycle.len()
        );
        let shown = spread(&evidence, super::EVIDENCE_SHOWN);
        out.push(Finding {
            title: format!("Architecture: dependency cycle between {names}"),
            detail: detail(facts, &summary, &shown),
            summary,
            knowledge_type: "module-dependency".into(),
            language: facts.profile.primary_language().unwrap_or("").into(),
            evidence: shown,
            importance: 7,
            entry: None,
        });
    }
    out
}

fn entry_points(facts: &Facts) -> Option<Finding> {
    let Ok(re) = Regex::new(
        r"\bfn\s+main\s*\(|^\s*@main\b|@UIApplicationMain|@NSApplicationMain|__name__\s*==|^func\s+main\s*\(|static\s+void\s+[Mm]ain\s*\(|\bint\s+main\s*\(|UIApplicationMain\(",
    ) else {
        return None;
    };
    let mut evidence: Vec<Evidence> = Vec::new();
    let mut kinds = Vec::new();
    for ep in &facts.graph.entry_points {
        if facts.file(&ep.file).is_some_and(|f| f.is_test) {
            continue;
        }
        let e = facts.first_match(&ep.file, &re).or_else(|| {
            facts.file(&ep.file).map(|f| Evidence {
                file: ep.file.clone(),
                line: f.first_code_line(),
            })
        });
        if let Some(e) = e {
            kinds.push(format!("{} ({})", ep.file, ep.kind));
            evidence.push(e);
        }
    }
    if evidence.is_empty() {
        return None;
    }
    let summary = format!("{} entry points: {}.", evidence.len(), kinds.join(", "));
    let shown = spread(&evidence, super::EVIDENCE_SHOWN);
    Some(Finding {
        title: "Architecture: entry points".into(),
        detail: detail(facts, &summary, &shown),
        summary,
        knowledge_type: "architecture".into(),
        language: facts.profile.primary_language().unwrap_or("").into(),
        evidence: shown,
        importance: importance(evidence.len()).max(6),
        entry: None,
    })
}
