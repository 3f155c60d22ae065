//! The rows measured on the `alembic` binary: each command is a child process whose wall
//! time, CPU time and peak RSS (`VmHWM`) are sampled from `/proc` every 10 ms; the MCP rows
//! talk to one `alembic mcp` server over stdio.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::{
    Report, Run, edit_one_file, indexed_paths, label, median, mix_key, ms, pick_classes,
    pick_method, query_mix, whole_project_queries,
};
use crate::mcp::{answer, command, handshake, send, spawn_server};

/// Clock ticks per second of `/proc/<pid>/stat` (`USER_HZ`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// `utime + stime` of a process (`self` or a pid) in milliseconds.
pub(super) fn cpu_ms_of(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks * 1000.0 / TICKS_PER_SECOND)
}

fn rss_mb_of(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Runs `alembic <args> --project <root>` and measures it; returns the run and its stdout.
fn run_alembic(alembic: &Path, root: &Path, args: &[&str]) -> Result<(Run, String)> {
    let started = Instant::now();
    let mut child = command(alembic)
        .args(args)
        .arg("--project")
        .arg(root)
        .env("ALEMBIC_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot run {}", alembic.display()))?;
    let mut stdout = child.stdout.take().context("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).map(|_| out)
    });
    let pid = child.id();
    let (mut peak_kb, mut cpu) = (0, None);
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        peak_kb = peak_kb.max(crate::bootstrap::vm_hwm_kb(pid).unwrap_or(0));
        cpu = cpu_ms_of(&pid.to_string()).or(cpu);
        std::thread::sleep(Duration::from_millis(10));
    };
    let wall_ms = ms(started.elapsed());
    let out = reader
        .join()
        .map_err(|_| anyhow::anyhow!("stdout reader panicked"))??;
    if !status.success() {
        bail!("alembic {} failed: {status}\n{out}", args.join(" "));
    }
    let run = Run {
        wall_ms,
        cpu_ms: cpu,
        peak_rss_mb: Some(peak_kb as f64 / 1024.0),
    };
    Ok((run, out))
}

fn tool_call(id: i64, name: &str, args: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": args}})
}

pub(super) fn measure(alembic: &Path, root: &Path, queries: usize) -> Result<Report> {
    let (full_index, _) = run_alembic(alembic, root, &["index", "--json"])?;
    let paths = indexed_paths(root, 1000)?;
    let Some(edited) = paths.first() else {
        bail!("nothing was indexed");
    };
    edit_one_file(root, edited, 0)?;
    let (one_file_reindex, _) = run_alembic(alembic, root, &["index", "--json"])?;
    let classes = pick_classes(root, 20)?;
    let class = json!({"className": classes[0]});
    let (cold_query, _) = run_alembic(
        alembic,
        root,
        &[
            "tools",
            "call",
            "get_class_hierarchy",
            "--args",
            &class.to_string(),
        ],
    )?;
    let whole = whole_project_queries(&classes[0], &pick_method(root)?);
    let mut cold_whole_project = Vec::new();
    for (name, args) in &whole {
        let (run, _) = run_alembic(
            alembic,
            root,
            &["tools", "call", name, "--args", &args.to_string()],
        )?;
        cold_whole_project.push((label(name, args), run));
    }
    let mut report = Report {
        mode: "process",
        full_index,
        one_file_reindex,
        class_name: classes[0].clone(),
        cold_query,
        cold_whole_project,
        mixed_queries: queries,
        ..Report::default()
    };
    mcp_rows(alembic, root, &classes, &paths, &whole, &mut report)?;
    Ok(report)
}

/// First and later graph query, memory after the mix, and search against `rg`.
fn mcp_rows(
    alembic: &Path,
    root: &Path,
    classes: &[String],
    paths: &[String],
    whole: &[(&'static str, Value)],
    report: &mut Report,
) -> Result<()> {
    let (mut child, mut stdin, mut stdout) = spawn_server(alembic, root)?;
    handshake(&mut stdin, &mut stdout)?;
    let mut id = 100;
    let mut call = |name: &str, args: &Value| -> Result<f64> {
        id += 1;
        let started = Instant::now();
        send(&mut stdin, &tool_call(id, name, args))?;
        let a = answer(&mut stdout, id)?;
        if a["result"]["isError"] != false {
            bail!("{name} failed: {a}");
        }
        Ok(ms(started.elapsed()))
    };
    let class = json!({"className": classes[0]});
    report.first_query_ms = call("get_class_hierarchy", &class)?;
    let later: Vec<f64> = (0..5)
        .map(|_| call("get_class_hierarchy", &class))
        .collect::<Result<_>>()?;
    report.later_query_ms_p50 = median(later);
    let mix = query_mix(classes, paths, whole);
    let mut times: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (name, args) in mix.iter().cycle().take(report.mixed_queries) {
        let took = call(name, args)?;
        times.entry(mix_key(name, args)).or_default().push(took);
    }
    report.mix_p50_ms = times.into_iter().map(|(k, v)| (k, median(v))).collect();
    report.rss_after_queries_mb = rss_mb_of(child.id());
    // Ours and rg interleaved, so both see the same load and page cache; medians.
    let pattern = "impl Default for";
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..SEARCH_ROUNDS {
        ours.push(call(
            "search_project_code",
            &json!({"pattern": pattern, "maxResults": 200}),
        )?);
        match rg_ms(root, pattern) {
            Ok(t) => theirs.push(t),
            Err(e) => {
                report.missing.push(format!("rg baseline: {e}"));
                break;
            }
        }
    }
    report.search_ms = Some(median(ours));
    report.rg_ms = (!theirs.is_empty()).then(|| median(theirs));
    drop(stdin);
    child.wait()?;
    Ok(())
}

/// Rounds of the search comparison (ours and rg alternate).
const SEARCH_ROUNDS: usize = 7;

/// `rg` with the rules `search_project_code` follows: case-insensitive, hidden and ignored
/// files skipped, files over 1 MiB skipped, the walker's vendored directories excluded,
/// line numbers. (Without `-i` rg takes its exact-literal fast path, which a
/// case-insensitive search cannot, and the ratio compared different work.)
#[expect(
    clippy::disallowed_methods,
    reason = "the baseline is the rg binary itself, timed as a process"
)]
fn rg_ms(root: &Path, pattern: &str) -> Result<f64> {
    let mut rg = std::process::Command::new("rg");
    rg.args(["-i", "-n", "--max-filesize", "1M", "-F"]);
    for dir in alembic_code::walk::VENDORED_DIRS {
        rg.arg("-g").arg(format!("!{dir}/"));
    }
    let started = Instant::now();
    let status = rg
        .arg("-e")
        .arg(pattern)
        .arg(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("rg is not installed")?;
    if status.code().is_some_and(|c| c > 1) {
        bail!("rg failed: {status}");
    }
    Ok(ms(started.elapsed()))
}
