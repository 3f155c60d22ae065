//! The hostile-message corpus of the stdio test, POSTed to `alembic mcp --http` in an
//! authenticated session, then hostile HTTP itself: wrong content types, missing or forged
//! session ids, missing or forged tokens, oversized headers and bodies, slow clients. The
//! server never answers 5xx, never crashes, answers every message (a refusal, or an error
//! answer for the message's id), and still serves a valid call at the end.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::hostile_corpus::{KINDS, Rng, hostile, is_error_answer};
use super::mcp_http_cli::{HttpServer, create_token};

/// Hostile JSON-RPC messages sent over HTTP (each is one POST).
const MESSAGES: usize = 2_000;
const CONFIG: &str = "[mcp.http]\nread_timeout_secs = 2\nmax_body_bytes = 1048576\nrate_per_minute = 1000000\nrate_burst = 100000\n";
const LIMIT: Duration = Duration::from_secs(60);

struct Session {
    http: reqwest::Client,
    url: String,
    token: String,
    id: String,
}

impl Session {
    async fn open(url: &str, token: &str) -> Session {
        let http = reqwest::Client::new();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "hostile-http", "version": "0"}}});
        let resp = http
            .post(url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let id = resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_string();
        let s = Session {
            http,
            url: url.to_string(),
            token: token.to_string(),
            id,
        };
        let (status, _) = s
            .post(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec())
            .await;
        assert_eq!(status, 202);
        s
    }

    fn request(&self, body: Vec<u8>) -> reqwest::RequestBuilder {
        self.http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("mcp-session-id", &self.id)
            .body(body)
    }

    /// Status and the JSON-RPC messages of the answer (event-stream `data:` lines or a JSON body).
    async fn post(&self, body: Vec<u8>) -> (u16, Vec<Value>) {
        let resp = tokio::time::timeout(LIMIT, self.request(body).send())
            .await
            .expect("the server did not answer in time")
            .unwrap();
        let status = resp.status().as_u16();
        let text = tokio::time::timeout(LIMIT, resp.text())
            .await
            .expect("the answer did not end in time")
            .unwrap();
        (status, messages(&text))
    }
}

fn messages(text: &str) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return vec![v];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// Sends the stdio corpus; returns counts per outcome.
async fn hostile_messages(s: &Session) -> BTreeMap<String, usize> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for n in 0..MESSAGES as i64 {
        let kind = rng.below(KINDS);
        let h = hostile(&mut rng, n + 10, kind);
        let (status, answers) = s.post(h.line.clone()).await;
        assert!(status < 500, "message {n} (kind {kind}) got {status}");
        let outcome = match status {
            200 => {
                // A request with an id is answered on its stream with an error for that id.
                let id = *h
                    .ids
                    .first()
                    .unwrap_or_else(|| panic!("kind {kind} answered 200"));
                let answer = answers
                    .iter()
                    .find(|a| a["id"] == json!(id))
                    .unwrap_or_else(|| panic!("no answer for id {id}: {answers:?}"));
                assert!(
                    is_error_answer(answer),
                    "message {id} not refused: {answer}"
                );
                "200 error answer".to_string()
            }
            202 => {
                assert!(h.ids.is_empty(), "kind {kind} with an id was only accepted");
                "202 accepted notification or response".to_string()
            }
            other => format!("{other} refused"),
        };
        *counts.entry(outcome).or_default() += 1;
    }
    counts
}

/// Raw HTTP on a new connection: writes `head` (and optionally stalls), returns the status
/// line of the answer, or "closed" when the server closes without one.
fn raw(addr: &str, head: &[u8], stall: bool) -> String {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(LIMIT)).unwrap();
    let _ = tcp.write_all(head);
    let started = Instant::now();
    let mut buf = [0u8; 256];
    let n = tcp.read(&mut buf).unwrap_or(0);
    if stall {
        assert!(
            started.elapsed() < LIMIT,
            "a stalled client held the connection"
        );
    }
    let text = String::from_utf8_lossy(&buf[..n]).to_string();
    text.lines().next().map_or("closed".into(), str::to_string)
}

fn post_head(token: &str, extra: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n{extra}"
    )
}

/// A POST with exactly `headers`.
async fn status_with(s: &Session, body: &[u8], headers: &[(String, String)]) -> u16 {
    let mut req = s.http.post(&s.url).body(body.to_vec());
    for (name, value) in headers {
        req = req.header(name, value);
    }
    req.send().await.unwrap().status().as_u16()
}

