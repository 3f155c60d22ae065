//! The module topology, entry points, totals, root classes and extended types summed from
//! the index's topology rows (recomputed where a change's marks reach) equal a fresh full
//! build's, after every step of scripted and seeded random edits.

use std::path::Path;
use std::sync::Arc;

use alembic_code::CodeService;
use alembic_code::service::ProjectTopology;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::direct::run_tool;
use super::incremental::{edit, mixed_project, write};

/// Everything a topology answer shows, comparable.
fn view(t: &ProjectTopology) -> Value {
    json!({
        "modules": t.modules,
        "entryPoints": t.entry_points,
        "totals": t.totals,
        "types": t.types,
    })
}

/// The answers of a service holding a fresh full graph.
fn full_topology(root: &Path) -> (Value, Arc<CodeService>) {
    let full = Arc::new(CodeService::new(root).unwrap());
    full.graph().unwrap();
    (view(&full.module_graph().unwrap()), full)
}

/// `rows` (never loading the full graph) answers like a fresh full build, through the
/// service and the tools; returns the number of modules.
fn assert_rows_match_full(rows: &Arc<CodeService>, root: &Path, step: &str) -> usize {
    let (expected, full) = full_topology(root);
    assert_eq!(view(&rows.module_graph().unwrap()), expected, "{step}");
    for (tool, args) in [
        ("get_project_overview", json!({})),
        ("query_code_graph", json!({"action": "topology"})),
        ("get_class_hierarchy", json!({})),
        ("get_category_map", json!({})),
    ] {
        let answer = |service: &Arc<CodeService>| {
            let out = run_tool(service, tool, &args).unwrap();
            let mut data = out.data;
            if let Value::Object(map) = &mut data {
                map.remove("buildMs");
            }
            (out.text, data)
        };
        assert_eq!(answer(rows), answer(&full), "{step}: {tool}");
    }
    expected["modules"]["modules"]
        .as_object()
        .map_or(0, serde_json::Map::len)
}

#[test]
fn topology_rows_equal_a_full_build_after_scripted_edits() {
    let dir = mixed_project();
    let root = dir.path();
    let rows = Arc::new(CodeService::new(root).unwrap());
    let modules = assert_rows_match_full(&rows, root, "initial");
    assert!(modules > 15, "{modules} modules");
    let deps: usize = rows
        .module_graph()
        .unwrap()
        .modules
        .modules
        .values()
        .map(|m| m.dependencies.len())
        .sum();
    assert!(deps > 5, "{deps} dependencies");

    // A new parent, and a new method in a base class that by-name calls can pick.
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
        "class Animal:\n    def groom_rarely(self):\n        pass\n\nclass Unused",
        1,
    );
    assert_rows_match_full(&rows, root, "edit parents");

    // A second `Dog` in another module (keys become qualified), calling into the first.
    write(
        root,
        "python/zoo/kennel.py",
        "from zoo.animals import Animal\nimport zoo.animals\n\nclass Dog(Animal):\n    def fetch(self):\n        self.groom_rarely()\n        return Puppy().speak()\n",
        2,
    );
    assert_rows_match_full(&rows, root, "add a shared name");

    // A new file whose stem an existing import names, in another directory.
    write(
        root,
        "python/other/animals.py",
        "def groom_rarely():\n    return 2\n",
        3,
    );
    assert_rows_match_full(&rows, root, "add a file an import may name");

    // A declaration only (no call site names it): a subclass in a new module depends on
    // its parent's.
    write(
        root,
        "swift/Sources/Extra/Special.swift",
        "final class Special: Ring {}\n",
        4,
    );
    assert_rows_match_full(&rows, root, "declarations only");

    // A root class stops being one when its superclass gets declared, and is one again
    // when the declaration goes.
    write(
        root,
        "python/zoo/pets.py",
        "class Pet(Companion):\n    pass\n",
        5,
    );
    assert_rows_match_full(&rows, root, "a root class");
    write(
        root,
        "python/zoo/companion.py",
        "class Companion:\n    pass\n",
        5,
    );
    assert_rows_match_full(&rows, root, "its superclass declared");
    std::fs::remove_file(root.join("python/zoo/companion.py")).unwrap();
    assert_rows_match_full(&rows, root, "its superclass removed");

    // Removals: a Swift extension file, a Go file, the new Python files.
    std::fs::remove_file(root.join("swift/Sources/Shapes/Circle+Extras.swift")).unwrap();
    std::fs::remove_file(root.join("go/cmd/app/main.go")).unwrap();
    assert_rows_match_full(&rows, root, "remove swift and go files");
    std::fs::remove_file(root.join("python/zoo/kennel.py")).unwrap();
    std::fs::remove_file(root.join("python/other/animals.py")).unwrap();
    assert_rows_match_full(&rows, root, "remove python files");

    // A type renamed away: the last `Dog` gets its simple name back.
    edit(
        root,
        "javascript/lib/animals.js",
        "class Dog",
        "class Hound",
        4,
    );
    assert_rows_match_full(&rows, root, "rename a type");

    // A forced rebuild recomputes every row.
    rows.rebuild(true, &|_| {}).unwrap();
    assert_rows_match_full(&rows, root, "forced rebuild");
}

