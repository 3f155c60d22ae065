//! `alembic bootstrap`: cold-start analysis of a project into knowledge candidates (for
//! review with `alembic knowledge`) and memories. Runs the `bootstrap_knowledge` tool as
//! caller `cli`, so the run is validated, policy-checked and audited like any tool call. With
//! a provider configured and no `--no-llm`, the runtime's LLM analyser is set on the
//! bootstrap service for this one call (the LLM path); otherwise the run is deterministic.

use std::sync::{Arc, Mutex};

use alembic_runtime::ProjectRuntime;
use alembic_runtime::agent::AgentOptions;
use alembic_runtime::base::lock;
use alembic_runtime::bootstrap::plan::Tier;
use alembic_runtime::bootstrap::{DimensionAnalyser, DimensionSummary, ProgressSink};
use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde_json::json;

use crate::exit::Exit;
use crate::tool_call::call_as_cli;
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Args)]
pub struct BootstrapArgs {
    #[command(flatten)]
    pub project: ProjectArgs,
    /// Only these dimensions, comma-separated (analysed even when unchanged)
    #[arg(long, value_name = "a,b", value_delimiter = ',')]
    pub dimensions: Vec<String>,
    /// Take the deterministic path (no LLM, no network) even when a provider is configured
    #[arg(long)]
    pub no_llm: bool,
    /// Continue the last interrupted run after its last completed dimension
    #[arg(long)]
    pub resume: bool,
    /// Re-analyse dimensions whose evidence files did not change
    #[arg(long)]
    pub force: bool,
    /// Read at most this many source files (default: all)
    #[arg(long, value_name = "N")]
    pub max_files: Option<u64>,
    /// Print the run summary as JSON on stdout (no progress bars)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: BootstrapArgs) -> CmdResult {
    let rt = ProjectRuntime::open_command(&args.project.project)?;
    let analyser = if args.no_llm {
        None
    } else {
        rt.bootstrap_analyser(AgentOptions::default())?
    };
    let bootstrap = &rt.services().bootstrap;
    if let Some(analyser) = analyser {
        bootstrap.set_analyser(Some(Arc::new(analyser) as Arc<dyn DimensionAnalyser>));
    } else if let (false, Err(why)) = (args.no_llm, &rt.services().llm) {
        eprintln!("{}", deterministic_note(why));
    }
    let bars = Arc::new(Bars::new(args.json));
    bootstrap.set_progress(Some(Arc::clone(&bars) as Arc<dyn ProgressSink>));
    let mut call = json!({
        "force": args.force,
        "resume": args.resume,
        "maxFiles": args.max_files.unwrap_or(1_000_000),
    });
    if !args.dimensions.is_empty() {
        call["dimensions"] = json!(args.dimensions);
    }
    let result = call_as_cli(&rt, "bootstrap_knowledge", call);
    bootstrap.set_progress(None);
    bootstrap.set_analyser(None);
    let result = result?;
    bars.clear();
    let output = match result {
        Ok(output) => output,
        Err(exit) => return Ok(exit),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&output.data)?);
    } else {
        print!("{}", output.text);
        println!(
            "review them: alembic knowledge list --status submitted; alembic knowledge approve <id>"
        );
    }
    Ok(Exit::Ok)
}

/// Why the run takes the deterministic path although `--no-llm` was not given: one line when
/// no provider is configured at all, the reason when a configured one cannot be used.
fn deterministic_note(why: &str) -> String {
    if why.starts_with("no llm provider is configured") {
        "no LLM provider configured: taking the deterministic path (no network)".into()
    } else {
        format!("the LLM provider cannot be used ({why}); taking the deterministic path")
    }
}

/// One bar per tier (dimensions done of the tier) and a spinner per running dimension, on
/// stderr; hidden with `--json` and when stderr is not a terminal.
struct Bars {
    multi: MultiProgress,
    tier: Mutex<Option<ProgressBar>>,
    running: Mutex<Vec<(String, ProgressBar)>>,
    hidden: bool,
}

impl Bars {
    fn new(hidden: bool) -> Self {
        let multi = MultiProgress::new();
        if hidden {
            multi.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        Bars {
            multi,
            tier: Mutex::new(None),
            running: Mutex::new(Vec::new()),
            hidden,
        }
    }

    fn clear(&self) {
        if let Some(bar) = lock(&self.tier).take() {
            bar.finish_and_clear();
        }
        let _ = self.multi.clear();
    }
}

impl ProgressSink for Bars {
    fn stage(&self, message: &str) {
        if !self.hidden {
            let _ = self.multi.println(message);
        }
    }

    fn tier_started(&self, tier: &Tier) {
        let bar = self
            .multi
            .add(ProgressBar::new(tier.dimensions.len() as u64));
        if let Ok(style) =
            ProgressStyle::with_template("tier {msg} {wide_bar} {pos}/{len} dimensions")
        {
            bar.set_style(style);
        }
        bar.set_message(format!(
            "{} (concurrency {})",
            tier.number, tier.concurrency
        ));
        *lock(&self.tier) = Some(bar);
    }

    fn dimension_started(&self, _tier: u8, id: &str) {
        let bar = self.multi.add(ProgressBar::new_spinner());
        bar.set_message(id.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        lock(&self.running).push((id.to_string(), bar));
    }

    fn dimension_finished(&self, _tier: u8, s: &DimensionSummary) {
        let mut running = lock(&self.running);
        if let Some(i) = running.iter().position(|(id, _)| id == &s.id) {
            let (_, bar) = running.remove(i);
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
        if let Some(bar) = lock(&self.tier).as_ref() {
            bar.inc(1);
        }
    }

    fn tier_finished(&self, _tier: &Tier) {
        if let Some(bar) = lock(&self.tier).take() {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
    }
}
