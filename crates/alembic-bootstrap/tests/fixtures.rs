#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The deterministic bootstrap on fixture repositories with planted patterns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alembic_bootstrap::checkpoint::CandidateRecord;
use alembic_bootstrap::{
    Bootstrap, BootstrapConfig, BootstrapOptions, BootstrapReport, DeterministicAnalyser,
    DimensionStatus, NoProgress,
};
use alembic_knowledge::{Filter, KnowledgeBackend, KnowledgeStore, Status};
use alembic_memory::{ListFilter, MemoryConfig, MemorySource, PersistentMemory};

const PLANTED: [&str; 7] = [
    "singleton",
    "delegate",
    "coordinator",
    "repository",
    "observer",
    "builder",
    "factory",
];

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(name);
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
        &root,
    );
    (dir, root)
}

fn bootstrap(root: &Path) -> Bootstrap {
    Bootstrap::new(
        root,
        Arc::new(alembic_code::CodeService::new(root).unwrap()),
        MemoryConfig::default(),
        BootstrapConfig::default(),
    )
}

async fn run(root: &Path, opts: BootstrapOptions) -> BootstrapReport {
    bootstrap(root)
        .run(&DeterministicAnalyser, &opts, &NoProgress)
        .await
        .unwrap()
}

fn patterns_found(report: &BootstrapReport) -> Vec<&str> {
    PLANTED
        .into_iter()
        .filter(|p| {
            report.candidates.iter().any(|c| {
                c.dimension == "design-patterns"
                    && c.title.starts_with(&format!("Design pattern: {p} ("))
            })
        })
        .collect()
}

/// Every evidence place names a file that exists and a line inside it.
fn assert_evidence_exists(root: &Path, candidates: &[CandidateRecord]) {
    for c in candidates {
        assert!(!c.evidence.is_empty(), "{} has no evidence", c.title);
        for e in &c.evidence {
            let text = std::fs::read_to_string(root.join(&e.file))
                .unwrap_or_else(|_| panic!("{}: evidence file {} missing", c.title, e.file));
            assert!(
                e.line >= 1 && e.line <= text.lines().count(),
                "{}: {}:{} is outside the file",
                c.title,
                e.file,
                e.line
            );
        }
    }
}

#[tokio::test]
async fn planted_patterns_are_found_with_real_evidence() {
    let (_dir, root) = fixture("planted");
    let report = run(&root, BootstrapOptions::default()).await;
    let found = patterns_found(&report);
    assert!(found.len() >= 6, "found only {found:?}");
    assert_evidence_exists(&root, &report.candidates);
    // the evidence of a pattern points at the planted line
    let singleton = report
        .candidates
        .iter()
        .find(|c| c.title.starts_with("Design pattern: singleton"))
        .unwrap();
    let cited: Vec<String> = singleton
        .evidence
        .iter()
        .map(|e| {
            let text = std::fs::read_to_string(root.join(&e.file)).unwrap();
            text.lines().nth(e.line - 1).unwrap().to_string()
        })
        .collect();
    assert!(
        cited.iter().any(|l| l.contains("static let shared")),
        "{cited:?}"
    );
    assert!(report.project.languages.contains(&"swift".to_string()));
    assert!(report.project.languages.contains(&"rust".to_string()));
    assert!(!report.llm);
}

#[tokio::test]
async fn a_clean_fixture_gets_no_invented_pattern() {
    let (_dir, root) = fixture("clean");
    let report = run(&root, BootstrapOptions::default()).await;
    let patterns: Vec<&str> = report
        .candidates
        .iter()
        .filter(|c| c.dimension == "design-patterns")
        .map(|c| c.title.as_str())
        .collect();
    assert!(patterns.is_empty(), "invented: {patterns:?}");
    assert_evidence_exists(&root, &report.candidates);
    let dp = report
        .dimensions
        .iter()
        .find(|d| d.id == "design-patterns")
        .unwrap();
    assert_eq!((dp.status, dp.candidates), (DimensionStatus::Done, 0));
}

