//! Cancellation over streamable HTTP, driven by a raw HTTP client: `notifications/cancelled`
//! in a session (protocol 2025-06-18), and the client giving up the request (2026-07-28, which
//! has no sessions).

use alembic_mcp::{HttpEndpoint, HttpOptions, MCP_PATH};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::support::{LIMIT, Signals, TestServer, within};
use std::sync::Arc;

pub const SESSION_HEADER: &str = "mcp-session-id";

/// An in-process HTTP server over the test registry; stops when dropped.
pub struct HttpFixture {
    pub url: String,
    pub audit: tokio::sync::mpsc::UnboundedReceiver<alembic_tools::AuditEntry>,
    pub signals: Arc<Signals>,
    shutdown: CancellationToken,
    pub dir: tempfile::TempDir,
}

impl HttpFixture {
    async fn start() -> HttpFixture {
        Self::start_with(TestServer::new(), |_| HttpOptions::default()).await
    }

    /// Serves `test`'s server with the options `options` builds (it may use the temp dir).
    pub async fn start_with(
        test: TestServer,
        options: impl FnOnce(&std::path::Path) -> HttpOptions,
    ) -> HttpFixture {
        let TestServer {
            server,
            audit,
            signals,
            dir,
            ..
        } = test;
        let options = options(dir.path());
        let endpoint = HttpEndpoint::bind("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let scheme = if options.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let url = format!("{scheme}://{}{MCP_PATH}", endpoint.local_addr);
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        tokio::spawn(async move { endpoint.serve_with(server, options, stop).await.unwrap() });
        HttpFixture {
            url,
            audit,
            signals,
            shutdown,
            dir,
        }
    }

    pub async fn audited(&mut self) -> alembic_tools::AuditEntry {
        within(LIMIT, "an audit record", self.audit.recv())
            .await
            .expect("the audit channel closed")
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// One MCP client over HTTP: a session id once initialised, the protocol version in use, and
/// the bearer token it sends (if any).
pub struct Client {
    pub http: reqwest::Client,
    pub url: String,
    pub session: Option<String>,
    protocol: &'static str,
    pub bearer: Option<String>,
}

impl Client {
    pub fn new(url: &str, protocol: &'static str) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: url.to_string(),
            session: None,
            protocol,
            bearer: None,
        }
    }

    pub fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", self.protocol)
            .body(body.to_string());
        if let Some(session) = &self.session {
            req = req.header(SESSION_HEADER, session);
        }
        if let Some(token) = &self.bearer {
            req = req.bearer_auth(token);
        }
        // 2026-07-28 (SEP-2243) repeats the method and the tool's name in headers.
        if self.protocol >= "2026-07-28"
            && let Some(method) = body["method"].as_str()
        {
            req = req.header("mcp-method", method);
            if let Some(name) = body["params"]["name"].as_str() {
                req = req.header("mcp-name", name);
            }
        }
        req
    }

    pub async fn send(&self, body: &Value) -> reqwest::Response {
        within(LIMIT, "an HTTP response", self.post(body).send())
            .await
            .unwrap()
    }

    /// Posts a notification; the server accepts it with 202.
    pub async fn notify(&self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let resp = self.send(&body).await;
        assert_eq!(resp.status().as_u16(), 202, "{method}");
    }

    /// Posts a request and reads its answer from the JSON or event-stream body.
    pub async fn request(&self, body: &Value) -> (Value, reqwest::header::HeaderMap) {
        let resp = self.send(body).await;
        assert_eq!(resp.status().as_u16(), 200, "{body}");
        let headers = resp.headers().clone();
        let answer = within(
            LIMIT,
            "the answer on the HTTP stream",
            answer(resp, &body["id"]),
        )
        .await;
        (answer, headers)
    }

    /// Initialises a 2025-06-18 session.
    pub async fn initialize(&mut self) {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": self.protocol, "capabilities": {},
            "clientInfo": {"name": "http-test", "version": "1.0"}}});
        let (r, headers) = self.request(&init).await;
        assert_eq!(r["result"]["serverInfo"]["name"], "alembic", "{r}");
        let session = headers
            .get(SESSION_HEADER)
            .expect("the initialize answer names a session");
        self.session = Some(session.to_str().unwrap().to_string());
        self.notify("notifications/initialized", json!({})).await;
    }
}

/// Reads the answer with `id` from a response body: plain JSON, or server-sent events whose
/// `data` lines carry JSON-RPC messages (notifications and priming events are skipped).
pub async fn answer(mut resp: reqwest::Response, id: &Value) -> Value {
    let is_json = resp
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("application/json"));
    if is_json {
        return serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    }
    let mut buffer = String::new();
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            let data = data.join("\n");
            if data.trim().is_empty() {
                continue;
            }
            let msg: Value = serde_json::from_str(&data).unwrap();
            if msg.get("id") == Some(id) && msg.get("method").is_none() {
                return msg;
            }
        }
        let chunk = resp
            .chunk()
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("the event stream ended before the answer to {id}"));
        buffer.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
    }
}

pub fn call(id: Value, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_notification_cancels_the_call_in_an_http_session() {
    let mut fixture = HttpFixture::start().await;
    let mut client = Client::new(&fixture.url, "2025-06-18");
    client.initialize().await;
    // The call's answer would come on this request's event stream; it is left open.
    let pending = tokio::spawn(
        client
            .post(&call(json!(7), "wait_for_cancel", json!({})))
            .send(),
    );
    let token = fixture.signals.started_call().await;
    client
        .notify(
            "notifications/cancelled",
            json!({"requestId": 7, "reason": "user pressed stop"}),
        )
        .await;
    within(
        LIMIT,
        "notifications/cancelled to cancel the call's token",
        token.cancelled(),
    )
    .await;
    let entry = fixture.audited().await;
    assert_eq!(
        (
            entry.tool.as_str(),
            entry.verdict.as_str(),
            entry.caller.as_str()
        ),
        ("wait_for_cancel", "cancelled", "mcp:http-test")
    );
    pending.abort();
    // The session keeps serving. A fresh id: over HTTP, rmcp's session routes answers by
    // request id, so a cancelled call's late answer could take the place of a reuse's (MCP
    // forbids reusing ids in a session; only the stdio transport makes it safe).
    let (r, _) = client
        .request(&call(json!(8), "echo_text", json!({"text": "after"})))
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "after"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn giving_up_a_stateless_request_cancels_the_call() {
    let mut fixture = HttpFixture::start().await;
    let client = Client::new(&fixture.url, "2026-07-28");
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "http-test", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let mut body = call(json!(1), "wait_for_cancel", json!({}));
    body["params"]["_meta"] = meta.clone();
    let pending = tokio::spawn(client.post(&body).send());
    let token = fixture.signals.started_call().await;
    // 2026-07-28 has no sessions to carry a cancellation: the client closes the connection.
    pending.abort();
    within(
        LIMIT,
        "closing the connection to cancel the call's token",
        token.cancelled(),
    )
    .await;
    let entry = fixture.audited().await;
    assert_eq!(
        (entry.tool.as_str(), entry.verdict.as_str()),
        ("wait_for_cancel", "cancelled")
    );
    let mut body = call(json!(1), "echo_text", json!({"text": "after"}));
    body["params"]["_meta"] = meta;
    let (r, _) = client.request(&body).await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "after"}));
}
