//! Seed scenario 3 (the ExplorationTracker guides convergence) end to end: `AgentRuntime` from
//! `ProjectRuntime::agent`, a one-stage run under the Bootstrap strategy (EXPLORE → PRODUCE →
//! SUMMARIZE, the `bootstrap` preset), a scripted model on the real OpenAI wire format (fake
//! server on loopback), a real Swift fixture and the real code and knowledge tools. The same
//! run goes once with exploration control (tracker, nudges, phase-driven tool_choice) and once
//! without; rounds, requests, tokens and the fruitless search rounds of both are printed.

use std::sync::Arc;

use alembic_llm::fake::{FakeReply, FakeServer, FakeTurn, RecordedRequest};

use super::scripted::calls_so_far;
use alembic_llm::{LlmProvider, ProviderKind, ToolChoice};
use alembic_runtime::ProjectRuntime;
use alembic_runtime::agent::{
    AgentOptions, AgentPreset, MEMORY_EXTRACTION_SYSTEM_PROMPT, RunReport, RunRequest,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const TASK: &str = "Bootstrap the networking dimension: how does this project make, retry and authenticate HTTP requests?";

/// The networking layer the model reads, one new file per round.
const FILES: [(&str, &str); 7] = [
    (
        "Network/HTTPClient.swift",
        "final class HTTPClient {\n    let session: URLSession\n    let retry: RetryPolicy\n    init(session: URLSession, retry: RetryPolicy) { self.session = session; self.retry = retry }\n    func send(_ request: Request) async throws -> Data {\n        try await retry.run { try await self.session.data(for: request.urlRequest).0 }\n    }\n}\n",
    ),
    (
        "Network/Request.swift",
        "struct Request {\n    let endpoint: Endpoint\n    var headers: [String: String] = [:]\n    var urlRequest: URLRequest { URLRequest(url: endpoint.url) }\n}\n",
    ),
    (
        "Network/Endpoint.swift",
        "enum Endpoint {\n    case profile\n    case orders(page: Int)\n    var url: URL { URL(string: \"https://api.example.com\")! }\n}\n",
    ),
    (
        "Network/RetryPolicy.swift",
        "struct RetryPolicy {\n    let attempts: Int\n    func run<T>(_ body: () async throws -> T) async throws -> T {\n        for _ in 1..<attempts { if let value = try? await body() { return value } }\n        return try await body()\n    }\n}\n",
    ),
    (
        "Network/AuthInterceptor.swift",
        "final class AuthInterceptor {\n    let tokens: TokenStore\n    init(tokens: TokenStore) { self.tokens = tokens }\n    func sign(_ request: inout Request) { request.headers[\"Authorization\"] = \"Bearer \\(tokens.current)\" }\n}\n",
    ),
    (
        "Network/ResponseCache.swift",
        "final class ResponseCache {\n    private var entries: [URL: Data] = [:]\n    func data(for url: URL) -> Data? { entries[url] }\n    func store(_ data: Data, for url: URL) { entries[url] = data }\n}\n",
    ),
    (
        "Network/Reachability.swift",
        "final class Reachability {\n    var isOnline = true\n    func waitUntilOnline() async {}\n}\n",
    ),
];

/// The synonyms the model tries once every file is read. Each finds only files it has already
/// read, so none of these rounds brings new information (the seed's "search X → nothing →
/// search a synonym of X" loop).
const SYNONYMS: [&str; 8] = [
    "URLSession",
    "urlRequest",
    "HTTPClient",
    "attempts",
    "Authorization",
    "headers",
    "Endpoint",
    "async throws",
];

/// What the model submits once it stops exploring (one per round).
const CANDIDATES: [(&str, &str, &str); 2] = [
    (
        "HTTP requests go through HTTPClient with a RetryPolicy",
        "HTTPClient.send wraps URLSession.data(for:) in RetryPolicy.run, which retries up to `attempts` times.",
        "Network/HTTPClient.swift",
    ),
    (
        "AuthInterceptor signs requests with a bearer token",
        "AuthInterceptor.sign sets the Authorization header from TokenStore.current before a request is sent.",
        "Network/AuthInterceptor.swift",
    ),
];

/// The start of the tracker's convergence nudge.
const CONVERGENCE: &str = "Search results are saturating";

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("Network")).unwrap();
    for (path, text) in FILES {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    dir
}

