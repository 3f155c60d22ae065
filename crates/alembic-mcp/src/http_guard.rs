//! The axum middleware in front of `/mcp`: authentication (401 with `WWW-Authenticate`), the
//! per-caller rate (429 with `Retry-After`), session ownership, the body size and read time
//! (413, 408), and the session cap (503). It runs before rmcp sees the request, so a refused
//! request never reaches a session or a tool.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use alembic_base::lock;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
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
    /// Which caller opened each session: another caller's requests in it are refused.
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
    let mut opens_session = false;
    if parts.method == Method::POST {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(message) => opens_session = session.is_none() && message["method"] == "initialize",
            Err(e) => return parse_error(&e),
        }
    }
    if let Some(c) = &caller {
        parts.extensions.insert(c.clone());
    }
    let req = Request::from_parts(parts, Body::from(bytes));
    if !opens_session {
        return next.run(req).await;
    }
    g.open_session(caller.as_ref(), req, next).await
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

    /// Passes an `initialize` on if a session is free, and records who owns the new session.
    async fn open_session(
        &self,
        caller: Option<&HttpCaller>,
        req: Request,
        next: Next,
    ) -> Response {
        let _one_at_a_time = self.creating.lock().await;
        let open = {
            let sessions = self.sessions.sessions.read().await;
            lock(&self.owners).retain(|id, _| sessions.contains_key(id.as_str()));
            sessions.len()
        };
        if open >= self.limits.max_sessions {
            let mut r = refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the server has its maximum of {} sessions ([mcp.http] max_sessions); retry later",
                    self.limits.max_sessions
                ),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("30"));
            return r;
        }
        let response = next.run(req).await;
        if let (Some(c), Some(id)) = (caller, response.headers().get(SESSION_HEADER))
            && let Ok(id) = id.to_str()
        {
            lock(&self.owners).insert(id.to_string(), c.id.clone());
        }
        response
    }
}
