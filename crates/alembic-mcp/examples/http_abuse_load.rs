//! A measurement, not a test: the latency a legitimate client sees while the HTTP server is
//! abused on loopback. An attacker holds 1,100 idle connections (reopening any the server
//! closes) and tries to open 64 sessions with one token; meanwhile a second token calls
//! `tools/list` in a loop for `SECS` seconds (default 10). Prints p50/p99/max, errors, how many
//! hostile sessions were accepted, and how many idle sockets the server closed.
//!
//! Run: `cargo run --release -p alembic-mcp --example http_abuse_load [SECS]`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use alembic_mcp::{AlembicServer, HttpAuth, HttpEndpoint, HttpLimits, HttpOptions, TokenStore};
use alembic_tools::{
    Allowlist, EffectClass, Pipeline, ToolDefinition, ToolModule, ToolOutput, ToolRegistry,
    handler_fn,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const IDLE: usize = 1100;
const HOSTILE_SESSIONS: usize = 64;

fn init(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "load", "version": "1.0"}}})
}

fn post(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let mut req = http
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string());
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    req
}

/// Opens a session; its id, or the refusal's status.
async fn open_session(http: &reqwest::Client, url: &str, token: &str) -> Result<String, u16> {
    let resp = post(http, url, token, None, &init(1))
        .send()
        .await
        .map_err(|_| 0u16)?;
    let status = resp.status().as_u16();
    let id = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let _ = resp.bytes().await;
    let id = id.ok_or(status)?;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = post(http, url, token, Some(&id), &note).send().await;
    Ok(id)
}

#[derive(Default)]
struct Measured {
    latencies: Vec<f64>,
    errors: usize,
    first_error: Option<String>,
    secs: u64,
}

impl Measured {
    fn print(mut self, what: &str) {
        self.latencies.sort_by(f64::total_cmp);
        let l = &self.latencies;
        println!(
            "tools/list for {} s, {what}: {} ok, {} errors{}; ms p50 {:.2}, p99 {:.2}, max {:.2}",
            self.secs,
            l.len(),
            self.errors,
            self.first_error
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default(),
            percentile(l, 0.50),
            percentile(l, 0.99),
            l.last().copied().unwrap_or(f64::NAN)
        );
    }
}

/// `tools/list` in a loop in `session` for `secs` seconds, each call bounded to 5 s.
async fn measure(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    session: &str,
    secs: u64,
) -> Measured {
    let mut m = Measured {
        secs,
        ..Measured::default()
    };
    let deadline = Instant::now() + Duration::from_secs(secs);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    while Instant::now() < deadline {
        let started = Instant::now();
        let result = tokio::time::timeout(Duration::from_secs(5), async {
            post(http, url, token, Some(session), &list)
                .send()
                .await?
                .bytes()
                .await
        })
        .await;
        match result {
            Ok(Ok(body)) if String::from_utf8_lossy(&body).contains("echo_text") => {
                m.latencies.push(started.elapsed().as_secs_f64() * 1000.0);
            }
            other => {
                m.errors += 1;
                m.first_error.get_or_insert_with(|| format!("{other:?}"));
            }
        }
    }
    m
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir()?;
    let registry = Arc::new(ToolRegistry::new());
    registry.register(ToolDefinition::new(
        "echo_text",
        "Echo the text back.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        ToolModule::Composite,
        EffectClass::ReadOnly,
        handler_fn(|args, _| async move { Ok(ToolOutput::new(args, "echo")) }),
    ))?;
    let pipeline = Pipeline::builder(registry, dir.path()).build();
    let presets: alembic_mcp::PresetResolver = Arc::new(|_, _| Ok(Allowlist::only(["echo_text"])));
    let server = AlembicServer::from_parts(pipeline, Allowlist::only(["echo_text"]), None)
        .with_presets(presets);
    let tokens = Arc::new(TokenStore::open_project(dir.path())?);
    let hostile = tokens.create("hostile", "p", None)?.secret;
    let legit = tokens.create("legit", "p", None)?.secret;
    let limits = HttpLimits {
        // The rate limit is not what is measured here.
        rate_per_minute: 1_000_000,
        rate_burst: 100_000,
        ..HttpLimits::default()
    };
    let endpoint = HttpEndpoint::bind("127.0.0.1:0".parse()?).await?;
    let addr = endpoint.local_addr;
    let url = format!("http://{addr}/mcp");
    let shutdown = CancellationToken::new();
    let options = HttpOptions {
        limits: limits.clone(),
        auth: Some(HttpAuth::new(Some(tokens), None, "p")),
        ..HttpOptions::default()
    };
    let stop = shutdown.clone();
    tokio::spawn(async move { endpoint.serve_with(server, options, stop).await });

    let http = reqwest::Client::new();
    let quiet = open_session(&http, &url, &legit)
        .await
        .map_err(|s| format!("HTTP {s}"))?;
    measure(&http, &url, &legit, &quiet, secs)
        .await
        .print("baseline, no attack");
    let mut accepted = 0;
    let mut refused = Vec::new();
    for _ in 0..HOSTILE_SESSIONS {
        match open_session(&http, &url, &hostile).await {
            Ok(_) => accepted += 1,
            Err(status) => refused.push(status),
        }
    }

    // The idle attacker: keeps IDLE connections open, reopening those the server closes.
    let closed_by_server = Arc::new(AtomicUsize::new(0));
    let attack_stop = CancellationToken::new();
    let (closed, astop) = (Arc::clone(&closed_by_server), attack_stop.clone());
    let attacker = tokio::spawn(async move {
        let mut idle = Vec::with_capacity(IDLE);
        while !astop.is_cancelled() {
            idle.retain(|s: &tokio::net::TcpStream| {
                let mut b = [0u8; 1];
                let gone = !matches!(s.try_read(&mut b), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock);
                if gone {
                    closed.fetch_add(1, Ordering::Relaxed);
                }
                !gone
            });
            while idle.len() < IDLE {
                match tokio::net::TcpStream::connect(addr).await {
                    Ok(s) => idle.push(s),
                    Err(_) => break,
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;

    let session = open_session(&http, &url, &legit).await;
    let attacked = match &session {
        Ok(session) => measure(&http, &url, &legit, session, secs).await,
        Err(_) => Measured::default(),
    };
    attack_stop.cancel();
    let _ = attacker.await;
    shutdown.cancel();
    println!(
        "legitimate session: {}",
        if session.is_ok() {
            "opened".into()
        } else {
            format!("REFUSED {session:?}")
        }
    );
    attacked.print(&format!("with {IDLE} idle connections held"));
    println!(
        "hostile token: {accepted} of {HOSTILE_SESSIONS} sessions accepted (cap {}), refusals {:?}",
        limits.max_sessions_per_caller,
        refused
            .iter()
            .fold(std::collections::BTreeMap::new(), |mut m, s| {
                *m.entry(*s).or_insert(0) += 1;
                m
            })
    );
    println!(
        "idle sockets closed by the server (cap {} per IP, {} in all): {}",
        limits.max_connections_per_ip,
        limits.max_connections,
        closed_by_server.load(Ordering::Relaxed)
    );
    Ok(())
}
