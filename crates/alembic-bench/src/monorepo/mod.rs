//! Code intelligence at monorepo scale (issue 17): the sources of the local cargo registry
//! (`~/.cargo/registry/src/*/`, about 23,500 files), copied to a temporary directory and
//! `git init`ed, then measured row by row:
//!
//! - full `alembic index`: wall, CPU, peak RSS, database size;
//! - `alembic index` after one file changed: wall, peak RSS;
//! - one cold `alembic tools call get_class_hierarchy`: wall, peak RSS; and one cold call of
//!   each whole-project query ([`whole_project_queries`]: overview, hierarchy and category map
//!   without a name, semantic search, call graph, code graph search, impact and topology);
//! - `alembic mcp`: first and later graph query latency, resident memory after a mix of
//!   queries (type queries, file summaries, searches and the whole-project queries), and the
//!   median latency of each tool in that mix;
//! - `search_project_code` (through the MCP server) against `rg` with the same rules
//!   (case-insensitive, same skipped files) on the same tree: medians of 7 interleaved
//!   rounds, a ratio measured in the same run, as the conventions ask.
//!
//! With an `alembic` binary every row is measured on that process ([`process`]); peak RSS is
//! the child's `VmHWM`, CPU its `utime + stime`, sampled from `/proc` every 10 ms. Without
//! one (the debug test), the library rows are measured in this process instead ([`library`]):
//! full and one-file index, cold and warm focused queries, resident memory after the mix.

mod library;
mod process;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;

/// What to measure on.
#[derive(Debug, Clone)]
pub struct Options {
    /// Source tree to copy; `None`: every crate of the local cargo registry.
    pub tree: Option<PathBuf>,
    /// Stop copying registry crates (largest first) once this many source files are in.
    pub max_files: Option<usize>,
    /// The `alembic` binary; `None` measures the library in this process.
    pub alembic: Option<PathBuf>,
    /// Queries in the mixed-query row.
    pub queries: usize,
}

/// One measured run (a child process, or a span of this one).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub wall_ms: f64,
    pub cpu_ms: Option<f64>,
    pub peak_rss_mb: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub tree: String,
    pub source_files: usize,
    /// `process` (the alembic binary) or `library` (this process).
    pub mode: &'static str,
    pub full_index: Run,
    pub database_mb: f64,
    pub one_file_reindex: Run,
    /// The class the graph queries ask about (a unique name with many subclasses).
    pub class_name: String,
    pub cold_query: Run,
    /// One cold call of each whole-project query: (tool and arguments, run).
    pub cold_whole_project: Vec<(String, Run)>,
    pub first_query_ms: f64,
    pub later_query_ms_p50: f64,
    pub mixed_queries: usize,
    pub rss_after_queries_mb: Option<f64>,
    /// Median latency of each tool in the mixed queries (MCP, or in process).
    pub mix_p50_ms: BTreeMap<String, f64>,
    pub search_ms: Option<f64>,
    pub rg_ms: Option<f64>,
    /// Rows that could not be measured, and why.
    pub missing: Vec<String>,
}

/// Copies the tree, indexes and measures it; the copy is removed afterwards.
pub fn run(options: &Options) -> Result<Report> {
    let tmp = tempfile::tempdir()?;
    let copy = tmp.path().join("tree");
    let (label, files) = prepare_tree(options, &copy)?;
    let mut report = match &options.alembic {
        Some(alembic) => process::measure(alembic, &copy, options.queries)?,
        None => library::measure(&copy, options.queries)?,
    };
    report.tree = label;
    report.source_files = files;
    report.database_mb = database_mb(&copy);
    Ok(report)
}

/// Copies the chosen tree into `to` and `git init`s it; returns its label and source files.
fn prepare_tree(options: &Options, to: &Path) -> Result<(String, usize)> {
    let (label, files) = match &options.tree {
        Some(tree) => (
            tree.display().to_string(),
            crate::bootstrap::copy_tree(tree, to)?,
        ),
        None => copy_registry(options.max_files.unwrap_or(usize::MAX), to)?,
    };
    if files == 0 {
        bail!("the tree to measure has no source files");
    }
    // A real checkout is a git repository; without git the walker behaves the same.
    let _ = git_init(to);
    Ok((label, files))
}

