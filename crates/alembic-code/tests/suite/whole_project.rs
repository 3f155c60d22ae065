//! Whole-project queries answered from the per-file rows (the overview's counts, the
//! hierarchy and category map without a class name, semantic search) equal what every
//! summary gives: the full graph, and the in-memory semantic index, on the fixture
//! projects, before and after edits (rows updated incrementally).

use std::path::Path;
use std::sync::Arc;

use alembic_code::semantic::SemanticIndex;
use alembic_code::{CodeEmbedder, CodeIndex, CodeService, ProjectGraph};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::direct::run_tool;
use super::incremental::{edit, mixed_project, write};

/// What the row-based queries read of a type graph: every type as the tools show it, and
/// the relations.
fn type_view(g: &ProjectGraph) -> Vec<String> {
    let mut out: Vec<String> = g
        .types
        .values()
        .map(|t| {
            let methods: Vec<&str> = t.methods.iter().map(|m| m.name.as_str()).collect();
            format!(
                "{} {} {} {}:{} declared={} super={:?} conf={:?} ext={:?} methods={:?}",
                t.name,
                t.kind.name(),
                t.language.name(),
                t.file,
                t.line,
                t.declared,
                t.superclass,
                t.conformances,
                t.extensions,
                methods
            )
        })
        .collect();
    out.push(format!("subclasses {:?}", g.subclasses));
    out.push(format!("conformers {:?}", g.conformers));
    let t = &g.totals;
    out.push(format!(
        "types {} {} {} {} {} {}",
        t.classes, t.structs, t.enums, t.protocols, t.extensions, t.methods
    ));
    out
}

fn full_graph(root: &Path) -> ProjectGraph {
    let mut index = CodeIndex::open(root).unwrap();
    index.refresh(&|_| {}).unwrap();
    index.graph().unwrap()
}

fn render(service: &Arc<CodeService>, tool: &str, args: &Value) -> String {
    match run_tool(service, tool, args) {
        Ok(out) => {
            let mut data = out.data;
            if let Value::Object(map) = &mut data {
                map.remove("buildMs");
            }
            format!("{}\n{data}", out.text)
        }
        Err(e) => format!("error: {e}"),
    }
}

const QUERIES: [(&str, Option<&str>); 8] = [
    ("scaled circle radius", None),
    ("area", None),
    ("area shape", Some("swift")),
    ("describe", Some("kotlin")),
    ("animal speak speak", None),
    ("draw", Some("TypeScript")),
    ("base init", None),
    ("zzzz nothing", None),
];

/// The in-memory ranking over every summary, as `semantic_search_code` shows it.
fn reference_search(
    root: &Path,
    embedder: Option<&dyn CodeEmbedder>,
) -> Vec<(String, Value, Value)> {
    let mut index = CodeIndex::open(root).unwrap();
    index.refresh(&|_| {}).unwrap();
    let guard = alembic_safety::PathGuard::new(root).unwrap();
    let summaries = index.summaries().unwrap();
    let semantic = SemanticIndex::build(&guard, &summaries, embedder, None);
    QUERIES
        .iter()
        .map(|(q, lang)| {
            let found = semantic.search(q, 8, *lang, embedder);
            (
                q.to_string(),
                json!(found.mode.name()),
                serde_json::to_value(&found.hits).unwrap(),
            )
        })
        .collect()
}

fn row_search(service: &Arc<CodeService>) -> Vec<(String, Value, Value)> {
    QUERIES
        .iter()
        .map(|(q, lang)| {
            let mut args = json!({"query": q, "topK": 8});
            if let Some(l) = lang {
                args["language"] = json!(l);
            }
            let data = run_tool(service, "semantic_search_code", &args)
                .unwrap()
                .data;
            (q.to_string(), data["mode"].clone(), data["results"].clone())
        })
        .collect()
}

/// `rows` (a service that never loads the full graph) answers like a service holding the
/// full graph, and like the in-memory semantic index; returns the number of types compared
/// and of searches with results.
fn assert_rows_match_full(rows: &Arc<CodeService>, root: &Path) -> (usize, usize) {
    let full_service = Arc::new(CodeService::new(root).unwrap());
    full_service.graph().unwrap();
    for (tool, args) in [
        ("get_class_hierarchy", json!({})),
        ("get_category_map", json!({})),
        ("get_category_map", json!({"className": ""})),
    ] {
        assert_eq!(
            render(rows, tool, &args),
            render(&full_service, tool, &args),
            "{tool} {args}"
        );
    }
    let full = full_graph(root);
    let types = rows.type_graph().unwrap();
    assert_eq!(type_view(&types), type_view(&full));
    let (stats, _) = rows.overview().unwrap();
    assert_eq!(
        (
            stats.files,
            stats.functions,
            &stats.languages,
            &stats.extensions
        ),
        (
            full.totals.files,
            full.totals.functions,
            &full.languages,
            &full.extensions
        )
    );
    let searched = row_search(rows);
    assert_eq!(searched, reference_search(root, None));
    let found = searched.iter().filter(|(_, _, hits)| hits != &json!([]));
    (full.types.len(), found.count())
}

