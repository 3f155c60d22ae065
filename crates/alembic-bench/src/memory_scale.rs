//! Persistent-memory scale benchmark: retrieval latency at 500 and 100,000 synthetic
//! memories (file database, WAL), against a bare FTS5 query on the same database as the
//! baseline, plus add and add+consolidate throughput. Stores are loaded with `add_batch`
//! (5,000 memories per transaction, the capacity checked on every insert).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use alembic_memory::{MemoryConfig, NewMemory, PersistentMemory, RetrieveOptions, SystemClock};
use anyhow::Result;
use serde::Serialize;

/// Deterministic xorshift generator. A benchmark needs reproducible text, not good
/// randomness, so a 5-line generator is used instead of pulling in `rand`.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub(crate) const TOPICS: &[&str] = &[
    "payment",
    "coordinator",
    "repository",
    "network",
    "cache",
    "retry",
    "swift",
    "rust",
    "parser",
    "index",
    "session",
    "token",
    "budget",
    "module",
    "protocol",
    "extension",
    "gradle",
    "cocoapods",
    "logging",
    "metrics",
    "auth",
    "keychain",
    "database",
    "migration",
    "schema",
    "router",
    "view",
    "controller",
    "service",
    "worker",
    "queue",
    "scheduler",
    "compiler",
    "linker",
    "test",
    "fixture",
];

pub(crate) fn sentence(rng: &mut Rng, vocab: usize) -> String {
    let words: Vec<String> = (0..12)
        .map(|i| {
            if i % 3 == 0 {
                TOPICS[rng.below(TOPICS.len())].to_string()
            } else {
                format!("w{}", rng.below(vocab))
            }
        })
        .collect();
    words.join(" ")
}

/// A query like an agent's: two topic words and one rarer word.
pub(crate) fn query(rng: &mut Rng, vocab: usize) -> String {
    format!(
        "{} w{} {}",
        TOPICS[rng.below(TOPICS.len())],
        rng.below(vocab),
        TOPICS[rng.below(TOPICS.len())]
    )
}

/// Latency figures for one store size.
#[derive(Debug, Clone, Serialize)]
pub struct SizeResult {
    pub memories: usize,
    pub retrieve_p50_ms: f64,
    pub retrieve_p95_ms: f64,
    pub baseline_fts_p50_ms: f64,
    pub ratio_p50: f64,
    pub load_seconds: f64,
}

/// Whole report.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleReport {
    pub sizes: Vec<SizeResult>,
    pub add_per_second: f64,
    pub consolidate_per_second: f64,
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len().saturating_sub(1)) as f64 * p).round() as usize;
    sorted.get(i).copied().unwrap_or(0.0)
}

fn temp_db(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("alembic-scale-{}-{tag}.db", std::process::id()))
}

