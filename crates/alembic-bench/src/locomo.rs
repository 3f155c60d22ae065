//! LoCoMo turn-retrieval benchmark (anchors-memory §4).
//!
//! Memories are dialog turns (`"Speaker: text [shares <caption>]"`), one store per
//! conversation, each timestamped with its session date and carrying the preceding turn of
//! its session as `context` (what was said just before, as a memory written during the
//! conversation would know; it is searched with a lower weight and never shown); the store's clock stands one day
//! after the last session. Queries are the QA items of categories 1–4, verbatim; gold is
//! their evidence dia_ids after normalisation. The same stores are ranked twice: with the
//! default three-part scoring and with relevance only.

use alembic_base::lock;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use alembic_memory::{
    DAY_MS, EmbedError, Embedder, ManualClock, MemoryBackend, MemoryConfig, NewMemory,
    PersistentMemory, Ranking, RetrieveOptions,
};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// How deep each query's ranking goes (MRR is computed over this ranking).
const DEPTH: usize = 100;

#[derive(Debug, Deserialize)]
struct Sample {
    sample_id: String,
    conversation: serde_json::Map<String, serde_json::Value>,
    qa: Vec<Qa>,
}

#[derive(Debug, Deserialize)]
struct Qa {
    question: String,
    #[serde(default)]
    evidence: Vec<String>,
    category: u8,
}

#[derive(Debug, Deserialize)]
struct Turn {
    speaker: String,
    dia_id: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

/// One conversation ready to load: turns with their time, and the queries with gold ids.
#[derive(Debug)]
pub struct Conversation {
    pub id: String,
    /// (dia_id, text, time, preceding turn of the same session)
    pub turns: Vec<(String, String, i64, String)>,
    pub queries: Vec<(String, HashSet<String>)>,
}

/// Parses "1:56 pm on 8 May, 2023" into Unix milliseconds (UTC).
pub fn parse_session_date(text: &str) -> Option<i64> {
    let normalised = text.trim().to_uppercase();
    chrono::NaiveDateTime::parse_from_str(&normalised, "%I:%M %p ON %d %B, %Y")
        .ok()
        .map(|t| t.and_utc().timestamp_millis())
}

/// Normalises an evidence string: splits "D8:6; D9:17", fixes "D:11:26" and "D30:05".
pub fn normalise_evidence(raw: &str) -> Vec<String> {
    raw.split(|c: char| c == ';' || c == ',' || c.is_whitespace())
        .filter_map(|part| {
            let digits: Vec<&str> = part
                .trim_start_matches('D')
                .split(':')
                .filter(|s| !s.is_empty())
                .collect();
            match digits.as_slice() {
                [s, t] => Some(format!(
                    "D{}:{}",
                    s.parse::<u32>().ok()?,
                    t.parse::<u32>().ok()?
                )),
                _ => None,
            }
        })
        .collect()
}

fn session_turns(sample: &Sample) -> Result<Vec<(String, String, i64, String)>> {
    let mut sessions: Vec<(u32, i64, Vec<Turn>)> = Vec::new();
    for (key, value) in &sample.conversation {
        let Some(n) = key
            .strip_prefix("session_")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let date_key = format!("session_{n}_date_time");
        let date = sample
            .conversation
            .get(&date_key)
            .and_then(|d| d.as_str())
            .and_then(parse_session_date)
            .with_context(|| format!("{}: no parsable {date_key}", sample.sample_id))?;
        let turns: Vec<Turn> = serde_json::from_value(value.clone())
            .with_context(|| format!("{}: bad turns in {key}", sample.sample_id))?;
        sessions.push((n, date, turns));
    }
    sessions.sort_by_key(|s| s.0);
    let mut out = Vec::new();
    for (_, date, turns) in sessions {
        let mut previous = String::new();
        for (i, t) in turns.into_iter().enumerate() {
            let mut text = format!("{}: {}", t.speaker, t.text);
            if let Some(caption) = t.blip_caption.filter(|c| !c.is_empty()) {
                text.push_str(&format!(" [shares {caption}]"));
            }
            // turns of a session are a few seconds apart, in order
            out.push((
                t.dia_id,
                text.clone(),
                date + i as i64 * 1000,
                std::mem::replace(&mut previous, text),
            ));
        }
    }
    Ok(out)
}

/// Loads the dev split: every conversation with its turns and category 1–4 queries.
pub fn load(path: &Path) -> Result<Vec<Conversation>> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read LoCoMo data {} (expected ../shared/data/locomo-dev.json)",
            path.display()
        )
    })?;
    let samples: Vec<Sample> =
        serde_json::from_str(&text).context("LoCoMo data is not a list of samples")?;
    let mut out = Vec::new();
    for sample in &samples {
        let turns = session_turns(sample)?;
        let known: HashSet<&str> = turns.iter().map(|t| t.0.as_str()).collect();
        let queries = sample
            .qa
            .iter()
            .filter(|q| (1..=4).contains(&q.category))
            .filter_map(|q| {
                let gold: HashSet<String> = q
                    .evidence
                    .iter()
                    .flat_map(|e| normalise_evidence(e))
                    .filter(|id| known.contains(id.as_str()))
                    .collect();
                (!gold.is_empty()).then(|| (q.question.clone(), gold))
            })
            .collect();
        out.push(Conversation {
            id: sample.sample_id.clone(),
            turns,
            queries,
        });
    }
    if out.is_empty() {
        bail!("LoCoMo data {} holds no conversations", path.display());
    }
    Ok(out)
}

