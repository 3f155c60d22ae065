//! Parents written through import aliases and qualified names resolve to the declaration
//! they mean (`tests/fixtures/aliases`), per language: in the full graph, in the answers of
//! `get_class_info` / `get_class_hierarchy`, and in focused graphs. Each fixture also holds a
//! same-named decoy that path nearness alone would pick.

use std::path::Path;
use std::sync::Arc;

use alembic_code::{CodeIndex, CodeService, Lang, ProjectGraph, Reach};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::direct::run_tool;
use super::fixtures::project;
use super::incremental::edit;

/// How a child names its parent.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Via {
    Superclass,
    Conformance,
}

/// A type (simple name, file), the parent it names (simple name, file of the declaration it
/// must resolve to) and how.
struct Case {
    child: (&'static str, &'static str),
    parent: (&'static str, &'static str),
    via: Via,
}

const fn case(
    child: (&'static str, &'static str),
    parent: (&'static str, &'static str),
    via: Via,
) -> Case {
    Case { child, parent, via }
}

const SANSIO: (&str, &str) = ("Blueprint", "python/flask/sansio/blueprints.py");
const TS_OTHER: (&str, &str) = ("Base", "typescript/other/base.ts");
const JS_LIB: (&str, &str) = ("Base", "javascript/lib/base.js");
const RUST_OTHER: (&str, &str) = ("Shape", "rust/src/other.rs");
const JAVA_OTHER: (&str, &str) = ("Base", "java/src/com/acme/other/Base.java");
const KOTLIN_ZETA: (&str, &str) = ("Base", "kotlin/com/zeta/Base.kt");

const PYTHON: &[Case] = &[
    // `from .sansio.blueprints import Blueprint as SansioBlueprint`
    case(
        ("Blueprint", "python/flask/blueprints.py"),
        SANSIO,
        Via::Superclass,
    ),
    // `import flask.sansio.blueprints as bp` … `(bp.Blueprint)`
    case(
        ("ViewBlueprint", "python/flask/views.py"),
        SANSIO,
        Via::Superclass,
    ),
    // A second base of the type's own simple name is another module's type, not itself.
    case(
        ("Blueprint", "python/flask/mixed.py"),
        SANSIO,
        Via::Conformance,
    ),
    // `from docutils import writers` … `(writers.Writer)`: the package's `__init__.py`,
    // not the same-named class beside it in the package.
    case(
        ("Writer", "python/docutils/writers/manpage.py"),
        ("Writer", "python/docutils/writers/__init__.py"),
        Via::Superclass,
    ),
    // `from flask.blueprints import Blueprint`
    case(
        ("AppBlueprint", "python/flask/views.py"),
        ("Blueprint", "python/flask/blueprints.py"),
        Via::Superclass,
    ),
];

const TYPESCRIPT: &[Case] = &[
    // `import { Base as OtherBase, Drawable as Paintable }`
    case(("Widget", "typescript/app.ts"), TS_OTHER, Via::Superclass),
    case(
        ("Widget", "typescript/app.ts"),
        ("Drawable", "typescript/other/base.ts"),
        Via::Conformance,
    ),
    // `import * as other` … `extends other.Base`
    case(("Gadget", "typescript/ns.ts"), TS_OTHER, Via::Superclass),
];

const JAVASCRIPT: &[Case] = &[
    // `import { Base as LibBase }`
    case(("Thing", "javascript/app.js"), JS_LIB, Via::Superclass),
    // `const { Base: Required } = require(…)`
    case(("Item", "javascript/req.js"), JS_LIB, Via::Superclass),
    // `const lib = require(…)` … `extends lib.Base`
    case(("Part", "javascript/req.js"), JS_LIB, Via::Superclass),
];

const RUST: &[Case] = &[
    // `use crate::other::{Shape as OtherShape}`: `impl OtherShape for Square`
    case(("Square", "rust/src/main.rs"), RUST_OTHER, Via::Conformance),
    // `trait Fancy: OtherShape`
    case(("Fancy", "rust/src/main.rs"), RUST_OTHER, Via::Conformance),
];

const SWIFT: &[Case] = &[
    // `class Button: UIKit.UIView`
    case(
        ("Button", "swift/Sources/App/Button.swift"),
        ("UIView", "swift/Sources/UIKit/UIView.swift"),
        Via::Superclass,
    ),
];

