#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Evidence lines are code: a match inside a comment, a doc comment, a docstring or a
//! string literal never makes a finding, and fixtures, examples, vendored and generated
//! files never stand for the project's conventions. Each class has a positive control (the
//! same construct in real code is found), and the bootstrap of this repository is checked.

use std::path::Path;
use std::sync::Arc;

use alembic_bootstrap::checkpoint::CandidateRecord;
use alembic_bootstrap::{
    Bootstrap, BootstrapConfig, BootstrapOptions, BootstrapReport, DeterministicAnalyser,
    NoProgress,
};
use alembic_code::role::{FileRole, classify};
use alembic_memory::MemoryConfig;

const DIMENSIONS: [&str; 7] = [
    "coding-standards",
    "observability-logging",
    "security-auth",
    "testing-quality",
    "data-event-flow",
    "ui-interaction",
    "error-resilience",
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

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

fn titles(report: &BootstrapReport) -> Vec<&str> {
    report.candidates.iter().map(|c| c.title.as_str()).collect()
}

fn find<'a>(report: &'a BootstrapReport, prefix: &str) -> Option<&'a CandidateRecord> {
    report
        .candidates
        .iter()
        .find(|c| c.title.starts_with(prefix))
}

const LOGGING: &str = "Logging: ";
const TOKENS: &str = "Security: authentication tokens";
const CONSOLE: &str = "Guard rule js-console-log";

/// A JSDoc example whose lines do not start with `*`, with `console.log` and a bearer
/// header: the real failure seen on a TypeScript HTTP client.
const JSDOC: &str = "/**\nSend a request.\n\nExample:\n\n    const r = await client.get('/me', {\n        headers: { Authorization: 'Bearer abc' }\n    });\n    console.log(r.body);\n*/\nexport function get(url) {\n  return fetch(url);\n}\n/* console.log(block) */\n// console.log(line)\nexport const help = \"console.log( Authorization: Bearer\";\n";

#[tokio::test]
async fn jsdoc_examples_and_strings_are_not_code() {
    let dir = project(&[
        ("package.json", "{\"name\": \"c\"}\n"),
        ("src/client.js", JSDOC),
    ]);
    let report = run(dir.path()).await;
    for prefix in [CONSOLE, TOKENS, LOGGING] {
        assert!(
            find(&report, prefix).is_none(),
            "{prefix} from comments: {:?}",
            titles(&report)
        );
    }
    // Positive control: the same constructs as code are found, at their lines.
    let code = "export function get(url, token) {\n  console.log(url);\n  return fetch(url, { headers: { Authorization: `Bearer ${token}` } });\n}\n";
    let dir = project(&[
        ("package.json", "{\"name\": \"c\"}\n"),
        ("src/client.js", code),
    ]);
    let report = run(dir.path()).await;
    let console = find(&report, CONSOLE).expect("console.log in code is found");
    assert_eq!(console.evidence[0].line, 2);
    let tokens = find(&report, TOKENS).expect("an Authorization header in code is found");
    assert_eq!(tokens.evidence[0].line, 3);
}

#[tokio::test]
async fn patterns_inside_rust_and_python_strings_are_not_code() {
    let rust = "//! Tables of what to look for.\n/// Matches `.unwrap()` and `println!(`.\npub const PATTERNS: &[&str] = &[r\"SecItemAdd\\(\", \"Keychain\", \"AsyncStream\", \".unwrap()\"];\npub const MSG: &str = \"call .unwrap() or log::info!(x) here\";\n/* log::info!(\"x\") */\npub fn f() -> usize { PATTERNS.len() }\n";
    let python = "\"\"\"Module doc: logging.getLogger(x) and logger.info(x).\"\"\"\nPATTERNS = [r\"logger\\.info\\(\", \"logger.info(\", \"Keychain\", 'SecItemAdd(']\n\ndef f():\n    '''logger.warning(y)'''\n    # logger.error(z)\n    return len(PATTERNS)\n";
    let dir = project(&[("src/lib.rs", rust), ("tool/scan.py", python)]);
    let report = run(dir.path()).await;
    for prefix in [
        "Guard rule rust-unwrap",
        "Security: keychain",
        "Data flow: streams of values",
        LOGGING,
    ] {
        assert!(
            find(&report, prefix).is_none(),
            "{prefix} from strings: {:?}",
            titles(&report)
        );
    }
    // Positive control: the same names used as code.
    let rust = "pub fn f(v: Option<u8>) -> u8 {\n    log::info!(\"start\");\n    v.unwrap()\n}\n";
    let python = "import logging\n\nlogger = logging.getLogger(__name__)\n\ndef f():\n    logger.info(\"x\")\n";
    let dir = project(&[("src/lib.rs", rust), ("tool/scan.py", python)]);
    let report = run(dir.path()).await;
    let unwrap = find(&report, "Guard rule rust-unwrap").expect("unwrap in code is found");
    assert_eq!(unwrap.evidence[0].line, 3);
    let logging = find(&report, LOGGING).expect("logging calls in code are found");
    assert!(!logging.evidence.is_empty());
}

