//! The run: facts, the tier plan, each dimension through a [`DimensionAnalyser`], a
//! checkpoint per dimension, tier reflections, and the summary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use alembic_base::Clock;
use alembic_code::CodeService;
use alembic_context::{
    CandidateSummary, DimensionReport, SessionFinding, SessionStore, TierReflection,
};
use alembic_memory::MemoryConfig;
use futures::StreamExt;
use sha2::{Digest, Sha256};

use crate::analyser::{DimensionAnalyser, DimensionOutcome, TierContext};
use crate::checkpoint::{
    CheckpointStore, CompletedDimension, DimensionWrite, UnfinishedRun, dimension_memory,
};
use crate::dimensions::{self, BootstrapConfig, Dimension};
use crate::error::BootstrapError;
use crate::facts::Facts;
use crate::plan::{self, Tier};
use crate::report::{BootstrapReport, DimensionStatus, DimensionSummary, ProjectSummary};

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct BootstrapOptions {
    /// Only these dimensions (analysed even when their evidence is unchanged); empty = every
    /// active dimension.
    pub dimensions: Vec<String>,
    /// Continue the last interrupted run after its last committed dimension.
    pub resume: bool,
    /// Analyse dimensions whose evidence did not change.
    pub force: bool,
    /// Read at most this many files.
    pub max_files: Option<usize>,
    /// Test hook: sleep this long after committing this dimension (so a test can kill the
    /// process between two checkpoints). Set by `ALEMBIC_BOOTSTRAP_PAUSE_AFTER`.
    pub pause_after: Option<(String, Duration)>,
}

/// Progress of a run, for progress bars. Every method has an empty default.
pub trait ProgressSink: Send + Sync {
    fn stage(&self, _message: &str) {}
    fn tier_started(&self, _tier: &Tier) {}
    fn dimension_started(&self, _tier: u8, _id: &str) {}
    fn dimension_finished(&self, _tier: u8, _summary: &DimensionSummary) {}
    fn tier_finished(&self, _tier: &Tier) {}
}

/// No progress output.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;
impl ProgressSink for NoProgress {}

/// Bootstrap of one project.
pub struct Bootstrap {
    pub root: PathBuf,
    pub code: Arc<CodeService>,
    pub memory: MemoryConfig,
    pub config: BootstrapConfig,
    pub clock: Arc<dyn Clock>,
    /// Where runs started through the tool report progress (the CLI's bars).
    progress: RwLock<Option<Arc<dyn ProgressSink>>>,
    /// The analyser of runs started through the tool (the CLI's LLM analyser); `None`: the
    /// deterministic one.
    analyser: RwLock<Option<Arc<dyn DimensionAnalyser>>>,
    /// The project's knowledge service: with a team configured, tool-started runs publish
    /// bootstrap's candidates to the team store at the end ([`Bootstrap::publishing_to`]).
    publish_to: Option<Arc<alembic_knowledge::KnowledgeService>>,
}

impl std::fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bootstrap")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Bootstrap {
    /// Bootstrap of the project at `root` (absolute), on the system clock.
    pub fn new(
        root: &Path,
        code: Arc<CodeService>,
        memory: MemoryConfig,
        config: BootstrapConfig,
    ) -> Self {
        Bootstrap {
            root: root.to_path_buf(),
            code,
            memory,
            config,
            clock: Arc::new(alembic_base::SystemClock),
            progress: RwLock::new(None),
            analyser: RwLock::new(None),
            publish_to: None,
        }
    }

    /// Publishes the candidates of tool-started runs through `knowledge` when it has a team
    /// store: the run itself commits each dimension in the project database (atomic with
    /// its checkpoint, as without a team); at the end, every candidate bootstrap created
    /// there that the team does not have yet is copied to the team store with the same id.
    pub fn publishing_to(mut self, knowledge: Arc<alembic_knowledge::KnowledgeService>) -> Self {
        self.publish_to = Some(knowledge);
        self
    }

    /// The knowledge service set with [`Bootstrap::publishing_to`].
    pub fn publisher(&self) -> Option<Arc<alembic_knowledge::KnowledgeService>> {
        self.publish_to.clone()
    }

    /// Sends the progress of later tool-started runs to `sink` (`None`: no progress).
    pub fn set_progress(&self, sink: Option<Arc<dyn ProgressSink>>) {
        *alembic_base::write(&self.progress) = sink;
    }

    /// The sink set with [`Bootstrap::set_progress`].
    pub fn progress(&self) -> Option<Arc<dyn ProgressSink>> {
        alembic_base::read(&self.progress).clone()
    }

    /// Makes later tool-started runs analyse with `analyser` (`None`: the deterministic
    /// analyser). The CLI sets its LLM analyser here for one run, so the LLM path goes through
    /// the audited `bootstrap_knowledge` call like the deterministic one.
    pub fn set_analyser(&self, analyser: Option<Arc<dyn DimensionAnalyser>>) {
        *alembic_base::write(&self.analyser) = analyser;
    }

    /// The analyser set with [`Bootstrap::set_analyser`].
    pub fn analyser(&self) -> Option<Arc<dyn DimensionAnalyser>> {
        alembic_base::read(&self.analyser).clone()
    }
}