const JAVA: &[Case] = &[
    // `extends com.acme.other.Base`
    case(
        ("Qualified", "java/src/com/acme/app/Qualified.java"),
        JAVA_OTHER,
        Via::Superclass,
    ),
    // `import com.acme.other.Base;` … `extends Base`
    case(
        ("Imported", "java/src/com/acme/app/Imported.java"),
        JAVA_OTHER,
        Via::Superclass,
    ),
    // No import: the `Base` of its own package.
    case(
        ("Local", "java/src/com/acme/base/Local.java"),
        ("Base", "java/src/com/acme/base/Base.java"),
        Via::Superclass,
    ),
];

const KOTLIN: &[Case] = &[
    // `: com.zeta.Base()`
    case(
        ("KotlinQualified", "kotlin/app/K.kt"),
        KOTLIN_ZETA,
        Via::Superclass,
    ),
    // `import com.zeta.Base as ZetaBase` … `: ZetaBase()`
    case(
        ("KotlinAliased", "kotlin/app/K.kt"),
        KOTLIN_ZETA,
        Via::Superclass,
    ),
];

fn full_graph(root: &Path) -> ProjectGraph {
    let mut index = CodeIndex::open(root).unwrap();
    index.refresh(&|_| {}).unwrap();
    index.graph().unwrap()
}

/// Key of the type with this simple name declared in this file.
fn key_of(g: &ProjectGraph, (name, file): (&str, &str)) -> String {
    let found: Vec<&str> = g
        .types
        .values()
        .filter(|t| t.simple_name == name && t.file == file)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(found.len(), 1, "{name} in {file}: {found:?}");
    found[0].to_string()
}

/// The parent keys a type names the way `via` says.
fn parents(info: &alembic_code::TypeInfo, via: Via) -> Vec<String> {
    match via {
        Via::Superclass => info.superclass.iter().cloned().collect(),
        Via::Conformance => info.conformances.clone(),
    }
}

