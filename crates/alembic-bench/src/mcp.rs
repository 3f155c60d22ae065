//! `alembic mcp` over stdio, as an IDE launches it: time from spawn to the first `tools/list`
//! answer, and calls per second for a cheap tool (`get_tool_details`, audited like any call).
//!
//! Baseline in the same run: spawning `alembic --version` (process start and exit, no project,
//! no MCP), so the startup figure can be read as a ratio on a noisy machine. The 1-minute load
//! average before and after the run is reported too, for the same reason.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::{Value, json};

#[derive(Debug, Serialize)]
pub struct McpReport {
    pub spawns: usize,
    pub startup_ms_p50: f64,
    pub startup_ms_p95: f64,
    pub startup_ms_min: f64,
    pub startup_ms_max: f64,
    pub bare_spawn_ms_p50: f64,
    pub sequential_calls: usize,
    pub sequential_call_ms_mean: f64,
    pub sequential_calls_per_sec: f64,
    pub pipelined_calls: usize,
    pub pipelined_calls_per_sec: f64,
    /// 1-minute load average (`/proc/loadavg`) before and after; `None` where there is none.
    pub load_before: Option<f64>,
    pub load_after: Option<f64>,
}

fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

// The benchmark's subject is process startup itself, so it spawns the alembic binary directly
// with piped stdio; the tool runtime's spawn rules (cwd, env allow-list, timeout) are for
// commands that tools run, which this is not.
#[expect(
    clippy::disallowed_methods,
    reason = "the benchmark measures spawning the alembic binary over piped stdio"
)]
pub(crate) fn command(alembic: &Path) -> std::process::Command {
    std::process::Command::new(alembic)
}

pub(crate) fn spawn_server(
    alembic: &Path,
    project: &Path,
) -> Result<(Child, ChildStdin, BufReader<ChildStdout>)> {
    let mut child = command(alembic)
        .args(["mcp", "--project"])
        .arg(project)
        .env("ALEMBIC_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", alembic.display()))?;
    let stdin = child.stdin.take().context("no stdin")?;
    let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
    Ok((child, stdin, stdout))
}

pub(crate) fn send(stdin: &mut ChildStdin, msg: &Value) -> Result<()> {
    writeln!(stdin, "{msg}")?;
    stdin.flush()?;
    Ok(())
}

/// Reads lines until the answer with `id`.
pub(crate) fn answer(stdout: &mut BufReader<ChildStdout>, id: i64) -> Result<Value> {
    let mut line = String::new();
    loop {
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            bail!("alembic mcp closed its output before answering {id}");
        }
        let v: Value = serde_json::from_str(&line)?;
        if v["id"] == json!(id) {
            return Ok(v);
        }
    }
}

pub(crate) fn handshake(
    stdin: &mut ChildStdin,
    stdout: &mut BufReader<ChildStdout>,
) -> Result<Value> {
    send(
        stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "alembic-bench", "version": "0"}}}),
    )?;
    send(
        stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )?;
    send(
        stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )?;
    answer(stdout, 2)
}

fn cheap_call(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "get_tool_details", "arguments": {"toolName": "plan_task"}}})
}

fn startup_once(alembic: &Path, project: &Path) -> Result<Duration> {
    let started = Instant::now();
    let (mut child, mut stdin, mut stdout) = spawn_server(alembic, project)?;
    let list = handshake(&mut stdin, &mut stdout)?;
    let elapsed = started.elapsed();
    if list["result"]["tools"].as_array().is_none_or(Vec::is_empty) {
        bail!("tools/list returned no tools: {list}");
    }
    drop(stdin);
    child.wait()?;
    Ok(elapsed)
}

fn bare_spawn_once(alembic: &Path) -> Result<Duration> {
    let started = Instant::now();
    let status = command(alembic)
        .arg("--version")
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("alembic --version failed");
    }
    Ok(started.elapsed())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

