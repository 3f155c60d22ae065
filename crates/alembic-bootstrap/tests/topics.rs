#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The guard audit and the topic, framework and agent-guideline extractors: on a project with
//! planted facts each is found at the planted line; on the clean fixture none is.

use std::path::Path;
use std::sync::Arc;

use alembic_bootstrap::checkpoint::CandidateRecord;
use alembic_bootstrap::{
    Bootstrap, BootstrapConfig, BootstrapOptions, BootstrapReport, DeterministicAnalyser,
    NoProgress,
};
use alembic_memory::MemoryConfig;

const DIMENSIONS: [&str; 10] = [
    "coding-standards",
    "error-resilience",
    "data-event-flow",
    "ui-interaction",
    "security-auth",
    "performance-optimization",
    "agent-guidelines",
    "react-patterns",
    "swiftui-patterns",
    "django-fastapi",
];

const PLANTED: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        "[package]\nname = \"planted\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    ),
    (
        "src/lib.rs",
        "pub mod auth;\npub mod events;\npub mod store;\n",
    ),
    (
        "src/events.rs",
        "pub fn start() {\n    let (tx, rx) = tokio::sync::mpsc::channel(8);\n    drop((tx, rx));\n}\n",
    ),
    (
        "src/store.rs",
        "use std::sync::OnceLock;\n\npub struct ImageCache {\n    items: Vec<u8>,\n}\n\nstatic CONFIG: OnceLock<u32> = OnceLock::new();\n\npub fn sizes(items: &[u8]) -> usize {\n    items.chunks(64).count()\n}\n\npub fn first(v: Option<u8>) -> u8 {\n    v.unwrap()\n}\n",
    ),
    (
        "src/auth.rs",
        "pub fn header(token: &str) -> (String, String) {\n    (http::header::AUTHORIZATION.to_string(), format!(\"Bearer {token}\"))\n}\n\npub fn client() -> String {\n    let api_key = \"sk-live-0123456789abcdef\";\n    api_key.to_string()\n}\n\npub fn raw(p: *const u8) -> u8 {\n    unsafe { *p }\n}\n",
    ),
    (
        "App/LoginView.swift",
        "import SwiftUI\n\nstruct LoginView: View {\n    @State private var name = \"\"\n    var body: some View {\n        Text(name).onTapGesture { name = \"\" }\n    }\n}\n",
    ),
    (
        "web/package.json",
        "{\"dependencies\": {\"react\": \"18.0.0\"}}\n",
    ),
    (
        "web/src/Profile.tsx",
        "import { useState } from \"react\";\n\nexport function Profile() {\n  const [n, setN] = useState(0);\n  return (<div onClick={() => setN(n + 1)}>{n}</div>);\n}\n",
    ),
    (
        "api/main.py",
        "from fastapi import FastAPI\n\napp = FastAPI()\n\n@app.get(\"/health\")\ndef health():\n    return {\"ok\": True}\n",
    ),
    (
        "AGENTS.md",
        "# Conventions\n\n- Run cargo fmt before every commit\n- Never call unwrap outside tests\n<!-- alembic:begin knowledge -->\n- exported, not the project's own rule\n<!-- alembic:end knowledge -->\n",
    ),
];

/// (dimension, title prefix, text of the planted line the evidence must include)
const EXPECTED: &[(&str, &str, &str)] = &[
    ("error-resilience", "Guard rule rust-unwrap", "v.unwrap()"),
    (
        "security-auth",
        "Guard rule hardcoded-secret",
        "let api_key",
    ),
    (
        "security-auth",
        "Security: authentication tokens",
        "AUTHORIZATION",
    ),
    ("security-auth", "Security: unsafe Rust", "unsafe { *p }"),
    ("data-event-flow", "Data flow: channels", "mpsc::channel"),
    (
        "performance-optimization",
        "Performance: caches",
        "ImageCache",
    ),
    (
        "performance-optimization",
        "Performance: lazy",
        "OnceLock<u32>",
    ),
    (
        "performance-optimization",
        "Performance: batching",
        "chunks(64)",
    ),
    ("ui-interaction", "UI: SwiftUI views", "LoginView: View"),
    (
        "ui-interaction",
        "UI: React function components",
        "Profile()",
    ),
    ("ui-interaction", "UI: event handlers", "onTapGesture"),
    (
        "react-patterns",
        "React: state and effect hooks",
        "useState(0)",
    ),
    (
        "swiftui-patterns",
        "SwiftUI: state property wrappers",
        "@State",
    ),
    ("django-fastapi", "FastAPI: route decorators", "@app.get"),
    (
        "agent-guidelines",
        "Agent guidelines in AGENTS.md",
        "cargo fmt",
    ),
];

