//! The rows measured in this process, on the library, when no `alembic` binary is given:
//! full and one-file index (wall and CPU of this process), a cold focused query (a new
//! [`CodeService`] on the indexed tree), later queries, and this process's resident memory
//! after the mixed queries.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use alembic_code::{CodeIndex, CodeService, register_tools};
use alembic_tools::{Allowlist, Caller, Pipeline, ToolContext, ToolRegistry};
use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::{
    Report, Run, edit_one_file, indexed_paths, label, median, mix_key, ms, pick_classes,
    pick_method, query_mix, whole_project_queries,
};

/// Calls code tools in this process, through their registered handlers.
struct Tools {
    service: Arc<CodeService>,
    registry: Arc<ToolRegistry>,
    runtime: tokio::runtime::Runtime,
}

impl Tools {
    fn new(root: &Path) -> Result<Tools> {
        let service = Arc::new(CodeService::new(root)?);
        let registry = Arc::new(ToolRegistry::new());
        register_tools(&registry, Arc::clone(&service))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Tools {
            service,
            registry,
            runtime,
        })
    }

    fn call(&self, name: &str, args: Value) -> Result<()> {
        let Some(tool) = self.registry.get(name) else {
            bail!("{name} is not a code tool");
        };
        let pipeline = Pipeline::builder(Arc::clone(&self.registry), self.service.root()).build();
        let ctx = ToolContext::detached(pipeline, Caller::new("bench", Allowlist::All));
        self.runtime
            .block_on(tool.definition.handler.call(args, ctx))
            .map_err(|e| anyhow::anyhow!("{name} failed: {e}"))?;
        Ok(())
    }
}

/// CPU time of this process so far, from `/proc/self/stat` (clock ticks of 10 ms).
fn cpu_ms() -> Option<f64> {
    super::process::cpu_ms_of("self")
}

fn rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn timed_refresh(root: &Path) -> Result<Run> {
    let cpu = cpu_ms();
    let started = Instant::now();
    let mut index = CodeIndex::open(root)?;
    index.refresh(&|_| {})?;
    Ok(Run {
        wall_ms: ms(started.elapsed()),
        cpu_ms: cpu.zip(cpu_ms()).map(|(a, b)| b - a),
        peak_rss_mb: None,
    })
}

pub(super) fn measure(root: &Path, queries: usize) -> Result<Report> {
    let full_index = timed_refresh(root)?;
    let paths = indexed_paths(root, 1000)?;
    let Some(edited) = paths.first() else {
        bail!("nothing was indexed");
    };
    edit_one_file(root, edited, 0)?;
    let one_file_reindex = timed_refresh(root)?;
    let classes = pick_classes(root, 20)?;
    let class = json!({"className": classes[0]});

    let started = Instant::now();
    Tools::new(root)?.call("get_class_hierarchy", class.clone())?;
    let cold_query = Run {
        wall_ms: ms(started.elapsed()),
        ..Run::default()
    };
    let tools = Tools::new(root)?;
    let started = Instant::now();
    tools.call("get_class_hierarchy", class.clone())?;
    let first_query_ms = ms(started.elapsed());
    let mut later = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        tools.call("get_class_hierarchy", class.clone())?;
        later.push(ms(started.elapsed()));
    }
    let whole = whole_project_queries(&classes[0], &pick_method(root)?);
    let mut cold_whole_project = Vec::new();
    for (name, args) in &whole {
        let started = Instant::now();
        Tools::new(root)?.call(name, args.clone())?;
        let run = Run {
            wall_ms: ms(started.elapsed()),
            ..Run::default()
        };
        cold_whole_project.push((label(name, args), run));
    }
    let mix = query_mix(&classes, &paths, &whole);
    let mut times: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (name, args) in mix.iter().cycle().take(queries) {
        let started = Instant::now();
        tools.call(name, args.clone())?;
        times
            .entry(mix_key(name, args))
            .or_default()
            .push(ms(started.elapsed()));
    }
    Ok(Report {
        mode: "library",
        full_index,
        one_file_reindex,
        class_name: classes[0].clone(),
        cold_query,
        cold_whole_project,
        first_query_ms,
        later_query_ms_p50: median(later),
        mixed_queries: queries,
        rss_after_queries_mb: rss_mb(),
        mix_p50_ms: times.into_iter().map(|(k, v)| (k, median(v))).collect(),
        missing: vec![
            "peak RSS of index and cold query (needs the alembic binary: --alembic)".to_string(),
            "search_project_code vs rg (needs the alembic binary)".to_string(),
        ],
        ..Report::default()
    })
}
