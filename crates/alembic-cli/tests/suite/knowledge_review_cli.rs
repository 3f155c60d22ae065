//! Review at reading speed on a bootstrapped fixture: bulk approve, reject and publish by
//! selection (counted, confirmed or `--yes`), a rejected or deprecated candidate's memory
//! retracted, and an export with nothing published that writes nothing.

use std::collections::BTreeSet;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::alembic;
use super::bootstrap_cli::planted;

fn json_out(dir: &Path, args: &[&str]) -> Value {
    let out = alembic(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// A bootstrapped copy of the planted fixture and its candidates as (id, dimension).
fn bootstrapped() -> (tempfile::TempDir, std::path::PathBuf, Vec<(String, String)>) {
    let (dir, root) = planted();
    let report = json_out(&root, &["bootstrap", "--no-llm", "--json"]);
    let candidates = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["dimension"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (dir, root, candidates)
}

/// Ids of the entries in `status`.
fn ids_in(root: &Path, status: &str) -> BTreeSet<String> {
    let listed = json_out(
        root,
        &[
            "knowledge",
            "list",
            "--status",
            status,
            "--limit",
            "1000",
            "--json",
        ],
    );
    listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

fn moved_ids(report: &Value) -> BTreeSet<String> {
    report["moved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

fn code_and_stderr(root: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = alembic(root).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_selection_is_counted_confirmed_and_moved_in_bulk() {
    let (_dir, root, candidates) = bootstrapped();
    let all: BTreeSet<String> = candidates.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(ids_in(&root, "submitted"), all);

    // No terminal and no --yes: a usage error that names --yes, and nothing moves.
    let (code, stderr) = code_and_stderr(&root, &["knowledge", "approve", "--all"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("approve {} entries?", all.len())),
        "{stderr}"
    );
    assert!(stderr.contains("--yes"), "{stderr}");
    assert_eq!(ids_in(&root, "submitted"), all);

    // One dimension: exactly its candidates move.
    let (_, dim) = &candidates[0];
    let of_dim: BTreeSet<String> = candidates
        .iter()
        .filter(|(_, d)| d == dim)
        .map(|(id, _)| id.clone())
        .collect();
    let approved = json_out(
        &root,
        &[
            "knowledge",
            "approve",
            "--dimension",
            dim,
            "--yes",
            "--json",
        ],
    );
    assert_eq!(approved["action"], "approve");
    assert_eq!(approved["count"], of_dim.len());
    assert_eq!(moved_ids(&approved), of_dim);
    assert_eq!(ids_in(&root, "approved"), of_dim);

    // A status the move does not start from, and a reject without a reason, are refused.
    let (code, stderr) = code_and_stderr(
        &root,
        &["knowledge", "publish", "--status", "submitted", "--yes"],
    );
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("publish moves entries from approved only"),
        "{stderr}"
    );
    let (code, stderr) = code_and_stderr(&root, &["knowledge", "reject", "--all", "--yes"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--reason is required"), "{stderr}");
    // Ids and a selection do not mix.
    let first = candidates[0].0.as_str();
    let (code, _) = code_and_stderr(&root, &["knowledge", "approve", first, "--all"]);
    assert_eq!(code, Some(2));

    // --status approved --all publishes what was approved, nothing else.
    let published = json_out(
        &root,
        &[
            "knowledge",
            "publish",
            "--status",
            "approved",
            "--yes",
            "--json",
        ],
    );
    assert_eq!(moved_ids(&published), of_dim);
    assert_eq!(ids_in(&root, "published"), of_dim);

    // Several ids move without a confirmation; a bad one stops the batch before any moves.
    let rest: Vec<String> = all.difference(&of_dim).cloned().collect();
    let (code, stderr) = code_and_stderr(&root, &["knowledge", "approve", &rest[0], first]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(first), "{stderr}");
    assert!(ids_in(&root, "approved").is_empty());
    let two = json_out(
        &root,
        &["knowledge", "approve", &rest[0], &rest[1], "--json"],
    );
    assert_eq!(two["count"], 2);

    // --all takes what is left; then there is nothing to approve.
    let left = json_out(&root, &["knowledge", "approve", "--all", "--yes", "--json"]);
    assert_eq!(left["count"], rest.len() - 2);
    assert!(ids_in(&root, "submitted").is_empty());
    let none = alembic(&root)
        .args(["knowledge", "approve", "--all", "--yes"])
        .output()
        .unwrap();
    assert!(none.status.success());
    assert!(String::from_utf8_lossy(&none.stdout).contains("nothing to approve"));
    // Every bulk move was a lifecycle-tool call as `cli`, in the audit log.
    let tail = json_out(&root, &["audit", "tail", "-n", "1000", "--json"]);
    let approvals = tail
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tool"] == "approve_candidate" && r["caller"] == "cli")
        .count();
    assert_eq!(approvals, all.len());
}

/// The current memories' contents.
fn memories(root: &Path) -> Vec<String> {
    let listed = json_out(root, &["memory", "list", "--json"]);
    listed["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

fn description(root: &Path, id: &str) -> String {
    let shown = json_out(root, &["knowledge", "show", id, "--json"]);
    shown["entry"]["description"].as_str().unwrap().to_string()
}

fn recalled(root: &Path, text: &str) -> bool {
    memories(root)
        .iter()
        .any(|m| m.lines().any(|l| l.starts_with(&format!("- {text}"))))
}

#[test]
fn rejecting_or_deprecating_a_candidate_retracts_its_memory() {
    let (_dir, root, candidates) = bootstrapped();
    // A dimension with several candidates: rejecting one keeps the others' lines.
    let dim = candidates
        .iter()
        .map(|(_, d)| d)
        .find(|d| candidates.iter().filter(|(_, x)| x == *d).count() >= 3)
        .unwrap()
        .clone();
    let ids: Vec<&String> = candidates
        .iter()
        .filter(|(_, d)| *d == dim)
        .map(|(id, _)| id)
        .collect();
    let (gone, kept, deprecated) = (
        description(&root, ids[0]),
        description(&root, ids[1]),
        description(&root, ids[2]),
    );
    for text in [&gone, &kept, &deprecated] {
        assert!(recalled(&root, text), "{text} not in {:?}", memories(&root));
    }
    alembic(&root)
        .args(["knowledge", "reject", ids[0], "--reason", "false claim"])
        .assert()
        .success();
    assert!(!recalled(&root, &gone), "{:?}", memories(&root));
    assert!(recalled(&root, &kept));
    // Deprecating a published recipe retracts its line too.
    for step in ["approve", "publish"] {
        alembic(&root)
            .args(["knowledge", step, ids[2]])
            .assert()
            .success();
    }
    assert!(recalled(&root, &deprecated));
    alembic(&root)
        .args(["knowledge", "deprecate", ids[2], "--reason", "superseded"])
        .assert()
        .success();
    assert!(!recalled(&root, &deprecated));
    assert!(recalled(&root, &kept));
    // A search no longer finds the rejected finding's memory line.
    let found = json_out(&root, &["memory", "search", &gone, "--json"]);
    let text = found.to_string();
    assert!(!text.contains(&format!("- {gone}")), "{text}");

    // A dimension whose only candidate is rejected loses its memory altogether.
    let single = candidates
        .iter()
        .find(|(_, d)| candidates.iter().filter(|(_, x)| x == d).count() == 1)
        .unwrap();
    let before = json_out(&root, &["memory", "list", "--json"]);
    let of_single = |v: &Value| {
        v["memories"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["source_dimension"] == single.1.as_str())
            .count()
    };
    assert_eq!(of_single(&before), 1);
    alembic(&root)
        .args([
            "knowledge",
            "reject",
            &single.0,
            "--reason",
            "not a convention",
        ])
        .assert()
        .success();
    let after = json_out(&root, &["memory", "list", "--json"]);
    assert_eq!(of_single(&after), 0);
}

#[test]
fn an_export_with_nothing_published_writes_no_file_and_points_at_review() {
    let (_dir, root, candidates) = bootstrapped();
    let out = alembic(&root)
        .args(["knowledge", "export", "--format", "agents-md"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("{} candidates await review", candidates.len())),
        "{stdout}"
    );
    assert!(stdout.contains("alembic knowledge approve"), "{stdout}");
    assert!(stdout.contains("no file was written"), "{stdout}");
    assert!(!root.join("AGENTS.md").exists());

    // The JSON shape counts submitted and approved candidates apart.
    alembic(&root)
        .args(["knowledge", "approve", &candidates[0].0])
        .assert()
        .success();
    for format in ["agents-md", "claude-md", "cursor-rules"] {
        let report = json_out(
            &root,
            &["knowledge", "export", "--format", format, "--json"],
        );
        assert_eq!(report["files"], serde_json::json!([]));
        assert_eq!(report["awaitingReview"]["approved"], 1);
        assert_eq!(report["awaitingReview"]["submitted"], candidates.len() - 1);
    }
    for file in ["AGENTS.md", "CLAUDE.md", ".cursor"] {
        assert!(!root.join(file).exists(), "{file} was written");
    }
}

/// Sends `requests` (JSON-RPC lines) to one `alembic mcp` stdio session and returns the
/// answers by id, once every request with an id has one.
fn mcp_session(root: &Path, requests: &[Value]) -> std::collections::BTreeMap<i64, Value> {
    use assert_cmd::cargo::CommandCargoExt as _;
    use std::io::{BufRead as _, Write as _};
    let mut child = std::process::Command::cargo_bin("alembic")
        .unwrap()
        .args(["mcp", "--preset", "all"])
        .current_dir(root)
        .env("ALEMBIC_LOG", "off")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answers = std::collections::BTreeMap::new();
    // One request at a time: each answer arrives before the next request is sent.
    for request in requests {
        stdin.write_all(format!("{request}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
        let Some(id) = request["id"].as_i64() else {
            continue;
        };
        loop {
            let line = lines.next().unwrap().unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"].as_i64() == Some(id) {
                answers.insert(id, v);
                break;
            }
        }
    }
    drop(stdin);
    child.wait().unwrap();
    answers
}

#[test]
fn a_rejection_over_mcp_leaves_the_memories_resource_and_later_recalls() {
    let (_dir, root, candidates) = bootstrapped();
    let (id, _) = &candidates[0];
    let gone = description(&root, id);
    let call = |n: i64, name: &str, arguments: Value| {
        serde_json::json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                           "params": {"name": name, "arguments": arguments}})
    };
    let read = |n: i64| {
        serde_json::json!({"jsonrpc": "2.0", "id": n, "method": "resources/read",
                           "params": {"uri": "alembic://memories/project"}})
    };
    let answers = mcp_session(
        &root,
        &[
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "review", "version": "0"}}}),
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            read(2),
            call(
                3,
                "memory_recall",
                serde_json::json!({"query": gone, "k": 20}),
            ),
            call(
                4,
                "reject_candidate",
                serde_json::json!({"candidateId": id, "reason": "false claim"}),
            ),
            read(5),
            call(
                6,
                "memory_recall",
                serde_json::json!({"query": gone, "k": 20}),
            ),
        ],
    );
    let line = format!("- {gone}");
    let shows = |n: i64| answers[&n]["result"].to_string().contains(&line);
    assert!(answers[&4]["result"]["isError"] != true, "{}", answers[&4]);
    assert!(shows(2), "{}", answers[&2]);
    assert!(shows(3), "{}", answers[&3]);
    assert!(!shows(5), "{}", answers[&5]);
    assert!(!shows(6), "{}", answers[&6]);
    // A later session recalls it no more either.
    let later = mcp_session(
        &root,
        &[
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "review", "version": "0"}}}),
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            call(
                2,
                "memory_recall",
                serde_json::json!({"query": gone, "k": 20}),
            ),
        ],
    );
    assert!(later[&2]["result"].is_object(), "{}", later[&2]);
    assert!(!later[&2]["result"].to_string().contains(&line));
}

#[test]
fn review_walks_the_candidates_with_their_evidence_and_one_key_each() {
    let (_dir, root, candidates) = bootstrapped();
    let dim = candidates
        .iter()
        .map(|(_, d)| d)
        .find(|d| candidates.iter().filter(|(_, x)| x == *d).count() >= 3)
        .unwrap()
        .clone();
    let ids: Vec<String> = candidates
        .iter()
        .filter(|(_, d)| *d == dim)
        .map(|(id, _)| id.clone())
        .collect();
    let edited_summary = description(&root, &ids[1]);
    // Oldest first: skip the first, edit then reject the second (a blank reason is refused
    // first), then a bad key and publish for the third.
    let keys = "s\ne\nEdited title\nEdited summary\nr\n\nr\nnot what the code does\nx\np\n";
    let out = alembic(&root)
        .args(["knowledge", "review", "--dimension", &dim, "--json"])
        .write_stdin(keys)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let tally: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tally["candidates"], ids.len());
    assert_eq!(tally["skipped"], serde_json::json!([ids[0]]));
    assert_eq!(tally["edited"], serde_json::json!([ids[1]]));
    assert_eq!(tally["rejected"], serde_json::json!([ids[1]]));
    assert_eq!(tally["published"], serde_json::json!([ids[2]]));
    // The flow showed each candidate's cited lines, refused a blank reason and a bad key.
    assert!(stderr.contains("evidence:"), "{stderr}");
    assert!(
        stderr.contains("a reason is required to reject"),
        "{stderr}"
    );
    assert!(stderr.contains("unknown key \"x\""), "{stderr}");
    let shown = json_out(&root, &["knowledge", "show", &ids[1], "--json"]);
    assert_eq!(shown["entry"]["title"], "Edited title");
    assert_eq!(shown["entry"]["status"], "rejected");
    // The edit kept bootstrap's evidence, so the rejection still found the memory line.
    assert!(shown["entry"]["extra"]["evidence"].is_array(), "{shown}");
    assert!(!recalled(&root, &edited_summary), "{:?}", memories(&root));
    let published = json_out(&root, &["knowledge", "show", &ids[2], "--json"]);
    assert_eq!(published["entry"]["status"], "published");
    assert_eq!(ids_in(&root, "submitted").contains(&ids[0]), true);
}
