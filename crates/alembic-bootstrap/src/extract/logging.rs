//! Observability and logging: the logging facade in use, and stray prints.

use super::Signal;

pub const SIGNALS: &[Signal] = &[
    Signal {
        title: "Logging: structured logging with tracing",
        what: "tracing / log macros",
        languages: &["rust"],
        pattern: r"\b(tracing|log)::(trace|debug|info|warn|error|instrument)\b|#\[instrument",
        min_hits: 1,
    },
    Signal {
        title: "Logging: os_log / Logger",
        what: "os_log / Logger / NSLog calls",
        languages: &["swift", "objectivec"],
        pattern: r"\bos_log\b|\bLogger\(|\bNSLog\(",
        min_hits: 1,
    },
    Signal {
        title: "Logging: Python logging module",
        what: "logging module uses",
        languages: &["python"],
        pattern: r"\blogging\.getLogger\b|\blogger\.(debug|info|warning|error|exception)\(",
        min_hits: 1,
    },
    Signal {
        title: "Logging: console logging",
        what: "console.* calls",
        languages: &["typescript", "javascript"],
        pattern: r"\bconsole\.(log|warn|error|info|debug)\(",
        min_hits: 1,
    },
    Signal {
        title: "Logging: Go log package",
        what: "log / slog / zap calls",
        languages: &["go"],
        pattern: r"\b(log|slog)\.(Print|Printf|Println|Fatal|Fatalf|Info|Warn|Error)\b|zap\.",
        min_hits: 1,
    },
    Signal {
        title: "Logging: JVM loggers",
        what: "SLF4J / Log4j / ILogger uses",
        languages: &["java", "kotlin", "csharp"],
        pattern: r"LoggerFactory\.getLogger|LogManager\.getLogger|ILogger<",
        min_hits: 1,
    },
];
