//! Language idioms: one signal table per language dimension.

use super::Signal;

const RUST: &[Signal] = &[
    Signal {
        title: "Rust: behaviour through trait implementations",
        what: "`impl Trait for Type` blocks",
        languages: &["rust"],
        pattern: r"^\s*impl(<[^>]*>)?\s+[\w:]+(<[^>]*>)?\s+for\s+\w+",
        min_hits: 2,
    },
    Signal {
        title: "Rust: shared ownership with Arc",
        what: "`Arc<...>` handles",
        languages: &["rust"],
        pattern: r"\bArc<",
        min_hits: 2,
    },
    Signal {
        title: "Rust: unsafe blocks",
        what: "`unsafe` blocks or functions",
        languages: &["rust"],
        pattern: r"\bunsafe\s*(\{|fn\b|impl\b)",
        min_hits: 1,
    },
];

const SWIFT: &[Signal] = &[
    Signal {
        title: "Swift: early exit with guard",
        what: "`guard ... else` statements",
        languages: &["swift"],
        pattern: r"^\s*guard\s+.*\belse\b",
        min_hits: 2,
    },
    Signal {
        title: "Swift: behaviour added in extensions",
        what: "`extension` blocks",
        languages: &["swift"],
        pattern: r"^\s*(public\s+|private\s+|fileprivate\s+)?extension\s+\w+",
        min_hits: 2,
    },
    Signal {
        title: "Swift/ObjC: weak references against retain cycles",
        what: "`weak` references",
        languages: &["swift", "objectivec"],
        pattern: r"\bweak\s+var\b|\[weak\s+self\]|\(weak\b|__weak\b",
        min_hits: 1,
    },
];

const TS_JS: &[Signal] = &[
    Signal {
        title: "TS/JS: named ES module exports",
        what: "named `export` declarations",
        languages: &["typescript", "javascript"],
        pattern: r"^\s*export\s+(const|function|class|interface|type|enum|async)\b",
        min_hits: 2,
    },
    Signal {
        title: "TS/JS: default exports",
        what: "`export default` declarations",
        languages: &["typescript", "javascript"],
        pattern: r"^\s*export\s+default\b",
        min_hits: 1,
    },
    Signal {
        title: "TypeScript: interfaces describe object shapes",
        what: "`interface` declarations",
        languages: &["typescript"],
        pattern: r"^\s*(export\s+)?interface\s+\w+",
        min_hits: 1,
    },
];

const PYTHON: &[Signal] = &[
    Signal {
        title: "Python: type-annotated functions",
        what: "functions with a return annotation",
        languages: &["python"],
        pattern: r"^\s*(async\s+)?def\s+\w+\(.*\)\s*->",
        min_hits: 2,
    },
    Signal {
        title: "Python: dataclasses for records",
        what: "`@dataclass` classes",
        languages: &["python"],
        pattern: r"^\s*@(dataclasses\.)?dataclass\b",
        min_hits: 1,
    },
    Signal {
        title: "Python: resources managed with `with`",
        what: "`with` statements",
        languages: &["python"],
        pattern: r"^\s*(async\s+)?with\s+.+:\s*$",
        min_hits: 2,
    },
];

const GO: &[Signal] = &[
    Signal {
        title: "Go: small interfaces",
        what: "interface types",
        languages: &["go"],
        pattern: r"^\s*type\s+\w+\s+interface\s*\{",
        min_hits: 1,
    },
    Signal {
        title: "Go: cleanup with defer",
        what: "`defer` statements",
        languages: &["go"],
        pattern: r"^\s*defer\s+",
        min_hits: 1,
    },
];

const JVM: &[Signal] = &[Signal {
    title: "JVM: annotations drive configuration",
    what: "annotations",
    languages: &["java", "kotlin"],
    pattern: r"^\s*@[A-Z]\w+",
    min_hits: 2,
}];

const CSHARP: &[Signal] = &[Signal {
    title: "C#: async Task methods",
    what: "`async Task` methods",
    languages: &["csharp"],
    pattern: r"\basync\s+Task\b",
    min_hits: 1,
}];

/// The signal table of a language dimension.
pub fn signals_for(dimension: &str) -> Option<&'static [Signal]> {
    Some(match dimension {
        "rust-ownership" => RUST,
        "swift-objc-idiom" => SWIFT,
        "ts-js-module" => TS_JS,
        "python-structure" => PYTHON,
        "go-module" => GO,
        "jvm-annotation" => JVM,
        "csharp-dotnet" => CSHARP,
        _ => return None,
    })
}
