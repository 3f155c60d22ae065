use pretty_assertions::assert_eq;
use serde_json::Value;

use super::alembic;

fn fixture_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../alembic-code/tests/fixtures/go");
    for rel in ["shapes/shapes.go", "cmd/app/main.go"] {
        let to = dir.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(rel), to).unwrap();
    }
    dir
}

#[test]
fn index_is_incremental_and_reports_json() {
    let dir = fixture_copy();
    let project = dir.path().to_str().unwrap();
    let first = alembic(dir.path())
        .args(["index", "--project", project])
        .assert()
        .success();
    let out = String::from_utf8(first.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("indexed 2 files in "), "{out}");
    assert!(
        lines[0].ends_with(": 2 parsed, 0 touched, 0 unchanged, 0 removed, 0 skipped"),
        "{out}"
    );
    assert_eq!(
        lines[2],
        "modules: 2 in 2 layers, 0 dependency cycles; 1 entry points"
    );

    let second = alembic(dir.path())
        .args(["index", "--json"])
        .assert()
        .success();
    let json: Value = serde_json::from_slice(&second.get_output().stdout).unwrap();
    assert_eq!(json["report"]["parsed"], 0);
    assert_eq!(json["report"]["unchanged"], 2);
    assert_eq!(json["totals"]["protocols"], 2);
    assert_eq!(json["layers"]["0"][0], "shapes");
    assert_eq!(json["layers"]["1"][0], "cmd/app");
}

#[test]
fn index_of_a_missing_directory_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    alembic(dir.path())
        .args(["index", "--project", "does/not/exist"])
        .assert()
        .code(2);
}
