//! One fixture project per language: exact hierarchies, methods, overrides, call edges
//! and module layers, compared as whole values.

use pretty_assertions::assert_eq;

use super::fixtures::{graph_of, hierarchy, layers, methods, overrides, resolved_calls};
use super::incremental::LANGUAGES;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn swift() {
    let g = graph_of("swift");
    assert_eq!(
        hierarchy(&g),
        strings(&[
            "class Base [Named]",
            "class Circle : Base [CustomStringConvertible] +{ext}",
            "enum Kind",
            "protocol Named [Shape]",
            "struct Point [Equatable]",
            "class Ring : Circle",
            "protocol Shape",
        ])
    );
    assert_eq!(
        methods(&g, "Circle"),
        strings(&["-scaled", "-init", "-area",])
    );
    assert_eq!(
        overrides(&g, "Base", "area"),
        strings(&["Circle (override)", "Ring (override)",])
    );
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "Base.describe -> Base.area (receiver_type 0.95)",
            "Circle.<body> -> Base.describe (implicit_self 0.85)",
            "Circle.scaled -> Circle.init (constructor 0.9)",
            "Ring.area -> Circle.area (receiver_type 0.95)",
            "Sources/App/main.swift::<top-level> -> Sources/App/main.swift::run (same_file 0.9)",
            "Sources/App/main.swift::run -> Base.describe (by_name 0.6)",
            "Sources/App/main.swift::run -> Base.make (receiver_type 0.9)",
            "Sources/App/main.swift::run -> Circle.area (receiver_type 0.9)",
            "Sources/App/main.swift::run -> Circle.init (constructor 0.9)",
            "Sources/App/main.swift::run -> Circle.scaled (receiver_type 0.9)",
        ])
    );
    assert_eq!(
        layers(&g),
        strings(&["0: Sources/Shapes", "1: Sources/App",])
    );
}

#[test]
fn objc() {
    let g = graph_of("objc");
    assert_eq!(
        hierarchy(&g),
        strings(&[
            "class Circle : Shape [NSCopying] +{Scaling}",
            "protocol Drawable [NSObject]",
            "class Shape : NSObject [Drawable]",
        ])
    );
    assert_eq!(methods(&g, "Circle"), strings(&["-scaledBy:", "-area",]));
    assert_eq!(
        overrides(&g, "Shape", "area"),
        strings(&["Circle (override)",])
    );
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "App/main.m::main -> Circle.area (receiver_type 0.9)",
            "App/main.m::main -> Circle.scaledBy: (receiver_type 0.9)",
            "App/main.m::main -> Shape.draw (receiver_type 0.9)",
            "Circle.scaledBy: -> Shape.shapeWithName: (receiver_type 0.9)",
            "Shape.draw -> Shape.area (receiver_type 0.95)",
        ])
    );
    assert_eq!(layers(&g), strings(&["0: Shapes", "1: App",]));
}

#[test]
fn rust() {
    let g = graph_of("rust");
    assert_eq!(
        hierarchy(&g),
        strings(&[
            "struct Circle [Shape, Display] +{ext, Shape, Display}",
            "enum Kind",
            "protocol Named [Shape]",
            "protocol Shape",
        ])
    );
    assert_eq!(
        methods(&g, "Circle"),
        strings(&["+new", "-scaled", "-area", "-fmt",])
    );
    assert_eq!(
        overrides(&g, "Shape", "area"),
        strings(&["Circle (implementation)",])
    );
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "Circle.fmt -> Shape.describe (receiver_type 0.95)",
            "Circle.scaled -> Circle.new (constructor 0.9)",
            "Shape.describe -> Shape.area (receiver_type 0.95)",
            "src/main.rs::main -> Circle.area (receiver_type 0.9)",
            "src/main.rs::main -> Circle.new (constructor 0.9)",
            "src/main.rs::main -> Circle.scaled (receiver_type 0.9)",
            "src/main.rs::main -> src/main.rs::report (same_file 0.9)",
            "src/main.rs::report -> Shape.describe (receiver_type 0.9)",
        ])
    );
    assert_eq!(layers(&g), strings(&["0: src/shapes", "1: src",]));
}