/// Retrieval quality and latency for one ranking.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    pub hit_at_1: f64,
    pub hit_at_5: f64,
    pub hit_at_10: f64,
    pub mrr: f64,
    pub ndcg_at_10: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub queries: usize,
}

/// Both rankings, as printed by `--json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub default: Metrics,
    pub relevance_only: Metrics,
    pub embedder: String,
    pub conversations: usize,
    pub memories: usize,
}

#[derive(Default)]
struct Acc {
    hits: [f64; 3],
    mrr: f64,
    ndcg: f64,
    latencies: Vec<f64>,
}

impl Acc {
    fn add(&mut self, ranked: &[String], gold: &HashSet<String>, ms: f64) {
        let first = ranked.iter().position(|id| gold.contains(id));
        for (slot, k) in [1usize, 5, 10].iter().enumerate() {
            if first.is_some_and(|r| r < *k) {
                self.hits[slot] += 1.0;
            }
        }
        self.mrr += first.map_or(0.0, |r| 1.0 / (r as f64 + 1.0));
        let dcg: f64 = ranked
            .iter()
            .take(10)
            .enumerate()
            .filter(|(_, id)| gold.contains(*id))
            .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
            .sum();
        let ideal: f64 = (0..gold.len().min(10))
            .map(|i| 1.0 / (i as f64 + 2.0).log2())
            .sum();
        self.ndcg += if ideal > 0.0 { dcg / ideal } else { 0.0 };
        self.latencies.push(ms);
    }

    fn finish(mut self) -> Metrics {
        let n = self.latencies.len().max(1) as f64;
        self.latencies.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            let i = ((self.latencies.len() as f64 - 1.0) * p).round() as usize;
            self.latencies.get(i).copied().unwrap_or(0.0)
        };
        Metrics {
            hit_at_1: self.hits[0] / n,
            hit_at_5: self.hits[1] / n,
            hit_at_10: self.hits[2] / n,
            mrr: self.mrr / n,
            ndcg_at_10: self.ndcg / n,
            p50_ms: pct(0.50),
            p95_ms: pct(0.95),
            queries: self.latencies.len(),
        }
    }
}

/// Where the benchmark stores each conversation's memories.
#[derive(Debug, Clone, Default)]
pub enum Backend {
    /// An in-memory SQLite store per conversation (the default).
    #[default]
    Sqlite,
    /// The team store on the PostgreSQL server at this URL, one new team per conversation.
    Postgres { url: String },
}

/// Builds one conversation's store: every turn a memory stamped with its session time.
fn build_store(
    conv: &Conversation,
    embedder: Option<Arc<dyn Embedder>>,
    backend: &Backend,
) -> Result<Box<dyn MemoryBackend>> {
    let last = conv.turns.iter().map(|t| t.2).max().unwrap_or(0);
    let clock = Arc::new(ManualClock::new(last + DAY_MS));
    let config = MemoryConfig {
        // a conversation has ~600 turns; the benchmark measures ranking, not eviction
        max_per_scope: conv.turns.len() + 1,
        ..MemoryConfig::default()
    };
    let inputs = turn_memories(conv);
    if let Backend::Postgres { url } = backend {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos();
        let team = alembic_team::TeamConfig::new(url.clone(), format!("locomo-{nanos}"), "bench");
        let mut store = alembic_team::PgMemory::open(&team, config, clock)?.with_embedder(embedder);
        for input in inputs {
            store.add(input)?;
        }
        return Ok(Box::new(store));
    }
    let mut store = PersistentMemory::open_in_memory(config, clock)?.with_embedder(embedder);
    store.add_batch(&inputs)?;
    Ok(Box::new(store))
}

fn turn_memories(conv: &Conversation) -> Vec<NewMemory> {
    conv.turns
        .iter()
        .map(|(dia, text, at, previous)| {
            NewMemory::fact(text.clone())
                .with_provenance(dia.clone())
                .with_valid_from(*at)
                .with_context_text(previous.clone())
        })
        .collect()
}