fn tool(service: &Arc<CodeService>, name: &str, args: Value) -> Value {
    match run_tool(service, name, &args) {
        Ok(out) => out.data,
        Err(e) => panic!("{name} {args}: {e}"),
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// Each case's parent is the declaration in its file: in the full graph, through
/// `get_class_info` / `get_class_hierarchy` of a fresh service (focused graphs), and in
/// graphs focused on the child and on the parent.
fn assert_cases(cases: &[Case]) {
    let dir = project("aliases");
    let root = dir.path();
    let full = full_graph(root);
    for c in cases {
        let child = key_of(&full, c.child);
        let parent = key_of(&full, c.parent);
        let what = format!("{child} → {parent}");
        assert!(
            parents(&full.types[&child], c.via).contains(&parent),
            "full graph: {what}: {:?}",
            full.types[&child]
        );

        // A fresh service answers every type tool from a focused graph.
        let service = Arc::new(CodeService::new(root).unwrap());
        let info = tool(&service, "get_class_info", json!({"className": child}));
        let listed = match c.via {
            Via::Superclass => strings(&info["chain"])
                .into_iter()
                .skip(1)
                .take(1)
                .collect(),
            Via::Conformance => strings(&info["conformances"]),
        };
        assert!(listed.contains(&parent), "get_class_info: {what}: {info}");
        let declared = tool(&service, "get_class_info", json!({"className": parent}));
        assert_eq!(declared["file"], json!(c.parent.1), "{what}");
        if c.via == Via::Superclass {
            let tree = tool(
                &service,
                "get_class_hierarchy",
                json!({"className": parent}),
            );
            assert!(
                strings(&tree["subclasses"]).contains(&child),
                "get_class_hierarchy: {what}: {tree}"
            );
        }

        let around_child = service.graph_around(&child, Reach::all()).unwrap();
        assert!(parents(&around_child.types[&child], c.via).contains(&parent));
        assert_eq!(around_child.types[&parent].file, c.parent.1, "{what}");
        let around_parent = service.graph_around(&parent, Reach::all()).unwrap();
        let below = match c.via {
            Via::Superclass => around_parent.subclasses.get(&parent),
            Via::Conformance => around_parent.conformers.get(&parent),
        };
        assert!(
            below.is_some_and(|b| b.contains(&child)),
            "focused on the parent: {what}"
        );
    }
}

#[test]
fn python_aliases_and_module_aliases_resolve() {
    assert_cases(PYTHON);
}

#[test]
fn typescript_named_and_namespace_imports_resolve() {
    assert_cases(TYPESCRIPT);
}

#[test]
fn javascript_imports_and_requires_resolve() {
    assert_cases(JAVASCRIPT);
}

#[test]
fn rust_use_aliases_resolve_for_impls_and_supertraits() {
    assert_cases(RUST);
    // `impl Round { fn grow }` with `use crate::other::Circle as Round` extends that Circle.
    let dir = project("aliases");
    let service = Arc::new(CodeService::new(dir.path()).unwrap());
    let grows = |file: &str| {
        let info = tool(
            &service,
            "get_class_info",
            json!({"className": format!("{file}::Circle")}),
        );
        assert_eq!(info["file"], json!(file));
        info["methods"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["name"] == "grow")
    };
    assert!(grows("rust/src/other.rs"));
    assert!(!grows("rust/src/a/b.rs"));
}

#[test]
fn swift_module_qualified_parents_resolve_or_stay_external() {
    assert_cases(SWIFT);
    // `Foundation.NSObject` is not in the project: the simple name, unresolved.
    let dir = project("aliases");
    let service = Arc::new(CodeService::new(dir.path()).unwrap());
    let info = tool(&service, "get_class_info", json!({"className": "Model"}));
    assert_eq!(info["chain"], json!(["Model", "NSObject"]));
}

#[test]
fn java_qualified_and_imported_parents_resolve() {
    assert_cases(JAVA);
}

#[test]
fn kotlin_qualified_and_aliased_parents_resolve() {
    assert_cases(KOTLIN);
}

/// A parent outside the project with the child's own simple name is not the child: it
/// stays as written (an alias) or qualified (a qualified name).
#[test]
fn an_outside_parent_named_like_its_child_is_not_the_child() {
    let dir = project("aliases");
    let service = Arc::new(CodeService::new(dir.path()).unwrap());
    for (name, parent) in [
        ("HTTPConnection", "_HTTPConnection"),
        ("View", "android.view.View"),
    ] {
        let info = tool(&service, "get_class_info", json!({"className": name}));
        assert_eq!(info["chain"], json!([name, parent]));
        let tree = tool(&service, "get_class_hierarchy", json!({"className": name}));
        assert_eq!(tree["subclasses"], json!([]), "{name}");
    }
}

/// What a file's summary keeps: the de-aliased name, what was written and the module.
#[test]
fn summaries_keep_the_written_alias_and_its_module() {
    let source = "from .sansio.blueprints import Blueprint as SansioBlueprint\n\nclass Blueprint(SansioBlueprint):\n    pass\n";
    let s = alembic_code::summarize("src/flask/blueprints.py", Lang::Python, source).unwrap();
    let decl = &s.types[0];
    assert_eq!(decl.superclass.as_deref(), Some("Blueprint"));
    assert_eq!(
        decl.origins,
        vec![alembic_code::ParentOrigin {
            name: "Blueprint".into(),
            written: Some("SansioBlueprint".into()),
            module: Some("src/flask/sansio/blueprints".into()),
        }]
    );
}

/// A name an import binds: (local, name in the module, module as written).
type Bound<'a> = (&'a str, Option<&'a str>, &'a str);

/// What each language's imports bind.
#[test]
fn imports_record_the_names_they_bind() {
    let cases: [(&str, Lang, &str, Vec<Bound>); 8] = [
        (
            "a/m.py",
            Lang::Python,
            "from ..pkg import A, B as C\nimport x.y as z\nfrom m import *\n",
            vec![
                ("A", Some("A"), "..pkg"),
                ("C", Some("B"), "..pkg"),
                ("z", Some("y"), "x"),
            ],
        ),
        (
            "a/m.ts",
            Lang::TypeScript,
            "import D, { A as B, default as E } from './x';\nimport * as ns from '../y';\n",
            vec![
                ("D", None, "./x"),
                ("B", Some("A"), "./x"),
                ("E", None, "./x"),
                ("ns", None, "../y"),
            ],
        ),
        (
            "a/m.js",
            Lang::JavaScript,
            "const { A, B: C } = require('./x');\nconst ns = require('y');\n",
            vec![
                ("A", Some("A"), "./x"),
                ("C", Some("B"), "./x"),
                ("ns", None, "y"),
            ],
        ),
        (
            "src/m.rs",
            Lang::Rust,
            "use crate::a::{b::C as D, E, f::{self as g}};\nuse std::fmt;\nuse x::*;\n",
            vec![
                ("D", Some("C"), "crate::a::b"),
                ("E", Some("E"), "crate::a"),
                ("g", Some("f"), "crate::a"),
                ("fmt", Some("fmt"), "std"),
            ],
        ),
        (
            "A.java",
            Lang::Java,
            "import com.acme.Base;\nimport static com.acme.Util.run;\nimport com.other.*;\nclass A {}\n",
            vec![("Base", Some("Base"), "com.acme")],
        ),
        (
            "A.kt",
            Lang::Kotlin,
            "import com.acme.Base as AcmeBase\nimport com.acme.Other\nimport com.zeta.*\n",
            vec![
                ("AcmeBase", Some("Base"), "com.acme"),
                ("Other", Some("Other"), "com.acme"),
            ],
        ),
        (
            "A.swift",
            Lang::Swift,
            "import UIKit\nimport class UIKit.UIView\n",
            vec![("UIView", Some("UIView"), "UIKit")],
        ),
        ("a.go", Lang::Go, "package a\n\nimport f \"fmt\"\n", vec![]),
    ];
    for (path, lang, source, want) in cases {
        let s = alembic_code::summarize(path, lang, source).unwrap();
        let got: Vec<Bound> = s
            .imports
            .iter()
            .flat_map(|i| &i.names)
            .map(|n| (n.local.as_str(), n.name.as_deref(), n.from.as_str()))
            .collect();
        assert_eq!(got, want, "{path}");
    }
}

/// An index written before aliases were resolved (summary format 2: parent rows holding
/// the alias, summaries stored as plain JSON text) is re-parsed when opened, so it cannot
/// answer with the alias.
#[test]
fn an_index_from_the_previous_format_is_reparsed() {
    let dir = project("aliases");
    let root = dir.path();
    full_graph(root);
    let conn = alembic_store::open_project(root).unwrap();
    conn.execute_batch(
        "update code_index_meta set value = '2' where key = 'summary_version';
         update code_parents set parent = 'SansioBlueprint'
          where child = 'Blueprint' and path = 'python/flask/blueprints.py';
         update code_files set summary = '{\"superclass\":\"SansioBlueprint\"}'
          where path = 'python/flask/blueprints.py';",
    )
    .unwrap();
    drop(conn);
    let service = Arc::new(CodeService::new(root).unwrap());
    let child = "python/flask/blueprints.py::Blueprint";
    let info = tool(&service, "get_class_info", json!({"className": child}));
    assert_eq!(
        info["chain"],
        json!([
            child,
            "python/flask/sansio/blueprints.py::Blueprint",
            "Scaffold"
        ])
    );
}

/// Pointing an alias at another module moves the parent, and the incrementally updated
/// graph equals a full build.
#[test]
fn editing_an_alias_updates_the_graph_incrementally() {
    let dir = project("aliases");
    let root = dir.path();
    let service = CodeService::new(root).unwrap();
    let before = service.graph().unwrap();
    let widget = key_of(&before, ("Widget", "typescript/app.ts"));
    let base = |g: &ProjectGraph, file: &str| key_of(g, ("Base", file));
    assert_eq!(
        before.types[&widget].superclass,
        Some(base(&before, "typescript/other/base.ts"))
    );
    edit(
        root,
        "typescript/app.ts",
        "import { Base as OtherBase, Drawable as Paintable } from './other/base';",
        "import { Base as OtherBase } from './base';\nimport { Drawable as Paintable } from './other/base';",
        1,
    );
    let after = service.graph().unwrap();
    assert_eq!(
        after.types[&widget].superclass,
        Some(base(&after, "typescript/base.ts"))
    );
    let full = CodeService::new(root).unwrap().graph().unwrap();
    assert_eq!(*after, *full);
}