#[test]
fn whole_project_queries_answer_from_rows_as_from_every_summary_after_edits() {
    let dir = mixed_project();
    let root = dir.path();
    let rows = Arc::new(CodeService::new(root).unwrap());
    let (types, found) = assert_rows_match_full(&rows, root);
    assert!(types > 40 && found >= 5, "{types} {found}");

    edit(
        root,
        "python/zoo/animals.py",
        "class Puppy(Dog):",
        "class Puppy(Animal):",
        1,
    );
    write(
        root,
        "python/zoo/kennel.py",
        "from zoo.animals import Animal\n\nclass Dog(Animal):\n    def speak(self):\n        return 1\n\nclass Kennel:\n    def house(self, dog):\n        return dog.speak()\n",
        2,
    );
    write(
        root,
        "swift/Sources/Shapes/Circle+More.swift",
        "extension Circle: Comparable {\n    func compare(_ other: Circle) -> Bool { return radius < other.radius }\n}\n",
        3,
    );
    std::fs::remove_file(root.join("swift/Sources/Shapes/Circle+Extras.swift")).unwrap();
    let (types, found) = assert_rows_match_full(&rows, root);
    assert!(types > 40 && found >= 5, "{types} {found}");

    // A forced rebuild replaces every row in one transaction (FTS5's `delete-all` included).
    rows.rebuild(true, &|_| {}).unwrap();
    assert_eq!(assert_rows_match_full(&rows, root), (types, found));
}

#[test]
fn each_fixture_project_answers_from_rows_as_from_every_summary() {
    for name in ["aliases", "swift", "objc", "go", "rust"] {
        let dir = super::fixtures::project(name);
        let rows = Arc::new(CodeService::new(dir.path()).unwrap());
        let (types, found) = assert_rows_match_full(&rows, dir.path());
        assert!(types > 0 && found > 0, "{name}: {types} {found}");
    }
}

/// The overview's counts, languages and extensions come from the rows; modules, cycles and
/// entry points from the topology; together they equal the full graph's.
#[test]
fn the_overview_from_rows_equals_the_full_graphs() {
    let dir = mixed_project();
    let root = dir.path();
    let service = Arc::new(CodeService::new(root).unwrap());
    let data = run_tool(&service, "get_project_overview", &json!({}))
        .unwrap()
        .data;
    let full = full_graph(root);
    assert_eq!(data["totals"], json!(full.totals));
    assert_eq!(data["languages"], json!(full.languages));
    assert_eq!(data["extensions"], json!(full.extensions));
    assert_eq!(data["entryPoints"], json!(full.entry_points));
    assert!(full.totals.classes > 10 && full.totals.methods > 50);
}

/// Embeds a text as its letter counts: deterministic, and texts sharing words get close.
struct LetterEmbedder;

impl CodeEmbedder for LetterEmbedder {
    fn model_id(&self) -> &str {
        "letters"
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; 26];
                for c in t
                    .to_ascii_lowercase()
                    .bytes()
                    .filter(u8::is_ascii_lowercase)
                {
                    v[usize::from(c - b'a')] += 1.0;
                }
                v
            })
            .collect())
    }
}

#[test]
fn hybrid_search_from_stored_vectors_ranks_like_the_in_memory_index() {
    let dir = mixed_project();
    let root = dir.path();
    let service = Arc::new(
        CodeService::new(root)
            .unwrap()
            .with_embedder(Arc::new(LetterEmbedder)),
    );
    let searched = row_search(&service);
    assert!(searched.iter().all(|(_, mode, _)| mode == &json!("hybrid")));
    assert_eq!(searched, reference_search(root, Some(&LetterEmbedder)));

    edit(
        root,
        "python/zoo/animals.py",
        "class Puppy(Dog):",
        "class Puppy(Animal):",
        1,
    );
    assert_eq!(
        row_search(&service),
        reference_search(root, Some(&LetterEmbedder))
    );
}

/// Words with accents, combining marks and non-Latin letters are one FTS5 token each, as
/// they are one word in memory, so lengths and scores agree.
#[test]
fn non_ascii_identifiers_rank_alike_in_rows_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "calc.py",
        "class Größe:\n    def berechne_größe(self):\n        return 1\n\n    def café_über(self):\n        return 2\n\ndef नमस्ते_दुनिया():\n    return 'ⓐⓑ'\n\ndef größe_total():\n    return Größe().berechne_größe()\n",
        1,
    );
    let service = Arc::new(CodeService::new(root).unwrap());
    let mut index = CodeIndex::open(root).unwrap();
    index.refresh(&|_| {}).unwrap();
    let guard = alembic_safety::PathGuard::new(root).unwrap();
    let semantic = SemanticIndex::build(&guard, &index.summaries().unwrap(), None, None);
    for query in ["größe", "berechne größe", "café", "नमस्ते", "दुनिया total"]
    {
        let data = run_tool(&service, "semantic_search_code", &json!({"query": query}))
            .unwrap()
            .data;
        let reference = serde_json::to_value(&semantic.search(query, 10, None, None).hits).unwrap();
        assert_ne!(reference, json!([]), "{query}");
        assert_eq!(data["results"], reference, "{query}");
    }
}

/// Code-graph search prefilters in SQL (ASCII case folding, `%` and `_` taken literally,
/// names with non-ASCII letters always kept) and answers as the full graph does.
#[test]
fn code_graph_search_from_rows_matches_the_full_graph_with_special_keywords() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "src/lib.rs",
        "pub struct Über_Thing;\nimpl Über_Thing { pub fn my_func(&self) {} }\npub fn myXfunc() {}\npub fn percent_100() {}\n",
        1,
    );
    let rows = Arc::new(CodeService::new(dir.path()).unwrap());
    let full = Arc::new(CodeService::new(dir.path()).unwrap());
    full.graph().unwrap();
    for keyword in ["my_f", "über", "ÜBER", "%", "_", "thing", "FUNC"] {
        let args = json!({"action": "search", "entity_id": keyword});
        let got = render(&rows, "query_code_graph", &args);
        assert_eq!(got, render(&full, "query_code_graph", &args), "{keyword}");
        if keyword == "my_f" {
            assert!(got.contains("my_func") && !got.contains("myXfunc"), "{got}");
        }
        if keyword == "über" {
            assert!(got.contains("Über_Thing"), "{got}");
        }
    }
}