/// State of one run while it goes through the tiers.
struct Run<'a> {
    run_id: String,
    store: CheckpointStore,
    done_before: BTreeMap<String, CompletedDimension>,
    session: Arc<Mutex<SessionStore>>,
    reflections: Vec<TierReflection>,
    summaries: Vec<DimensionSummary>,
    report_candidates: Vec<crate::checkpoint::CandidateRecord>,
    memories: usize,
    opts: &'a BootstrapOptions,
}

impl Bootstrap {
    /// Runs the bootstrap with `analyser`, reporting to `progress`.
    pub async fn run(
        &self,
        analyser: &dyn DimensionAnalyser,
        opts: &BootstrapOptions,
        progress: &dyn ProgressSink,
    ) -> Result<BootstrapReport, BootstrapError> {
        let started = Instant::now();
        let catalogue = dimensions::catalogue(&self.config)?;
        for id in &opts.dimensions {
            if !catalogue.iter().any(|d| &d.id == id) {
                return Err(dimensions::unknown(id, &catalogue));
            }
        }
        // The run is on record before the scan: a kill at any point leaves one to resume.
        let store = CheckpointStore::open(&self.root, self.memory.clone())?;
        let pending = if opts.resume {
            match store.unfinished_run()? {
                Some(run) => run,
                None => return Err(store.nothing_to_resume()?),
            }
        } else {
            UnfinishedRun {
                run_id: store.start_run(&opts.dimensions, self.clock.now_ms())?,
                planned: None,
                requested: opts.dimensions.clone(),
            }
        };
        progress.stage("scanning files, building the code graph, running the guard audit");
        let facts = Arc::new(self.gather(opts.max_files).await?);
        let (mut run, dims) = self.begin(store, pending, &catalogue, &facts, opts)?;
        for tier in plan::tiers(&dims) {
            progress.tier_started(&tier);
            self.run_tier(&mut run, &tier, &facts, analyser, progress)
                .await?;
            let ids: Vec<&str> = tier.dimensions.iter().map(|d| d.id.as_str()).collect();
            let reflection =
                alembic_base::lock(&run.session).reflect_tier(usize::from(tier.number), &ids);
            run.reflections.push(reflection);
            progress.tier_finished(&tier);
        }
        if !run
            .summaries
            .iter()
            .any(|s| s.status == DimensionStatus::Failed)
        {
            run.store.finish_run(&run.run_id, self.clock.now_ms())?;
        }
        Ok(BootstrapReport {
            project: ProjectSummary {
                languages: facts.profile.languages.clone(),
                frameworks: facts.profile.frameworks.clone(),
            },
            dimensions: run.summaries,
            candidates: run.report_candidates,
            memories: run.memories,
            llm: analyser.uses_llm(),
            elapsed_ms: alembic_base::millis(started.elapsed()),
        })
    }

