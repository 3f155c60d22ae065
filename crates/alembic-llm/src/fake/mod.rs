//! Fake provider servers on 127.0.0.1 for tests (feature `fake-server`).
//!
//! A [`FakeServer`] speaks one vendor's wire format. Tests queue replies with [`FakeServer::push`]:
//! a vendor-neutral [`FakeTurn`] (text, tool calls, usage) is rendered as that vendor's JSON or SSE,
//! whichever the request asked for, while [`FakeReply::Status`], [`FakeReply::RawJson`],
//! [`FakeReply::RawSse`] and [`FakeReply::Hang`] script failures. Every request is recorded
//! ([`FakeServer::requests`]) so bodies can be compared with golden snapshots.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use alembic_llm::fake::{FakeServer, FakeTurn};
//! use alembic_llm::ProviderKind;
//! let server = FakeServer::start(ProviderKind::Anthropic).await?;
//! server.push(FakeTurn::new().tool_call("toolu_1", "read_file", serde_json::json!({"path": "a.rs"})));
//! server.push(FakeTurn::text("a.rs defines main"));
//! let provider = server.provider().unwrap(); // an HttpProvider pointed at the fake, with no retry waits
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::clock::ManualClock;
use crate::config::{ApiKey, ProviderConfig, ProviderKind};
use crate::error::LlmError;
use crate::http::HttpProvider;
use crate::model::Usage;
use crate::retry::RetryPolicy;

mod inspect;
mod render;

/// The key fake providers send; the servers do not check it.
pub const FAKE_API_KEY: &str = "sk-fake-test-key";

/// One tool call in a scripted turn. `arguments` is the raw text the model "produced".
#[derive(Debug, Clone, PartialEq)]
pub struct FakeToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
    /// Sent as Gemini's `thoughtSignature` (ignored by the other formats).
    pub thought_signature: Option<String>,
}

/// A vendor-neutral scripted model turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FakeTurn {
    pub text: String,
    pub tool_calls: Vec<FakeToolCall>,
    pub usage: Usage,
}

impl FakeTurn {
    /// An empty turn (no text, no calls), with usage 10 in / 5 out.
    pub fn new() -> Self {
        Self {
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
            },
            ..Self::default()
        }
    }

    /// A text-only answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::new()
        }
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// Adds a well-formed tool call.
    pub fn tool_call(self, id: &str, name: &str, arguments: Value) -> Self {
        self.raw_tool_call(id, name, &arguments.to_string())
    }

    /// Adds a tool call with arguments exactly as given (possibly not JSON at all).
    pub fn raw_tool_call(mut self, id: &str, name: &str, arguments: &str) -> Self {
        self.tool_calls.push(FakeToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
            thought_signature: None,
        });
        self
    }

    /// Sets Gemini's thought signature on the last tool call.
    pub fn with_thought_signature(mut self, signature: &str) -> Self {
        if let Some(call) = self.tool_calls.last_mut() {
            call.thought_signature = Some(signature.to_owned());
        }
        self
    }

    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Usage {
            input_tokens,
            output_tokens,
        };
        self
    }
}

/// What the server answers to the next request.
#[derive(Debug, Clone)]
pub enum FakeReply {
    /// A model turn in the vendor's format (SSE when the request streams).
    Turn(FakeTurn),
    /// A plain HTTP answer, typically an error.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// This JSON body with status 200.
    RawJson(Value),
    /// These SSE events (each a block such as `"data: {...}"`), status 200.
    RawSse(Vec<String>),
    /// These SSE events, then silence with the connection kept open (stream idle timeouts).
    StalledSse(Vec<String>),
    /// Accept the request and never answer (for timeout tests).
    Hang,
}

impl FakeReply {
    /// An error status with a vendor-style JSON error body.
    pub fn error(status: u16, message: &str) -> Self {
        let body = json!({ "error": { "type": "fake_error", "message": message } }).to_string();
        Self::Status {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body,
        }
    }

    /// A 429 with `Retry-After: <retry_after>`.
    pub fn rate_limited(retry_after: &str) -> Self {
        let Self::Status {
            status,
            mut headers,
            body,
        } = Self::error(429, "rate limit reached")
        else {
            return Self::error(429, "rate limit reached");
        };
        headers.push(("retry-after".into(), retry_after.into()));
        Self::Status {
            status,
            headers,
            body,
        }
    }
}

impl From<FakeTurn> for FakeReply {
    fn from(turn: FakeTurn) -> Self {
        Self::Turn(turn)
    }
}

/// One request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query, e.g. `/v1beta/models/m:streamGenerateContent?alt=sse`.
    pub path: String,
    /// Lower-cased header names.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (a JSON string if it was not JSON).
    pub body: Value,
    /// The wire format the request was sent in (for the vendor-neutral readers in `inspect`).
    pub kind: ProviderKind,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// Decides the reply from the request, once the queue of scripted replies is empty.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> FakeReply + Send + Sync>;

#[derive(Default)]
struct FakeState {
    replies: VecDeque<FakeReply>,
    requests: Vec<RecordedRequest>,
    responder: Option<Responder>,
}

impl std::fmt::Debug for FakeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeState")
            .field("replies", &self.replies)
            .field("requests", &self.requests.len())
            .field("responder", &self.responder.is_some())
            .finish()
    }
}

#[derive(Debug, Clone)]
struct Shared {
    kind: ProviderKind,
    state: Arc<Mutex<FakeState>>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState> {
        alembic_base::lock(&self.state)
    }
}

/// A fake vendor endpoint on 127.0.0.1; stops when dropped.
#[derive(Debug)]
pub struct FakeServer {
    base_url: String,
    shared: Shared,
    shutdown: CancellationToken,
}

