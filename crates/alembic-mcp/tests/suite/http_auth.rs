//! Bearer tokens and limits over streamable HTTP, against an in-process server: 401 with
//! `WWW-Authenticate`, the token's preset as the caller's allowlist, `mcp:<name>` in the
//! audit log, revocation on the next request, session ownership, 413, 429 with
//! `Retry-After`, the session cap (503) and the idle-session timeout.

use std::sync::Arc;
use std::time::Duration;

use alembic_mcp::{HttpAuth, HttpLimits, HttpOptions, PresetResolver, TokenStore};
use alembic_tools::Allowlist;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::http::{Client, HttpFixture, SESSION_HEADER, call};
use super::support::{ALLOWED, LIMIT, TestServer, within};

/// Presets of the test server: `wide` is the test allowlist, `narrow` only `echo_text`.
fn presets() -> PresetResolver {
    Arc::new(|_, preset| match preset {
        "wide" => Ok(Allowlist::only(ALLOWED)),
        "narrow" => Ok(Allowlist::only(["echo_text"])),
        other => Err(format!("unknown preset {other:?}")),
    })
}

/// A server that requires tokens, with `limits`; returns it and the token store on its database.
pub(super) async fn token_server(limits: HttpLimits) -> (HttpFixture, Arc<TokenStore>) {
    let mut test = TestServer::new();
    test.server = test.server.with_presets(presets());
    let store: Arc<std::sync::Mutex<Option<Arc<TokenStore>>>> = Default::default();
    let keep = Arc::clone(&store);
    let fixture = HttpFixture::start_with(test, move |dir| {
        let tokens = Arc::new(TokenStore::open_project(dir).unwrap());
        *keep.lock().unwrap() = Some(Arc::clone(&tokens));
        HttpOptions {
            limits,
            auth: Some(HttpAuth::new(Some(tokens), None, "wide")),
            ..HttpOptions::default()
        }
    })
    .await;
    let tokens = store.lock().unwrap().clone().unwrap();
    (fixture, tokens)
}

pub(super) fn client(fixture: &HttpFixture, token: Option<&str>) -> Client {
    let mut c = Client::new(&fixture.url, "2025-06-18");
    c.bearer = token.map(str::to_string);
    c
}

pub(super) fn init_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "1.0"}}})
}

pub(super) async fn error_of(resp: reqwest::Response) -> (u16, String, reqwest::header::HeaderMap) {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.unwrap();
    // a body that is not JSON names what came instead (one CI run saw a refusal that was not
    // the guard's JSON; this shows what it was when it happens again)
    let body: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "status {status}: the body is not JSON ({e}): {:?}; headers {headers:?}",
            String::from_utf8_lossy(&bytes)
        )
    });
    (
        status,
        body["error"]["message"].as_str().unwrap().to_string(),
        headers,
    )
}

