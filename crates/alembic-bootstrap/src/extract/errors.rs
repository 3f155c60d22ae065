//! Error handling: how errors are typed, propagated and caught, per language.

use super::Signal;

pub const SIGNALS: &[Signal] = &[
    Signal {
        title: "Errors: typed error enums with thiserror",
        what: "Error types derive thiserror::Error",
        languages: &["rust"],
        pattern: r"#\[derive\([^)]*\bError\b|thiserror::Error",
        min_hits: 1,
    },
    Signal {
        title: "Errors: functions return Result and propagate with ?",
        what: "Fallible functions return Result",
        languages: &["rust"],
        pattern: r"\bfn\s+\w+.*->\s*(\w+::)*Result\b",
        min_hits: 3,
    },
    Signal {
        title: "Errors: Swift throwing functions with do/catch",
        what: "Functions declared `throws`",
        languages: &["swift"],
        pattern: r"\bfunc\s+\w+.*\bthrows\b",
        min_hits: 2,
    },
    Signal {
        title: "Errors: Python exceptions raised and caught",
        what: "Exceptions raised with `raise`",
        languages: &["python"],
        pattern: r"^\s*raise\s+\w+",
        min_hits: 2,
    },
    Signal {
        title: "Errors: custom Python exception classes",
        what: "Exception subclasses",
        languages: &["python"],
        pattern: r"^\s*class\s+\w+\((\w+\.)?\w*(Exception|Error)\)",
        min_hits: 1,
    },
    Signal {
        title: "Errors: TypeScript/JavaScript throw and catch",
        what: "Errors thrown with `throw new`",
        languages: &["typescript", "javascript"],
        pattern: r"\bthrow\s+new\s+\w+",
        min_hits: 2,
    },
    Signal {
        title: "Errors: Go error values checked after each call",
        what: "`if err != nil` checks",
        languages: &["go"],
        pattern: r"if\s+err\s*!=\s*nil",
        min_hits: 2,
    },
    Signal {
        title: "Errors: JVM checked exceptions and catch blocks",
        what: "catch blocks",
        languages: &["java", "kotlin", "csharp"],
        pattern: r"\bcatch\s*\(",
        min_hits: 2,
    },
    Signal {
        title: "Errors: retries around failing operations",
        what: "Retry logic (names with retry/backoff)",
        languages: &[],
        pattern: r"(?i)\b\w*(retry|retries|backoff)\w*\s*[(:=]",
        min_hits: 2,
    },
];