fn copy_registry(max_files: usize, to: &Path) -> Result<(String, usize)> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    let registry = home.join("registry/src");
    let mut crates: Vec<(PathBuf, usize)> = std::fs::read_dir(&registry)
        .with_context(|| format!("no cargo registry sources at {}", registry.display()))?
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|c| (c.path(), crate::bootstrap::count_sources(&c.path())))
        .filter(|(_, n)| *n > 0)
        .collect();
    crates.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let (mut files, mut count) = (0, 0);
    for (path, _) in crates {
        if files >= max_files {
            break;
        }
        let name = path
            .file_name()
            .map(|s| s.to_os_string())
            .unwrap_or_default();
        files += crate::bootstrap::copy_tree(&path, &to.join(name))?;
        count += 1;
    }
    Ok((format!("cargo registry ({count} crates)"), files))
}

#[expect(
    clippy::disallowed_methods,
    reason = "the benchmark prepares its tree with git, outside any tool call"
)]
fn git_init(dir: &Path) -> std::io::Result<std::process::ExitStatus> {
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
}

fn database_mb(root: &Path) -> f64 {
    let db = alembic_store::project_db_path(root);
    let wal = db.with_extension("db-wal");
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    (size(&db) + size(&wal)) as f64 / (1024.0 * 1024.0)
}

/// Changes one indexed source file's content (a comment at its end), as an editor save
/// would.
fn edit_one_file(root: &Path, rel: &str, round: usize) -> Result<()> {
    let path = root.join(rel);
    let mut text = std::fs::read_to_string(&path)?;
    text.push_str(&format!("\n// alembic-bench edit {round}\n"));
    std::fs::write(&path, text)?;
    Ok(())
}