#[test]
fn each_fixture_projects_topology_rows_equal_its_full_build() {
    for name in [
        "aliases",
        "swift",
        "objc",
        "go",
        "rust",
        "python",
        "typescript",
        "c",
    ] {
        let dir = super::fixtures::project(name);
        let rows = Arc::new(CodeService::new(dir.path()).unwrap());
        assert_rows_match_full(&rows, dir.path(), name);
    }
}

/// A small deterministic generator (xorshift), so a failing seed replays.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn source_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push(
                    p.strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/"),
                );
            }
        }
    }
    out.sort();
    out
}

/// One random edit: drop a line, copy a file elsewhere, delete a file, or rename a
/// declared name in one file. Returns what it did.
fn random_edit(root: &Path, rng: &mut Seeded, step: u64) -> String {
    let files = source_files(root);
    let rel = files[rng.below(files.len())].clone();
    let text = std::fs::read_to_string(root.join(&rel)).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    match rng.below(4) {
        0 if !lines.is_empty() => {
            let i = rng.below(lines.len());
            let mut kept = lines.clone();
            kept.remove(i);
            write(root, &rel, &(kept.join("\n") + "\n"), step);
            format!("drop line {i} of {rel}")
        }
        1 => {
            let target = files[rng.below(files.len())].clone();
            let dir = target.rsplit_once('/').map_or("", |(d, _)| d);
            let name = rel.rsplit('/').next().unwrap_or(&rel);
            let to = format!("{dir}/copy{step}_{name}");
            write(root, &to, &text, step);
            format!("copy {rel} to {to}")
        }
        2 if files.len() > 20 => {
            std::fs::remove_file(root.join(&rel)).unwrap();
            format!("delete {rel}")
        }
        _ => {
            let words = [
                "Circle", "Shape", "Base", "Animal", "Dog", "area", "speak", "draw",
            ];
            let from = words[rng.below(words.len())];
            let to = words[rng.below(words.len())];
            write(root, &rel, &text.replace(from, to), step);
            format!("rename {from} to {to} in {rel}")
        }
    }
}

/// Both ways of recomputing: in a focused graph (the default for few files) and in the
/// graph of every type skeleton (`with_focused_topology_files(0)`).
#[test]
fn topology_rows_equal_a_full_build_after_seeded_random_edits() {
    for (seed, focused) in [(7u64, 300), (1_234_567, 300), (7, 0), (99, 0)] {
        let dir = mixed_project();
        let root = dir.path();
        let service = CodeService::new(root)
            .unwrap()
            .with_focused_topology_files(focused);
        let rows = Arc::new(service);
        rows.module_graph().unwrap();
        let mut rng = Seeded(seed);
        let mut done = Vec::new();
        for step in 1..=12 {
            done.push(random_edit(root, &mut rng, step));
            let step = format!("seed {seed}, focused {focused}: {done:?}");
            assert_rows_match_full(&rows, root, &step);
        }
    }
}

/// The overview lists the first 20 entry points (and cycles) in its text and says how many
/// more there are; its data keeps the totals.
#[test]
fn the_overview_lists_the_first_entry_points_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..25 {
        write(
            dir.path(),
            &format!("tool{i:02}/src/main.rs"),
            "fn main() {}\n",
            1,
        );
    }
    let service = Arc::new(CodeService::new(dir.path()).unwrap());
    let out = run_tool(&service, "get_project_overview", &json!({})).unwrap();
    assert!(
        out.text.contains("tool19/src/main.rs (main), … 5 more"),
        "{}",
        out.text
    );
    assert!(!out.text.contains("tool20/"), "{}", out.text);
    assert_eq!(out.data["totalEntryPoints"], json!(25));
    assert_eq!(out.data["totalModules"], json!(25));
    assert_eq!(out.data["entryPoints"].as_array().map(Vec::len), Some(25));
}