#[test]
fn python() {
    let g = graph_of("python");
    assert_eq!(
        hierarchy(&g),
        strings(&[
            "class Animal",
            "class Dog : Animal",
            "class Puppy : Dog",
            "protocol Speaker",
        ])
    );
    assert_eq!(
        methods(&g, "Animal"),
        strings(&["-__init__", "+create", "-speak", "-describe",])
    );
    assert_eq!(
        overrides(&g, "Animal", "speak"),
        strings(&["Dog (override)", "Puppy (override)",])
    );
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "Animal.create -> Animal.__init__ (constructor 0.9)",
            "Animal.describe -> Animal.speak (receiver_type 0.95)",
            "Puppy.speak -> Dog.speak (receiver_type 0.95)",
            "zoo/main.py::<top-level> -> zoo/main.py::main (same_file 0.9)",
            "zoo/main.py::main -> Animal.__init__ (constructor 0.9)",
            "zoo/main.py::main -> Animal.describe (receiver_type 0.9)",
            "zoo/main.py::main -> Puppy.speak (receiver_type 0.9)",
        ])
    );
    assert_eq!(layers(&g), strings(&["0: zoo",]));
}

#[test]
fn typescript() {
    let g = graph_of("typescript");
    assert_eq!(
        hierarchy(&g),
        strings(&[
            "class Base [Named]",
            "class Circle : Base",
            "enum Kind",
            "protocol Named [Shape]",
            "protocol Shape",
        ])
    );
    assert_eq!(methods(&g, "Circle"), strings(&["-constructor", "-area",]));
    assert_eq!(
        overrides(&g, "Base", "area"),
        strings(&["Circle (override)",])
    );
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "Base.describe -> Base.area (receiver_type 0.95)",
            "src/main.tsx::<top-level> -> src/main.tsx::App (same_file 0.9)",
            "src/main.tsx::<top-level> -> src/main.tsx::helper (same_file 0.9)",
            "src/main.tsx::App -> Base.describe (receiver_type 0.9)",
            "src/main.tsx::App -> Base.make (receiver_type 0.9)",
            "src/main.tsx::App -> Circle.area (receiver_type 0.9)",
            "src/main.tsx::App -> Circle.constructor (constructor 0.9)",
        ])
    );
    assert_eq!(layers(&g), strings(&["0: src/models", "1: src",]));
}

#[test]
fn javascript() {
    let g = graph_of("javascript");
    assert_eq!(
        hierarchy(&g),
        strings(&["class Animal", "class Dog : Animal",])
    );
    assert_eq!(
        methods(&g, "Animal"),
        strings(&["-constructor", "+create", "-speak", "-describe",])
    );
    assert_eq!(
        overrides(&g, "Animal", "speak"),
        strings(&["Dog (override)",])
    );
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "Animal.create -> Animal.constructor (constructor 0.9)",
            "Animal.describe -> Animal.speak (receiver_type 0.95)",
            "lib/animals.js::main -> Animal.constructor (constructor 0.9)",
            "lib/animals.js::main -> Animal.create (receiver_type 0.9)",
            "lib/animals.js::main -> Animal.describe (receiver_type 0.9)",
            "lib/animals.js::main -> Animal.speak (by_name 0.3)",
            "lib/animals.js::main -> Dog.speak (by_name 0.3)",
            "lib/animals.js::main -> lib/log.js::log (by_name 0.8)",
        ])
    );
    assert_eq!(layers(&g), strings(&["0: lib",]));
}

#[test]
fn go() {
    let g = graph_of("go");
    assert_eq!(
        hierarchy(&g),
        strings(&[
            "struct Base",
            "struct Circle [Base, Named, Shape]",
            "protocol Named [Shape]",
            "protocol Shape",
        ])
    );
    assert_eq!(methods(&g, "Circle"), strings(&["-Area", "-Describe",]));
    assert_eq!(
        overrides(&g, "Shape", "Area"),
        strings(&["Circle (implementation)",])
    );
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "Circle.Describe -> Base.Name (receiver_type 0.95)",
            "Circle.Describe -> Circle.Area (receiver_type 0.95)",
            "cmd/app/main.go::main -> Circle.Describe (receiver_type 0.9)",
            "cmd/app/main.go::main -> shapes/shapes.go::NewCircle (by_name 0.6)",
        ])
    );
    assert_eq!(layers(&g), strings(&["0: shapes", "1: cmd/app",]));
}

#[test]
fn java() {
    let g = graph_of("java");
    assert_eq!(
        hierarchy(&g),
        strings(&[
            "class Base [Shape, Cloneable]",
            "class Circle : Base",
            "protocol Shape [Comparable]",
        ])
    );
    assert_eq!(
        methods(&g, "Circle"),
        strings(&["-Circle", "-area", "+main",])
    );
    assert_eq!(
        overrides(&g, "Base", "area"),
        strings(&["Circle (override)",])
    );
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "Base.compareTo -> Base.area (implicit_self 0.85)",
            "Base.compareTo -> Shape.area (receiver_type 0.9)",
            "Base.describe -> Base.area (receiver_type 0.95)",
            "Base.make -> Circle.Circle (constructor 0.9)",
            "Circle.main -> Base.area (receiver_type 0.9)",
            "Circle.main -> Base.describe (receiver_type 0.9)",
            "Circle.main -> Base.make (receiver_type 0.9)",
            "Circle.main -> Circle.Circle (constructor 0.9)",
        ])
    );
    assert_eq!(layers(&g), strings(&["0: src/com/example/shapes",]));
}

