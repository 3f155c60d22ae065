//! Incremental graph updates give the same graph as a full build, and same-named types in
//! different scopes stay apart.

use std::path::Path;
use std::time::{Duration, SystemTime};

use alembic_code::{CodeService, ProjectGraph};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::direct::run_tool;
use super::fixtures::{copy_dir, fixture_dir};

/// The fixture projects of one language each.
pub(super) const LANGUAGES: [&str; 11] = [
    "c",
    "cpp",
    "go",
    "java",
    "javascript",
    "kotlin",
    "objc",
    "python",
    "rust",
    "swift",
    "typescript",
];

/// Every fixture project side by side: `Circle`, `Shape` and `Base` exist in several
/// languages and directories.
pub(super) fn mixed_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for lang in LANGUAGES {
        copy_dir(&fixture_dir(lang), &dir.path().join(lang));
    }
    dir
}

/// Writes a file with an mtime no earlier refresh can have seen.
pub(super) fn write(root: &Path, rel: &str, text: &str, step: u64) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(10 + step))
        .unwrap();
}

pub(super) fn edit(root: &Path, rel: &str, from: &str, to: &str, step: u64) {
    let text = std::fs::read_to_string(root.join(rel)).unwrap();
    assert!(text.contains(from), "{rel} has no {from:?}");
    write(root, rel, &text.replacen(from, to, 1), step);
}

/// The service's (incrementally updated) graph equals a fresh full build.
fn assert_same_as_full_build(service: &CodeService, root: &Path) -> std::sync::Arc<ProjectGraph> {
    let incremental = service.graph().unwrap();
    let full = CodeService::new(root).unwrap().graph().unwrap();
    assert_eq!(*incremental, *full);
    incremental
}

fn keys_named(g: &ProjectGraph, name: &str) -> Vec<String> {
    g.types_named(name).iter().map(|t| t.name.clone()).collect()
}

#[test]
fn incremental_updates_equal_a_full_build_after_add_edit_and_delete() {
    let dir = mixed_project();
    let root = dir.path();
    let service = CodeService::new(root).unwrap();
    let g = service.graph().unwrap();
    assert_eq!(
        keys_named(&g, "Circle").len(),
        g.types
            .values()
            .filter(|t| t.simple_name == "Circle")
            .count()
    );

    // Edit: a new parent and a new method in a base class.
    edit(
        root,
        "python/zoo/animals.py",
        "class Puppy(Dog):",
        "class Puppy(Animal):",
        1,
    );
    edit(
        root,
        "python/zoo/animals.py",
        "class Animal",
        "class Animal:\n    def groom(self):\n        pass\n\nclass Unused",
        1,
    );
    assert_same_as_full_build(&service, root);

    // Add: a second `Dog` in another Python module, calling into the first file.
    write(
        root,
        "python/zoo/kennel.py",
        "from zoo.animals import Animal\n\nclass Dog(Animal):\n    def fetch(self):\n        self.groom()\n        return Puppy().speak()\n",
        2,
    );
    let g = assert_same_as_full_build(&service, root);
    assert_eq!(
        keys_named(&g, "Dog"),
        [
            "javascript/lib/animals.js::Dog",
            "python/zoo/animals.py::Dog",
            "python/zoo/kennel.py::Dog"
        ]
    );

    // Delete: a Swift extension file and a whole Go file; edit a C++ header.
    std::fs::remove_file(root.join("swift/Sources/Shapes/Circle+Extras.swift")).unwrap();
    std::fs::remove_file(root.join("go/cmd/app/main.go")).unwrap();
    edit(
        root,
        "cpp/src/shapes.hpp",
        "class",
        "class Extra {};\nclass",
        3,
    );
    assert_same_as_full_build(&service, root);

    // Delete the second Python `Dog`, then the JavaScript one: the last `Dog` gets its
    // simple name back, and Puppy's chain follows.
    std::fs::remove_file(root.join("python/zoo/kennel.py")).unwrap();
    let g = assert_same_as_full_build(&service, root);
    assert_eq!(
        keys_named(&g, "Dog"),
        [
            "javascript/lib/animals.js::Dog",
            "python/zoo/animals.py::Dog"
        ]
    );
    edit(
        root,
        "javascript/lib/animals.js",
        "class Dog",
        "class Hound",
        4,
    );
    let g = assert_same_as_full_build(&service, root);
    assert_eq!(keys_named(&g, "Dog"), ["Dog"]);
    assert_eq!(
        g.inheritance_chain("Puppy")[..2],
        ["Puppy", "python/zoo/animals.py::Animal"]
    );
}

#[test]
fn shared_type_names_are_qualified_and_lookups_report_ambiguity() {
    let dir = mixed_project();
    let service = std::sync::Arc::new(CodeService::new(dir.path()).unwrap());
    let g = service.graph().unwrap();
    let circles = keys_named(&g, "Circle");
    assert!(circles.len() > 1, "{circles:?}");
    assert!(
        circles
            .iter()
            .all(|k| k.ends_with("::Circle") || k == "Circle")
    );
    let err = run_tool(&service, "get_class_info", &json!({"className": "Circle"})).unwrap_err();
    let message = err.to_string();
    insta::assert_snapshot!(message);
    assert!(
        message.contains("class \"Circle\" is ambiguous"),
        "{message}"
    );
    for key in &circles {
        assert!(
            message.contains(key.as_str()),
            "{key} missing from {message}"
        );
    }
    // A qualified key selects one; a unique simple name still works as before.
    let java = circles.iter().find(|k| k.starts_with("java/")).unwrap();
    let out = run_tool(&service, "get_class_info", &json!({"className": java})).unwrap();
    assert!(
        out.text.starts_with(&format!(
            "class {java} — java/src/com/example/shapes/Circle.java"
        )),
        "{}",
        out.text
    );
    let out = run_tool(
        &service,
        "get_class_hierarchy",
        &json!({"className": "Puppy"}),
    )
    .unwrap();
    // Parents resolve to the same-named type of the same module.
    assert_eq!(
        out.data["chain"],
        json!([
            "Puppy",
            "python/zoo/animals.py::Dog",
            "python/zoo/animals.py::Animal"
        ])
    );
}
