//! `team-mix`: issue 18's closing benchmark. Concurrent clients mix retrieval (80 %) and
//! add with consolidation (20 %) over a store seeded with 100,000 memories, on the team
//! store (PostgreSQL, each client its own `PgMemory` handle and connections) and, for
//! comparison, on SQLite in one process (the clients are threads sharing one store behind a
//! mutex, as the project's `MemoryService` shares it; the lock wait is part of the latency).
//!
//! After the run every acknowledged write (the id of each consolidation outcome that was
//! not skipped) is looked up on the store: a missing one is a lost write.
//!
//! The text is `memory_scale`'s: 12 words, every third one of 36 topic words (each topic in
//! about a tenth of all memories), the rest from a vocabulary of a quarter of the store
//! size; queries are two topics and one rarer word. Adds restate an existing memory one
//! time in three (consolidation updates it) and are new sentences otherwise.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use alembic_memory::{
    Action, ConsolidateStats, ListFilter, MemoryBackend, MemoryConfig, NewMemory, PersistentMemory,
    RetrieveOptions, Scope, SystemClock, prepare_memory,
};
use anyhow::{Context, Result};
use serde::Serialize;

use crate::memory_scale::{Rng, percentile, query, sentence};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The PostgreSQL server; a new team is made for the run.
    pub team_url: String,
    pub memories: usize,
    pub clients: usize,
    pub ops_per_client: usize,
    /// A team to run on (seeded unless it already holds `memories` rows); a new one if
    /// `None`.
    pub team: Option<String>,
    /// Skips the SQLite comparison.
    pub postgres_only: bool,
}

/// Latency of one kind of operation, in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    pub count: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// The mix on one backend.
#[derive(Debug, Clone, Serialize)]
pub struct MixResult {
    pub backend: String,
    /// How the clients reach the store.
    pub clients_are: String,
    pub seed_seconds: f64,
    pub wall_seconds: f64,
    pub ops_per_second: f64,
    pub retrieve: Latency,
    pub add: Latency,
    pub errors: usize,
    /// The first few error messages.
    pub error_samples: Vec<String>,
    /// Writes the store acknowledged (consolidation outcomes with an id).
    pub acknowledged_writes: usize,
    /// Acknowledged writes not found on the store after the run (must be 0).
    pub lost_writes: usize,
    /// Memories in the store after the run, history included.
    pub rows_after: usize,
}

/// Whole report.
#[derive(Debug, Clone, Serialize)]
pub struct TeamMixReport {
    pub memories: usize,
    pub clients: usize,
    pub ops_per_client: usize,
    pub retrieve_share: f64,
    pub postgres: MixResult,
    /// `None` with `postgres_only`.
    pub sqlite: Option<MixResult>,
}

/// One client's operation.
#[derive(Debug, Clone)]
enum Op {
    Retrieve(String),
    Add(NewMemory),
}

/// What one client saw.
#[derive(Debug, Default)]
struct ClientLog {
    retrieve_ms: Vec<f64>,
    add_ms: Vec<f64>,
    errors: Vec<String>,
    acknowledged: Vec<String>,
}

/// Memories are kept whatever the count (capacity is not what is measured).
fn config() -> MemoryConfig {
    MemoryConfig {
        max_per_scope: 10_000_000,
        ..MemoryConfig::default()
    }
}

/// The seed texts, the same for both backends.
fn seed_texts(n: usize) -> Vec<String> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ n as u64);
    let vocab = vocab(n);
    (0..n).map(|_| sentence(&mut rng, vocab)).collect()
}

fn vocab(n: usize) -> usize {
    (n / 4).max(200)
}

/// Client `i`'s operations: 80 % retrievals, 20 % adds (a third restating a seed text).
fn client_ops(i: usize, options: &Options, seeds: &[String]) -> Vec<Op> {
    let mut rng = Rng(0xA076_1D64_78BD_642F ^ (i as u64 + 1));
    let vocab = vocab(options.memories);
    (0..options.ops_per_client)
        .map(|_| {
            if rng.below(10) >= 2 {
                return Op::Retrieve(query(&mut rng, vocab));
            }
            let text = match rng.below(3) {
                0 => seeds[rng.below(seeds.len())].clone(),
                _ => sentence(&mut rng, vocab),
            };
            Op::Add(NewMemory::fact(text).with_scope(Scope::Team))
        })
        .collect()
}