#[test]
fn kotlin() {
    let g = graph_of("kotlin");
    assert_eq!(
        hierarchy(&g),
        strings(&[
            "class Base [Named]",
            "class Circle : Base [Comparable] +{ext}",
            "enum Kind",
            "protocol Named [Shape]",
            "class Registry",
            "protocol Shape",
        ])
    );
    assert_eq!(
        methods(&g, "Circle"),
        strings(&["-area", "-compareTo", "-doubled",])
    );
    assert_eq!(
        overrides(&g, "Base", "area"),
        strings(&["Circle (override)",])
    );
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "Base.describe -> Base.area (implicit_self 0.85)",
            "src/shapes/Shapes.kt::main -> Base.area (by_name 0.2)",
            "src/shapes/Shapes.kt::main -> Base.describe (receiver_type 0.9)",
            "src/shapes/Shapes.kt::main -> Base.make (receiver_type 0.9)",
            "src/shapes/Shapes.kt::main -> Circle.area (by_name 0.2)",
            "src/shapes/Shapes.kt::main -> Circle.doubled (receiver_type 0.9)",
            "src/shapes/Shapes.kt::main -> Shape.area (by_name 0.2)",
        ])
    );
    assert_eq!(layers(&g), strings(&["0: src/shapes",]));
}

#[test]
fn c() {
    let g = graph_of("c");
    assert_eq!(
        hierarchy(&g),
        strings(&["enum Color", "struct List", "struct Node",])
    );
    assert_eq!(methods(&g, "List"), strings(&[]));
    assert_eq!(overrides(&g, "List", "x"), strings(&[]));
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "src/list.c::list_push -> src/list.c::node_new (same_file 0.9)",
            "src/list.c::main -> src/list.c::list_len (same_file 0.9)",
            "src/list.c::main -> src/list.c::list_push (same_file 0.9)",
        ])
    );
    assert_eq!(layers(&g), strings(&["0: src",]));
}

#[test]
fn cpp() {
    let g = graph_of("cpp");
    assert_eq!(
        hierarchy(&g),
        strings(&[
            "class Circle : Shape",
            "class Shape",
            "struct Square : Shape [Named]",
        ])
    );
    assert_eq!(
        methods(&g, "Circle"),
        strings(&["-area", "+unit", "-Circle",])
    );
    assert_eq!(
        overrides(&g, "Shape", "area"),
        strings(&["Circle (override)", "Square (override)",])
    );
    assert_eq!(
        resolved_calls(&g),
        strings(&[
            "Circle.unit -> Circle.Circle (constructor 0.9)",
            "Shape.describe -> Shape.area (receiver_type 0.95)",
            "src/shapes.cpp::main -> Circle.unit (receiver_type 0.9)",
            "src/shapes.cpp::main -> Shape.describe (receiver_type 0.9)",
            "src/shapes.cpp::main -> Square.area (receiver_type 0.9)",
        ])
    );
    assert_eq!(layers(&g), strings(&["0: src",]));
}

/// `lookup_method` stops early and copies no names; it must still pick the first type of
/// `ancestry` (with conformances) that defines the method, for every type and name.
#[test]
fn method_lookup_follows_the_ancestry_order_in_every_fixture() {
    let mut checked = 0;
    for language in LANGUAGES.into_iter().chain(["aliases"]) {
        let g = graph_of(language);
        let names: std::collections::BTreeSet<&str> = g
            .types
            .values()
            .flat_map(|t| t.methods.iter().map(|m| m.name.as_str()))
            .chain(["missing"])
            .collect();
        for key in g.types.keys().map(String::as_str).chain(["Unknown"]) {
            for name in &names {
                let expected = g.ancestry(key, true).into_iter().find_map(|t| {
                    let info = g.types.get(&t)?;
                    info.methods
                        .iter()
                        .find(|m| m.name == *name)
                        .map(|m| (info.name.clone(), m.name.clone()))
                });
                let found = g
                    .lookup_method(key, name)
                    .map(|(t, m)| (t.name.clone(), m.name.clone()));
                assert_eq!(found, expected, "{language}: {key}.{name}");
                checked += usize::from(found.is_some());
            }
        }
    }
    assert!(checked > 100, "only {checked} lookups found a method");
}
