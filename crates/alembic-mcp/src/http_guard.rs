//! The axum middleware in front of `/mcp`: a `Host` without userinfo and only one of it (400),
//! authentication (401 with `WWW-Authenticate`), the per-caller rate (429 with `Retry-After`),
//! session ownership, the body size and read time (413, 408), and the session caps (429 per
//! caller, 503 in all). It runs before rmcp sees the request, so a refused request never
//! reaches a session or a tool. rmcp then checks the `Host` allow-list and `Origin` (403).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use alembic_base::lock;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};

use crate::auth::{HttpAuth, HttpCaller, PresetResolver};
use crate::limits::{HttpLimits, RateLimiter, retry_after_secs};

/// The header that carries the MCP session id.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// What the middleware needs; one per server.
pub(crate) struct Guard {
    pub(crate) auth: Option<(HttpAuth, PresetResolver)>,
    pub(crate) limits: HttpLimits,
    pub(crate) rate: RateLimiter,
    pub(crate) sessions: Arc<LocalSessionManager>,
    /// Serialises session creation so that the cap is exact.
    pub(crate) creating: tokio::sync::Mutex<()>,
    /// Who opened each session (the caller id, or `ip:ADDR` without authentication):
    /// another caller's requests in it are refused, and each owner's sessions are capped.
    pub(crate) owners: Mutex<HashMap<String, String>>,
}

/// A JSON error answer: `{"error": {"status": .., "message": ..}}`.
pub(crate) fn refusal(status: StatusCode, message: impl Into<String>) -> Response {
    let body = json!({"error": {"status": status.as_u16(), "message": message.into()}});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The middleware: who, how often, whose session, how large, then a new session's place.
pub(crate) async fn guard(State(g): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    if let Err(why) = check_host(&req) {
        return refusal(StatusCode::BAD_REQUEST, why);
    }
    let caller = match g.authenticate(req.headers()).await {
        Ok(caller) => caller,
        Err(response) => return response,
    };
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(c) = &caller
        && let Some(refused) = g.rate_and_owner(c, session.as_deref())
    {
        return refused;
    }
    let (mut parts, body) = req.into_parts();
    let bytes = match g.read_body(&parts.headers, body).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    let mut opens_session = None;
    if parts.method == Method::POST {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(message) if session.is_none() && message["method"] == "initialize" => {
                opens_session = Some(message["id"].clone());
            }
            Ok(_) => {}
            Err(e) => return parse_error(&e),
        }
    }
    let owner = match (&caller, parts.extensions.get::<ConnectInfo<SocketAddr>>()) {
        (Some(c), _) => c.id.clone(),
        (None, Some(ConnectInfo(peer))) => format!("ip:{}", peer.ip()),
        (None, None) => "ip:unknown".to_string(),
    };
    if let Some(c) = &caller {
        parts.extensions.insert(c.clone());
    }
    let req = Request::from_parts(parts, Body::from(bytes));
    match opens_session {
        None => next.run(req).await,
        Some(id) => g.open_session(&owner, &id, req, next).await,
    }
}

/// Refuses a `Host` that carries userinfo (`evil.example@localhost`: the allow-list would see
/// only `localhost`) and a request with several `Host` headers (RFC 9112 §3.2: 400); the
/// request target's authority, if absolute, is held to the same rule.
fn check_host(req: &Request) -> Result<(), String> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    let first = hosts.next();
    if hosts.next().is_some() {
        return Err("the request has more than one Host header; send exactly one".into());
    }
    let host = first.map(|v| v.to_str().unwrap_or("\u{fffd}"));
    let target = req.uri().authority().map(|a| a.as_str());
    for text in host.into_iter().chain(target) {
        if text.contains('@') {
            return Err(format!(
                "invalid Host {text:?}: userinfo (`name@`) is not accepted; send `Host: HOST[:PORT]`"
            ));
        }
    }
    Ok(())
}

/// A JSON-RPC error answer to the request `id` with an HTTP status, `Retry-After` and the
/// cap that refused it in `error.data`.
fn capped(status: StatusCode, id: &Value, cap: &str, limit: usize, message: String) -> Response {
    const RETRY_SECS: u64 = 30;
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message,
        "data": {"cap": cap, "limit": limit, "retryAfterSecs": RETRY_SECS}}});
    let mut r = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_SECS));
    r
}