pub(super) fn header(headers: &reqwest::header::HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_a_valid_token_get_401_with_a_bearer_challenge() {
    let (fixture, tokens) = token_server(HttpLimits::default()).await;
    let alice = tokens.create("alice", "wide", None).unwrap();

    let (status, message, headers) =
        error_of(client(&fixture, None).send(&init_body()).await).await;
    assert_eq!(status, 401);
    assert_eq!(
        header(&headers, "www-authenticate"),
        "Bearer realm=\"alembic\""
    );
    assert!(
        message.contains("alembic mcp token create NAME"),
        "{message}"
    );

    // The secret with its last character changed (a secret that already ended in `0` was
    // "forged" into itself: the flake that served this request with 200).
    let last = alice.secret.chars().last().unwrap();
    let other = if last == '0' { '1' } else { '0' };
    let forged = format!("{}{other}", &alice.secret[..alice.secret.len() - 1]);
    assert_ne!(forged, alice.secret);
    let (status, message, headers) =
        error_of(client(&fixture, Some(&forged)).send(&init_body()).await).await;
    assert_eq!((status, message.as_str()), (401, "unknown token"));
    assert_eq!(
        header(&headers, "www-authenticate"),
        "Bearer realm=\"alembic\", error=\"invalid_token\", error_description=\"unknown token\""
    );

    let mut c = client(&fixture, Some(&alice.secret));
    c.initialize().await;
    let (r, _) = c
        .request(&call(json!(2), "echo_text", json!({"text": "hi"})))
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "hi"}));
    let mut fixture = fixture;
    let entry = fixture.audited().await;
    assert_eq!(
        (entry.tool.as_str(), entry.caller.as_str()),
        ("echo_text", "mcp:alice")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_sees_and_calls_only_the_tools_of_its_preset() {
    let (fixture, tokens) = token_server(HttpLimits::default()).await;
    let bob = tokens.create("bob", "narrow", None).unwrap();
    let mut c = client(&fixture, Some(&bob.secret));
    c.initialize().await;
    let (r, _) = c
        .request(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo_text"]);
    let (r, _) = c.request(&call(json!(3), "count_items", json!({}))).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["structuredContent"]["status"], "blocked", "{r}");
    let mut fixture = fixture;
    let entry = fixture.audited().await;
    assert_eq!(
        (
            entry.tool.as_str(),
            entry.caller.as_str(),
            entry.verdict.as_str()
        ),
        ("count_items", "mcp:bob", "blocked")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_takes_effect_on_the_next_request() {
    let (fixture, _) = token_server(HttpLimits::default()).await;
    // Another handle on the same database, as `alembic mcp token revoke` in another process.
    let cli = TokenStore::open_project(fixture.dir.path()).unwrap();
    let carol = cli.create("carol", "wide", Some(30)).unwrap();
    let mut c = client(&fixture, Some(&carol.secret));
    c.initialize().await;
    let (r, _) = c
        .request(&call(json!(2), "echo_text", json!({"text": "a"})))
        .await;
    assert_eq!(r["result"]["isError"], false);
    cli.revoke("carol").unwrap();
    let (status, message, headers) = error_of(
        c.send(&call(json!(3), "echo_text", json!({"text": "b"})))
            .await,
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(message, "token \"carol\" has been revoked");
    assert!(header(&headers, "www-authenticate").contains("error=\"invalid_token\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_callers_session_id_is_not_found() {
    let (fixture, tokens) = token_server(HttpLimits::default()).await;
    let alice = tokens.create("alice", "wide", None).unwrap();
    let eve = tokens.create("eve", "wide", None).unwrap();
    let mut a = client(&fixture, Some(&alice.secret));
    a.initialize().await;
    let mut e = client(&fixture, Some(&eve.secret));
    e.session = a.session.clone();
    let (status, message, _) = error_of(
        e.send(&call(json!(2), "echo_text", json!({"text": "x"})))
            .await,
    )
    .await;
    assert_eq!((status, message.as_str()), (404, "session not found"));
    // Alice's session is untouched.
    let (r, _) = a
        .request(&call(json!(2), "echo_text", json!({"text": "y"})))
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "y"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_past_the_limit_get_413() {
    let limits = HttpLimits {
        max_body_bytes: 2048,
        ..HttpLimits::default()
    };
    let (fixture, tokens) = token_server(limits).await;
    let t = tokens.create("alice", "wide", None).unwrap();
    let mut c = client(&fixture, Some(&t.secret));
    c.initialize().await;
    let big = call(json!(2), "echo_text", json!({"text": "x".repeat(4096)}));
    let (status, message, _) = error_of(c.send(&big).await).await;
    assert_eq!(status, 413);
    assert_eq!(
        message,
        "the request body is larger than the limit of 2048 bytes ([mcp.http] max_body_bytes)"
    );
    let (r, _) = c
        .request(&call(json!(3), "echo_text", json!({"text": "small"})))
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "small"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_past_its_rate_gets_429_with_retry_after() {
    let limits = HttpLimits {
        rate_per_minute: 1,
        rate_burst: 3,
        ..HttpLimits::default()
    };
    let (fixture, tokens) = token_server(limits).await;
    let alice = tokens.create("alice", "wide", None).unwrap();
    let bob = tokens.create("bob", "wide", None).unwrap();
    let mut a = client(&fixture, Some(&alice.secret));
    a.initialize().await; // initialize + initialized: 2 of 3
    let (r, _) = a
        .request(&call(json!(2), "echo_text", json!({"text": "3"})))
        .await;
    assert_eq!(r["result"]["isError"], false);
    let (status, message, headers) = error_of(
        a.send(&call(json!(3), "echo_text", json!({"text": "4"})))
            .await,
    )
    .await;
    assert_eq!(status, 429);
    assert_eq!(
        message,
        "rate limit: 1 requests a minute for mcp:alice (burst 3); retry later"
    );
    let retry: u64 = header(&headers, "retry-after").parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    // Another token has its own budget.
    let mut b = client(&fixture, Some(&bob.secret));
    b.initialize().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_past_the_cap_get_503_until_one_closes() {
    let limits = HttpLimits {
        max_sessions: 2,
        ..HttpLimits::default()
    };
    let (fixture, tokens) = token_server(limits).await;
    let t = tokens.create("alice", "wide", None).unwrap();
    let mut first = client(&fixture, Some(&t.secret));
    first.initialize().await;
    let mut second = client(&fixture, Some(&t.secret));
    second.initialize().await;
    let third = client(&fixture, Some(&t.secret));
    let (status, message, headers) = error_of(third.send(&init_body()).await).await;
    assert_eq!(status, 503);
    assert_eq!(
        message,
        "the server has its maximum of 2 sessions ([mcp.http] max_sessions); retry later"
    );
    assert_eq!(header(&headers, "retry-after"), "30");
    // Closing a session frees its place.
    let closed = first
        .http
        .delete(&first.url)
        .bearer_auth(&t.secret)
        .header(SESSION_HEADER, first.session.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_success(), "{}", closed.status());
    let mut third = third;
    within(LIMIT, "a freed session place", async {
        loop {
            if third.send(&init_body()).await.status() == 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    third.session = None;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_is_closed_after_the_timeout() {
    let limits = HttpLimits {
        idle_timeout: Duration::from_secs(2),
        ..HttpLimits::default()
    };
    let (fixture, tokens) = token_server(limits).await;
    let t = tokens.create("alice", "wide", None).unwrap();
    let mut c = client(&fixture, Some(&t.secret));
    c.initialize().await;
    // Polled, not slept: the session must disappear some time after 2 s of silence.
    let gone = within(LIMIT, "the idle session to close", async {
        loop {
            tokio::time::sleep(Duration::from_millis(2500)).await;
            let status = c
                .send(&json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}))
                .await
                .status()
                .as_u16();
            if status != 200 {
                return status;
            }
        }
    })
    .await;
    assert_eq!(gone, 404);
}