    async fn gather(&self, max_files: Option<usize>) -> Result<Facts, BootstrapError> {
        let root = self.root.clone();
        let code = Arc::clone(&self.code);
        tokio::task::spawn_blocking(move || Facts::gather(&root, &code, max_files))
            .await
            .map_err(|e| BootstrapError::Analysis {
                dimension: "scan".into(),
                message: e.to_string(),
            })?
    }

    /// Plans the run `pending` (new, or the interrupted one `--resume` picked up), restoring
    /// what an interrupted run already committed.
    fn begin<'a>(
        &self,
        store: CheckpointStore,
        pending: UnfinishedRun,
        catalogue: &[Dimension],
        facts: &Facts,
        opts: &'a BootstrapOptions,
    ) -> Result<(Run<'a>, Vec<Dimension>), BootstrapError> {
        let mut session = SessionStore::new();
        let run_id = pending.run_id;
        let ids = match pending.planned {
            Some(ids) => ids,
            None => {
                // A run stopped before planning plans now, from what it was asked for.
                let ids: Vec<String> = catalogue
                    .iter()
                    .filter(|d| {
                        if pending.requested.is_empty() {
                            plan::is_active(d, &facts.profile)
                        } else {
                            pending.requested.contains(&d.id)
                        }
                    })
                    .map(|d| d.id.clone())
                    .collect();
                store.plan_run(&run_id, &ids)?;
                ids
            }
        };
        let dims: Vec<Dimension> = ids
            .iter()
            .filter_map(|id| catalogue.iter().find(|d| &d.id == id).cloned())
            .collect();
        let done_before: BTreeMap<String, CompletedDimension> = store
            .completed(&run_id)?
            .into_iter()
            .map(|c| (c.dimension_id.clone(), c))
            .collect();
        for c in done_before.values() {
            session.store_report(c.report.clone());
        }
        let run = Run {
            run_id,
            store,
            done_before,
            session: Arc::new(Mutex::new(session)),
            reflections: Vec::new(),
            summaries: Vec::new(),
            report_candidates: Vec::new(),
            memories: 0,
            opts,
        };
        Ok((run, dims))
    }

    async fn run_tier(
        &self,
        run: &mut Run<'_>,
        tier: &Tier,
        facts: &Arc<Facts>,
        analyser: &dyn DimensionAnalyser,
        progress: &dyn ProgressSink,
    ) -> Result<(), BootstrapError> {
        let mut todo = Vec::new();
        for dim in &tier.dimensions {
            if let Some(s) = self.settled(run, dim, tier.number, facts)? {
                progress.dimension_finished(tier.number, &s);
                run.summaries.push(s);
            } else {
                todo.push(dim.clone());
            }
        }
        let ctx = TierContext {
            tier: tier.number,
            facts: Arc::clone(facts),
            session: Arc::clone(&run.session),
            reflections: run.reflections.clone(),
        };
        let ctx = &ctx;
        let mut results = futures::stream::iter(todo)
            .map(|dim| async move {
                progress.dimension_started(tier.number, &dim.id);
                let outcome = analyser.analyse(&dim, ctx).await;
                (dim, outcome)
            })
            .buffer_unordered(tier.concurrency.max(1));
        while let Some((dim, outcome)) = results.next().await {
            let summary = match outcome {
                Ok(outcome) => self.commit(run, &dim, tier.number, facts, outcome)?,
                Err(e) => DimensionSummary {
                    id: dim.id.clone(),
                    tier: tier.number,
                    status: DimensionStatus::Failed,
                    candidates: 0,
                    revised: 0,
                    kept: 0,
                    error: Some(e.to_string()),
                },
            };
            progress.dimension_finished(tier.number, &summary);
            run.summaries.push(summary);
            if let Some((after, pause)) = &run.opts.pause_after
                && after == &dim.id
            {
                tracing::warn!(dimension = %dim.id, "test hook ALEMBIC_BOOTSTRAP_PAUSE_AFTER: pausing");
                tokio::time::sleep(*pause).await;
            }
        }
        Ok(())
    }

    /// A dimension that needs no analysis: resumed from the interrupted run, or skipped
    /// because its evidence files did not change (unless forced or named).
    fn settled(
        &self,
        run: &Run<'_>,
        dim: &Dimension,
        tier: u8,
        facts: &Facts,
    ) -> Result<Option<DimensionSummary>, BootstrapError> {
        let summary = |status, candidates| DimensionSummary {
            id: dim.id.clone(),
            tier,
            status,
            candidates,
            revised: 0,
            kept: 0,
            error: None,
        };
        if let Some(done) = run.done_before.get(&dim.id) {
            return Ok(Some(summary(
                DimensionStatus::Resumed,
                done.candidates.len(),
            )));
        }
        if run.opts.force || run.opts.dimensions.contains(&dim.id) {
            return Ok(None);
        }
        let unchanged = run
            .store
            .last_fingerprint(&dim.id)?
            .is_some_and(|(print, files)| print == fingerprint(facts, &files));
        Ok(unchanged.then(|| summary(DimensionStatus::Skipped, 0)))
    }

    /// Commits one analysed dimension (candidates, memory, checkpoint in one transaction).
    fn commit(
        &self,
        run: &mut Run<'_>,
        dim: &Dimension,
        tier: u8,
        facts: &Facts,
        outcome: DimensionOutcome,
    ) -> Result<DimensionSummary, BootstrapError> {
        let mut files: Vec<String> = outcome
            .findings
            .iter()
            .flat_map(|f| f.evidence.iter().map(|e| e.file.clone()))
            .collect();
        files.sort();
        files.dedup();
        let now = self.clock.now_ms();
        let report = session_report(&dim.id, &outcome, &files, now);
        let importance = outcome
            .findings
            .iter()
            .map(|f| f.importance)
            .max()
            .unwrap_or(5);
        let print = fingerprint(facts, &files);
        let done = run.store.commit_dimension(&DimensionWrite {
            run_id: &run.run_id,
            dimension_id: &dim.id,
            tier,
            findings: &outcome.findings,
            memory: dimension_memory(&dim.id, &outcome.analysis, importance),
            fingerprint: &print,
            evidence_files: &files,
            report: &report,
            now,
        })?;
        alembic_base::lock(&run.session).store_report(report);
        run.memories += done.memories;
        let n = done.candidates.len();
        run.report_candidates.extend(done.candidates);
        Ok(DimensionSummary {
            id: dim.id.clone(),
            tier,
            status: DimensionStatus::Done,
            candidates: n,
            revised: done.revised.len(),
            kept: done.kept.len(),
            error: None,
        })
    }
}