#[tokio::test]
async fn candidates_and_memories_land_in_the_stores_for_review() {
    let (_dir, root) = fixture("planted");
    let report = run(&root, BootstrapOptions::default()).await;
    assert!(report.memories >= 3, "{}", report.memories);
    let kb = KnowledgeStore::open_project(&root).unwrap();
    let entries = kb
        .list(&Filter {
            statuses: vec![Status::Submitted],
            limit: 500,
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(entries.len(), report.candidates.len());
    for e in &entries {
        assert_eq!(e.created_by, "bootstrap");
        assert_eq!(
            e.extra.get("source").and_then(|v| v.as_str()),
            Some("bootstrap")
        );
        let dim = e.extra.get("dimensionId").and_then(|v| v.as_str()).unwrap();
        assert!(e.tags.contains(&format!("dimension:{dim}")), "{:?}", e.tags);
    }
    let pm = PersistentMemory::open_project(&root, MemoryConfig::default()).unwrap();
    let memories = pm.list(&ListFilter::default()).unwrap();
    assert_eq!(memories.len(), report.memories);
    for m in &memories {
        assert_eq!(m.source, MemorySource::Bootstrap);
        let dim = m.source_dimension.as_deref().unwrap();
        assert!(report.dimensions.iter().any(|d| d.id == dim));
    }
    let arch = memories
        .iter()
        .find(|m| m.source_dimension.as_deref() == Some("design-patterns"))
        .unwrap();
    assert!(arch.content.contains("singleton"), "{}", arch.content);
}

#[tokio::test]
async fn a_rerun_skips_unchanged_dimensions_and_duplicates_nothing() {
    let (_dir, root) = fixture("planted");
    let first = run(&root, BootstrapOptions::default()).await;
    assert!(!first.candidates.is_empty());
    let second = run(&root, BootstrapOptions::default()).await;
    assert!(second.candidates.is_empty(), "{:?}", second.candidates);
    assert_eq!(second.memories, 0);
    assert!(
        second
            .dimensions
            .iter()
            .all(|d| d.status == DimensionStatus::Skipped),
        "{:?}",
        second.dimensions
    );
    // forced: analysed again, but unchanged evidence yields no new candidate or memory
    let forced = run(
        &root,
        BootstrapOptions {
            force: true,
            ..Default::default()
        },
    )
    .await;
    assert!(
        forced
            .dimensions
            .iter()
            .all(|d| d.status == DimensionStatus::Done)
    );
    assert!(forced.candidates.is_empty());
    assert_eq!(forced.memories, 0);
    // a changed evidence file re-runs the dimensions citing it, and only those
    let file = root.join("core/src/request.rs");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("pub fn build(self)", "pub fn finish(self)"),
    )
    .unwrap();
    let third = run(&root, BootstrapOptions::default()).await;
    let status = |id: &str| third.dimensions.iter().find(|d| d.id == id).unwrap().status;
    assert_eq!(status("design-patterns"), DimensionStatus::Done);
    assert_eq!(status("networking-api"), DimensionStatus::Skipped);
    let kb = KnowledgeStore::open_project(&root).unwrap();
    let all = kb
        .list(&Filter {
            limit: 1000,
            ..Filter::default()
        })
        .unwrap();
    let mut titles: Vec<&str> = all.iter().map(|e| e.title.as_str()).collect();
    let n = titles.len();
    titles.dedup();
    assert_eq!(titles.len(), n, "duplicate titles");
}

#[tokio::test]
async fn named_dimensions_run_alone_and_unknown_ones_are_refused() {
    let (_dir, root) = fixture("planted");
    let report = run(
        &root,
        BootstrapOptions {
            dimensions: vec!["architecture".into()],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(report.dimensions.len(), 1);
    assert_eq!(report.dimensions[0].id, "architecture");
    let err = bootstrap(&root)
        .run(
            &DeterministicAnalyser,
            &BootstrapOptions {
                dimensions: vec!["nope".into()],
                ..Default::default()
            },
            &NoProgress,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown dimension \"nope\"") && err.contains("design-patterns"),
        "{err}"
    );
    let err = bootstrap(&root)
        .run(
            &DeterministicAnalyser,
            &BootstrapOptions {
                resume: true,
                ..Default::default()
            },
            &NoProgress,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no interrupted bootstrap run"), "{err}");
}
