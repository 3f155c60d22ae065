//! Testing: test files against source files, and the test frameworks in use.

use super::{Finding, Signal, importance};
use crate::facts::{Evidence, Facts, spread};

const FRAMEWORKS: &[Signal] = &[
    Signal {
        title: "Testing: Rust #[test] functions",
        what: "`#[test]` functions",
        languages: &["rust"],
        pattern: r"#\[(tokio::)?test\b",
        min_hits: 1,
    },
    Signal {
        title: "Testing: XCTest cases",
        what: "XCTestCase subclasses",
        languages: &["swift", "objectivec"],
        pattern: r"XCTestCase",
        min_hits: 1,
    },
    Signal {
        title: "Testing: pytest-style test functions",
        what: "`def test_` functions",
        languages: &["python"],
        pattern: r"^\s*def\s+test_\w+",
        min_hits: 1,
    },
    Signal {
        title: "Testing: describe/it specs",
        what: "`describe(`/`it(`/`test(` blocks",
        languages: &["typescript", "javascript"],
        pattern: r"^\s*(describe|it|test)\(",
        min_hits: 1,
    },
    Signal {
        title: "Testing: Go Test functions",
        what: "`func TestX(t *testing.T)` functions",
        languages: &["go"],
        pattern: r"^func\s+Test\w+\(",
        min_hits: 1,
    },
    Signal {
        title: "Testing: JUnit @Test methods",
        what: "`@Test` methods",
        languages: &["java", "kotlin"],
        pattern: r"^\s*@Test\b",
        min_hits: 1,
    },
];

pub fn extract(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    let sources: Vec<_> = facts.sources().collect();
    let tests: Vec<_> = sources.iter().filter(|f| f.is_test).collect();
    let inline: Vec<Evidence> = sources
        .iter()
        .filter(|f| !f.is_test)
        .filter_map(|f| {
            f.code
                .lines()
                .position(|l| l.trim_start().starts_with("#[cfg(test)]"))
                .map(|i| Evidence {
                    file: f.path.clone(),
                    line: i + 1,
                })
        })
        .collect();
    let non_test = sources.len() - tests.len();
    if non_test > 0 {
        let mut evidence: Vec<Evidence> = tests
            .iter()
            .map(|f| Evidence {
                file: f.path.clone(),
                line: f.first_code_line(),
            })
            .collect();
        evidence.extend(inline.iter().cloned());
        let ratio = tests.len() as f64 / non_test as f64;
        let summary = format!(
            "{} test files for {} source files (ratio {:.2}); {} source files carry inline test modules.",
            tests.len(),
            non_test,
            ratio,
            inline.len()
        );
        if !evidence.is_empty() {
            let shown = spread(&evidence, super::EVIDENCE_SHOWN);
            out.push(Finding {
                title: "Testing: test-to-source ratio".into(),
                detail: super::detail(facts, &summary, &shown),
                summary,
                knowledge_type: "best-practice".into(),
                language: facts.profile.primary_language().unwrap_or("").into(),
                evidence: shown,
                importance: importance(tests.len() + inline.len()),
                entry: None,
            });
        }
    }
    out.extend(test_frameworks(facts));
    out
}

/// Framework signals, counted in test files too (where they live), unlike `from_signals`.
fn test_frameworks(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in FRAMEWORKS {
        let Ok(re) = regex::Regex::new(s.pattern) else {
            continue;
        };
        let hits: Vec<Evidence> = facts
            .sources()
            .filter(|f| s.languages.contains(&f.language.unwrap_or_default()))
            .flat_map(|f| {
                f.code
                    .lines()
                    .enumerate()
                    .filter(|(_, l)| re.is_match(l))
                    .map(|(i, _)| Evidence {
                        file: f.path.clone(),
                        line: i + 1,
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        if hits.len() >= s.min_hits {
            let summary = format!("{}: {} places.", s.what, hits.len());
            let shown = spread(&hits, super::EVIDENCE_SHOWN);
            out.push(Finding {
                title: s.title.into(),
                detail: super::detail(facts, &summary, &shown),
                summary,
                knowledge_type: "best-practice".into(),
                language: s.languages[0].into(),
                evidence: shown,
                importance: importance(hits.len()),
                entry: None,
            });
        }
    }
    out
}