#[tokio::test]
async fn fixtures_examples_vendored_and_generated_code_are_no_convention() {
    let spec = "describe('api', () => {\n  it('works', () => {});\n});\n";
    let debug = "export function f(x) {\n  console.log(x);\n}\n";
    let dir = project(&[
        ("package.json", "{\"name\": \"c\"}\n"),
        ("src/index.ts", "export const one = 1;\n"),
        ("tests/fixtures/x.ts", spec),
        ("testdata/y.spec.ts", spec),
        ("examples/demo.ts", debug),
        ("third_party/lib/z.ts", debug),
        (
            "src/gen/api.ts",
            "// Code generated by openapi-gen. DO NOT EDIT.\nexport function g(x) {\n  console.log(x);\n}\n",
        ),
        ("src/gen/schema.ts", "/* @generated */\nconsole.log(1);\n"),
    ]);
    let report = run(dir.path()).await;
    for prefix in ["Testing: describe/it", CONSOLE] {
        assert!(
            find(&report, prefix).is_none(),
            "{prefix} from non-project code: {:?}",
            titles(&report)
        );
    }
    // Positive control: a real spec (a test file) and real code are found.
    let dir = project(&[
        ("package.json", "{\"name\": \"c\"}\n"),
        ("src/index.ts", debug),
        ("tests/api.spec.ts", spec),
    ]);
    let report = run(dir.path()).await;
    let describe = find(&report, "Testing: describe/it").expect("a real spec is found");
    assert_eq!(describe.evidence[0].file, "tests/api.spec.ts");
    assert!(find(&report, CONSOLE).is_some(), "{:?}", titles(&report));
}

/// Copies the workspace's own files (as the walker sees them: .gitignore honoured, target
/// skipped) into `to`, so the bootstrap's state is written there, not into the checkout.
fn copy_workspace(from: &Path, to: &Path) {
    let keep = |rel: &str| !rel.starts_with(".alembic/");
    for f in alembic_code::walk::walk_files(from, &keep) {
        let target = to.join(&f.rel);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&f.abs, &target).unwrap();
    }
}

#[tokio::test]
async fn bootstrap_of_this_repository_cites_only_code() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    copy_workspace(&workspace, dir.path());
    let b = Bootstrap::new(
        dir.path(),
        Arc::new(alembic_code::CodeService::new(dir.path()).unwrap()),
        MemoryConfig::default(),
        BootstrapConfig::default(),
    );
    let report = b
        .run(
            &DeterministicAnalyser,
            &BootstrapOptions::default(),
            &NoProgress,
        )
        .await
        .unwrap();
    eprintln!("{} candidates on this repository:", report.candidates.len());
    for c in &report.candidates {
        let cited: Vec<String> = c.evidence.iter().map(ToString::to_string).collect();
        eprintln!("  [{}] {}: {}", c.dimension, c.title, cited.join(" "));
    }
    let mut wrong = Vec::new();
    for c in &report.candidates {
        for e in &c.evidence {
            let text = std::fs::read_to_string(dir.path().join(&e.file)).unwrap();
            let role = classify(&e.file, &text);
            if !matches!(role, FileRole::Source | FileRole::Test) {
                wrong.push(format!("{}: {e} is {}", c.title, role.as_str()));
            }
            if alembic_code::Lang::from_path(Path::new(&e.file)).is_none() {
                continue; // a manifest or a guideline file: cited as written
            }
            let code = alembic_code::mask::code_only_at(&e.file, &text);
            let line = code.lines().nth(e.line - 1).unwrap_or("");
            if line.trim().is_empty() {
                let raw = text.lines().nth(e.line - 1).unwrap_or("");
                wrong.push(format!("{}: {e} is not code: {raw}", c.title));
            }
            if e.file.ends_with("alembic-bootstrap/src/extract/topics.rs") {
                wrong.push(format!("{}: {e} cites an extractor's pattern", c.title));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    for false_claim in [
        "Security: keychain and secure storage",
        "Data flow: reactive streams",
        "Data flow: streams of values",
        "UI: event handlers on controls",
        "Testing: describe/it specs",
    ] {
        assert!(
            find(&report, false_claim).is_none(),
            "{false_claim}: {:?}",
            titles(&report)
        );
    }
    assert!(
        find(&report, "Testing: Rust #[test] functions").is_some(),
        "positive control: {:?}",
        titles(&report)
    );
}
