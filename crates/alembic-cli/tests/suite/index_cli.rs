use pretty_assertions::assert_eq;
use serde_json::Value;

use super::alembic;

fn fixture_copy() -> tempfile::TempDir {
    let dir = super::project_dir();
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
        .args(["index", "--graph", "--project", project])
        .assert()
        .success();
    let out = String::from_utf8(first.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("indexed 2 files in "), "{out}");
    assert!(lines[0].contains(" files/s): "), "{out}");
    assert!(
        lines[0].ends_with(": 2 parsed, 0 touched, 0 unchanged, 0 removed, 0 skipped"),
        "{out}"
    );
    assert_eq!(
        lines[2],
        "modules: 2 in 2 layers, 0 dependency cycles; 1 entry points"
    );

    let second = alembic(dir.path())
        .args(["index", "--json", "--graph"])
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
fn without_graph_the_index_reports_files_only_and_honours_max_file_bytes() {
    let dir = fixture_copy();
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    std::fs::write(
        dir.path().join(".alembic/config.toml"),
        "[index]\nmax_file_bytes = 300\n",
    )
    .unwrap();
    let out = alembic(dir.path())
        .args(["index", "--json"])
        .assert()
        .success();
    let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(json["report"]["files"], 2);
    assert_eq!(json["report"]["parsed"], 1);
    assert_eq!(json["report"]["skipped"][0]["path"], "shapes/shapes.go");
    assert_eq!(
        json["report"]["skipped"][0]["reason"],
        "larger than 300 bytes"
    );
    assert_eq!(json.get("totals"), None);
    let text = alembic(dir.path()).args(["index"]).assert().success();
    let out = String::from_utf8(text.get_output().stdout.clone()).unwrap();
    assert_eq!(out.lines().count(), 2, "{out}");
    assert_eq!(
        out.lines().nth(1),
        Some("skipped shapes/shapes.go: larger than 300 bytes")
    );
}

#[test]
fn index_of_a_missing_directory_is_a_usage_error() {
    let dir = super::project_dir();
    alembic(dir.path())
        .args(["index", "--project", "does/not/exist"])
        .assert()
        .code(2);
}
