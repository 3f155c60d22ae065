//! Alembic's MCP server: the tool registry and pipeline served to IDE agents (Claude Code,
//! Cursor, VS Code…) over stdio or streamable HTTP, on the official `rmcp` SDK.
//!
//! - `tools/list` returns the tools of a preset (the `ide` preset by default: code search and
//!   read, structure, AST and graph queries, memory, guard and meta tools), with each tool's
//!   name, description and JSON Schema.
//! - `tools/call` runs through the whole [`alembic_tools::Pipeline`] as caller
//!   `mcp:<clientInfo.name>` with the preset's allowlist: gates, safety, PathGuard, audit. The
//!   audit record is on disk before the answer is sent.
//! - Results carry `structuredContent` (the tool's JSON) and text (its compact rendering); a
//!   refusal or failure is an `isError` result naming the status and rule. Protocol errors
//!   are JSON-RPC errors.
//! - `notifications/cancelled` cancels the call's pipeline token (audited as `cancelled`, never
//!   answered); over stdio the cancelled request's id may be reused at once, while over HTTP
//!   it should not be (MCP forbids reusing ids in a session, and rmcp's session routes answers
//!   by id). A 2026-07-28 HTTP call, which has no session, is cancelled by closing its
//!   request. A request with a `progressToken` gets the handler's `ctx.progress(..)` reports
//!   as progress notifications.
//!
//! - Resources (`alembic://overview`, `alembic://recipe/{id}`, `alembic://skill/{name}`,
//!   `alembic://memories/{scope}`), prompts (one per skill), `completion/complete`,
//!   `logging/setLevel` with log notifications, and `list_changed` / `resources/updated`
//!   notifications (see the `resources`, `prompts`, `logging` modules and `notify.rs`).
//!
//! Main types: [`AlembicServer`] (the rmcp `ServerHandler`), [`LineTransport`] (stdio that
//! answers every request), [`HttpEndpoint`] (streamable HTTP under `/mcp`).
//!
//! ```no_run
//! # async fn run() -> Result<(), alembic_mcp::McpError> {
//! use std::sync::Arc;
//! let runtime = alembic_runtime::ProjectRuntime::open(std::path::Path::new("."))
//!     .map_err(|e| alembic_mcp::McpError::Setup(e.to_string()))?;
//! let server = alembic_mcp::AlembicServer::new(Arc::new(runtime), Some("ide"))?;
//! alembic_mcp::serve_stdio(server).await
//! # }
//! ```

pub mod auth;
mod convert;
pub mod http;
mod http_conn;
mod http_guard;
pub mod limits;
pub mod logging;
mod notify;
pub mod prompts;
pub mod resources;
mod server;
pub mod skills;
pub mod stdio;
mod surface;
pub mod tls;

pub use auth::{HttpAuth, HttpCaller, OAuthSettings, OAuthVerifier, PresetResolver, TokenStore};
pub use convert::{caller_id, result_for_outcome, tool_for_mcp};
pub use http::{HttpEndpoint, HttpOptions, MCP_PATH, is_loopback, parse_bind_addr};
pub use http_guard::SESSION_HEADER;
pub use limits::HttpLimits;
pub use notify::DEFAULT_POLL;
pub use resources::ProjectContent;
pub use server::{AlembicServer, AuditFlush};
pub use skills::{Skill, SkillDir, SkillReadError, SkillSource};
pub use stdio::{LineTransport, MAX_LINE_BYTES};

use std::net::SocketAddr;

use rmcp::service::ServerInitializeError;
use tokio::io::{AsyncRead, AsyncWrite};

/// Why the MCP server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot set up the MCP server: {0}")]
    Setup(String),
    #[error(
        "invalid --http address \"{given}\": expected a port (8080), IP:PORT (0.0.0.0:8080, [::1]:8080) or localhost:PORT"
    )]
    BadAddress { given: String },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the MCP session failed: {0}")]
    Session(String),
    #[error("the audit log could not be flushed: {0}")]
    Audit(String),
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves MCP on this process's stdin and stdout until stdin ends, then flushes the audit log.
pub async fn serve_stdio(server: AlembicServer) -> Result<(), McpError> {
    serve_lines(server, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves MCP over any line stream (stdio, a pipe, an in-memory duplex in tests).
///
/// rmcp gives up a connection when something other than a request arrives before
/// `initialize` (a notification, a response); the message is dropped and the handshake starts
/// again on the same stream, so only the end of input ends the server.
pub async fn serve_lines<R, W>(server: AlembicServer, reader: R, writer: W) -> Result<(), McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let transport = LineTransport::new(reader, writer);
    loop {
        match rmcp::serve_server(server.for_session(), transport.clone()).await {
            Ok(running) => {
                let reason = running
                    .waiting()
                    .await
                    .map_err(|e| McpError::Session(e.to_string()))?;
                tracing::debug!(?reason, "mcp session ended");
                break;
            }
            Err(e) if transport.is_closed().await => {
                tracing::debug!("input ended before initialize: {e}");
                break;
            }
            Err(ServerInitializeError::ExpectedInitializeRequest(msg)) => {
                tracing::debug!(?msg, "ignoring a message that arrived before initialize");
            }
            Err(e) => tracing::warn!("mcp handshake failed, waiting for a new initialize: {e}"),
        }
    }
    server.flush_audit().await
}