/// Runs the benchmark against the `alembic` binary on `project`.
pub fn run(alembic: &Path, project: &Path, spawns: usize, calls: usize) -> Result<McpReport> {
    let load_before = load_average();
    let mut startup: Vec<f64> = Vec::new();
    let mut bare: Vec<f64> = Vec::new();
    for _ in 0..spawns.max(1) {
        bare.push(ms(bare_spawn_once(alembic)?));
        startup.push(ms(startup_once(alembic, project)?));
    }
    startup.sort_by(f64::total_cmp);
    bare.sort_by(f64::total_cmp);

    let (mut child, mut stdin, mut stdout) = spawn_server(alembic, project)?;
    handshake(&mut stdin, &mut stdout)?;
    let sequential = calls.clamp(1, 500);
    let started = Instant::now();
    for id in 0..sequential as i64 {
        send(&mut stdin, &cheap_call(1000 + id))?;
        let a = answer(&mut stdout, 1000 + id)?;
        if a["result"]["isError"] != false {
            bail!("the cheap call failed: {a}");
        }
    }
    let sequential_ms = ms(started.elapsed()) / sequential as f64;

    let started = Instant::now();
    let writer = std::thread::spawn(move || -> Result<ChildStdin> {
        for id in 0..calls as i64 {
            writeln!(stdin, "{}", cheap_call(100_000 + id))?;
        }
        stdin.flush()?;
        Ok(stdin)
    });
    let mut line = String::new();
    let mut answered = 0;
    while answered < calls {
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            bail!("alembic mcp stopped after {answered} of {calls} pipelined calls");
        }
        let a: Value = serde_json::from_str(&line)?;
        if a["result"]["isError"] != false {
            bail!("a pipelined cheap call failed: {a}");
        }
        answered += 1;
    }
    let per_sec = calls as f64 / started.elapsed().as_secs_f64();
    let stdin = writer
        .join()
        .map_err(|_| anyhow::anyhow!("writer thread panicked"))??;
    drop(stdin);
    child.wait()?;

    Ok(McpReport {
        spawns: startup.len(),
        startup_ms_p50: percentile(&startup, 0.5),
        startup_ms_p95: percentile(&startup, 0.95),
        startup_ms_min: startup.first().copied().unwrap_or(f64::NAN),
        startup_ms_max: startup.last().copied().unwrap_or(f64::NAN),
        bare_spawn_ms_p50: percentile(&bare, 0.5),
        sequential_calls: sequential,
        sequential_call_ms_mean: sequential_ms,
        sequential_calls_per_sec: 1000.0 / sequential_ms,
        pipelined_calls: calls,
        pipelined_calls_per_sec: per_sec,
        load_before,
        load_after: load_average(),
    })
}

pub fn render(r: &McpReport) -> String {
    let load = |l: Option<f64>| l.map_or_else(|| "unknown".to_string(), |l| format!("{l:.2}"));
    format!(
        "alembic mcp over stdio ({} spawns)\n\
         spawn → first tools/list answer: p50 {:.1} ms, p95 {:.1} ms (min {:.1}, max {:.1}); goal ≤ 100 ms\n\
         baseline `alembic --version` spawn: p50 {:.1} ms (ratio {:.2})\n\
         cheap tool (get_tool_details), one at a time: {:.3} ms per call, {:.0} calls/s over {} calls\n\
         cheap tool, {} calls pipelined: {:.0} calls/s\n\
         load average (1 min): {} before, {} after\n",
        r.spawns,
        r.startup_ms_p50,
        r.startup_ms_p95,
        r.startup_ms_min,
        r.startup_ms_max,
        r.bare_spawn_ms_p50,
        r.startup_ms_p50 / r.bare_spawn_ms_p50,
        r.sequential_call_ms_mean,
        r.sequential_calls_per_sec,
        r.sequential_calls,
        r.pipelined_calls,
        r.pipelined_calls_per_sec,
        load(r.load_before),
        load(r.load_after),
    )
}
