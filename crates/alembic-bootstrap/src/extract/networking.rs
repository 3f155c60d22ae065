//! Networking and API: which HTTP stack the code uses and where requests are made.

use super::Signal;

pub const SIGNALS: &[Signal] = &[
    Signal {
        title: "Networking: HTTP through reqwest",
        what: "reqwest client uses",
        languages: &["rust"],
        pattern: r"\breqwest::",
        min_hits: 1,
    },
    Signal {
        title: "Networking: HTTP servers with axum/hyper/actix",
        what: "HTTP server framework uses",
        languages: &["rust"],
        pattern: r"\b(axum|hyper|actix_web|warp)::",
        min_hits: 1,
    },
    Signal {
        title: "Networking: URLSession requests",
        what: "URLSession / Alamofire uses",
        languages: &["swift", "objectivec"],
        pattern: r"URLSession|NSURLSession|Alamofire|AF\.request",
        min_hits: 1,
    },
    Signal {
        title: "Networking: Python HTTP clients",
        what: "requests / httpx / aiohttp calls",
        languages: &["python"],
        pattern: r"\b(requests|httpx|aiohttp)\.(get|post|put|delete|request|Client|AsyncClient|ClientSession)\b",
        min_hits: 1,
    },
    Signal {
        title: "Networking: fetch/axios requests",
        what: "fetch / axios calls",
        languages: &["typescript", "javascript"],
        pattern: r"\bfetch\s*\(|\baxios(\.\w+)?\s*\(",
        min_hits: 1,
    },
    Signal {
        title: "Networking: Go net/http",
        what: "net/http calls",
        languages: &["go"],
        pattern: r"\bhttp\.(Get|Post|NewRequest|HandleFunc|ListenAndServe|Client)\b",
        min_hits: 1,
    },
    Signal {
        title: "Networking: JVM HTTP clients",
        what: "HttpClient / RestTemplate / OkHttp / Retrofit uses",
        languages: &["java", "kotlin", "csharp"],
        pattern: r"\b(HttpClient|RestTemplate|WebClient|OkHttpClient|Retrofit)\b",
        min_hits: 1,
    },
];