/// A POST body that is not JSON: 400 with JSON-RPC's parse error (-32700), as a JSON-RPC
/// server answers text it cannot parse.
fn parse_error(e: &serde_json::Error) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null,
        "error": {"code": -32700, "message": format!("parse error: the body is not JSON: {e}")}});
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

impl Guard {
    /// 429 past the caller's rate; 404 for a session another caller opened (answered like an
    /// unknown session, so session ids of others are not confirmed).
    fn rate_and_owner(&self, c: &HttpCaller, session: Option<&str>) -> Option<Response> {
        if let Err(wait) = self.rate.check(&c.id) {
            let mut r = refusal(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "rate limit: {} requests a minute for {} (burst {}); retry later",
                    self.limits.rate_per_minute, c.id, self.limits.rate_burst
                ),
            );
            r.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_secs(wait)),
            );
            return Some(r);
        }
        let owned_by_other = session.is_some_and(|id| {
            lock(&self.owners)
                .get(id)
                .is_some_and(|owner| owner != &c.id)
        });
        owned_by_other.then(|| refusal(StatusCode::NOT_FOUND, "session not found"))
    }

    async fn authenticate(
        &self,
        headers: &axum::http::HeaderMap,
    ) -> Result<Option<HttpCaller>, Response> {
        let Some((auth, resolve)) = &self.auth else {
            return Ok(None);
        };
        let (id, preset) = auth.authenticate(headers).await.map_err(|why| {
            let mut r = refusal(StatusCode::UNAUTHORIZED, why.description.clone());
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, auth.challenge(&why));
            r
        })?;
        let allowlist = resolve(&id, &preset).map_err(|e| {
            refusal(
                StatusCode::FORBIDDEN,
                format!("the preset {preset:?} of {id} is not usable: {e}"),
            )
        })?;
        Ok(Some(HttpCaller { id, allowlist }))
    }

    /// The whole body, refused with 413 past the size limit and 408 past the read timeout.
    async fn read_body(
        &self,
        headers: &axum::http::HeaderMap,
        body: Body,
    ) -> Result<Bytes, Response> {
        let max = self.limits.max_body_bytes;
        let too_large = || {
            refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is larger than the limit of {max} bytes ([mcp.http] max_body_bytes)"
                ),
            )
        };
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > max as u64) {
            return Err(too_large());
        }
        let limited = http_body_util::Limited::new(body, max);
        match tokio::time::timeout(self.limits.read_timeout, limited.collect()).await {
            Err(_) => Err(refusal(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} s ([mcp.http] read_timeout_secs)",
                    self.limits.read_timeout.as_secs()
                ),
            )),
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
            Ok(Err(e)) => Err(refusal(
                StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {e}"),
            )),
        }
    }

    /// Passes an `initialize` on if its owner and the server both have a session free, and
    /// records who owns the new session.
    async fn open_session(&self, owner: &str, id: &Value, req: Request, next: Next) -> Response {
        let _one_at_a_time = self.creating.lock().await;
        let (open, owned) = {
            let sessions = self.sessions.sessions.read().await;
            let mut owners = lock(&self.owners);
            owners.retain(|id, _| sessions.contains_key(id.as_str()));
            (
                sessions.len(),
                owners.values().filter(|o| *o == owner).count(),
            )
        };
        let per_caller = self.limits.max_sessions_per_caller;
        if owned >= per_caller {
            return capped(
                StatusCode::TOO_MANY_REQUESTS,
                id,
                "max_sessions_per_caller",
                per_caller,
                format!(
                    "{owner} has its maximum of {per_caller} open sessions ([mcp.http] max_sessions_per_caller): end one (DELETE /mcp with its Mcp-Session-Id) or retry once one has been idle for {} s",
                    self.limits.idle_timeout.as_secs()
                ),
            );
        }
        if open >= self.limits.max_sessions {
            return capped(
                StatusCode::SERVICE_UNAVAILABLE,
                id,
                "max_sessions",
                self.limits.max_sessions,
                format!(
                    "the server has its maximum of {} sessions ([mcp.http] max_sessions); retry later",
                    self.limits.max_sessions
                ),
            );
        }
        let response = next.run(req).await;
        if let Some(id) = response.headers().get(SESSION_HEADER)
            && let Ok(id) = id.to_str()
        {
            lock(&self.owners).insert(id.to_string(), owner.to_string());
        }
        response
    }
}
