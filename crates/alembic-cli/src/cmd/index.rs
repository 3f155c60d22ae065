//! `alembic index`: build or refresh the code index of a project.
//!
//! It refreshes the index (scan, parse, write), which after a small change costs a walk and
//! a few parses; after a first, forced or large refresh it also recomputes every file's
//! module-topology row (graph), so the next topology query only sums rows (a small change
//! leaves the few rows it reaches to that query). `--graph` prints the totals, modules,
//! layers, cycles and entry points those rows sum to.

use std::time::Instant;

use alembic_runtime::ProjectConfig;
use alembic_runtime::code::service::ProjectTopology;
use alembic_runtime::code::topology_rows::FOCUSED_FILES;
use alembic_runtime::code::{CodeIndex, IndexPhase, IndexReport, Progress, ProjectStats};
use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use crate::exit::Exit;
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Args)]
pub struct IndexArgs {
    #[command(flatten)]
    pub project: ProjectArgs,
    /// Print the result as JSON on stdout (no progress bar)
    #[arg(long)]
    pub json: bool,
    /// Also print the project's totals, modules, layers, cycles and entry points (from the
    /// module-topology rows, brought up to date first)
    #[arg(long)]
    pub graph: bool,
}

pub fn run(args: IndexArgs) -> CmdResult {
    let root = &args.project.project;
    alembic_runtime::project_guard::require_project(root)?;
    let config = ProjectConfig::load(root)?;
    let started = Instant::now();
    let mut index = CodeIndex::open(root)
        .with_context(|| format!("cannot open the code index of {}", root.display()))?;
    index.set_max_file_bytes(config.index.max_file_bytes());
    let bar = progress_bar(args.json);
    let report = index
        .refresh(&|event| match event {
            Progress::Phase(phase) => bar.set_prefix(phase.name()),
            Progress::Walked { to_check, .. } => {
                bar.set_length(to_check as u64);
                bar.reset_eta();
            }
            Progress::Checked => bar.inc(1),
        })
        .context("indexing failed")?;
    let graph = if args.graph || index.topology_outdated()? {
        bar.set_prefix(IndexPhase::Graph.name());
        let topology = index
            .topology(FOCUSED_FILES)
            .context("cannot compute the module topology")?;
        match args.graph {
            true => Some((topology, index.project_stats()?)),
            false => None,
        }
    } else {
        None
    };
    bar.finish_and_clear();
    let elapsed = started.elapsed();
    let per_second = report.parsed as f64 / elapsed.as_secs_f64().max(0.001);
    if args.json {
        print_json(&report, graph.as_ref(), elapsed, per_second)?;
        return Ok(Exit::Ok);
    }
    print_text(&report, graph.as_ref(), elapsed, per_second);
    Ok(Exit::Ok)
}

fn print_text(
    report: &IndexReport,
    graph: Option<&(ProjectTopology, ProjectStats)>,
    elapsed: std::time::Duration,
    per_second: f64,
) {
    println!(
        "indexed {} files in {:.2} s ({per_second:.0} files/s): {} parsed, {} touched, {} unchanged, {} removed, {} skipped",
        report.files,
        elapsed.as_secs_f64(),
        report.parsed,
        report.touched,
        report.unchanged,
        report.removed,
        report.skipped.len()
    );
    if let Some((graph, _)) = graph {
        print_graph(graph);
    }
    for s in report.skipped.iter().take(10) {
        println!("skipped {}: {}", s.path, s.reason);
    }
    if report.skipped.len() > 10 {
        println!(
            "… {} more skipped (use --json for the full list)",
            report.skipped.len() - 10
        );
    }
}

fn print_json(
    report: &IndexReport,
    graph: Option<&(ProjectTopology, ProjectStats)>,
    elapsed: std::time::Duration,
    per_second: f64,
) -> anyhow::Result<()> {
    let mut out = json!({
        "report": report,
        "filesPerSecond": per_second.round(),
        "elapsedMs": elapsed.as_millis() as u64,
    });
    if let Some((graph, stats)) = graph {
        out["totals"] = json!(graph.totals);
        out["languages"] = json!(stats.languages);
        out["modules"] = json!(graph.modules.modules.len());
        out["layers"] = json!(graph.modules.layers());
        out["cycles"] = json!(graph.modules.cycles());
        out["entryPoints"] = json!(graph.entry_points);
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

fn print_graph(graph: &ProjectTopology) {
    let t = &graph.totals;
    println!(
        "graph: {} classes, {} structs, {} enums, {} protocols, {} extensions, {} methods, {} functions, {} call edges ({} resolved)",
        t.classes,
        t.structs,
        t.enums,
        t.protocols,
        t.extensions,
        t.methods,
        t.functions,
        t.call_edges,
        t.resolved_call_edges
    );
    println!(
        "modules: {} in {} layers, {} dependency cycles; {} entry points",
        graph.modules.modules.len(),
        graph.modules.layers().len(),
        graph.modules.cycles().len(),
        graph.entry_points.len()
    );
}

/// A bar on stderr while files are read; hidden for `--json` and when stderr is not a
/// terminal (indicatif's default draw target checks that).
fn progress_bar(hidden: bool) -> ProgressBar {
    if hidden {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} {prefix}: {pos}/{len} files, {per_sec} {wide_bar} {eta}",
    ) {
        bar.set_style(style);
    }
    bar
}