/// Runs `ops` on `store`, timing each.
fn run_client(store: &mut impl MixStore, ops: Vec<Op>) -> ClientLog {
    let mut log = ClientLog::default();
    let options = RetrieveOptions {
        limit: 10,
        ..RetrieveOptions::default()
    };
    for op in ops {
        let start = Instant::now();
        match op {
            Op::Retrieve(q) => {
                let r = store.retrieve(&q, &options);
                log.retrieve_ms.push(ms(start));
                if let Err(e) = r {
                    log.errors.push(e.to_string());
                }
            }
            Op::Add(candidate) => {
                let r = store.consolidate(&candidate);
                log.add_ms.push(ms(start));
                match r {
                    Ok(stats) => log.acknowledged.extend(
                        stats
                            .outcomes
                            .into_iter()
                            .filter(|o| o.action != Action::Skipped)
                            .filter_map(|o| o.id),
                    ),
                    Err(e) => log.errors.push(e.to_string()),
                }
            }
        }
    }
    log
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// Runs every client on its own thread; `open()` gives each client its store.
fn run_clients<S: MixStore>(
    options: &Options,
    seeds: &[String],
    open: impl Fn() -> Result<S> + Sync,
) -> Result<(Vec<ClientLog>, f64)> {
    let start = Instant::now();
    let logs = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..options.clients)
            .map(|i| {
                let ops = client_ops(i, options, seeds);
                let open = &open;
                scope.spawn(move || -> Result<ClientLog> {
                    let mut store = open()?;
                    Ok(run_client(&mut store, ops))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(log) => log,
                Err(_) => Err(anyhow::anyhow!("a client thread panicked")),
            })
            .collect::<Result<Vec<_>>>()
    })?;
    Ok((logs, start.elapsed().as_secs_f64()))
}

fn latency(mut samples: Vec<f64>) -> Latency {
    samples.sort_by(f64::total_cmp);
    Latency {
        count: samples.len(),
        p50_ms: percentile(&samples, 0.5),
        p95_ms: percentile(&samples, 0.95),
        p99_ms: percentile(&samples, 0.99),
        max_ms: samples.last().copied().unwrap_or(0.0),
    }
}

/// Folds the client logs and checks every acknowledged write against `store`.
fn summarise(
    backend: &str,
    clients_are: &str,
    seed_seconds: f64,
    (logs, wall): (Vec<ClientLog>, f64),
    store: &dyn MemoryBackend,
) -> Result<MixResult> {
    let present: HashSet<String> = store
        .list(&everything())?
        .into_iter()
        .map(|m| m.id)
        .collect();
    let (mut retrieve, mut add, mut errors, mut acked) = (vec![], vec![], vec![], vec![]);
    for log in logs {
        retrieve.extend(log.retrieve_ms);
        add.extend(log.add_ms);
        errors.extend(log.errors);
        acked.extend(log.acknowledged);
    }
    let ops = retrieve.len() + add.len();
    Ok(MixResult {
        backend: backend.to_string(),
        clients_are: clients_are.to_string(),
        seed_seconds,
        wall_seconds: wall,
        ops_per_second: ops as f64 / wall.max(1e-9),
        retrieve: latency(retrieve),
        add: latency(add),
        errors: errors.len(),
        error_samples: errors.into_iter().take(5).collect(),
        lost_writes: acked.iter().filter(|id| !present.contains(*id)).count(),
        acknowledged_writes: acked.len(),
        rows_after: present.len(),
    })
}

/// The mix on the team store: a new team (or `options.team`) seeded through the bulk import
/// (then vacuumed and analysed, as autovacuum would after a while), then one `PgMemory` per
/// client.
fn postgres(options: &Options, seeds: &[String]) -> Result<MixResult> {
    let name = match &options.team {
        Some(name) => name.clone(),
        None => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)?
                .as_nanos();
            format!("bench-mix-{nanos}")
        }
    };
    let team = alembic_team::TeamConfig::new(options.team_url.clone(), name, "bench");
    let open = || -> Result<alembic_team::PgMemory> {
        Ok(alembic_team::PgMemory::open(
            &team,
            config(),
            Arc::new(SystemClock),
        )?)
    };
    let mut seeder = open().context("opening the team store")?;
    let start = Instant::now();
    if already_seeded(&seeder, options.memories)? {
        eprintln!("team-mix: team {} already seeded", seeder.team());
    } else {
        seed(&mut seeder, seeds)?;
    }
    let seed_seconds = start.elapsed().as_secs_f64();
    let run = run_clients(options, seeds, open)?;
    summarise(
        "postgres",
        "one PgMemory (own connection pool) per client thread",
        seed_seconds,
        run,
        &seeder,
    )
}

/// True when the team holds at least `memories` current memories (an earlier run seeded it).
fn already_seeded(store: &alembic_team::PgMemory, memories: usize) -> Result<bool> {
    let filter = ListFilter {
        limit: Some(memories),
        ..ListFilter::default()
    };
    Ok(store.list(&filter)?.len() >= memories)
}

/// Bulk-imports the seed texts, then vacuums and analyses.
fn seed(seeder: &mut alembic_team::PgMemory, seeds: &[String]) -> Result<()> {
    let now = alembic_base::Clock::now_ms(&SystemClock);
    let mut seeded = 0;
    for chunk in seeds.chunks(10_000) {
        let rows = chunk
            .iter()
            .map(|t| prepare_memory(&config(), &NewMemory::fact(t).with_scope(Scope::Team), now))
            .collect::<Result<Vec<_>, _>>()?;
        seeded += seeder.import(&rows)?.0;
        eprintln!("team-mix: seeded {seeded} team memories");
    }
    seeder.vacuum_analyze()?;
    Ok(())
}

