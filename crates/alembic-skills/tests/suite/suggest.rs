//! `suggest_skills` reads guard checks, memory preferences, knowledge gaps and the candidate
//! backlog from the services, and says why with the numbers.

use alembic_knowledge::{NewEntry, Severity, Status, Violation};
use alembic_memory::{MemoryType, NewMemory};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::Harness;

fn violation(rule: &str, line: u32) -> Violation {
    Violation {
        rule_id: rule.into(),
        message: format!("{rule} found"),
        severity: Severity::Warning,
        line,
        snippet: "x".into(),
        fix_suggestion: None,
    }
}

fn seed(h: &Harness) {
    h.knowledge
        .with(|kb| {
            let unwraps: Vec<_> = (1..=4).map(|l| violation("rust-unwrap", l)).collect();
            kb.record_guard_run("src/a.rs", "rust", &unwraps, "agent")?;
            kb.record_guard_run(
                "src/b.rs",
                "rust",
                &[violation("rust-unwrap", 1), violation("rust-dbg", 2)],
                "agent",
            )?;
            for i in 0..6 {
                let entry = NewEntry {
                    title: format!("Networking convention {i}"),
                    content: format!("Use the client wrapper, variant {i}."),
                    category: "networking".into(),
                    ..NewEntry::default()
                };
                kb.create(&entry, Status::Submitted, "agent", None)?;
            }
            let published = NewEntry {
                title: "Logging through tracing".into(),
                content: "Log with tracing macros.".into(),
                category: "logging".into(),
                ..NewEntry::default()
            };
            let e = kb.create(&published, Status::Submitted, "agent", None)?;
            kb.transition(&e.id, Status::Approved, "reviewer", None, None)?;
            kb.transition(&e.id, Status::Published, "reviewer", None, None)?;
            Ok(())
        })
        .unwrap();
    h.memory
        .with_store(|m| {
            for (content, importance) in [
                ("Prefer small pull requests", 8.0),
                ("Use tabs in Makefiles only", 4.0),
            ] {
                m.add(NewMemory {
                    kind: MemoryType::Preference,
                    content: content.into(),
                    importance,
                    ..NewMemory::default()
                })?;
            }
            m.add(NewMemory {
                content: "The API lives in src/api".into(),
                ..NewMemory::default()
            })?;
            Ok(())
        })
        .unwrap();
}

fn names_and_rationales(data: &Value) -> Vec<(String, String, String)> {
    data["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["priority"].as_str().unwrap().to_string(),
                s["rationale"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn nothing_recorded_means_no_suggestions() {
    let h = Harness::new();
    let data = h.ok("suggest_skills", json!({})).await;
    assert_eq!(
        data,
        json!({"suggestions": [], "alreadyCovered": [], "unavailable": []})
    );
}

#[tokio::test]
async fn each_signal_gives_a_suggestion_with_its_numbers() {
    let h = Harness::new();
    seed(&h);
    let out = h.call("suggest_skills", json!({})).await;
    assert!(out.is_ok(), "{}", out.text_for_model());
    let data = out.output.clone().unwrap().data;
    let row = |n: &str, p: &str, r: &str| (n.to_string(), p.to_string(), r.to_string());
    assert_eq!(
        names_and_rationales(&data),
        vec![
            row(
                "avoid-rust-unwrap",
                "high",
                "guard rule `rust-unwrap` was violated 5 times, 83% of the 6 violations in 2 recorded checks"
            ),
            row(
                "project-preferences",
                "medium",
                "2 preference memories are recorded; the most important: \"Prefer small pull requests\" (importance 8), \"Use tabs in Makefiles only\" (importance 4)"
            ),
            row(
                "networking-guide",
                "high",
                "category `networking` has 6 candidates under review but no published recipe"
            ),
            row(
                "review-candidates",
                "medium",
                "6 candidates wait: 6 submitted, 0 drafts, 0 approved but not published"
            ),
        ]
    );
    assert_eq!(
        data["suggestions"][0]["evidence"],
        json!({"rule": "rust-unwrap", "violations": 5, "totalViolations": 6, "checks": 2})
    );
    assert!(
        out.output
            .unwrap()
            .text
            .starts_with("4 skill suggestion(s):\n- avoid-rust-unwrap [high]"),
    );

    // once the skill exists it is covered, not suggested again
    h.ok(
        "create_skill",
        json!({"name": "review-candidates", "description": "Our review checklist", "content": "- evidence\n"}),
    )
    .await;
    let data = h.ok("suggest_skills", json!({})).await;
    assert_eq!(data["alreadyCovered"], json!(["review-candidates"]));
    assert_eq!(data["suggestions"].as_array().unwrap().len(), 3);
}
