//! `alembic ask` and `alembic chat` end to end: the real binary against a fake OpenAI server.

use alembic_llm::ProviderKind;
use alembic_llm::fake::{FAKE_API_KEY, FakeServer, FakeTurn};
use assert_cmd::Command;
use predicates::prelude::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::alembic;

const KEY_VARS: [&str; 8] = [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GEMINI_BASE_URL",
    "DEEPSEEK_API_KEY",
    "DEEPSEEK_BASE_URL",
];

/// The binary in `project` with no provider settings but those given, and an empty user config.
pub fn agent_cmd(
    project: &std::path::Path,
    config_home: &std::path::Path,
    server: Option<&FakeServer>,
) -> Command {
    let mut cmd = alembic(project);
    for var in KEY_VARS {
        cmd.env_remove(var);
    }
    cmd.env("XDG_CONFIG_HOME", config_home)
        .env("HOME", config_home);
    if let Some(server) = server {
        cmd.env("OPENAI_API_KEY", FAKE_API_KEY)
            .env("OPENAI_BASE_URL", server.base_url());
    }
    cmd
}

fn project() -> tempfile::TempDir {
    let dir = super::project_dir();
    std::fs::create_dir_all(dir.path().join("Payment")).unwrap();
    std::fs::write(
        dir.path().join("Payment/PaymentCoordinator.swift"),
        "final class PaymentCoordinator {\n    let repository: PaymentRepository\n}\n",
    )
    .unwrap();
    dir
}

/// Runs `cmd` off the async runtime, so the fake server keeps answering meanwhile.
/// The answer to the memory extraction call at the end of a run: `memories` as
/// (type, content) pairs.
pub fn extraction(memories: &[(&str, &str)]) -> FakeTurn {
    let memories: Vec<Value> = memories
        .iter()
        .map(|(kind, content)| json!({"type": kind, "content": content, "importance": 7}))
        .collect();
    FakeTurn::text(json!({ "memories": memories }).to_string())
}

/// Whether `request` is the memory extraction call.
fn is_extraction(request: &alembic_llm::fake::RecordedRequest) -> bool {
    request.system_prompt() == alembic_runtime::agent::MEMORY_EXTRACTION_SYSTEM_PROMPT
}

pub async fn output(mut cmd: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_prints_the_answer_then_a_trace() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server
        .push(
            FakeTurn::new()
                .tool_call("c1", "search_project_code", json!({"pattern": "Payment"}))
                .with_usage(800, 20),
        )
        .push(FakeTurn::text("PaymentCoordinator holds a PaymentRepository.").with_usage(1200, 30))
        .push(extraction(&[(
            "fact",
            "PaymentCoordinator holds a PaymentRepository (Payment/PaymentCoordinator.swift:2).",
        )]));
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    let mut cmd = agent_cmd(dir.path(), home.path(), Some(&server));
    cmd.args(["ask", "What does PaymentCoordinator hold?", "--no-stream"]);
    let out = output(cmd).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "PaymentCoordinator holds a PaymentRepository.\n");
    assert!(
        stderr.contains("— rounds: 2 · tools: search_project_code · tokens: 2000 in / 50 out"),
        "{stderr}"
    );
    assert!(stderr.contains("→ search_project_code"), "{stderr}");
    assert!(
        stderr.contains("— long-term memory: 1 saved (added fact \"PaymentCoordinator holds a PaymentRepository (Payment/PaymentCoordinator.swift:2).\")"),
        "{stderr}"
    );
    assert!(is_extraction(&server.requests()[2]));
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {FAKE_API_KEY}").as_str())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_streams_by_default() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server
        .push(FakeTurn::text("A streamed answer."))
        .push(extraction(&[]));
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    let mut cmd = agent_cmd(dir.path(), home.path(), Some(&server));
    cmd.args(["ask", "Anything?"]);
    let out = output(cmd).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "A streamed answer.\n");
    assert!(server.requests()[0].is_stream());
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_json_reports_answer_rounds_tool_calls_and_usage() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server
        .push(
            FakeTurn::new()
                .tool_call("c1", "list_project_structure", json!({}))
                .with_usage(500, 10),
        )
        .push(FakeTurn::text("One Swift file.").with_usage(700, 5))
        .push(extraction(&[(
            "fact",
            "The project has one Swift file, in Payment/.",
        )]));
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    let mut cmd = agent_cmd(dir.path(), home.path(), Some(&server));
    cmd.args(["ask", "How many files?", "--json"]);
    let out = output(cmd).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["answer"], "One Swift file.");
    assert_eq!(report["rounds"], 2);
    assert_eq!(report["tool_calls"][0]["name"], "list_project_structure");
    assert_eq!(report["tool_calls"][0]["status"], "ok");
    assert_eq!(report["usage"]["input_tokens"], 1200);
    assert_eq!(report["usage"]["output_tokens"], 15);
    assert!(!server.requests()[0].is_stream(), "--json does not stream");
    assert_eq!(
        report["memory"]["extraction"],
        json!({"status": "used", "memories": 1})
    );
    assert_eq!(
        report["memory"]["saved"],
        json!([{"action": "added", "kind": "fact", "content": "The project has one Swift file, in Payment/."}])
    );
}

