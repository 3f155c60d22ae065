//! Deterministic `alembic bootstrap` wall time and peak memory, on this repository and on a
//! ~1,000-file real tree taken from the local cargo registry (`~/.cargo/registry/src/*/`).
//! Each tree is copied to a temporary directory first (bootstrap writes `.alembic/`), then
//! `alembic bootstrap --no-llm --json` runs on it; peak RSS is the child's `VmHWM`, sampled
//! every 10 ms from `/proc/<pid>/status` until it exits.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;

/// One measured bootstrap.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeRun {
    pub tree: String,
    pub source_files: usize,
    pub wall_ms: u64,
    /// Reported by the command itself (scan + index + dimensions).
    pub bootstrap_ms: u64,
    pub peak_rss_mb: f64,
    pub dimensions: usize,
    pub candidates: usize,
    pub memories: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub runs: Vec<TreeRun>,
    /// Trees that could not be measured, and why.
    pub missing: Vec<String>,
}

const SKIP_DIRS: &[&str] = &["target", ".git", ".alembic", "node_modules"];

fn is_source(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some(
            "rs" | "swift"
                | "m"
                | "py"
                | "ts"
                | "tsx"
                | "js"
                | "go"
                | "java"
                | "kt"
                | "c"
                | "h"
                | "cc"
                | "cpp"
        )
    )
}

/// Copies `from` into `to` (without build output and VCS data); returns the source files copied.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<usize> {
    std::fs::create_dir_all(to)?;
    let mut n = 0;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let name = e.file_name();
        let ty = e.file_type()?;
        if ty.is_dir() {
            if !SKIP_DIRS.iter().any(|s| name == *s) {
                n += copy_tree(&e.path(), &to.join(&name))?;
            }
        } else if ty.is_file() {
            std::fs::copy(e.path(), to.join(&name))?;
            n += usize::from(is_source(&e.path()));
        }
    }
    Ok(n)
}

pub(crate) fn count_sources(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => count_sources(&e.path()),
            Ok(t) if t.is_file() => usize::from(is_source(&e.path())),
            _ => 0,
        })
        .sum()
}

/// Crates of the local cargo registry, largest first, until they hold `target` source files.
pub fn registry_tree(target: usize) -> Option<Vec<(PathBuf, usize)>> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let mut crates: Vec<(PathBuf, usize)> = std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|c| (c.path(), count_sources(&c.path())))
        .filter(|(_, n)| *n > 0)
        .collect();
    crates.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut picked = Vec::new();
    let mut total = 0;
    for c in crates {
        if total >= target {
            break;
        }
        total += c.1;
        picked.push(c);
    }
    (total >= target / 2).then_some(picked)
}

pub(crate) fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

// The benchmark measures the alembic process itself (wall time, peak RSS from /proc), so it
// spawns the binary directly; the spawn rules are for commands that tools run.
#[expect(
    clippy::disallowed_methods,
    reason = "the benchmark measures the alembic binary's own process"
)]
fn command(alembic: &Path) -> Command {
    Command::new(alembic)
}

/// Runs `alembic bootstrap --no-llm --json` on `project` and measures it.
pub fn measure(alembic: &Path, project: &Path, tree: &str, source_files: usize) -> Result<TreeRun> {
    let started = Instant::now();
    let mut child = command(alembic)
        .args(["bootstrap", "--no-llm", "--json", "--project"])
        .arg(project)
        .env("ALEMBIC_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot run {}", alembic.display()))?;
    let mut peak = 0;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        peak = peak.max(vm_hwm_kb(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(10));
    };
    let wall_ms = alembic_base::millis(started.elapsed());
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        s.read_to_string(&mut out)?;
    }
    if !status.success() {
        bail!("alembic bootstrap failed on {tree}: {status}");
    }
    let v: serde_json::Value = serde_json::from_str(&out).context("bootstrap --json output")?;
    let len = |k: &str| v[k].as_array().map_or(0, Vec::len);
    Ok(TreeRun {
        tree: tree.to_string(),
        source_files,
        wall_ms,
        bootstrap_ms: v["elapsedMs"].as_u64().unwrap_or(0),
        peak_rss_mb: peak as f64 / 1024.0,
        dimensions: len("dimensions"),
        candidates: len("candidates"),
        memories: v["memories"].as_u64().unwrap_or(0),
    })
}

/// Measures this repository (`repo`) and a registry tree of about `target_files` sources.
pub fn run(alembic: &Path, repo: &Path, target_files: usize) -> Result<Report> {
    let tmp = std::env::temp_dir().join(format!("alembic-bench-bootstrap-{}", std::process::id()));
    let mut runs = Vec::new();
    let mut missing = Vec::new();
    let copy = tmp.join("repo");
    let n = copy_tree(repo, &copy)?;
    runs.push(measure(
        alembic,
        &copy,
        &format!("this repository ({})", repo.display()),
        n,
    )?);
    match registry_tree(target_files) {
        Some(crates) => {
            let dest = tmp.join("registry");
            let mut n = 0;
            for (c, _) in &crates {
                let name = c.file_name().map(|s| s.to_os_string()).unwrap_or_default();
                n += copy_tree(c, &dest.join(name))?;
            }
            let names: Vec<String> = crates
                .iter()
                .filter_map(|(c, _)| c.file_name().map(|s| s.to_string_lossy().into_owned()))
                .collect();
            runs.push(measure(alembic, &dest, &format!("cargo registry: {}", names.join(" + ")), n)?);
        }
        None => missing.push(format!(
            "no cargo registry tree with ~{target_files} source files under $CARGO_HOME/registry/src (fetch some crates, e.g. `cargo fetch`)"
        )),
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(Report { runs, missing })
}

pub fn render(r: &Report) -> String {
    let mut out = format!(
        "{:<60} {:>6} {:>9} {:>9} {:>9} {:>5} {:>6}\n",
        "tree", "files", "wall ms", "run ms", "peak MB", "dims", "cands"
    );
    for t in &r.runs {
        out.push_str(&format!(
            "{:<60} {:>6} {:>9} {:>9} {:>9.1} {:>5} {:>6}\n",
            t.tree.chars().take(60).collect::<String>(),
            t.source_files,
            t.wall_ms,
            t.bootstrap_ms,
            t.peak_rss_mb,
            t.dimensions,
            t.candidates
        ));
    }
    for m in &r.missing {
        out.push_str(&format!("MISSING: {m}\n"));
    }
    out
}