fn remove_db(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

fn open(path: &Path, cap: usize) -> Result<PersistentMemory> {
    let config = MemoryConfig {
        max_per_scope: cap,
        ..MemoryConfig::default()
    };
    Ok(PersistentMemory::open(
        alembic_store::open(path)?,
        config,
        Arc::new(SystemClock),
    )?)
}

fn measure_size(n: usize, queries: usize) -> Result<SizeResult> {
    let path = temp_db(&n.to_string());
    remove_db(&path);
    let mut store = open(&path, n + 1)?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ n as u64);
    let vocab = (n / 4).max(200);
    let start = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(5000) {
        let batch: Vec<NewMemory> = chunk
            .iter()
            .map(|_| NewMemory::fact(sentence(&mut rng, vocab)))
            .collect();
        store.add_batch(&batch)?;
    }
    let load_seconds = start.elapsed().as_secs_f64();
    let qs: Vec<String> = (0..queries).map(|_| query(&mut rng, vocab)).collect();
    let options = RetrieveOptions {
        limit: 10,
        touch: false,
        ..RetrieveOptions::default()
    };
    let mut lat = Vec::with_capacity(queries);
    let mut base = Vec::with_capacity(queries);
    for q in &qs {
        let t = Instant::now();
        store.retrieve(q, &options)?;
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        baseline_fts(&store, q)?;
        base.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    lat.sort_by(f64::total_cmp);
    base.sort_by(f64::total_cmp);
    drop(store);
    remove_db(&path);
    let (p50, b50) = (percentile(&lat, 0.5), percentile(&base, 0.5));
    Ok(SizeResult {
        memories: n,
        retrieve_p50_ms: p50,
        retrieve_p95_ms: percentile(&lat, 0.95),
        baseline_fts_p50_ms: b50,
        ratio_p50: if b50 > 0.0 { p50 / b50 } else { 0.0 },
        load_seconds,
    })
}

/// The cheapest possible lexical retrieval on the same data: FTS5 top 10 ids by bm25.
fn baseline_fts(store: &PersistentMemory, query: &str) -> Result<()> {
    let Some(q) = alembic_memory::text::fts_query(query) else {
        return Ok(());
    };
    let mut stmt = store.connection().prepare_cached(
        "select rowid from semantic_memories_fts where semantic_memories_fts match ?1
         order by bm25(semantic_memories_fts) limit 10",
    )?;
    let ids = stmt
        .query_map([q], |r| r.get::<_, i64>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    std::hint::black_box(ids);
    Ok(())
}

/// Adds `n` single memories (one transaction each), then consolidates `n` candidates of
/// which a third restate existing memories, into a 500-memory store.
fn throughput(n: usize) -> Result<(f64, f64)> {
    let path = temp_db("throughput");
    remove_db(&path);
    let mut store = open(&path, 500)?;
    let mut rng = Rng(42);
    let texts: Vec<String> = (0..n).map(|_| sentence(&mut rng, 2000)).collect();
    let start = Instant::now();
    for t in &texts {
        store.add(NewMemory::fact(t.clone()))?;
    }
    let add = n as f64 / start.elapsed().as_secs_f64();
    let candidates: Vec<NewMemory> = (0..n)
        .map(|i| match i % 3 {
            0 => NewMemory::fact(texts[rng.below(texts.len())].clone()),
            _ => NewMemory::fact(sentence(&mut rng, 2000)),
        })
        .collect();
    let start = Instant::now();
    for chunk in candidates.chunks(10) {
        store.consolidate(chunk)?;
    }
    let consolidate = n as f64 / start.elapsed().as_secs_f64();
    drop(store);
    remove_db(&path);
    Ok((add, consolidate))
}

/// Runs every size and the throughput test.
pub fn run(sizes: &[usize], queries: usize) -> Result<ScaleReport> {
    let sizes = sizes
        .iter()
        .map(|n| measure_size(*n, queries))
        .collect::<Result<Vec<_>>>()?;
    let (add_per_second, consolidate_per_second) = throughput(1000)?;
    Ok(ScaleReport {
        sizes,
        add_per_second,
        consolidate_per_second,
    })
}

pub fn render(report: &ScaleReport) -> String {
    let mut out = String::from(
        "memories  retrieve p50 ms  p95 ms  bare FTS5 p50 ms  ratio  load s  load memories/s\n",
    );
    for s in &report.sizes {
        out.push_str(&format!(
            "{:>8}  {:>15.3}  {:>6.3}  {:>16.3}  {:>5.1}  {:>6.1}  {:>16.0}\n",
            s.memories,
            s.retrieve_p50_ms,
            s.retrieve_p95_ms,
            s.baseline_fts_p50_ms,
            s.ratio_p50,
            s.load_seconds,
            s.memories as f64 / s.load_seconds.max(1e-9)
        ));
    }
    out.push_str(&format!(
        "add: {:.0}/s (one transaction each); add+consolidate: {:.0} candidates/s\n",
        report.add_per_second, report.consolidate_per_second
    ));
    out
}