async fn run(root: &Path) -> BootstrapReport {
    let b = Bootstrap::new(
        root,
        Arc::new(alembic_code::CodeService::new(root).unwrap()),
        MemoryConfig::default(),
        BootstrapConfig::default(),
    );
    let opts = BootstrapOptions {
        dimensions: DIMENSIONS.iter().map(|d| d.to_string()).collect(),
        ..Default::default()
    };
    b.run(&DeterministicAnalyser, &opts, &NoProgress)
        .await
        .unwrap()
}

fn cited_lines(root: &Path, c: &CandidateRecord) -> Vec<String> {
    c.evidence
        .iter()
        .map(|e| {
            let text = std::fs::read_to_string(root.join(&e.file)).unwrap();
            text.lines()
                .nth(e.line - 1)
                .unwrap_or_else(|| panic!("{}: {e:?} outside the file", c.title))
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn planted_facts_are_found_at_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in PLANTED {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let report = run(dir.path()).await;
    for (dim, prefix, line) in EXPECTED {
        let c = report
            .candidates
            .iter()
            .find(|c| c.dimension == *dim && c.title.starts_with(prefix))
            .unwrap_or_else(|| {
                let titles: Vec<_> = report.candidates.iter().map(|c| &c.title).collect();
                panic!("{dim}: no \"{prefix}\" in {titles:#?}")
            });
        let cited = cited_lines(dir.path(), c);
        assert!(
            cited.iter().any(|l| l.contains(line)),
            "{}: {cited:?}",
            c.title
        );
    }
    // the guard finding states the measured count and the rule
    let unwrap = report
        .candidates
        .iter()
        .find(|c| c.title.starts_with("Guard rule rust-unwrap"))
        .unwrap();
    assert_eq!(unwrap.evidence.len(), 1);
    // the exported block of AGENTS.md is not the project's own guideline
    let agents = report
        .candidates
        .iter()
        .find(|c| c.dimension == "agent-guidelines")
        .unwrap();
    assert_eq!(
        agents.evidence.iter().map(|e| e.line).collect::<Vec<_>>(),
        [3, 4]
    );
    // the clean fixture has none of these facts
    let clean = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/clean"),
        clean.path(),
    );
    let report = run(clean.path()).await;
    let titles: Vec<&str> = report
        .candidates
        .iter()
        .filter(|c| {
            !["coding-standards", "error-resilience"].contains(&c.dimension.as_str())
                || c.title.starts_with("Guard rule")
        })
        .map(|c| c.title.as_str())
        .collect();
    assert!(titles.is_empty(), "invented: {titles:?}");
}

#[tokio::test]
async fn a_broken_project_guard_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    std::fs::write(dir.path().join("lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(
        dir.path().join(".alembic/guard-rules.toml"),
        "[[rule]]\nid = \"x\"\n",
    )
    .unwrap();
    let b = Bootstrap::new(
        dir.path(),
        Arc::new(alembic_code::CodeService::new(dir.path()).unwrap()),
        MemoryConfig::default(),
        BootstrapConfig::default(),
    );
    let err = b
        .run(
            &DeterministicAnalyser,
            &BootstrapOptions::default(),
            &NoProgress,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(".alembic/guard-rules.toml"), "{err}");
}

#[tokio::test]
async fn a_project_rule_feeds_its_dimension() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    std::fs::write(
        dir.path().join("lib.rs"),
        "pub fn f() {\n    println!(\"debug\");\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".alembic/guard-rules.toml"),
        "[[rule]]\nid = \"no-println\"\ndescription = \"println! in library code\"\nlanguages = [\"rust\"]\npattern = 'println!'\nseverity = \"info\"\n",
    )
    .unwrap();
    let report = run(dir.path()).await;
    let c = report
        .candidates
        .iter()
        .find(|c| c.title == "Guard rule no-println: println! in library code")
        .unwrap();
    assert_eq!(c.dimension, "coding-standards");
    assert_eq!(
        (c.evidence[0].file.as_str(), c.evidence[0].line),
        ("lib.rs", 2)
    );
}

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