fn rank_ids(
    store: &mut dyn MemoryBackend,
    query: &str,
    ranking: Ranking,
) -> Result<(Vec<String>, f64)> {
    let options = RetrieveOptions {
        limit: DEPTH,
        ranking: Some(ranking),
        ..RetrieveOptions::default()
    };
    let start = Instant::now();
    let hits = store.retrieve(query, &options)?;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let ids = hits
        .into_iter()
        .filter_map(|h| h.memory.provenance)
        .collect();
    Ok((ids, ms))
}

/// Remembers the vector of every text it has embedded: each question is ranked twice (default
/// and relevance only) and should cost one forward pass, not two. Latency figures then
/// include the query embedding once per question, for the first ranking.
struct MemoEmbedder {
    inner: Arc<dyn Embedder>,
    seen: Mutex<HashMap<String, Vec<f32>>>,
}

impl Embedder for MemoEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, EmbedError> {
        let mut seen = lock(&self.seen);
        let missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !seen.contains_key(*t))
            .collect::<HashSet<&str>>()
            .into_iter()
            .collect();
        if !missing.is_empty() {
            for (text, vector) in missing.iter().zip(self.inner.embed(&missing)?) {
                seen.insert((*text).to_string(), vector);
            }
        }
        Ok(texts.iter().filter_map(|t| seen.get(*t).cloned()).collect())
    }
}

/// Runs the benchmark over all conversations.
pub fn evaluate(
    conversations: &[Conversation],
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<Report> {
    evaluate_with(conversations, embedder, false)
}

/// [`evaluate`], optionally embedding each conversation's questions in batches before its
/// queries run (`batch_queries`). Batching gives the same vectors for a fraction of the time
/// (tests use it); the latency figures then leave out the query embedding.
pub fn evaluate_with(
    conversations: &[Conversation],
    embedder: Option<Arc<dyn Embedder>>,
    batch_queries: bool,
) -> Result<Report> {
    evaluate_on(conversations, embedder, batch_queries, &Backend::Sqlite)
}

/// [`evaluate_with`] on the given storage backend.
pub fn evaluate_on(
    conversations: &[Conversation],
    embedder: Option<Arc<dyn Embedder>>,
    batch_queries: bool,
    backend: &Backend,
) -> Result<Report> {
    let embedder = embedder.map(|inner| -> Arc<dyn Embedder> {
        Arc::new(MemoEmbedder {
            inner,
            seen: Mutex::new(HashMap::new()),
        })
    });
    let (mut default, mut relevance) = (Acc::default(), Acc::default());
    let mut memories = 0;
    for conv in conversations {
        let mut store = build_store(conv, embedder.clone(), backend)?;
        if let (true, Some(e)) = (batch_queries, &embedder) {
            let questions: Vec<&str> = conv.queries.iter().map(|q| q.0.as_str()).collect();
            e.embed(&questions)?;
        }
        memories += conv.turns.len();
        for (question, gold) in &conv.queries {
            let (ids, ms) = rank_ids(store.as_mut(), question, Ranking::Banded)?;
            default.add(&ids, gold, ms);
            let (ids, ms) = rank_ids(store.as_mut(), question, Ranking::RelevanceOnly)?;
            relevance.add(&ids, gold, ms);
        }
    }
    Ok(Report {
        default: default.finish(),
        relevance_only: relevance.finish(),
        embedder: embedder.map_or_else(
            || "none (lexical)".to_string(),
            |e| e.model_id().to_string(),
        ),
        conversations: conversations.len(),
        memories,
    })
}

/// Human-readable table.
pub fn render(report: &Report) -> String {
    let mut out = format!(
        "LoCoMo turn retrieval: {} conversations, {} memories, {} queries (categories 1-4), embedder: {}\n",
        report.conversations, report.memories, report.default.queries, report.embedder
    );
    out.push_str("ranking          hit@1  hit@5  hit@10  MRR    nDCG@10  p50 ms  p95 ms\n");
    for (name, m) in [
        ("default", &report.default),
        ("relevance only", &report.relevance_only),
    ] {
        out.push_str(&format!(
            "{name:<16} {:.3}  {:.3}  {:.3}   {:.3}  {:.3}    {:.2}    {:.2}\n",
            m.hit_at_1, m.hit_at_5, m.hit_at_10, m.mrr, m.ndcg_at_10, m.p50_ms, m.p95_ms
        ));
    }
    out
}

/// Per-conversation gold ids, exposed for tests.
pub fn gold_counts(conversations: &[Conversation]) -> HashMap<String, usize> {
    conversations
        .iter()
        .map(|c| (c.id.clone(), c.queries.len()))
        .collect()
}
