//! Seed scenario 2 (ToolForge compose) end to end: `AgentRuntime` from `ProjectRuntime::agent`,
//! a scripted model on the real OpenAI wire format (fake server on loopback), a real Swift
//! fixture and the real code tools. The same question runs with `forge_tool` in the preset
//! (feature on) and without it (off); rounds, requests and tokens of both are printed.

use std::sync::Arc;

use alembic_llm::fake::{FakeReply, FakeServer, FakeTurn, RecordedRequest};

use super::scripted::calls_so_far;
use alembic_llm::{LlmProvider, ProviderKind};
use alembic_runtime::ProjectRuntime;
use alembic_runtime::agent::{AgentOptions, AgentPreset, RunReport, RunRequest};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const QUESTION: &str = "Analyse the architecture of class NetworkClient: its hierarchy, its members and how each of its methods is called.";
const FORGED: &str = "class_architecture_network_client";

/// A small networking layer: a client, a subclass that overrides one method, and a caller.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("Network");
    std::fs::create_dir_all(&net).unwrap();
    std::fs::write(
        net.join("NetworkClient.swift"),
        "class NetworkClient {\n    let session: Session\n    init(session: Session) { self.session = session }\n    func get(path: String) -> Data {\n        return send(request: buildRequest(path: path))\n    }\n    func buildRequest(path: String) -> Request {\n        return Request(path: path)\n    }\n    func send(request: Request) -> Data {\n        return session.perform(request)\n    }\n}\n\nfinal class AuthenticatedClient: NetworkClient {\n    override func send(request: Request) -> Data {\n        return super.send(request: sign(request))\n    }\n    func sign(_ request: Request) -> Request { return request }\n}\n",
    )
    .unwrap();
    std::fs::write(
        net.join("ProfileService.swift"),
        "final class ProfileService {\n    let client: NetworkClient\n    init(client: NetworkClient) { self.client = client }\n    func loadProfile() -> Data { return client.get(path: \"/me\") }\n}\n",
    )
    .unwrap();
    // the "off" run: the chat preset without forge_tool
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    std::fs::write(
        dir.path().join(".alembic/config.toml"),
        "[presets.chat-noforge]\ndescription = \"chat without forge_tool\"\ncapabilities = [\"conversation\", \"code_analysis\", \"meta\"]\n",
    )
    .unwrap();
    dir
}

