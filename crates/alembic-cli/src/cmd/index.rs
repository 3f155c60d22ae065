//! `alembic index`: build or refresh the code index of a project.

use std::time::Instant;

use alembic_runtime::code::{CodeIndex, Progress};
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
}

pub fn run(args: IndexArgs) -> CmdResult {
    let root = &args.project.project;
    if !root.is_dir() {
        anyhow::bail!(crate::exit::UsageError(format!(
            "project directory {} does not exist",
            root.display()
        )));
    }
    let started = Instant::now();
    let mut index = CodeIndex::open(root)
        .with_context(|| format!("cannot open the code index of {}", root.display()))?;
    let bar = progress_bar(args.json);
    let report = index
        .refresh(&|event| match event {
            Progress::Walked { to_check, .. } => bar.set_length(to_check as u64),
            Progress::Checked => bar.inc(1),
        })
        .context("indexing failed")?;
    bar.finish_and_clear();
    let graph = index.graph();
    let elapsed = started.elapsed();
    if args.json {
        let layers = graph.modules.layers();
        let out = json!({
            "report": report,
            "totals": graph.totals,
            "languages": graph.languages,
            "modules": graph.modules.modules.len(),
            "layers": layers,
            "cycles": graph.modules.cycles(),
            "entryPoints": graph.entry_points,
            "elapsedMs": elapsed.as_millis() as u64,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(Exit::Ok);
    }
    println!(
        "indexed {} files in {:.2} s: {} parsed, {} touched, {} unchanged, {} removed, {} skipped",
        report.files,
        elapsed.as_secs_f64(),
        report.parsed,
        report.touched,
        report.unchanged,
        report.removed,
        report.skipped.len()
    );
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
    for s in report.skipped.iter().take(10) {
        println!("skipped {}: {}", s.path, s.reason);
    }
    if report.skipped.len() > 10 {
        println!(
            "… {} more skipped (use --json for the full list)",
            report.skipped.len() - 10
        );
    }
    Ok(Exit::Ok)
}

/// A bar on stderr while files are read; hidden for `--json` and when stderr is not a
/// terminal (indicatif's default draw target checks that).
fn progress_bar(hidden: bool) -> ProgressBar {
    if hidden {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} indexing {pos}/{len} files {wide_bar} {eta}")
    {
        bar.set_style(style);
    }
    bar
}
