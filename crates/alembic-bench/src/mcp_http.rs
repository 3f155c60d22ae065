//! `alembic mcp --http` under a team's load: N concurrent sessions on loopback, each with its
//! own bearer token, each making M mixed tool calls. Reports errors, p50/p95 per tool and the
//! server's resident memory before and after.
//!
//! The server runs in a child process (this binary's hidden `mcp-http-serve`, the same
//! `AlembicServer` + `HttpEndpoint` + token auth that `alembic mcp --http` builds), so its RSS
//! is read from `/proc/<pid>/status` apart from the clients'. Baseline in the same run: the
//! RSS right after startup and the latency of `get_tool_details`, the cheapest tool.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The limits the benchmark's server runs with: generous rates (the load is the point),
/// the default body and session limits.
const CONFIG: &str =
    "[mcp.http]\nrate_per_minute = 1000000\nrate_burst = 100000\nmax_sessions = 256\n";

/// The mixed calls, cycled: (tool, arguments).
fn mix() -> Vec<(&'static str, Value)> {
    vec![
        ("read_project_file", json!({"filePath": "src/lib.rs"})),
        ("search_project_code", json!({"pattern": "fn "})),
        ("list_project_structure", json!({"depth": 2})),
        ("get_file_summary", json!({"filePath": "src/lib.rs"})),
        ("memory_recall", json!({"query": "error handling"})),
        ("search_knowledge", json!({"query": "ownership"})),
        (
            "guard_check_code",
            json!({"code": "fn f() { let x = y.unwrap(); }", "language": "rust"}),
        ),
        ("get_tool_details", json!({"toolName": "read_project_file"})),
    ]
}

#[derive(Debug, Serialize)]
pub struct ToolLatency {
    pub calls: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct McpHttpReport {
    pub sessions: usize,
    pub calls_per_session: usize,
    pub calls: usize,
    pub errors: usize,
    /// The first few error texts, to say what went wrong.
    pub error_samples: Vec<String>,
    pub wall_s: f64,
    pub calls_per_sec: f64,
    pub per_tool: BTreeMap<String, ToolLatency>,
    /// Server RSS (KiB) after startup, after the load, and its peak (VmHWM).
    pub rss_before_kib: u64,
    pub rss_after_kib: u64,
    pub rss_peak_kib: u64,
}

/// Writes a small Rust project to serve.
fn make_project(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::create_dir_all(dir.join(".alembic"))?;
    std::fs::write(dir.join(".alembic/config.toml"), CONFIG)?;
    std::fs::write(
        dir.join("README.md"),
        "# bench\nA project served over MCP HTTP.\n",
    )?;
    let mut lib = String::new();
    for i in 0..200 {
        lib.push_str(&format!(
            "/// Adds {i}.\npub fn add_{i}(x: i64) -> Result<i64, String> {{\n    x.checked_add({i}).ok_or_else(|| \"overflow\".to_string())\n}}\n\n"
        ));
    }
    std::fs::write(dir.join("src/lib.rs"), lib)?;
    Ok(())
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

// The benchmark starts its own binary as the server process so that the server's memory is
// measured apart from the clients'; it is not a command a tool runs.
#[expect(
    clippy::disallowed_methods,
    reason = "the benchmark spawns itself as the measured server process"
)]
fn spawn_server(project: &Path) -> Result<(Child, String)> {
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args(["mcp-http-serve", "--project"])
        .arg(project)
        .env("ALEMBIC_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start the benchmark's server process")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let Some(url) = line.trim().strip_prefix("listening ") else {
        let _ = child.kill();
        bail!("the server did not start: {line:?}");
    };
    Ok((child, url.to_string()))
}

/// Runs the load: `sessions` concurrent sessions × `calls` mixed calls each.
pub fn run(sessions: usize, calls: usize) -> Result<McpHttpReport> {
    let dir = tempfile::tempdir()?;
    make_project(dir.path())?;
    let store = alembic_mcp::TokenStore::open_project(dir.path())?;
    let tokens: Vec<String> = (0..sessions)
        .map(|i| {
            store
                .create(&format!("bench-{i:02}"), "ide", None)
                .map(|t| t.secret)
        })
        .collect::<Result<_, _>>()?;
    let (mut child, url) = spawn_server(dir.path())?;
    let pid = child.id();
    let rss_before_kib = rss_kib(pid, "VmRSS:");
    let tokio = tokio::runtime::Runtime::new()?;
    let started = Instant::now();
    let results = tokio.block_on(load(&url, tokens, calls));
    let wall = started.elapsed();
    let rss_after_kib = rss_kib(pid, "VmRSS:");
    let rss_peak_kib = rss_kib(pid, "VmHWM:");
    let _ = child.kill();
    let _ = child.wait();
    let results = results?;
    Ok(report(
        sessions,
        calls,
        results,
        wall,
        (rss_before_kib, rss_after_kib, rss_peak_kib),
    ))
}