fn told_to_converge(request: &RecordedRequest) -> bool {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains(CONVERGENCE))
        })
}

/// Rough input tokens of a request (JSON body length / 4), so fake usage follows its size.
fn body_tokens(request: &RecordedRequest) -> u64 {
    (serde_json::to_string(&request.body).unwrap().len() / 4) as u64
}

fn call(n: usize, name: &str, args: Value, request: &RecordedRequest) -> FakeReply {
    FakeTurn::new()
        .tool_call(&format!("c{n}"), name, args)
        .with_usage(body_tokens(request), 30)
        .into()
}

fn text(body: &str, request: &RecordedRequest) -> FakeReply {
    FakeTurn::text(body)
        .with_usage(body_tokens(request), 40)
        .into()
}

/// The scripted model. It decides from what the request carries, never from which run it is
/// in: it reads the files one per turn; then it searches synonyms, one per turn, until it is
/// told that the search is saturated or it has tried every synonym it knows; then it submits
/// its two candidates, one per turn; then it reports what it submitted (and gives the final
/// summary when tools are off).
fn model(request: &RecordedRequest) -> FakeReply {
    if request.system_prompt() == MEMORY_EXTRACTION_SYSTEM_PROMPT {
        return FakeTurn::text(r#"{"memories": []}"#).into();
    }
    let done = calls_so_far(request);
    let count = |name: &str| done.iter().filter(|(n, _)| n == name).count();
    let (reads, searches, submits) = (
        count("read_project_file"),
        count("search_project_code"),
        count("submit_knowledge"),
    );
    let n = done.len();
    if request.offered_tools().is_empty() {
        return text(
            "Summary: two networking candidates submitted (HTTPClient + RetryPolicy, AuthInterceptor).",
            request,
        );
    }
    if reads < FILES.len() {
        return call(
            n,
            "read_project_file",
            json!({"filePath": FILES[reads].0}),
            request,
        );
    }
    let explored = told_to_converge(request) || searches == SYNONYMS.len();
    if !explored && submits == 0 {
        return call(
            n,
            "search_project_code",
            json!({"pattern": SYNONYMS[searches]}),
            request,
        );
    }
    if let Some((title, body, source)) = CANDIDATES.get(submits) {
        let args = json!({"title": title, "content": {"markdown": body}, "sources": [source]});
        return call(n, "submit_knowledge", args, request);
    }
    text(
        "I submitted both candidates: HTTPClient with its RetryPolicy, and AuthInterceptor's bearer token.",
        request,
    )
}

struct Run {
    report: RunReport,
    requests: Vec<RecordedRequest>,
}

async fn run(project: &std::path::Path, exploration_control: bool) -> Run {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.respond_with(model);
    let runtime = ProjectRuntime::open(project).unwrap();
    let provider: Arc<dyn LlmProvider> = Arc::new(server.provider().unwrap());
    let options = AgentOptions {
        strike_pause: std::time::Duration::ZERO,
        exploration_control,
        ..AgentOptions::default()
    };
    let agent = runtime.agent(provider, options).unwrap();
    let request = RunRequest::new(TASK, AgentPreset::from_name("bootstrap"));
    let report = agent
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    runtime.flush_audit().unwrap();
    let requests = server
        .requests()
        .into_iter()
        .filter(|r| r.system_prompt() != MEMORY_EXTRACTION_SYSTEM_PROMPT)
        .collect();
    Run { report, requests }
}

/// Rounds that brought neither new information (a first read of a file) nor a submission:
/// the fruitless searches, and the text rounds (the PRODUCE phase asks for more submissions
/// until three rounds pass without one, then SUMMARIZE asks for the summary).
fn idle_rounds(r: &RunReport) -> usize {
    let mut productive: Vec<u32> = r
        .tool_calls
        .iter()
        .filter(|c| {
            c.is_ok() && matches!(c.name.as_str(), "read_project_file" | "submit_knowledge")
        })
        .map(|c| c.round)
        .collect();
    productive.dedup();
    r.rounds as usize - productive.len()
}

/// Rounds spent on searches that found nothing new.
fn fruitless_rounds(r: &RunReport) -> usize {
    r.tool_calls
        .iter()
        .filter(|c| c.name == "search_project_code")
        .count()
}

fn submitted(r: &RunReport) -> Vec<&str> {
    r.tool_calls
        .iter()
        .filter(|c| c.name == "submit_knowledge" && c.is_ok())
        .filter_map(|c| c.arguments["title"].as_str())
        .collect()
}

fn row(label: &str, r: &RunReport) -> String {
    format!(
        "| {label} | {} | {} | {} | {} | {} | {} | {} |",
        r.rounds,
        r.usage.requests,
        r.usage.input_tokens,
        r.usage.output_tokens,
        idle_rounds(r),
        fruitless_rounds(r),
        submitted(r).len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tracker_ends_fruitless_exploration_and_saves_idle_rounds() {
    let project = project();
    let on = run(project.path(), true).await;
    let project_off = self::project();
    let off = run(project_off.path(), false).await;

    println!("scenario 3 (convergence), bootstrap preset, OpenAI wire format:");
    println!(
        "| run | rounds | requests | input tokens | output tokens | idle rounds | of which fruitless searches | submitted |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    println!("{}", row("exploration control on", &on.report));
    println!("{}", row("exploration control off", &off.report));

    let titles: Vec<&str> = CANDIDATES.iter().map(|c| c.0).collect();
    // Both runs read every file and submit the same two candidates.
    assert_eq!(submitted(&on.report), titles);
    assert_eq!(submitted(&off.report), titles);
    // on: the convergence nudge arrives once the search is saturated, and the model stops.
    let nudged = on
        .requests
        .iter()
        .position(told_to_converge)
        .expect("the convergence nudge was sent");
    assert!(
        nudged >= 10,
        "not before 10 explored rounds: request {nudged}"
    );
    assert!(!off.requests.iter().any(told_to_converge));
    // tool_choice follows the phase: auto while exploring and producing, then none (no
    // tools) for the summary; without control every request is auto.
    let choices: Vec<Option<ToolChoice>> = on.requests.iter().map(|r| r.tool_choice()).collect();
    assert!(
        choices[..choices.len() - 1]
            .iter()
            .all(|c| *c == Some(ToolChoice::Auto))
    );
    assert_eq!(choices.last(), Some(&None), "SUMMARIZE sends no tools");
    assert!(
        off.requests
            .iter()
            .all(|r| r.tool_choice() == Some(ToolChoice::Auto))
    );
    // Convergence saves at least three idle exploration rounds (searches that found nothing
    // new). Part of that goes back in the PRODUCE tail: the Bootstrap strategy leaves PRODUCE
    // after three rounds without a submission (idleRoundsToExit), then asks for the summary,
    // where the uncontrolled run ends on the model's first text reply.
    let (on_fruitless, off_fruitless) =
        (fruitless_rounds(&on.report), fruitless_rounds(&off.report));
    assert_eq!(off_fruitless, SYNONYMS.len());
    assert!(
        off_fruitless >= on_fruitless + 3,
        "fruitless search rounds: on {on_fruitless}, off {off_fruitless}"
    );
    assert!(idle_rounds(&on.report) < idle_rounds(&off.report));
    assert!(on.report.rounds < off.report.rounds);
    // on: the answer is the SUMMARIZE round's; off: the first text reply ends the run.
    assert!(
        on.report.answer.starts_with("Summary:"),
        "{}",
        on.report.answer
    );
    assert!(
        off.report.answer.starts_with("I submitted"),
        "{}",
        off.report.answer
    );
}