/// Method names the class-info result lists, in order ("func name(" in its signatures).
fn methods_seen(request: &RecordedRequest) -> Vec<String> {
    let mut out = Vec::new();
    for result in request.tool_results() {
        if !result.starts_with("class NetworkClient") {
            continue;
        }
        for line in result.lines() {
            let Some(at) = line.find("func ") else {
                continue;
            };
            let name: String = line[at + 5..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// Input tokens of a request as its body length / 4, so usage follows what is sent.
fn body_tokens(request: &RecordedRequest) -> u64 {
    (serde_json::to_string(&request.body).unwrap().len() / 4) as u64
}

fn call(id: usize, name: &str, args: Value, request: &RecordedRequest) -> FakeReply {
    FakeTurn::new()
        .tool_call(&format!("call_{id}"), name, args)
        .with_usage(body_tokens(request), 30)
        .into()
}

/// The scripted model. It behaves as a tool-using model does on this question, deciding from
/// what the request offers and what it has already seen, never from which run it is in:
/// - when `forge_tool` is offered and it has not asked yet, it asks for a tool for the whole
///   analysis (that is what the tool's description invites);
/// - when a forged architecture tool is offered, it calls it once, then answers from it;
/// - otherwise it works through the analysis one tool per turn, each call built from the
///   previous result: the hierarchy, the class info, then the call graph of each method the
///   class info listed, then it answers. (One call per turn is how the seed counts the three
///   steps; a model that batched the per-method call graphs into one turn would need two
///   rounds fewer without the forge; the report gives both figures.)
fn model(request: &RecordedRequest) -> FakeReply {
    let offered = request.offered_tools();
    let done = calls_so_far(request);
    let did = |name: &str| done.iter().any(|(n, _)| n == name);
    let n = done.len();
    if offered.iter().any(|t| t == "forge_tool") && !did("forge_tool") {
        let args = json!({"intent": "analyse the architecture of class NetworkClient", "action": "analyze", "target": "NetworkClient"});
        return call(n, "forge_tool", args, request);
    }
    if offered.iter().any(|t| t == FORGED) && !did(FORGED) {
        return call(n, FORGED, json!({}), request);
    }
    if !did(FORGED) {
        if !did("get_class_hierarchy") {
            return call(
                n,
                "get_class_hierarchy",
                json!({"className": "NetworkClient"}),
                request,
            );
        }
        if !did("get_class_info") {
            return call(
                n,
                "get_class_info",
                json!({"className": "NetworkClient"}),
                request,
            );
        }
        let queried: Vec<Value> = done
            .iter()
            .filter(|(name, _)| name == "query_call_graph")
            .map(|(_, a)| a["methodName"].clone())
            .collect();
        let next = methods_seen(request)
            .into_iter()
            .map(|m| json!(format!("NetworkClient.{m}")))
            .find(|m| !queried.contains(m));
        if let Some(method) = next {
            return call(
                n,
                "query_call_graph",
                json!({"methodName": method}),
                request,
            );
        }
    }
    FakeTurn::text("NetworkClient is the base HTTP client: AuthenticatedClient overrides send to sign requests; get builds a request and sends it, and ProfileService calls get.")
        .with_usage(body_tokens(request), 60)
        .into()
}

struct Run {
    report: RunReport,
    requests: Vec<RecordedRequest>,
    runtime: ProjectRuntime,
}

async fn run(project: &std::path::Path, preset: &str) -> Run {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.respond_with(model);
    let runtime = ProjectRuntime::open(project).unwrap();
    let provider: Arc<dyn LlmProvider> = Arc::new(server.provider().unwrap());
    let options = AgentOptions {
        strike_pause: std::time::Duration::ZERO,
        ..AgentOptions::default()
    };
    let agent = runtime.agent(provider, options).unwrap();
    let request = RunRequest::new(QUESTION, AgentPreset::from_name(preset));
    let report = agent
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    runtime.flush_audit().unwrap();
    Run {
        report,
        requests: server.requests(),
        runtime,
    }
}

fn row(label: &str, r: &RunReport) -> String {
    format!(
        "| {label} | {} | {} | {} | {} | {} |",
        r.rounds,
        r.usage.requests,
        r.usage.input_tokens,
        r.usage.output_tokens,
        r.tool_calls.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forge_tool_composes_the_analysis_and_saves_rounds() {
    let project = project();
    let on = run(project.path(), "chat").await;
    let off = run(project.path(), "chat-noforge").await;

    println!("scenario 2 (forge compose), chat preset, OpenAI wire format:");
    println!("| run | rounds | requests | input tokens | output tokens | tool calls |");
    println!("|---|---|---|---|---|---|");
    println!("{}", row("forge_tool on", &on.report));
    println!("{}", row("forge_tool off", &off.report));

    // on: forge, call the forged tool, answer
    assert_eq!(on.report.tool_names(), vec!["forge_tool", FORGED]);
    assert_eq!(on.report.rounds, 3);
    assert!(!on.requests[0].offered_tools().contains(&FORGED.to_string()));
    assert!(on.requests[1].offered_tools().contains(&FORGED.to_string()));
    assert!(
        on.report.tool_calls.iter().all(|c| c.status == "ok"),
        "{:?}",
        on.report.tool_calls
    );
    // off: the same analysis one tool per turn over the real tools
    let off_tools = off.report.tool_names();
    assert_eq!(off_tools[..2], ["get_class_hierarchy", "get_class_info"]);
    assert!(off_tools[2..].iter().all(|t| *t == "query_call_graph"));
    assert!(off_tools.len() >= 4, "{off_tools:?}");
    assert!(
        !off.requests[0]
            .offered_tools()
            .contains(&"forge_tool".to_string())
    );
    assert!(
        off.report.rounds >= on.report.rounds + 2,
        "forge on: {} rounds, off: {} rounds",
        on.report.rounds,
        off.report.rounds
    );
    let _ = (&on.runtime, &off.runtime);
}
