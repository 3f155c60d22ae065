#![allow(clippy::unwrap_used, clippy::expect_used)]

//! A re-run whose evidence changed under the same title revises the submitted candidate
//! (content, evidence, history row, version bump); a reviewed candidate is left alone.

use std::path::Path;
use std::sync::Arc;

use alembic_bootstrap::checkpoint::REVISED_REASON;
use alembic_bootstrap::{
    Bootstrap, BootstrapConfig, BootstrapOptions, BootstrapReport, DeterministicAnalyser,
    DimensionSummary, NoProgress,
};
use alembic_knowledge::{Entry, Filter, KnowledgeBackend, KnowledgeStore, Status};
use alembic_memory::MemoryConfig;

const TITLE: &str = "Guard rule rust-unwrap: unwrap() panics on None/Err in library code";

async fn run(root: &Path) -> BootstrapReport {
    let b = Bootstrap::new(
        root,
        Arc::new(alembic_code::CodeService::new(root).unwrap()),
        MemoryConfig::default(),
        BootstrapConfig::default(),
    );
    let opts = BootstrapOptions {
        dimensions: vec!["error-resilience".into()],
        ..Default::default()
    };
    b.run(&DeterministicAnalyser, &opts, &NoProgress)
        .await
        .unwrap()
}

/// `n` functions that unwrap, one per line pair.
fn write_source(root: &Path, n: usize) {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "pub fn f{i}(v: Option<u8>) -> u8 {{\n    v.unwrap()\n}}\n"
        ));
    }
    std::fs::write(root.join("lib.rs"), text).unwrap();
}

fn the_entry(root: &Path) -> Entry {
    let kb = KnowledgeStore::open_project(root).unwrap();
    let all: Vec<Entry> = kb
        .list(&Filter {
            limit: 100,
            ..Filter::default()
        })
        .unwrap()
        .into_iter()
        .filter(|e| e.title == TITLE)
        .collect();
    assert_eq!(all.len(), 1, "one candidate per title");
    all.into_iter().next().unwrap()
}

fn summary(report: &BootstrapReport) -> &DimensionSummary {
    &report.dimensions[0]
}

fn version(e: &Entry) -> u64 {
    e.extra["version"].as_u64().unwrap()
}

#[tokio::test]
async fn changed_evidence_revises_a_submitted_candidate_and_leaves_a_reviewed_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_source(root, 1);
    let first = run(root).await;
    assert_eq!(summary(&first).candidates, 1);
    let created = the_entry(root);
    assert_eq!(version(&created), 1);
    assert!(
        created.content.contains("1 lines in 1 files"),
        "{}",
        created.content
    );

    // a second unwrap: same title, new evidence → the candidate is revised in place
    write_source(root, 2);
    let second = run(root).await;
    assert!(second.candidates.is_empty(), "{:?}", second.candidates);
    assert_eq!((summary(&second).revised, summary(&second).kept), (1, 0));
    let revised = the_entry(root);
    assert_eq!(revised.id, created.id);
    assert_eq!(revised.status, Status::Submitted);
    assert_eq!(version(&revised), 2);
    assert!(
        revised.content.contains("2 lines in 1 files"),
        "{}",
        revised.content
    );
    assert_eq!(revised.extra["evidence"].as_array().unwrap().len(), 2);
    let kb = KnowledgeStore::open_project(root).unwrap();
    let history = kb.history(&created.id).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].reason.as_deref(), Some(REVISED_REASON));
    assert_eq!(
        (history[1].from, history[1].to),
        (Some(Status::Submitted), Status::Submitted)
    );
    // the table says so
    assert!(
        second.table().contains("(1 revised, 0 kept as reviewed)"),
        "{}",
        second.table()
    );

    // nothing changed: no revision, no version bump
    let third = run(root).await;
    assert_eq!(
        (summary(&third).revised, summary(&third).candidates),
        (0, 0)
    );
    assert_eq!(version(&the_entry(root)), 2);

    // reviewed: a changed evidence leaves it as the reviewer saw it
    let mut kb = KnowledgeStore::open_project(root).unwrap();
    kb.transition(&created.id, Status::Approved, "reviewer", None, None)
        .unwrap();
    write_source(root, 3);
    let fourth = run(root).await;
    assert_eq!((summary(&fourth).revised, summary(&fourth).kept), (0, 1));
    assert!(fourth.candidates.is_empty());
    let kept = the_entry(root);
    assert_eq!(kept.status, Status::Approved);
    assert_eq!(kept.content, revised.content);
    assert_eq!(version(&kept), 2);
}