/// Every row, archived and superseded ones included.
fn everything() -> ListFilter {
    ListFilter {
        scope: None,
        include_archived: true,
        include_history: true,
        limit: None,
    }
}

/// What a client calls: on PostgreSQL its own backend, on SQLite the shared one under the
/// lock (so the wait for it is in the latency).
trait MixStore {
    fn retrieve(&mut self, query: &str, options: &RetrieveOptions) -> Result<(), MemoryErr>;
    fn consolidate(&mut self, candidate: &NewMemory) -> Result<ConsolidateStats, MemoryErr>;
}

type MemoryErr = alembic_memory::MemoryError;

impl MixStore for alembic_team::PgMemory {
    fn retrieve(&mut self, query: &str, options: &RetrieveOptions) -> Result<(), MemoryErr> {
        MemoryBackend::retrieve(self, query, options).map(drop)
    }
    fn consolidate(&mut self, candidate: &NewMemory) -> Result<ConsolidateStats, MemoryErr> {
        MemoryBackend::consolidate(self, std::slice::from_ref(candidate))
    }
}

/// A client's handle on the one shared SQLite store.
struct SharedSqlite(Arc<Mutex<PersistentMemory>>);

impl SharedSqlite {
    fn lock(&self) -> std::sync::MutexGuard<'_, PersistentMemory> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl MixStore for SharedSqlite {
    fn retrieve(&mut self, query: &str, options: &RetrieveOptions) -> Result<(), MemoryErr> {
        self.lock().retrieve(query, options).map(drop)
    }
    fn consolidate(&mut self, candidate: &NewMemory) -> Result<ConsolidateStats, MemoryErr> {
        self.lock().consolidate(std::slice::from_ref(candidate))
    }
}

/// The mix on SQLite: one file database in this process, seeded with `add_batch`, shared by
/// the client threads.
fn sqlite(options: &Options, seeds: &[String]) -> Result<MixResult> {
    let dir = tempfile::tempdir()?;
    let conn = alembic_store::open(&dir.path().join("mix.db"))?;
    let mut store = PersistentMemory::open(conn, config(), Arc::new(SystemClock))?;
    let start = Instant::now();
    for chunk in seeds.chunks(5000) {
        let batch: Vec<NewMemory> = chunk
            .iter()
            .map(|t| NewMemory::fact(t).with_scope(Scope::Team))
            .collect();
        store.add_batch(&batch)?;
    }
    let seed_seconds = start.elapsed().as_secs_f64();
    let shared = Arc::new(Mutex::new(store));
    let run = run_clients(options, seeds, || Ok(SharedSqlite(Arc::clone(&shared))))?;
    let store = SharedSqlite(shared);
    summarise(
        "sqlite",
        "threads of one process sharing one store behind a mutex",
        seed_seconds,
        run,
        &*store.lock(),
    )
}

/// Runs the mix on PostgreSQL, then on SQLite.
pub fn run(options: &Options) -> Result<TeamMixReport> {
    let seeds = seed_texts(options.memories);
    eprintln!("team-mix: postgres");
    let postgres = postgres(options, &seeds)?;
    let sqlite = if options.postgres_only {
        None
    } else {
        eprintln!("team-mix: sqlite");
        Some(sqlite(options, &seeds)?)
    };
    Ok(TeamMixReport {
        memories: options.memories,
        clients: options.clients,
        ops_per_client: options.ops_per_client,
        retrieve_share: 0.8,
        postgres,
        sqlite,
    })
}

pub fn render(report: &TeamMixReport) -> String {
    let mut out = format!(
        "{} memories, {} clients x {} ops (80 % retrieve, 20 % add+consolidate)\n\
         backend   op        count   p50 ms   p95 ms   p99 ms   max ms\n",
        report.memories, report.clients, report.ops_per_client
    );
    let backends: Vec<&MixResult> = std::iter::once(&report.postgres)
        .chain(report.sqlite.as_ref())
        .collect();
    for r in &backends {
        for (op, l) in [("retrieve", &r.retrieve), ("add", &r.add)] {
            out.push_str(&format!(
                "{:<9} {:<8} {:>6} {:>8.1} {:>8.1} {:>8.1} {:>8.1}\n",
                r.backend, op, l.count, l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms
            ));
        }
    }
    for r in &backends {
        out.push_str(&format!(
            "{}: {}; seeded in {:.1} s; {:.0} ops/s; errors {}; acknowledged writes {}, lost {}; \
             {} rows after\n",
            r.backend,
            r.clients_are,
            r.seed_seconds,
            r.ops_per_second,
            r.errors,
            r.acknowledged_writes,
            r.lost_writes,
            r.rows_after
        ));
        for e in &r.error_samples {
            out.push_str(&format!("  error: {e}\n"));
        }
    }
    out
}
