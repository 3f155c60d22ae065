//! Streamable HTTP: rmcp's `StreamableHttpService` with in-memory sessions, mounted at `/mcp`
//! in an axum router behind the guard (`http_guard.rs`: authentication, limits), served by a
//! hyper HTTP/1.1 accept loop, over TLS (rustls) when configured.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::auth::HttpAuth;
use crate::auth::oauth::METADATA_PATH;
use crate::http_conn::{ConnectionCap, Connections, Slot};
use crate::http_guard::{self, Guard};
use crate::limits::{HttpLimits, RateLimiter};
use crate::{AlembicServer, McpError};

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// Parses `--http`: a port alone binds loopback (`8080` → `127.0.0.1:8080`), anything else
/// must be `IP:PORT` (`0.0.0.0:8080`, `[::1]:8080`) or `localhost:PORT`.
pub fn parse_bind_addr(text: &str) -> Result<SocketAddr, McpError> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Some(port) = text.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse::<SocketAddr>()
        .map_err(|_| McpError::BadAddress {
            given: text.to_string(),
        })
}

/// The `Host` header values the server accepts: loopback names always, plus the bound address
/// and any names given with `--allow-host` (DNS-rebinding protection stays on).
pub fn allowed_hosts(bound: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    let ip = bound.ip();
    if !ip.is_loopback() && !ip.is_unspecified() {
        hosts.push(host_literal(ip));
    }
    hosts.extend(extra.iter().cloned());
    hosts.dedup();
    hosts
}

/// Browser origins served: the configured ones plus the server's own origin under its
/// loopback names (`http(s)://localhost:PORT` and the like), which a DNS-rebinding page on
/// another host or port can never claim. The MCP conformance suite expects a local server to
/// accept its own origin.
pub fn allowed_origins(bound: SocketAddr, configured: &[String]) -> Vec<String> {
    let port = bound.port();
    let mut origins: Vec<String> = ["http", "https"]
        .iter()
        .flat_map(|scheme| {
            ["localhost", "127.0.0.1", "[::1]"].map(|host| format!("{scheme}://{host}:{port}"))
        })
        .collect();
    origins.extend(configured.iter().cloned());
    origins
}

fn host_literal(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => v6.to_string(),
    }
}

/// How a server is exposed: extra `Host` names, limits, authentication and TLS.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// `Host` header values accepted beyond loopback names and the bound address.
    pub extra_hosts: Vec<String>,
    pub limits: HttpLimits,
    /// `None` serves without authentication (loopback, or `--insecure-no-auth`).
    pub auth: Option<HttpAuth>,
    /// `Some` serves HTTPS with this rustls configuration.
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
}

/// A bound, not yet serving, HTTP endpoint; `local_addr` tells which port was picked for `:0`.
#[derive(Debug)]
pub struct HttpEndpoint {
    listener: tokio::net::TcpListener,
    pub local_addr: SocketAddr,
}

impl HttpEndpoint {
    pub async fn bind(addr: SocketAddr) -> Result<Self, McpError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| McpError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| McpError::Bind { addr, source })?;
        Ok(HttpEndpoint {
            listener,
            local_addr,
        })
    }

    /// Serves without authentication and with the default limits until `shutdown` is
    /// cancelled; every session shares `server`'s pipeline.
    pub async fn serve(
        self,
        server: AlembicServer,
        extra_hosts: &[String],
        shutdown: CancellationToken,
    ) -> Result<(), McpError> {
        let options = HttpOptions {
            extra_hosts: extra_hosts.to_vec(),
            ..HttpOptions::default()
        };
        self.serve_with(server, options, shutdown).await
    }

    /// Serves with `options` until `shutdown` is cancelled, then lets open requests finish
    /// for a few seconds.
    pub async fn serve_with(
        self,
        server: AlembicServer,
        options: HttpOptions,
        shutdown: CancellationToken,
    ) -> Result<(), McpError> {
        let router = router(server, &options, self.local_addr, &shutdown);
        let tls = options.tls.clone().map(tokio_rustls::TlsAcceptor::from);
        let connections = hyper_util::server::graceful::GracefulShutdown::new();
        let open = Connections::new(
            options.limits.max_connections,
            options.limits.max_connections_per_ip,
        );
        loop {
            let (stream, peer) = tokio::select! {
                _ = shutdown.cancelled() => break,
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!("cannot accept a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let slot = match open.admit(peer.ip()) {
                Ok(slot) => slot,
                Err(cap) => {
                    tracing::debug!(%peer, ?cap, "connection refused at the cap");
                    if tls.is_none() {
                        tokio::spawn(refuse(stream, cap));
                    }
                    continue;
                }
            };
            let conn = Connection {
                router: router.clone(),
                tls: tls.clone(),
                header_timeout: options.limits.header_timeout,
                peer,
                watcher: connections.watcher(),
            };
            tokio::spawn(conn.serve(stream, slot));
        }
        if tokio::time::timeout(Duration::from_secs(5), connections.shutdown())
            .await
            .is_err()
        {
            tracing::debug!("connections still open at shutdown were dropped");
        }
        Ok(())
    }
}

