//! 10,000 malformed or hostile messages on `alembic mcp`'s stdin: the server never stops, and
//! every message that carries a usable id gets exactly one answer with that id, an error.
//!
//! Messages without a usable id (text that is not JSON, a null/float/object id, an oversized
//! line) are answered with `"id": null`; notifications and responses are never answered, as
//! JSON-RPC 2.0 requires. The expected number of `null`-id answers is counted exactly.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::hostile_corpus::{KINDS, Rng, hostile, init_line, is_error_answer};

const TOTAL: usize = 10_000;
/// Messages sent before `initialize`.
const BEFORE_INIT: usize = 300;

#[test]
fn ten_thousand_hostile_messages_are_each_answered_and_the_server_survives() {
    let dir = super::project_dir();
    std::fs::write(dir.path().join("README.md"), "hello\n").unwrap();
    let mut child = std::process::Command::cargo_bin("alembic")
        .unwrap()
        .args(["mcp", "--project"])
        .arg(dir.path())
        .env("ALEMBIC_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut lines: Vec<Vec<u8>> = Vec::with_capacity(TOTAL + 8);
    let mut ids: BTreeSet<i64> = BTreeSet::new();
    let mut nulls = 0usize;
    for n in 0..TOTAL as i64 {
        if n as usize == BEFORE_INIT {
            lines.push(init_line());
            lines.push(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec());
        }
        let kind = rng.below(KINDS);
        let h = hostile(&mut rng, n + 10, kind);
        ids.extend(h.ids);
        nulls += h.null_answers;
        lines.push(h.line);
    }
    // One oversized line (discarded unread) before and after initialize is covered in unit
    // tests; here one more after the storm, then the proof that the server still works.
    lines.push(format!(r#"{{"pad":"{}"}}"#, "z".repeat(9 * 1024 * 1024)).into_bytes());
    nulls += 1;
    lines.push(br#"{"jsonrpc":"2.0","id":"last-list","method":"tools/list"}"#.to_vec());
    lines.push(br#"{"jsonrpc":"2.0","id":"last-call","method":"tools/call","params":{"name":"read_project_file","arguments":{"filePath":"README.md"}}}"#.to_vec());

    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for line in lines {
            stdin.write_all(&line).unwrap();
            stdin.write_all(b"\n").unwrap();
        }
        stdin.flush().unwrap();
        stdin
    });

    let (tx, rx) = mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });

    let mut answered: BTreeMap<i64, usize> = BTreeMap::new();
    let mut null_seen = 0usize;
    let mut last: BTreeMap<String, Value> = BTreeMap::new();
    let mut init_answer = None;
    let expected_total = ids.len() + nulls + 3;
    for _ in 0..expected_total {
        // A generous limit only so that a hang fails instead of blocking CI forever.
        let msg = rx
            .recv_timeout(Duration::from_secs(300))
            .expect("the server stopped answering");
        match &msg["id"] {
            Value::Null => {
                assert!(msg.get("error").is_some(), "{msg}");
                null_seen += 1;
            }
            Value::String(s) => {
                last.insert(s.clone(), msg);
            }
            Value::Number(n) if n.as_i64() == Some(1) => init_answer = Some(msg),
            Value::Number(n) => {
                let id = n.as_i64().unwrap();
                assert!(ids.contains(&id), "answer for an id that needs none: {msg}");
                assert!(
                    is_error_answer(&msg),
                    "hostile message {id} was not refused: {msg}"
                );
                *answered.entry(id).or_default() += 1;
            }
            other => panic!("answer with an impossible id {other}: {msg}"),
        }
    }
    let stdin = writer.join().unwrap();
    drop(stdin);

    assert_eq!(
        init_answer.unwrap()["result"]["serverInfo"]["name"],
        "alembic"
    );
    assert_eq!(answered.keys().copied().collect::<BTreeSet<_>>(), ids);
    assert!(
        answered.values().all(|&c| c == 1),
        "an id was answered twice"
    );
    assert_eq!(null_seen, nulls);
    assert!(
        last["last-list"]["result"]["tools"]
            .as_array()
            .unwrap()
            .len()
            > 3
    );
    assert_eq!(
        last["last-call"]["result"]["isError"], false,
        "{}",
        last["last-call"]
    );
    // End of input ends the server cleanly.
    assert!(
        rx.recv_timeout(Duration::from_secs(60)).is_err(),
        "an unexpected extra answer"
    );
    assert!(child.wait().unwrap().success());
}
