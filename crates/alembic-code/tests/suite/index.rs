//! The persistent index: incremental refresh, ignore rules, vendored directories.

use std::fs;

use alembic_code::{CodeIndex, IndexPhase, IndexReport, Progress};
use pretty_assertions::assert_eq;

use super::fixtures::project;

fn counts(r: &IndexReport) -> (usize, usize, usize, usize, usize) {
    (r.files, r.parsed, r.touched, r.unchanged, r.removed)
}

#[test]
fn refresh_reparses_only_what_changed_and_survives_reopening() {
    let dir = project("rust");
    let root = dir.path();
    let mut index = CodeIndex::open(root).unwrap();
    assert_eq!(counts(&index.refresh(&|_| {}).unwrap()), (2, 2, 0, 0, 0));
    assert_eq!(counts(&index.refresh(&|_| {}).unwrap()), (2, 0, 0, 2, 0));

    // Same content, new mtime: read and hashed, not parsed.
    let main = root.join("src/main.rs");
    let text = fs::read_to_string(&main).unwrap();
    let file = fs::File::options().write(true).open(&main).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    assert_eq!(counts(&index.refresh(&|_| {}).unwrap()), (2, 0, 1, 1, 0));

    // New content: parsed; a new file: parsed; a deleted file: removed.
    fs::write(&main, text.replace("fn report", "fn summary_report")).unwrap();
    fs::write(root.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
    fs::remove_file(root.join("src/shapes/mod.rs")).unwrap();
    assert_eq!(counts(&index.refresh(&|_| {}).unwrap()), (2, 2, 0, 0, 1));
    drop(index);

    let reopened = CodeIndex::open(root).unwrap();
    let summaries = reopened.summaries().unwrap();
    let paths: Vec<&str> = summaries.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, vec!["src/extra.rs", "src/main.rs"]);
    let main = reopened.summary("src/main.rs").unwrap().unwrap();
    let functions: Vec<&str> = main.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(functions, vec!["main", "summary_report"]);
}

#[test]
fn gitignore_alembicignore_and_vendored_directories_are_skipped_without_git() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (path, text) in [
        ("src/app.py", "def run():\n    pass\n"),
        ("src/generated.py", "def gen():\n    pass\n"),
        ("scratch/tmp.py", "x = 1\n"),
        ("node_modules/lib/index.js", "function f() {}\n"),
        ("vendor/dep.go", "package dep\n"),
        ("Pods/Thing/Thing.m", "int x;\n"),
        ("target/debug/build.rs", "fn main() {}\n"),
        (".hidden/secret.py", "x = 1\n"),
        ("README.md", "# not code\n"),
        (".gitignore", "generated.py\n"),
        (".alembicignore", "scratch/\n"),
    ] {
        let p = root.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    let mut index = CodeIndex::open(root).unwrap();
    let report = index.refresh(&|_| {}).unwrap();
    assert_eq!(report.files, 1);
    let summaries = index.summaries().unwrap();
    let paths: Vec<&str> = summaries.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, vec!["src/app.py"]);
}

#[test]
fn oversized_files_are_reported_as_skipped() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("big.js"), "let x = 1;\n".repeat(200)).unwrap();
    fs::write(dir.path().join("small.js"), "let y = 2;\n").unwrap();
    let mut index = CodeIndex::open(dir.path()).unwrap();
    index.set_max_file_bytes(1000);
    let report = index.refresh(&|_| {}).unwrap();
    let skipped: Vec<(String, String)> = report
        .skipped
        .iter()
        .map(|s| (s.path.clone(), s.reason.clone()))
        .collect();
    assert_eq!(
        skipped,
        vec![("big.js".to_string(), "larger than 1000 bytes".to_string())]
    );
    assert_eq!(index.len(), 1);
    // Still reported, and neither parsed nor counted as unchanged, on the next refresh.
    let again = index.refresh(&|_| {}).unwrap();
    assert_eq!(counts(&again), (2, 0, 0, 1, 0));
    assert_eq!(again.skipped.len(), 1);
}

#[test]
fn a_refresh_that_finds_no_change_takes_no_write_lock() {
    let dir = project("rust");
    let root = dir.path();
    let mut index = CodeIndex::open(root).unwrap();
    index.refresh(&|_| {}).unwrap();
    // Another process holds the write lock (an `alembic index` in progress): a refresh
    // that asked for it would fail as busy once the busy timeout ran out.
    let other = alembic_store::open_project(root).unwrap();
    other.execute_batch("begin immediate").unwrap();
    let report = index.refresh(&|_| {}).unwrap();
    assert_eq!(counts(&report), (2, 0, 0, 2, 0));
    other.execute_batch("rollback").unwrap();
}

#[test]
fn an_interrupted_refresh_leaves_the_previous_index_usable() {
    let dir = project("rust");
    let root = dir.path();
    let mut index = CodeIndex::open(root).unwrap();
    index.refresh(&|_| {}).unwrap();
    let before = index.summaries().unwrap();
    fs::write(root.join("src/main.rs"), "fn replaced() {}\n").unwrap();
    fs::write(root.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
    // Stopped after every file was parsed and written, before the commit; forced, so the
    // transaction also deleted every old row first.
    let interrupted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        index.refresh_with(true, &|p| {
            if p == Progress::Phase(IndexPhase::Write) {
                panic!("interrupted");
            }
        })
    }));
    assert!(interrupted.is_err());
    drop(index);
    let mut reopened = CodeIndex::open(root).unwrap();
    assert_eq!(reopened.summaries().unwrap(), before);
    assert_eq!(counts(&reopened.refresh(&|_| {}).unwrap()), (3, 2, 0, 1, 0));
}
