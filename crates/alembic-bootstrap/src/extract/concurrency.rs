//! Concurrency and async: the primitives the code relies on, per language.

use super::Signal;

pub const SIGNALS: &[Signal] = &[
    Signal {
        title: "Concurrency: async functions on tokio",
        what: "`async fn` definitions",
        languages: &["rust"],
        pattern: r"\basync\s+fn\s+\w+",
        min_hits: 2,
    },
    Signal {
        title: "Concurrency: shared state behind Arc and locks",
        what: "Mutex/RwLock guarded state",
        languages: &["rust"],
        pattern: r"\b(Mutex|RwLock)<",
        min_hits: 2,
    },
    Signal {
        title: "Concurrency: spawned threads and tasks",
        what: "Thread or task spawns",
        languages: &["rust"],
        pattern: r"\b(thread|tokio|task)::spawn(_blocking)?\b",
        min_hits: 1,
    },
    Signal {
        title: "Concurrency: Swift async/await and actors",
        what: "Swift `async` functions and actors",
        languages: &["swift"],
        pattern: r"\bfunc\s+\w+.*\basync\b|^\s*(public\s+)?actor\s+\w+",
        min_hits: 1,
    },
    Signal {
        title: "Concurrency: Grand Central Dispatch queues",
        what: "DispatchQueue / dispatch_async uses",
        languages: &["swift", "objectivec"],
        pattern: r"DispatchQueue|dispatch_async",
        min_hits: 1,
    },
    Signal {
        title: "Concurrency: Python asyncio coroutines",
        what: "`async def` coroutines",
        languages: &["python"],
        pattern: r"^\s*async\s+def\s+\w+",
        min_hits: 1,
    },
    Signal {
        title: "Concurrency: Python threads",
        what: "threading / concurrent.futures uses",
        languages: &["python"],
        pattern: r"\bthreading\.|ThreadPoolExecutor",
        min_hits: 1,
    },
    Signal {
        title: "Concurrency: async/await on promises",
        what: "`async` functions",
        languages: &["typescript", "javascript"],
        pattern: r"\basync\s+(function\b|\w+\s*\(|\()",
        min_hits: 2,
    },
    Signal {
        title: "Concurrency: goroutines and channels",
        what: "goroutines started with `go`",
        languages: &["go"],
        pattern: r"^\s*go\s+(func\b|\w+\()",
        min_hits: 1,
    },
    Signal {
        title: "Concurrency: JVM synchronized blocks and executors",
        what: "synchronized / executor / CompletableFuture uses",
        languages: &["java", "kotlin"],
        pattern: r"\bsynchronized\b|ExecutorService|CompletableFuture|\bsuspend\s+fun\b",
        min_hits: 1,
    },
];