#[test]
fn ask_without_a_provider_says_what_to_set_and_exits_2() {
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    agent_cmd(dir.path(), home.path(), None)
        .args(["ask", "Anything?"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no llm provider is configured"))
        .stderr(predicate::str::contains("OPENAI_API_KEY"))
        .stderr(predicate::str::contains("[llm]"));
}

#[test]
fn ask_with_an_unknown_provider_or_preset_is_a_usage_error() {
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    agent_cmd(dir.path(), home.path(), None)
        .args(["ask", "Q", "--provider", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown llm provider \"nope\""));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_preset_is_a_usage_error() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    let mut cmd = agent_cmd(dir.path(), home.path(), Some(&server));
    cmd.args(["ask", "Q", "--preset", "nope"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown preset \"nope\""));
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_answers_lines_and_lists_tools() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server
        .push(FakeTurn::text("Hello from the agent."))
        .push(extraction(&[]));
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    let mut cmd = agent_cmd(dir.path(), home.path(), Some(&server));
    cmd.args(["chat", "--no-stream"])
        .write_stdin("/tools\nWho are you?\n/memory\n/exit\n");
    let out = output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("chat ("), "{stdout}");
    assert!(stdout.contains("search_project_code"), "{stdout}");
    assert!(stdout.contains("Hello from the agent."), "{stdout}");
    assert!(
        stdout.contains("nothing recalled for \"Who are you?\"") || stdout.contains("recalled for"),
        "{stdout}"
    );
    // The question, then the memory extraction at its end.
    assert_eq!(server.requests().len(), 2);
    assert!(is_extraction(&server.requests()[1]));
}

/// `/remember <text>` keeps the text as given and what the model extracts from the
/// conversation; `alembic memory list` shows them afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn chat_remember_keeps_the_text_and_the_extracted_preference() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server
        .push(FakeTurn::text("PaymentCoordinator holds the repository."))
        .push(extraction(&[]))
        .push(extraction(&[(
            "preference",
            "The user wants answers that cite files as path:line.",
        )]));
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    let mut cmd = agent_cmd(dir.path(), home.path(), Some(&server));
    cmd.args(["chat", "--no-stream"]).write_stdin(
        "What holds the repository? Cite files as path:line, please.\n/remember Payment code never logs card numbers\n/exit\n",
    );
    let out = output(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("long-term memory: 2 saved (added fact \"Payment code never logs card numbers\", added preference \"The user wants answers that cite files as path:line.\")"),
        "{stdout}"
    );
    let remember = &server.requests()[2];
    assert!(is_extraction(remember));
    let transcript = remember.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        transcript.starts_with("User: What holds the repository?")
            && transcript
                .ends_with("The user asked to remember: Payment code never logs card numbers"),
        "{transcript}"
    );
    let mut list = agent_cmd(dir.path(), home.path(), None);
    list.args(["memory", "list", "--json"]);
    let listed = String::from_utf8_lossy(&output(list).await.stdout).to_string();
    assert!(
        listed.contains("Payment code never logs card numbers"),
        "{listed}"
    );
    assert!(listed.contains("\"preference\""), "{listed}");
}

/// `enrich_candidate` through `tools call` (caller cli, audited): the runtime resolves the
/// provider as `ask` does; without one the tool says how to configure it.
#[tokio::test(flavor = "multi_thread")]
async fn enrich_candidate_uses_the_configured_provider_or_says_how_to_set_one() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    let mut submit = agent_cmd(dir.path(), home.path(), None);
    submit.args([
        "tools", "call", "submit_knowledge", "--json", "--args",
        r#"{"title": "Payment goes through a coordinator", "content": {"markdown": "PaymentCoordinator holds the repository"}, "sources": ["Payment/PaymentCoordinator.swift"]}"#,
    ]);
    let out = output(submit).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let submitted: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = submitted["output"]["data"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let args = json!({"candidateId": id}).to_string();

    let mut without = agent_cmd(dir.path(), home.path(), None);
    without.args(["tools", "call", "enrich_candidate", "--args", &args]);
    let out = output(without).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("this tool needs an llm provider: no llm provider is configured"),
        "{stderr}"
    );
    assert!(stderr.contains("OPENAI_API_KEY"), "{stderr}");

    let body = json!({"summary": "Payments go through PaymentCoordinator.", "rationale": "One place owns the repository.", "tags": ["payment"]});
    server.push(FakeTurn::text(body.to_string()));
    let mut with = agent_cmd(dir.path(), home.path(), Some(&server));
    with.args(["tools", "call", "enrich_candidate", "--args", &args]);
    let out = output(with).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut show = agent_cmd(dir.path(), home.path(), None);
    show.args(["knowledge", "show", &id, "--json"]);
    let shown: Value = serde_json::from_slice(&output(show).await.stdout).unwrap();
    assert_eq!(
        shown["entry"]["description"],
        "Payments go through PaymentCoordinator."
    );
    assert_eq!(
        shown["entry"]["rationale"],
        "One place owns the repository."
    );
    assert_eq!(server.requests().len(), 1);
}