/// The headers of a valid POST in the session, with `changes` applied (an empty value
/// leaves the header out).
fn headers(s: &Session, changes: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-06-18"),
        ("mcp-session-id", s.id.as_str()),
        ("authorization", &format!("Bearer {}", s.token)),
    ]
    .iter()
    .map(|(n, v)| (n.to_string(), v.to_string()))
    .collect();
    for (name, value) in changes {
        h.retain(|(n, _)| n != name);
        if !value.is_empty() {
            h.push((name.to_string(), value.to_string()));
        }
    }
    h
}

/// A hostile request: what it is, its header changes, its body and the status it must get.
type HttpCase<'a> = (&'a str, &'a [(&'a str, &'a str)], Vec<u8>, u16);

/// Hostile HTTP: each case and the status it must get.
async fn hostile_http(s: &Session, addr: &str) -> usize {
    let ping = br#"{"jsonrpc":"2.0","id":77,"method":"ping"}"#.to_vec();
    let cases: Vec<HttpCase> = vec![
        (
            "wrong content type",
            &[("content-type", "text/plain")],
            ping.clone(),
            415,
        ),
        (
            "no acceptable type",
            &[("accept", "text/html")],
            ping.clone(),
            406,
        ),
        (
            "forged session id",
            &[("mcp-session-id", "forged-0000")],
            ping.clone(),
            404,
        ),
        (
            "missing session id",
            &[("mcp-session-id", "")],
            ping.clone(),
            400,
        ),
        ("missing token", &[("authorization", "")], ping.clone(), 401),
        (
            "forged token",
            &[("authorization", "Bearer alm_forged")],
            ping.clone(),
            401,
        ),
        (
            "not a bearer token",
            &[("authorization", "Basic YTpi")],
            ping.clone(),
            401,
        ),
        ("malformed JSON", &[], b"{not json".to_vec(), 400),
    ];
    let mut count = 0;
    for (what, changes, body, want) in cases {
        assert_eq!(
            status_with(s, &body, &headers(s, changes)).await,
            want,
            "{what}"
        );
        count += 1;
    }
    let mut check = |what: &str, got: u16, want: u16| {
        assert_eq!(got, want, "{what}");
        count += 1;
    };
    // A 2 MiB body is declared but not sent: the server answers from the header, and a client
    // still writing 2 MiB could see its pipe closed before it reads the 413.
    let declared = format!(
        "mcp-session-id: {}\r\ncontent-length: {}\r\n\r\n",
        s.id,
        2 * 1024 * 1024
    );
    let status = raw(addr, post_head(&s.token, &declared).as_bytes(), false);
    check("body past the limit", status_code(&status), 413);
    let pad = format!("x-pad: {}\r\n\r\n", "a".repeat(256 * 1024));
    let status = raw(addr, post_head(&s.token, &pad).as_bytes(), false);
    check("oversized headers", status_code(&status), 431);
    // Slow clients: headers that never end, a body that never comes.
    let status = raw(addr, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n", true);
    let slow_headers = if status == "closed" {
        408
    } else {
        status_code(&status)
    };
    check("slow headers (closed, or 408)", slow_headers, 408);
    let slow_body = post_head(
        &s.token,
        &format!(
            "mcp-session-id: {}\r\ncontent-length: 100\r\n\r\n{{\"jsonrpc\"",
            s.id
        ),
    );
    let status = raw(addr, slow_body.as_bytes(), true);
    check("slow body", status_code(&status), 408);
    count
}

fn status_code(line: &str) -> u16 {
    line.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_messages_and_hostile_http_are_refused_and_the_server_survives() {
    let dir = super::project_dir();
    std::fs::write(dir.path().join("README.md"), "hello\n").unwrap();
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    std::fs::write(dir.path().join(".alembic/config.toml"), CONFIG).unwrap();
    let token = create_token(dir.path(), "hostile", "ide");
    let mut server = HttpServer::spawn(dir.path(), &["--http", "127.0.0.1:0"]);
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let session = Session::open(&server.url, &token).await;
    let counts = hostile_messages(&session).await;
    assert_eq!(counts.values().sum::<usize>(), MESSAGES);
    let http_cases = hostile_http(&session, &addr).await;
    // Counts for the closing note: `cargo test ... -- --nocapture` prints them.
    println!("hostile HTTP messages: {counts:?}; hostile HTTP cases: {http_cases}");
    let last = br#"{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"read_project_file","arguments":{"filePath":"README.md"}}}"#;
    let (status, answers) = session.post(last.to_vec()).await;
    assert_eq!(status, 200);
    let answer = answers.iter().find(|a| a["id"] == "last").unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(server.is_running());
}
