//! `alembic mcp`: serve the project's tools to IDE agents over MCP (stdio or streamable HTTP).

use std::sync::Arc;

use alembic_mcp::{AlembicServer, HttpEndpoint, MCP_PATH, parse_bind_addr};
use alembic_runtime::ProjectRuntime;
use anyhow::Context;
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Expose the tools of this preset
    #[arg(long, value_name = "P", default_value = "ide")]
    pub preset: String,
    /// Serve streamable HTTP at ADDR instead of stdio: a port (127.0.0.1:PORT) or IP:PORT
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// With --http, also accept this Host header (repeatable; loopback names are always accepted)
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allow_hosts: Vec<String>,
    #[command(flatten)]
    pub project: ProjectArgs,
}

pub fn run(args: McpArgs) -> CmdResult {
    let runtime = Arc::new(ProjectRuntime::open(&args.project.project)?);
    // A long-running server: the watcher keeps the code index live, so queries skip the walk.
    runtime.services().code.watch();
    let server = AlembicServer::new(Arc::clone(&runtime), Some(&args.preset))
        .map_err(|e| UsageError(e.to_string()))?;
    let http = match &args.http {
        Some(text) => Some(parse_bind_addr(text).map_err(|e| UsageError(e.to_string()))?),
        None => None,
    };
    let tokio = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    tokio.block_on(async move {
        match http {
            None => alembic_mcp::serve_stdio(server).await?,
            Some(addr) => serve_http(server, addr, &args.allow_hosts).await?,
        }
        anyhow::Ok(())
    })?;
    runtime.flush_audit()?;
    Ok(Exit::Ok)
}

async fn serve_http(
    server: AlembicServer,
    addr: std::net::SocketAddr,
    allow_hosts: &[String],
) -> anyhow::Result<()> {
    let endpoint = HttpEndpoint::bind(addr).await?;
    // Tests and scripts read the bound address (useful with port 0) from this line.
    eprintln!(
        "alembic mcp: listening on http://{}{MCP_PATH}",
        endpoint.local_addr
    );
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));
    endpoint
        .serve(server.clone(), allow_hosts, shutdown)
        .await?;
    server.flush_audit().await?;
    Ok(())
}

/// Ctrl-C or SIGTERM stops the server gracefully (the audit log is flushed on the way out).
async fn stop_on_signal(shutdown: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
    shutdown.cancel();
}