/// One call's result: its tool, its latency, and the error if it failed.
type CallResult = (&'static str, Duration, Option<String>);

async fn load(url: &str, tokens: Vec<String>, calls: usize) -> Result<Vec<CallResult>> {
    let mut tasks = Vec::new();
    for token in tokens {
        let url = url.to_string();
        tasks.push(tokio::spawn(
            async move { session(&url, &token, calls).await },
        ));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok(all)
}

async fn session(url: &str, token: &str, calls: usize) -> Result<Vec<CallResult>> {
    let client = Session::open(url, token).await?;
    let mix = mix();
    let mut out = Vec::with_capacity(calls);
    for i in 0..calls {
        let (tool, args) = &mix[i % mix.len()];
        let body = json!({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        let t0 = Instant::now();
        let error = match client.request(&body).await {
            Ok(answer) if answer["result"]["isError"] == false => None,
            Ok(answer) => Some(format!("{tool}: {answer}")),
            Err(e) => Some(format!("{tool}: {e}")),
        };
        out.push((*tool, t0.elapsed(), error));
    }
    Ok(out)
}

struct Session {
    http: reqwest::Client,
    url: String,
    token: String,
    id: String,
}

impl Session {
    async fn open(url: &str, token: &str) -> Result<Session> {
        let mut s = Session {
            http: reqwest::Client::new(),
            url: url.to_string(),
            token: token.to_string(),
            id: String::new(),
        };
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "alembic-bench", "version": "1"}}});
        let resp = s.post(&init).send().await?;
        if !resp.status().is_success() {
            bail!("initialize: HTTP {}", resp.status());
        }
        s.id = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .context("initialize gave no session id")?
            .to_string();
        resp.bytes().await?;
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        s.post(&done).send().await?.error_for_status()?;
        Ok(s)
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_string());
        if !self.id.is_empty() {
            req = req.header("mcp-session-id", &self.id);
        }
        req
    }

    /// The answer to `body` (its id), read from the event stream of the response.
    async fn request(&self, body: &Value) -> Result<Value> {
        let resp = self.post(body).send().await?;
        let status = resp.status();
        let text = resp.text().await?;
        if !status.is_success() {
            bail!("HTTP {status}: {text}");
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m["id"] == body["id"])
            .context("no answer on the stream")
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn report(
    sessions: usize,
    calls: usize,
    results: Vec<CallResult>,
    wall: Duration,
    (rss_before_kib, rss_after_kib, rss_peak_kib): (u64, u64, u64),
) -> McpHttpReport {
    let mut by_tool: BTreeMap<String, Vec<Duration>> = BTreeMap::new();
    let mut error_samples = Vec::new();
    let mut errors = 0;
    for (tool, latency, error) in &results {
        by_tool.entry(tool.to_string()).or_default().push(*latency);
        if let Some(e) = error {
            errors += 1;
            if error_samples.len() < 5 {
                error_samples.push(e.chars().take(300).collect());
            }
        }
    }
    let per_tool = by_tool
        .into_iter()
        .map(|(tool, mut lat)| {
            lat.sort();
            let l = ToolLatency {
                calls: lat.len(),
                p50_ms: percentile(&lat, 0.5),
                p95_ms: percentile(&lat, 0.95),
            };
            (tool, l)
        })
        .collect();
    McpHttpReport {
        sessions,
        calls_per_session: calls,
        calls: results.len(),
        errors,
        error_samples,
        wall_s: wall.as_secs_f64(),
        calls_per_sec: results.len() as f64 / wall.as_secs_f64().max(1e-9),
        per_tool,
        rss_before_kib,
        rss_after_kib,
        rss_peak_kib,
    }
}

pub fn render(r: &McpHttpReport) -> String {
    let mut out = format!(
        "MCP over HTTP: {} sessions x {} calls = {} calls, {} errors, {:.1} s, {:.0} calls/s\n\n",
        r.sessions, r.calls_per_session, r.calls, r.errors, r.wall_s, r.calls_per_sec
    );
    out.push_str(&format!(
        "{:<24} {:>7} {:>10} {:>10}\n",
        "tool", "calls", "p50 ms", "p95 ms"
    ));
    for (tool, l) in &r.per_tool {
        out.push_str(&format!(
            "{tool:<24} {:>7} {:>10.2} {:>10.2}\n",
            l.calls, l.p50_ms, l.p95_ms
        ));
    }
    out.push_str(&format!(
        "\nserver RSS: {} KiB after startup, {} KiB after the load, peak {} KiB\n",
        r.rss_before_kib, r.rss_after_kib, r.rss_peak_kib
    ));
    for e in &r.error_samples {
        out.push_str(&format!("error: {e}\n"));
    }
    out
}

/// The server process: the project's runtime behind token authentication on a loopback port;
/// prints `listening <url>` and serves until killed.
pub fn serve(project: &Path) -> Result<()> {
    let runtime = Arc::new(alembic_runtime::ProjectRuntime::open(project)?);
    let server = alembic_mcp::AlembicServer::new(Arc::clone(&runtime), Some("ide"))?;
    let tokens = Arc::new(alembic_mcp::TokenStore::open_project(&runtime.root)?);
    let options = alembic_mcp::HttpOptions {
        limits: alembic_mcp::HttpLimits::from_config(&runtime.config.mcp.http),
        auth: Some(alembic_mcp::HttpAuth::new(Some(tokens), None, "ide")),
        ..alembic_mcp::HttpOptions::default()
    };
    let tokio = tokio::runtime::Runtime::new()?;
    tokio.block_on(async move {
        let endpoint = alembic_mcp::HttpEndpoint::bind("127.0.0.1:0".parse()?).await?;
        println!(
            "listening http://{}{}",
            endpoint.local_addr,
            alembic_mcp::MCP_PATH
        );
        endpoint
            .serve_with(server, options, CancellationToken::new())
            .await?;
        anyhow::Ok(())
    })
}
