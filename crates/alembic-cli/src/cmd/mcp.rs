//! `alembic mcp`: serve the project's tools to IDE agents over MCP (stdio or streamable HTTP),
//! and `alembic mcp token …`: the bearer tokens of the HTTP server.

mod token;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use alembic_mcp::{
    AlembicServer, HttpAuth, HttpEndpoint, HttpLimits, HttpOptions, MCP_PATH, OAuthSettings,
    OAuthVerifier, TokenStore, is_loopback, parse_bind_addr,
};
use alembic_runtime::ProjectRuntime;
use anyhow::Context;
use clap::{Args, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Bearer tokens for `alembic mcp --http`: create (shown once), list, revoke
    #[command(subcommand)]
    Token(token::TokenCommand),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Expose the tools of this preset (token callers get their token's preset)
    #[arg(long, value_name = "P", default_value = "ide")]
    pub preset: String,
    /// Serve streamable HTTP at ADDR instead of stdio: a port (127.0.0.1:PORT) or IP:PORT.
    /// A non-loopback address needs tokens or [mcp.http.oauth]; once either exists, every
    /// request must carry a valid bearer token, on any address
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// With --http, also accept this Host header (repeatable; loopback names are always accepted)
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allow_hosts: Vec<String>,
    /// With --http, also serve browser requests with this Origin, e.g. https://app.example:443
    /// or http://localhost:* (repeatable, adds to [mcp.http] allowed_origins); requests with
    /// another Origin get 403, requests without one are served
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,
    /// With --http, serve without authentication even on a network address (logs a warning)
    #[arg(long, requires = "http")]
    pub insecure_no_auth: bool,
    /// With --http, serve HTTPS with this PEM certificate chain
    #[arg(long, value_name = "PEM", requires_all = ["http", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// With --http, the PEM private key of --tls-cert
    #[arg(long, value_name = "PEM", requires_all = ["http", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
    #[command(flatten)]
    pub project: ProjectArgs,
}

pub fn run(args: McpArgs) -> CmdResult {
    match args.command {
        Some(McpCommand::Token(c)) => token::run(c),
        None => serve(args.serve),
    }
}

fn serve(args: ServeArgs) -> CmdResult {
    let runtime = Arc::new(ProjectRuntime::open_command(&args.project.project)?);
    // A long-running server: the watcher keeps the code index live, so queries skip the walk.
    runtime.services().code.watch();
    let server = AlembicServer::new(Arc::clone(&runtime), Some(&args.preset))
        .map_err(|e| UsageError(e.to_string()))?;
    let http = match &args.http {
        Some(text) => {
            let addr = parse_bind_addr(text).map_err(|e| UsageError(e.to_string()))?;
            Some((addr, http_options(&runtime, &args, addr)?))
        }
        None => None,
    };
    crate::allocator::purge_promptly();
    let tokio = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    tokio.block_on(async move {
        match http {
            None => alembic_mcp::serve_stdio(server).await?,
            Some((addr, options)) => serve_http(server, addr, options).await?,
        }
        anyhow::Ok(())
    })?;
    runtime.flush_audit()?;
    Ok(Exit::Ok)
}

/// Limits from `[mcp.http]`, TLS from the flags, and the authentication rule: credentials
/// (an active token or `[mcp.http.oauth]`) turn authentication on; a network address without
/// them is refused unless `--insecure-no-auth`.
fn http_options(
    rt: &ProjectRuntime,
    args: &ServeArgs,
    addr: SocketAddr,
) -> anyhow::Result<HttpOptions> {
    let mut section = rt.config.mcp.http.clone();
    section
        .allowed_origins
        .extend(args.allow_origins.iter().cloned());
    section.validate().map_err(|e| {
        UsageError(e.replace(
            "[mcp.http] allowed_origins",
            "--allow-origin / [mcp.http] allowed_origins",
        ))
    })?;
    let section = &section;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(
            alembic_mcp::tls::server_config(cert, key).map_err(|e| UsageError(e.to_string()))?,
        ),
        _ => None,
    };
    let tokens = Arc::new(TokenStore::open_project(&rt.root)?);
    let oauth = section
        .oauth
        .as_ref()
        .map(|o| Arc::new(OAuthVerifier::new(OAuthSettings::from_config(o))));
    let has_credentials = tokens.has_active()? || oauth.is_some();
    let auth = if args.insecure_no_auth {
        tracing::warn!(
            "serving MCP on {addr} WITHOUT authentication (--insecure-no-auth): anyone who can reach it can run every tool of preset {:?}",
            args.preset
        );
        None
    } else if has_credentials {
        Some(HttpAuth::new(Some(tokens), oauth, &args.preset))
    } else if !is_loopback(addr) {
        return Err(UsageError(format!(
            "refusing to serve MCP on {addr} without authentication: anyone on the network could run the project's tools. \
             Create a token with `alembic mcp token create NAME [--preset P]` (clients send `Authorization: Bearer <token>`), \
             or set up [mcp.http.oauth] in .alembic/config.toml; --insecure-no-auth serves without authentication anyway"
        ))
        .into());
    } else {
        None
    };
    if !is_loopback(addr) && tls.is_none() {
        tracing::warn!(
            "serving MCP on {addr} without TLS: bearer tokens travel in clear text; use --tls-cert/--tls-key or a TLS-terminating reverse proxy"
        );
    }
    Ok(HttpOptions {
        extra_hosts: args.allow_hosts.clone(),
        limits: HttpLimits::from_config(section),
        auth,
        tls,
    })
}

async fn serve_http(
    server: AlembicServer,
    addr: SocketAddr,
    options: HttpOptions,
) -> anyhow::Result<()> {
    let endpoint = HttpEndpoint::bind(addr).await?;
    let scheme = if options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let auth = if options.auth.is_some() {
        "bearer token required"
    } else {
        "no authentication"
    };
    // Tests and scripts read the bound address (useful with port 0) from this line.
    eprintln!(
        "alembic mcp: listening on {scheme}://{}{MCP_PATH}",
        endpoint.local_addr
    );
    eprintln!("alembic mcp: {auth}");
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));
    endpoint
        .serve_with(server.clone(), options, shutdown)
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
