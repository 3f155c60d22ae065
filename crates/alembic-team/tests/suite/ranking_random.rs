//! Team retrieval equals SQLite's over many random queries on a corpus where a few terms are
//! in a third of all rows and most are rare, with rows in every state the retrievability
//! filter looks at (archived, superseded, expired, not accessed since the archive cut-off,
//! other scopes and types). Every shortcut of the team ranker (pages of the ranking, top-k
//! selection, one transaction) must leave the result FTS5's.

use std::collections::BTreeSet;

use alembic_memory::{
    DAY_MS, Memory, MemoryConfig, MemoryType, NewMemory, RetrieveOptions, Scope, ScoredMemory,
    prepare_memory,
};
use pretty_assertions::assert_eq;

use super::{KINDS, T0, open};

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const COMMON: &[&str] = &["payment", "cache", "worker", "deploy"];

/// A common word (each in about a third of the rows, more than a page of the ranking), one
/// of 40 medium words (a tenth of the rows each) or one of 600 rare ones (a few dozen).
fn word(rng: &mut Rng) -> String {
    match rng.below(10) {
        0 => COMMON[rng.below(COMMON.len())].to_string(),
        1..=3 => format!("m{}", rng.below(40)),
        _ => format!("r{}", rng.below(600)),
    }
}

fn words(rng: &mut Rng, n: usize) -> String {
    (0..n).map(|_| word(rng)).collect::<Vec<_>>().join(" ")
}

fn config() -> MemoryConfig {
    MemoryConfig {
        max_per_scope: 100_000,
        ..MemoryConfig::default()
    }
}

/// `n` memories of 3..=30 words, a fifth with a context, in varied states and ages.
fn corpus(rng: &mut Rng, n: usize) -> Vec<Memory> {
    let scopes = [Scope::Team, Scope::Team, Scope::User, Scope::Project];
    (0..n)
        .map(|i| {
            let len = 3 + rng.below(28);
            let mut input = NewMemory::fact(format!("{} {i}", words(rng, len)))
                .with_scope(scopes[rng.below(scopes.len())])
                .with_importance(1.0 + rng.below(10) as f64);
            if rng.chance(20) {
                let n = 2 + rng.below(8);
                input = input.with_context_text(words(rng, n));
            }
            if rng.chance(20) {
                input = input.with_type(MemoryType::Insight);
            }
            let age = rng.below(20) as i64 * DAY_MS;
            let mut m = prepare_memory(&config(), &input, T0 - age).unwrap();
            match rng.below(20) {
                0 | 1 => m.archived_at = Some(T0 - DAY_MS),
                2 | 3 => {
                    m.valid_to = Some(T0 - DAY_MS);
                    m.superseded_by = Some("a-newer-version".into());
                }
                4 => m.expires_at = Some(T0 - 1),
                5 => m.last_accessed = T0 - 40 * DAY_MS,
                _ => {}
            }
            m
        })
        .collect()
}

fn options(rng: &mut Rng) -> RetrieveOptions {
    let scope = match rng.below(5) {
        0 => Some(Scope::Team),
        1 => Some(Scope::User),
        _ => None,
    };
    let kind = rng.chance(15).then_some(MemoryType::Insight);
    RetrieveOptions {
        limit: 10,
        scope,
        kind,
        touch: false,
        ..RetrieveOptions::default()
    }
}

/// Scores rounded to 1e-9, best first, and the contents holding each score. Rows tied on the
/// last score may be cut differently (FTS5 does not order ties), so that group is compared
/// by size only.
fn shape(hits: &[ScoredMemory]) -> (Vec<i64>, Vec<BTreeSet<String>>) {
    let scores: Vec<i64> = hits
        .iter()
        .map(|h| (h.score * 1e9).round() as i64)
        .collect();
    let mut groups: Vec<BTreeSet<String>> = Vec::new();
    for (i, h) in hits.iter().enumerate() {
        if i == 0 || scores[i] != scores[i - 1] {
            groups.push(BTreeSet::new());
        }
        groups.last_mut().unwrap().insert(h.memory.content.clone());
    }
    groups.pop();
    (scores, groups)
}

#[test]
fn team_ranking_equals_sqlite_over_random_queries() {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let memories = corpus(&mut rng, 1500);
    let queries: Vec<(String, RetrieveOptions)> = (0..150)
        .map(|_| {
            let n = 1 + rng.below(4);
            (words(&mut rng, n), options(&mut rng))
        })
        .collect();
    let mut results = Vec::new();
    for kind in KINDS {
        let (mut store, _) = open(kind, config());
        assert_eq!(store.import(&memories).unwrap(), (1500, 0));
        let hits: Vec<_> = queries
            .iter()
            .map(|(q, o)| shape(&store.retrieve(q, o).unwrap()))
            .collect();
        results.push(hits);
    }
    let matched = results[0].iter().filter(|h| !h.0.is_empty()).count();
    assert!(matched > 120, "most queries find something: {matched}");
    for (i, (q, o)) in queries.iter().enumerate() {
        assert_eq!(
            results[1][i], results[0][i],
            "query {i} {q:?} (scope {:?}, type {:?}): team vs SQLite",
            o.scope, o.kind
        );
    }
}
