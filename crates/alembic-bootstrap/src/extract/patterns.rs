//! Design patterns from the class graph and names: singleton, delegate/protocol,
//! coordinator, repository, observer, builder, factory. A pattern is reported only with the
//! declarations or lines that show it.

use std::collections::BTreeSet;

use alembic_code::TypeInfo;
use alembic_code::summary::TypeKind;
use regex::Regex;

use super::{Finding, detail, importance};
use crate::facts::{Evidence, Facts, spread};

/// Static members that hand out the one instance.
const SINGLETON_MEMBERS: &[&str] = &[
    "shared",
    "sharedInstance",
    "instance",
    "getInstance",
    "get_instance",
    "INSTANCE",
];

/// Lines that declare a singleton, also where the graph has no static member (Swift static
/// lets, Rust statics, Python class attributes, ObjC class methods, Go sync.Once).
const SINGLETON_LINES: &str = r"static\s+(let|var)\s+(shared|sharedInstance|instance)\s*[:=]|static\s+[A-Z_]+\s*:\s*(std::sync::)?(OnceLock|OnceCell|LazyLock|Lazy)<|^\s*_instance\s*(:\s*[\w\[\]|. ]+)?=\s*None|^\s*\+\s*\(instancetype\)\s*shared\w*|private\s+static\s+\w+\s+instance\b|static\s+getInstance\s*\(|\bsync\.Once\b";

/// Calls that register or notify observers.
const OBSERVER_LINES: &str = r"\b(fn|def|func|function)\s+(add_?[oO]bserver|add_?[lL]istener|subscribe|notify_?[oO]bservers|remove_?[oO]bserver)\b|^\s*(public\s+|private\s+)?(add[OL]\w*|subscribe|notifyObservers)\s*\(.*\)\s*(:\s*\w+\s*)?\{";

/// Places that show a pattern, each with the type it belongs to.
type Hits = Vec<(String, Evidence)>;

pub fn extract(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    let found: [(&str, &str, Hits); 7] = [
        ("singleton", "code-pattern", singletons(facts)),
        ("delegate", "code-relation", delegates(facts)),
        (
            "coordinator",
            "code-pattern",
            by_suffix(facts, &["Coordinator"], false),
        ),
        (
            "repository",
            "code-pattern",
            by_suffix(facts, &["Repository"], false),
        ),
        ("observer", "code-pattern", observers(facts)),
        (
            "builder",
            "code-pattern",
            by_suffix(facts, &["Builder"], true),
        ),
        (
            "factory",
            "code-pattern",
            by_suffix(facts, &["Factory"], false),
        ),
    ];
    for (name, kt, hits) in found {
        if let Some(f) = finding(facts, name, kt, hits) {
            out.push(f);
        }
    }
    out
}

fn finding(facts: &Facts, name: &str, kt: &str, hits: Vec<(String, Evidence)>) -> Option<Finding> {
    if hits.is_empty() {
        return None;
    }
    let types: BTreeSet<&str> = hits.iter().map(|(t, _)| t.as_str()).collect();
    let evidence: Vec<Evidence> = hits.iter().map(|(_, e)| e.clone()).collect();
    let named: Vec<&str> = types.iter().take(3).copied().collect();
    let summary = format!(
        "The {name} pattern appears in {} types: {}.",
        types.len(),
        types.iter().copied().collect::<Vec<_>>().join(", ")
    );
    let shown = spread(&evidence, super::EVIDENCE_SHOWN);
    Some(Finding {
        title: format!("Design pattern: {name} ({})", named.join(", ")),
        detail: detail(facts, &summary, &shown),
        summary,
        knowledge_type: kt.into(),
        language: shown
            .first()
            .and_then(|e| crate::detect::language_of(&e.file))
            .unwrap_or("")
            .into(),
        evidence: shown,
        importance: importance(types.len()).max(6),
        entry: None,
    })
}

