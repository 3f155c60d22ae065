//! `alembic bootstrap` on the LLM path: the real binary against the fake OpenAI server, over
//! three dimensions in two tiers, each under the Bootstrap strategy (EXPLORE → PRODUCE →
//! SUMMARIZE). Tier 2 sees tier 1's reflection, candidates and memories are
//! written with the bootstrap marks, and a provider error fails one dimension while the run
//! goes on (and `--resume` retries it).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use alembic_llm::ProviderKind;
use alembic_llm::fake::{FAKE_API_KEY, FakeReply, FakeServer, FakeTurn, RecordedRequest};
use assert_cmd::Command;
use serde_json::{Value, json};

use super::alembic;

const TIER1_FINDING: &str = "PaymentCoordinator owns a PaymentRepository";
const ARCH_TITLE: &str = "Coordinators own their repositories";
const PATTERN_TITLE: &str = "Payment data goes through a repository protocol";

fn user_messages(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

fn task_of(request: &RecordedRequest) -> String {
    user_messages(request).first().cloned().unwrap_or_default()
}

/// Whether `task` is dimension `id`'s (its heading; later tiers also name earlier ones).
fn is_dimension(task: &str, id: &str) -> bool {
    task.contains(&format!("({id}), tier"))
}

/// The scripted model, by the phase of the dimension's Bootstrap stage (no tools: SUMMARIZE;
/// after the hand-over message: PRODUCE; before it: EXPLORE). coding-standards always gets a
/// 400 (a provider error). EXPLORE notes one finding, then says it is done; PRODUCE submits
/// one candidate, then ends; SUMMARIZE answers the dimension digest. With `revised` the
/// candidates' text says more.
fn script(req: &RecordedRequest, revised: bool) -> FakeReply {
    let task = task_of(req);
    let tools = req.offered_tools();
    if is_dimension(&task, "coding-standards") {
        return FakeReply::error(400, "the model rejected the request");
    }
    let architecture = is_dimension(&task, "architecture");
    if tools.is_empty() {
        let digest = json!({"dimensionDigest": {"summary": "Payment keeps its data behind a repository.", "candidateCount": 1}});
        return FakeTurn::text(format!("```json\n{digest}\n```")).into();
    }
    let producing = user_messages(req)
        .iter()
        .any(|m| m.starts_with("## Hand-over from the analysis phase"));
    let results = req.tool_results().len();
    if !producing {
        if results > 0 {
            return FakeTurn::text("Payment is split into a coordinator and a repository.").into();
        }
        let (finding, evidence) = if architecture {
            (TIER1_FINDING, "Payment/PaymentCoordinator.swift:2")
        } else {
            (
                "RemotePaymentRepository implements PaymentRepository",
                "Payment/PaymentRepository.swift:1",
            )
        };
        let args = json!({"finding": finding, "evidence": evidence, "importance": 8});
        return FakeTurn::new()
            .tool_call("n1", "note_finding", args)
            .with_usage(100, 10)
            .into();
    }
    if results > 1 {
        return FakeTurn::text("Submitted what this dimension found.").into();
    }
    let (title, source) = if architecture {
        (ARCH_TITLE, "Payment/PaymentCoordinator.swift:2")
    } else {
        (PATTERN_TITLE, "Payment/PaymentRepository.swift:1")
    };
    let args = json!({
        "title": title,
        "description": format!("{title}."),
        "knowledgeType": "code-pattern",
        "content": {"markdown": format!("{title}: PaymentCoordinator reaches payment data only through PaymentRepository.{}", if revised { " It never holds a RemotePaymentRepository." } else { "" }), "pattern": "protocol PaymentRepository { func load() }"},
        "sources": [source, "Payment/Missing.swift"]
    });
    FakeTurn::new()
        .tool_call("k1", "submit_knowledge", args)
        .with_usage(100, 10)
        .into()
}

fn project() -> tempfile::TempDir {
    let dir = super::project_dir();
    let payment = dir.path().join("Payment");
    std::fs::create_dir_all(&payment).unwrap();
    std::fs::write(
        payment.join("PaymentCoordinator.swift"),
        "final class PaymentCoordinator {\n    let repository: PaymentRepository\n}\n",
    )
    .unwrap();
    std::fs::write(
        payment.join("PaymentRepository.swift"),
        "protocol PaymentRepository { func load() }\nfinal class RemotePaymentRepository: PaymentRepository { func load() {} }\n",
    )
    .unwrap();
    dir
}

/// The binary in `dir` with the fake server as its only provider.
fn cmd(dir: &std::path::Path, home: &std::path::Path, server: &FakeServer) -> Command {
    let mut cmd = alembic(dir);
    for var in [
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "DEEPSEEK_API_KEY",
        "OPENAI_BASE_URL",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("XDG_CONFIG_HOME", home)
        .env("HOME", home)
        .env("OPENAI_API_KEY", FAKE_API_KEY)
        .env("OPENAI_BASE_URL", server.base_url());
    cmd
}

async fn json_out(mut cmd: Command) -> Value {
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn status_of<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == id)
        .unwrap_or_else(|| panic!("{id} missing from {report}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_takes_the_llm_path_with_a_provider_and_writes_through_checkpoints() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    let revised = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&revised);
    server.respond_with(move |r| script(r, flag.load(Ordering::SeqCst)));
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    let dims = "architecture,coding-standards,design-patterns";
    let mut c = cmd(dir.path(), home.path(), &server);
    c.args(["bootstrap", "--dimensions", dims, "--json"]);
    let report = json_out(c).await;
    assert_eq!(report["llm"], true);
    assert_eq!(status_of(&report, "architecture")["status"], "done");
    assert_eq!(status_of(&report, "design-patterns")["status"], "done");
    assert_eq!(status_of(&report, "design-patterns")["tier"], 2);
    // the provider error failed one dimension, with the error, and the run went on
    let failed = status_of(&report, "coding-standards");
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("the model rejected the request"),
        "{failed}"
    );

    // tier 2's system prompt carries tier 1's reflection, once, under its own number
    let requests = server.requests();
    let tier2 = requests
        .iter()
        .find(|r| is_dimension(&task_of(r), "design-patterns"))
        .unwrap()
        .system_prompt();
    assert_eq!(tier2.matches("### Tier 1 synthesis").count(), 1, "{tier2}");
    assert!(!tier2.contains("### Tier 2 synthesis"), "{tier2}");
    assert!(
        tier2.contains(&format!("- [8/10] {TIER1_FINDING} (architecture)")),
        "{tier2}"
    );

    // the summary's candidates: one per successful dimension, evidence that exists
    let candidates = report["candidates"].as_array().unwrap();
    let titles: Vec<(&str, &str)> = candidates
        .iter()
        .map(|c| {
            (
                c["title"].as_str().unwrap(),
                c["dimension"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        titles,
        [
            (ARCH_TITLE, "architecture"),
            (PATTERN_TITLE, "design-patterns")
        ]
    );
    assert_eq!(
        candidates[0]["evidence"],
        json!([{"file": "Payment/PaymentCoordinator.swift", "line": 2}])
    );

    // in the knowledge base: submitted, by bootstrap, tagged with the dimension
    let mut c = cmd(dir.path(), home.path(), &server);
    c.args(["knowledge", "list", "--limit", "50", "--json"]);
    let listed = json_out(c).await;
    let entries = listed["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{listed}");
    for e in entries {
        let dim = if e["title"] == ARCH_TITLE {
            "architecture"
        } else {
            "design-patterns"
        };
        assert_eq!(e["status"], "submitted", "{e}");
        assert_eq!(e["createdBy"], "bootstrap", "{e}");
        let tags = e["tags"].as_array().unwrap();
        assert!(tags.contains(&json!(format!("dimension:{dim}"))), "{e}");
        assert!(tags.contains(&json!("bootstrap")), "{e}");
        assert_eq!(e["extra"]["source"], "bootstrap", "{e}");
        // the cited file that does not exist was dropped
        assert_eq!(e["sources"].as_array().unwrap().len(), 1, "{e}");
    }

    // one memory per successful dimension, with its sourceDimension
    let mut c = cmd(dir.path(), home.path(), &server);
    c.args(["memory", "list", "--json"]);
    let memories = json_out(c).await;
    let mut dims: Vec<&str> = memories["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["source"] == "bootstrap")
        .map(|m| m["source_dimension"].as_str().unwrap())
        .collect();
    dims.sort();
    assert_eq!(dims, ["architecture", "design-patterns"]);
    assert_eq!(report["memories"], 2);

    // --resume retries only the failed dimension (it fails again: the script never changes)
    let mut c = cmd(dir.path(), home.path(), &server);
    c.args(["bootstrap", "--resume", "--json"]);
    let resumed = json_out(c).await;
    assert_eq!(status_of(&resumed, "architecture")["status"], "resumed");
    assert_eq!(status_of(&resumed, "design-patterns")["status"], "resumed");
    assert_eq!(status_of(&resumed, "coding-standards")["status"], "failed");
    assert_eq!(resumed["candidates"], json!([]));

    // architecture again, its candidate's text changed: the producer's submission of its own
    // unreviewed title is accepted and revises that candidate (no new one)
    revised.store(true, Ordering::SeqCst);
    let before = server.requests().len();
    let mut c = cmd(dir.path(), home.path(), &server);
    c.args(["bootstrap", "--dimensions", "architecture", "--json"]);
    let again = json_out(c).await;
    let arch = status_of(&again, "architecture");
    assert_eq!(
        (arch["status"].as_str(), arch["revised"].as_u64()),
        (Some("done"), Some(1))
    );
    assert_eq!(again["candidates"], json!([]));
    let answers: Vec<String> = server.requests()[before..]
        .iter()
        .flat_map(|r| r.tool_results())
        .collect();
    assert!(
        answers.iter().any(|a| a.contains(&format!(
            "submitted \"{ARCH_TITLE}\" for review (stored when this dimension completes)"
        ))),
        "{answers:#?}"
    );
    let mut c = cmd(dir.path(), home.path(), &server);
    c.args(["knowledge", "list", "--limit", "50", "--json"]);
    let listed = json_out(c).await;
    let entries = listed["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{listed}");
    let arch = entries.iter().find(|e| e["title"] == ARCH_TITLE).unwrap();
    assert_eq!(arch["extra"]["version"], 2, "{arch}");
    assert!(
        arch["content"]
            .as_str()
            .unwrap()
            .contains("never holds a RemotePaymentRepository"),
        "{arch}"
    );
}

#[test]
fn without_a_provider_bootstrap_says_so_and_stays_deterministic() {
    let (dir, home) = (project(), tempfile::tempdir().unwrap());
    let mut cmd = alembic(dir.path());
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "DEEPSEEK_API_KEY",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd
        .env("XDG_CONFIG_HOME", home.path())
        .env("HOME", home.path())
        .args(["bootstrap", "--dimensions", "architecture", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no LLM provider configured: taking the deterministic path"),
        "{stderr}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["llm"], false);
}