/// A class to ask about: a simple name declared in one file only, with the most types
/// naming it as a parent; and a few more for the mix. Read from the index's rows.
fn pick_classes(root: &Path, n: usize) -> Result<Vec<String>> {
    let conn = alembic_store::open_project(root)?;
    let mut stmt = conn.prepare(
        "select p.parent from code_parents p
         join (select name from code_decls group by name having count(distinct path) = 1) d
           on d.name = p.parent
         group by p.parent order by count(*) desc, p.parent limit ?1",
    )?;
    let names = stmt
        .query_map([i64::try_from(n).unwrap_or(i64::MAX)], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    if names.is_empty() {
        bail!("the tree declares no class with a subclass");
    }
    Ok(names)
}

/// Indexed paths, in order (for the one-file edit and the file-summary queries).
fn indexed_paths(root: &Path, n: usize) -> Result<Vec<String>> {
    let conn = alembic_store::open_project(root)?;
    let mut stmt = conn.prepare("select path from code_files order by path limit ?1")?;
    let paths = stmt
        .query_map([i64::try_from(n).unwrap_or(i64::MAX)], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(paths)
}

/// The mixed queries: (tool, arguments), cycled. Every class brings its type queries, a
/// file summary and a search; every fifth also one whole-project query, in turn.
fn query_mix(
    classes: &[String],
    paths: &[String],
    whole: &[(&'static str, serde_json::Value)],
) -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    let mut mix = Vec::new();
    for (i, class) in classes.iter().enumerate() {
        mix.push(("get_class_hierarchy", json!({"className": class})));
        mix.push(("get_class_info", json!({"className": class})));
        mix.push(("get_category_map", json!({"className": class})));
        if let Some(path) = paths.get(i * 7 % paths.len().max(1)) {
            mix.push(("get_file_summary", json!({"filePath": path})));
        }
        mix.push((
            "search_project_code",
            json!({"pattern": class, "maxResults": 20}),
        ));
        if i % 5 == 0 {
            mix.extend(whole.get(i / 5 % whole.len().max(1)).cloned());
        }
    }
    mix
}

/// The queries over the whole project (issue 17 item 1), about `class` and `method` (a
/// `Type.method` key of the tree).
fn whole_project_queries(class: &str, method: &str) -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    vec![
        ("get_project_overview", json!({})),
        ("get_class_hierarchy", json!({})),
        ("get_category_map", json!({})),
        (
            "semantic_search_code",
            json!({"query": format!("{class} {method}")}),
        ),
        ("query_call_graph", json!({"methodName": method})),
        (
            "query_code_graph",
            json!({"action": "search", "entity_id": class}),
        ),
        (
            "query_code_graph",
            json!({"action": "impact", "entity_id": class}),
        ),
        ("query_code_graph", json!({"action": "topology"})),
    ]
}

/// A method key (`Type.method`) of the tree, from the stored chunks.
fn pick_method(root: &Path) -> Result<String> {
    let conn = alembic_store::open_project(root)?;
    conn.query_row(
        "select symbol from code_chunks where kind = 'method' order by path, seq limit 1",
        [],
        |r| r.get(0),
    )
    .context("the tree has no method")
}

/// The tool a mixed query's latency is counted under: its name, with the action for
/// `query_code_graph` and `(whole project)` for those without a class name.
fn mix_key(name: &str, args: &serde_json::Value) -> String {
    match (args["action"].as_str(), args.get("className")) {
        (Some(action), _) => format!("{name} {action}"),
        (None, None) if matches!(name, "get_class_hierarchy" | "get_category_map") => {
            format!("{name} (whole project)")
        }
        _ => name.to_string(),
    }
}

/// A label for a query in the report: the tool and its arguments.
fn label(name: &str, args: &serde_json::Value) -> String {
    format!("{name} {args}")
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    crate::mcp::percentile(&v, 0.5)
}

pub fn render(r: &Report) -> String {
    let mb = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.0} MB"));
    let cpu =
        |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{:.1} s", v / 1000.0));
    let mut out = format!(
        "monorepo: {} — {} source files ({} mode)\n",
        r.tree, r.source_files, r.mode
    );
    let rows = [
        format!(
            "full index: {:.1} s wall, {} CPU, peak RSS {}, database {:.0} MB (goal ≤ 30 s, ≤ 1 GB)",
            r.full_index.wall_ms / 1000.0,
            cpu(r.full_index.cpu_ms),
            mb(r.full_index.peak_rss_mb),
            r.database_mb
        ),
        format!(
            "index after one changed file: {:.0} ms, peak RSS {} (goal ≤ 1 s)",
            r.one_file_reindex.wall_ms,
            mb(r.one_file_reindex.peak_rss_mb)
        ),
        format!(
            "cold get_class_hierarchy {}: {:.0} ms, peak RSS {} (goal ≤ 300 ms, ≤ 300 MB)",
            r.class_name,
            r.cold_query.wall_ms,
            mb(r.cold_query.peak_rss_mb)
        ),
        format!(
            "graph query: first {:.0} ms, later p50 {:.1} ms",
            r.first_query_ms, r.later_query_ms_p50
        ),
        format!(
            "resident memory after {} mixed queries: {} (goal ≤ 500 MB)",
            r.mixed_queries,
            mb(r.rss_after_queries_mb)
        ),
    ];
    for row in rows {
        out.push_str(&format!("  {row}\n"));
    }
    for (query, run) in &r.cold_whole_project {
        out.push_str(&format!(
            "  cold {query}: {:.0} ms, peak RSS {}\n",
            run.wall_ms,
            mb(run.peak_rss_mb)
        ));
    }
    if !r.mix_p50_ms.is_empty() {
        let each: Vec<String> = r
            .mix_p50_ms
            .iter()
            .map(|(tool, p50)| format!("{tool} {p50:.1}"))
            .collect();
        out.push_str(&format!("  mixed queries, p50 ms: {}\n", each.join(", ")));
    }
    if let (Some(s), Some(rg)) = (r.search_ms, r.rg_ms) {
        out.push_str(&format!(
            "  search_project_code {s:.0} ms vs rg -i {rg:.0} ms (medians): ratio {:.2} (goal ≤ 1.2)\n",
            s / rg
        ));
    }
    for m in &r.missing {
        out.push_str(&format!("  not measured: {m}\n"));
    }
    out
}