fn real_types(facts: &Facts) -> impl Iterator<Item = &TypeInfo> {
    facts.graph.types.values().filter(move |t| {
        t.declared && t.line > 0 && facts.file(&t.file).is_some_and(|f| !f.is_test)
    })
}

fn at(file: &str, line: usize) -> Evidence {
    Evidence {
        file: file.to_string(),
        line,
    }
}

/// The type declared in `e.file` closest above `e.line`, or the file stem.
fn enclosing_type(facts: &Facts, e: &Evidence) -> String {
    real_types(facts)
        .filter(|t| t.file == e.file && t.line <= e.line)
        .max_by_key(|t| t.line)
        .map(|t| t.simple_name.clone())
        .unwrap_or_else(|| {
            let name = e.file.rsplit('/').next().unwrap_or(&e.file);
            name.split('.').next().unwrap_or(name).to_string()
        })
}

fn singletons(facts: &Facts) -> Vec<(String, Evidence)> {
    let mut out = Vec::new();
    for t in real_types(facts) {
        let props = t
            .properties
            .iter()
            .filter(|p| p.is_static && SINGLETON_MEMBERS.contains(&p.name.as_str()));
        let props = props.filter(|p| {
            p.type_name
                .as_deref()
                .is_none_or(|ty| ty.contains(&t.simple_name))
        });
        let methods = t
            .methods
            .iter()
            .filter(|m| m.is_static && SINGLETON_MEMBERS.contains(&m.name.as_str()));
        let lines = props
            .map(|p| at(&p.file, p.line))
            .chain(methods.map(|m| at(&m.file, m.line)));
        out.extend(
            lines
                .filter(|e| e.line > 0)
                .map(|e| (t.simple_name.clone(), e)),
        );
    }
    extend_with_lines(facts, SINGLETON_LINES, &mut out);
    out
}

fn delegates(facts: &Facts) -> Vec<(String, Evidence)> {
    let mut out = Vec::new();
    for t in real_types(facts) {
        let is_protocol = matches!(t.kind, TypeKind::Protocol);
        let named = t.simple_name.ends_with("Delegate") || t.simple_name.ends_with("DataSource");
        if is_protocol && named {
            out.push((t.simple_name.clone(), at(&t.file, t.line)));
        }
        for p in &t.properties {
            let is_delegate = p.name == "delegate" || p.name.ends_with("Delegate");
            if is_delegate && p.line > 0 && !p.is_static {
                out.push((t.simple_name.clone(), at(&p.file, p.line)));
            }
        }
    }
    out
}

fn observers(facts: &Facts) -> Vec<(String, Evidence)> {
    let mut out: Vec<(String, Evidence)> = real_types(facts)
        .filter(|t| {
            ["Observer", "Listener", "Subscriber"]
                .iter()
                .any(|s| t.simple_name.ends_with(s))
        })
        .map(|t| (t.simple_name.clone(), at(&t.file, t.line)))
        .collect();
    extend_with_lines(facts, OBSERVER_LINES, &mut out);
    out
}

/// Types named `…Suffix` (with at least one method when `needs_methods`).
fn by_suffix(facts: &Facts, suffixes: &[&str], needs_methods: bool) -> Vec<(String, Evidence)> {
    real_types(facts)
        .filter(|t| !matches!(t.kind, TypeKind::Extension))
        .filter(|t| {
            suffixes
                .iter()
                .any(|s| t.simple_name.ends_with(s) && t.simple_name.len() > s.len())
        })
        .filter(|t| !needs_methods || !t.methods.is_empty())
        .map(|t| (t.simple_name.clone(), at(&t.file, t.line)))
        .collect()
}

fn extend_with_lines(facts: &Facts, pattern: &str, out: &mut Vec<(String, Evidence)>) {
    let Ok(re) = Regex::new(pattern) else {
        return;
    };
    for e in facts.matches(&re, &[]) {
        if !out.iter().any(|(_, x)| x == &e) {
            out.push((enclosing_type(facts, &e), e));
        }
    }
}