/// `/mcp` behind the guard, plus the OAuth metadata document when OAuth is configured.
fn router(
    server: AlembicServer,
    options: &HttpOptions,
    bound: SocketAddr,
    shutdown: &CancellationToken,
) -> axum::Router {
    // Origin validation is on even with no allowed origins: then every browser origin is
    // refused, and clients that send no Origin (not browsers) are served.
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts(bound, &options.extra_hosts))
        .with_allowed_origins(allowed_origins(bound, &options.limits.allowed_origins))
        .enforce_origin_validation()
        .with_cancellation_token(shutdown.child_token());
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(options.limits.idle_timeout);
    let sessions = Arc::new(sessions);
    let resolver = server.preset_resolver();
    let service = StreamableHttpService::new(
        move || Ok(server.for_session()),
        Arc::clone(&sessions),
        config,
    );
    let guard = Arc::new(Guard {
        auth: options.auth.clone().map(|a| (a, resolver)),
        limits: options.limits.clone(),
        rate: RateLimiter::new(options.limits.rate_per_minute, options.limits.rate_burst),
        sessions,
        creating: tokio::sync::Mutex::new(()),
        owners: Default::default(),
    });
    let mut router = axum::Router::new().nest_service(MCP_PATH, service).layer(
        axum::middleware::from_fn_with_state(guard, http_guard::guard),
    );
    if let Some(oauth) = options.auth.as_ref().and_then(|a| a.oauth()) {
        let doc = oauth.metadata();
        let serve_doc = move || {
            let doc = doc.clone();
            async move { axum::Json(doc) }
        };
        router = router
            .route(METADATA_PATH, axum::routing::get(serve_doc.clone()))
            .route(
                &format!("{METADATA_PATH}{MCP_PATH}"),
                axum::routing::get(serve_doc),
            );
    }
    router
}

/// Answers a connection refused at a cap (plain text only) and closes it, within a second.
async fn refuse(mut stream: tokio::net::TcpStream, cap: ConnectionCap) {
    use tokio::io::AsyncWriteExt;
    let answer = cap.response();
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// One accepted TCP connection: it stays evictable until its first byte, then TLS handshake
/// (if any) and HTTP/1.1, with a limit on the time to send headers and on their size, so
/// silent, slow or oversized clients cannot hold a task or a descriptor.
struct Connection {
    router: axum::Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    header_timeout: Duration,
    peer: SocketAddr,
    watcher: hyper_util::server::graceful::Watcher,
}

/// Largest request head (line and headers); past it hyper answers 431.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

impl Connection {
    async fn serve(self, stream: tokio::net::TcpStream, slot: Slot) {
        // `peek`, not `readable`: readiness may be reported before a byte has arrived.
        let mut first = [0u8; 1];
        let first_byte = tokio::time::timeout(self.header_timeout, stream.peek(&mut first));
        tokio::select! {
            _ = slot.evicted.cancelled() => {
                tracing::debug!(peer = %self.peer, "idle connection evicted at the cap");
                return;
            }
            ready = first_byte => match ready {
                Ok(Ok(n)) if n > 0 => slot.busy(),
                Ok(Ok(_)) => return,
                Ok(Err(e)) => return tracing::debug!("connection failed: {e}"),
                Err(_) => return tracing::debug!(peer = %self.peer, "connection sent nothing"),
            },
        }
        match self.tls.clone() {
            None => self.http(stream).await,
            Some(acceptor) => {
                match tokio::time::timeout(self.header_timeout, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => self.http(tls).await,
                    Ok(Err(e)) => tracing::debug!("TLS handshake failed: {e}"),
                    Err(_) => tracing::debug!("TLS handshake timed out"),
                }
            }
        }
        drop(slot);
    }

    async fn http<S>(self, stream: S)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        use hyper_util::rt::{TokioIo, TokioTimer};
        let peer = axum::extract::ConnectInfo(self.peer);
        let router = hyper_util::service::TowerToHyperService::new(self.router);
        // The guard reads the client's address (per-IP session cap) from the extensions.
        let service = hyper::service::service_fn(move |mut req| {
            req.extensions_mut().insert(peer);
            hyper::service::Service::call(&router, req)
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(self.header_timeout)
            .max_header_size(MAX_HEAD_BYTES)
            .max_buf_size(MAX_HEAD_BYTES)
            .serve_connection(TokioIo::new(stream), service);
        if let Err(e) = self.watcher.watch(conn).await {
            tracing::debug!("HTTP connection ended: {e}");
        }
    }
}

/// Whether serving on `addr` reaches only this machine.
pub fn is_loopback(addr: SocketAddr) -> bool {
    addr.ip().is_loopback()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_bare_port_binds_loopback() {
        assert_eq!(
            parse_bind_addr("8080").unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(
            parse_bind_addr("localhost:9").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert_eq!(
            parse_bind_addr("0.0.0.0:80").unwrap(),
            "0.0.0.0:80".parse().unwrap()
        );
        assert_eq!(
            parse_bind_addr("[::1]:80").unwrap(),
            "[::1]:80".parse().unwrap()
        );
        assert_eq!(
            parse_bind_addr("example.com").unwrap_err().to_string(),
            "invalid --http address \"example.com\": expected a port (8080), IP:PORT (0.0.0.0:8080, [::1]:8080) or localhost:PORT"
        );
    }

    #[test]
    fn hosts_include_the_bound_address() {
        let hosts = allowed_hosts("192.168.1.5:80".parse().unwrap(), &["dev.box".into()]);
        assert_eq!(
            hosts,
            ["localhost", "127.0.0.1", "::1", "192.168.1.5", "dev.box"]
        );
        let hosts = allowed_hosts("0.0.0.0:80".parse().unwrap(), &[]);
        assert_eq!(hosts, ["localhost", "127.0.0.1", "::1"]);
    }
}