impl FakeServer {
    /// Starts a server speaking `kind`'s wire format (DeepSeek and compatible servers speak OpenAI's).
    pub async fn start(kind: ProviderKind) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let shared = Shared {
            kind,
            state: Arc::new(Mutex::new(FakeState::default())),
        };
        let router = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone().cancelled_owned();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(stop)
                .await;
        });
        let base_url = match kind {
            ProviderKind::OpenAi | ProviderKind::OpenAiCompatible => format!("http://{address}/v1"),
            _ => format!("http://{address}"),
        };
        Ok(Self {
            base_url,
            shared,
            shutdown,
        })
    }

    /// The base URL to configure a provider with.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn kind(&self) -> ProviderKind {
        self.shared.kind
    }

    /// Queues a reply; replies are used in order, one per request. With none left the server
    /// answers 500 "fake server: no scripted reply left".
    pub fn push(&self, reply: impl Into<FakeReply>) -> &Self {
        self.shared.lock().replies.push_back(reply.into());
        self
    }

    /// Answers with `responder(request)` whenever no scripted reply is queued, so that a fake
    /// model can react to what it is sent (say, answer at once when the system prompt already
    /// holds a remembered fact).
    pub fn respond_with(
        &self,
        responder: impl Fn(&RecordedRequest) -> FakeReply + Send + Sync + 'static,
    ) -> &Self {
        self.shared.lock().responder = Some(Arc::new(responder));
        self
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Replies not used yet.
    pub fn remaining_replies(&self) -> usize {
        self.shared.lock().replies.len()
    }

    /// A config pointing at this server: model `fake-model`, key [`FAKE_API_KEY`], retries
    /// without jitter, short timeouts.
    pub fn provider_config(&self) -> ProviderConfig {
        let mut config = ProviderConfig::new(
            self.shared.kind,
            "fake-model",
            self.base_url.clone(),
            Some(ApiKey::new(FAKE_API_KEY)),
        );
        config.retry = RetryPolicy {
            jitter: Duration::ZERO,
            ..RetryPolicy::default()
        };
        config.request_timeout = Duration::from_secs(30);
        config.stream_idle_timeout = Duration::from_secs(30);
        config
    }

    /// A provider for this server whose retry waits go to a fresh `ManualClock` (no real sleeping).
    pub fn provider(&self) -> Result<HttpProvider, LlmError> {
        self.provider_with_clock(&ManualClock::default())
    }

    /// A provider for this server using `clock`, so a test can read the waits it asked for.
    pub fn provider_with_clock(&self, clock: &ManualClock) -> Result<HttpProvider, LlmError> {
        HttpProvider::with_clock(self.provider_config(), Arc::new(clock.clone()))
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn handle(
    State(shared): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let recorded = record(shared.kind, &method, &uri, &headers, &body);
    let (queued, responder) = {
        let mut state = shared.lock();
        state.requests.push(recorded.clone());
        (state.replies.pop_front(), state.responder.clone())
    };
    // The responder runs without the lock, so it may look at the server too.
    let reply = queued.or_else(|| responder.map(|respond| respond(&recorded)));
    match reply {
        None => plain(
            500,
            &[],
            json!({ "error": { "message": "fake server: no scripted reply left" } }).to_string(),
        ),
        Some(FakeReply::Hang) => std::future::pending().await,
        Some(reply) => respond(&recorded, reply),
    }
}

fn record(
    kind: ProviderKind,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> RecordedRequest {
    let body: Value = serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into()));
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), ToString::to_string);
    let headers = headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    RecordedRequest {
        method: method.to_string(),
        path,
        headers,
        body,
        kind,
    }
}

fn respond(request: &RecordedRequest, reply: FakeReply) -> Response {
    match reply {
        FakeReply::Status {
            status,
            headers,
            body,
        } => plain(status, &headers, body),
        FakeReply::RawJson(value) => json_response(&value),
        FakeReply::RawSse(events) => sse_response(&events, false),
        FakeReply::StalledSse(events) => sse_response(&events, true),
        FakeReply::Hang => plain(
            500,
            &[],
            "fake server: hang is handled before rendering".into(),
        ),
        FakeReply::Turn(turn) => {
            let model = request
                .body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("fake-model");
            let render = render::Renderer {
                kind: request.kind,
                model,
                turn: &turn,
            };
            if request.is_stream() {
                sse_response(&render.sse_events(), false)
            } else {
                json_response(&render.json())
            }
        }
    }
}

fn plain(status: u16, headers: &[(String, String)], body: String) -> Response {
    let mut response = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        body,
    )
        .into_response();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            name.parse::<header::HeaderName>(),
            value.parse::<header::HeaderValue>(),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

fn json_response(value: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// Sends the events in small pieces (cut at character boundaries, not at event boundaries) so
/// that clients must reassemble events across network chunks.
fn sse_response(events: &[String], stall: bool) -> Response {
    let text: String = events.iter().map(|event| format!("{event}\n\n")).collect();
    let mut pieces = Vec::new();
    let mut current = String::new();
    for ch in text.chars() {
        current.push(ch);
        if current.len() >= 23 {
            pieces.push(Ok::<_, Infallible>(Bytes::from(std::mem::take(
                &mut current,
            ))));
        }
    }
    if !current.is_empty() {
        pieces.push(Ok(Bytes::from(current)));
    }
    let pieces = futures::stream::iter(pieces);
    let body = if stall {
        Body::from_stream(pieces.chain(futures::stream::pending()))
    } else {
        Body::from_stream(pieces)
    };
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}
