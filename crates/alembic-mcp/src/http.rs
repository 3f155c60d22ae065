//! Streamable HTTP: rmcp's `StreamableHttpService` with in-memory sessions, mounted at `/mcp`
//! in an axum router.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

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

fn host_literal(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => v6.to_string(),
    }
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

    /// Serves until `shutdown` is cancelled; every session shares `server`'s pipeline.
    pub async fn serve(
        self,
        server: AlembicServer,
        extra_hosts: &[String],
        shutdown: CancellationToken,
    ) -> Result<(), McpError> {
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(allowed_hosts(self.local_addr, extra_hosts))
            .with_cancellation_token(shutdown.child_token());
        let service = StreamableHttpService::new(
            move || Ok(server.for_session()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = axum::Router::new().nest_service(MCP_PATH, service);
        axum::serve(self.listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
            .map_err(McpError::Io)
    }
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