fn session_report(
    id: &str,
    outcome: &DimensionOutcome,
    files: &[String],
    now: i64,
) -> DimensionReport {
    DimensionReport {
        dim_id: id.to_string(),
        completed_at_ms: u64::try_from(now).unwrap_or(0),
        analysis_text: outcome.analysis.clone(),
        findings: outcome
            .notes
            .iter()
            .cloned()
            .chain(outcome.findings.iter().map(|f| {
                SessionFinding {
                    finding: f.summary.clone(),
                    evidence: f
                        .evidence
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    importance: f.importance,
                }
            }))
            .collect(),
        // Every title the dimension produced (new or already known): SubmitDedup refuses
        // them in later dimensions of the run, also after a resume.
        candidates: outcome
            .findings
            .iter()
            .map(|f| CandidateSummary {
                title: f.title.clone(),
                ..CandidateSummary::default()
            })
            .collect(),
        referenced_files: files.to_vec(),
        ..DimensionReport::default()
    }
}

/// Hash of the project's source paths and the contents of `files` (all sources when
/// `files` is empty): changes when a file is added or removed, or an evidence file changes.
pub fn fingerprint(facts: &Facts, files: &[String]) -> String {
    let mut h = Sha256::new();
    for f in facts.sources() {
        h.update(f.path.as_bytes());
        h.update([0]);
    }
    let mut add = |path: &str| {
        h.update(path.as_bytes());
        match facts.file(path) {
            Some(f) => h.update(f.text.as_bytes()),
            None => h.update(b"\0missing"),
        }
    };
    if files.is_empty() {
        facts.sources().for_each(|f| add(&f.path));
    } else {
        files.iter().for_each(|f| add(f));
    }
    hex::encode(h.finalize())
}
