use std::sync::Arc;

use alembic_memory::{
    DAY_MS, EmbedError, Embedder, MemoryConfig, NewMemory, Ranking, RetrievalConfig,
    RetrieveOptions,
};
use pretty_assertions::assert_eq;

use super::{memory, memory_with};

/// Bag-of-concepts embedder: each known word lights up one dimension; synonyms share one.
struct ConceptEmbedder;

const CONCEPTS: &[&[&str]] = &[
    &["cat", "feline", "kitten"],
    &["mat", "rug", "carpet"],
    &["rust", "borrow"],
    &["deploy", "release"],
];

impl Embedder for ConceptEmbedder {
    fn model_id(&self) -> &str {
        "test-concepts"
    }
    fn dimension(&self) -> usize {
        CONCEPTS.len() + 1
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; CONCEPTS.len() + 1];
                v[CONCEPTS.len()] = 0.1; // every text shares a little
                for word in t.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
                    if let Some(i) = CONCEPTS.iter().position(|c| c.contains(&word)) {
                        v[i] += 1.0;
                    }
                }
                v
            })
            .collect())
    }
}

/// An embedder whose service is down.
struct DownEmbedder;

impl Embedder for DownEmbedder {
    fn model_id(&self) -> &str {
        "down"
    }
    fn dimension(&self) -> usize {
        4
    }
    fn embed(&self, _: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Err(EmbedError::Http {
            url: "http://127.0.0.1:9/v1/embeddings".into(),
            reason: "connection refused".into(),
        })
    }
}

fn contents(hits: &[alembic_memory::ScoredMemory]) -> Vec<&str> {
    hits.iter().map(|h| h.memory.content.as_str()).collect()
}

#[test]
fn relevance_floor_never_returns_irrelevant_memories() {
    let (mut pm, _) = memory();
    pm.add(
        NewMemory::fact("CRITICAL: never commit secrets to the repository").with_importance(10.0),
    )
    .unwrap();
    pm.add(NewMemory::fact("Payment module uses the Repository pattern").with_importance(3.0))
        .unwrap();
    let hits = pm
        .retrieve("payment pattern", &RetrieveOptions::default())
        .unwrap();
    assert_eq!(
        contents(&hits),
        vec!["Payment module uses the Repository pattern"]
    );
    assert!(
        pm.retrieve("kubernetes helm chart", &RetrieveOptions::default())
            .unwrap()
            .is_empty()
    );
    assert!(
        pm.retrieve("what is the", &RetrieveOptions::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn chinese_queries_match_without_spaces() {
    let (mut pm, _) = memory();
    pm.add(NewMemory::fact("支付模块采用协调器加仓储模式"))
        .unwrap();
    pm.add(NewMemory::fact("网络层统一使用重试策略")).unwrap();
    pm.add(NewMemory::fact("The payment module talks to Stripe"))
        .unwrap();
    assert_eq!(
        contents(&pm.retrieve("协调器", &RetrieveOptions::default()).unwrap()),
        vec!["支付模块采用协调器加仓储模式"]
    );
    assert_eq!(
        contents(
            &pm.retrieve("重试策略是什么", &RetrieveOptions::default())
                .unwrap()
        ),
        vec!["网络层统一使用重试策略"]
    );
    let mixed = pm
        .retrieve("payment 支付", &RetrieveOptions::default())
        .unwrap();
    assert_eq!(mixed.len(), 2);
}

#[test]
fn score_is_the_weighted_sum_of_three_parts() {
    let (mut pm, clock) = memory();
    pm.add(NewMemory::fact("swift concurrency uses actors").with_importance(8.0))
        .unwrap();
    clock.advance_days(7.0);
    let hit = pm
        .retrieve("swift actors", &RetrieveOptions::default())
        .unwrap()
        .remove(0);
    assert!((hit.parts.recency - 0.5).abs() < 1e-9, "{:?}", hit.parts);
    assert!((hit.parts.importance - 0.8).abs() < 1e-9);
    assert!((hit.parts.relevance - 1.0).abs() < 1e-9);
    assert!(
        (hit.score - (0.2 * 0.5 + 0.3 * 0.8 + 0.5 * 1.0)).abs() < 1e-9,
        "{}",
        hit.score
    );

    let config = MemoryConfig {
        retrieval: RetrievalConfig {
            weight_recency: 0.0,
            weight_importance: 0.0,
            weight_relevance: 1.0,
            recency_half_life_days: 1.0,
            ..RetrievalConfig::default()
        },
        ..MemoryConfig::default()
    };
    let (mut pm, clock) = memory_with(config);
    pm.add(NewMemory::fact("swift concurrency uses actors"))
        .unwrap();
    clock.advance_days(1.0);
    let hit = pm
        .retrieve("swift actors", &RetrieveOptions::default())
        .unwrap()
        .remove(0);
    assert!((hit.parts.recency - 0.5).abs() < 1e-9);
    assert!((hit.score - 1.0).abs() < 1e-9);
}

#[test]
fn recency_and_importance_reorder_only_equally_relevant_memories() {
    let (mut pm, clock) = memory();
    // unrelated memories, so that BM25's document frequencies mean something
    for filler in [
        "auth tokens rotate hourly",
        "logs ship to loki",
        "feature flags in launchdarkly",
        "api docs use openapi",
        "db migrations run on boot",
        "icons come from sf symbols",
    ] {
        pm.add(NewMemory::fact(filler)).unwrap();
    }
    // strongly relevant but old and unimportant
    pm.add(NewMemory::fact("gradle build cache gradle build cache settings").with_importance(1.0))
        .unwrap();
    clock.advance_days(25.0);
    // reading keeps it out of the archive but does not make its content fresher
    pm.retrieve("gradle", &RetrieveOptions::default()).unwrap();
    clock.advance_days(25.0);
    // weakly relevant but fresh and important
    pm.add(
        NewMemory::fact("the build cache is slow on CI runners with many unrelated words in it")
            .with_importance(10.0),
    )
    .unwrap();
    // two equally relevant ones differing in importance
    pm.add(NewMemory::fact("lint rules live in detekt config").with_importance(2.0))
        .unwrap();
    pm.add(NewMemory::fact("detekt config holds the lint rules").with_importance(9.0))
        .unwrap();

    let banded = pm
        .retrieve("gradle build cache", &RetrieveOptions::default())
        .unwrap();
    assert!(
        banded[0].memory.content.starts_with("gradle"),
        "{:?}",
        contents(&banded)
    );
    let weighted = RetrieveOptions {
        ranking: Some(Ranking::Weighted),
        ..RetrieveOptions::default()
    };
    let global = pm.retrieve("gradle build cache", &weighted).unwrap();
    assert!(
        global[0]
            .memory
            .content
            .starts_with("the build cache is slow"),
        "{:?}",
        global
            .iter()
            .map(|h| (h.score, h.parts))
            .collect::<Vec<_>>()
    );

    let lint = pm
        .retrieve("detekt lint rules", &RetrieveOptions::default())
        .unwrap();
    assert_eq!(lint[0].memory.importance, 9.0, "{:?}", contents(&lint));
}

#[test]
fn retrieval_counts_accesses_unless_told_not_to() {
    let (mut pm, clock) = memory();
    let m = pm
        .add(NewMemory::fact("release notes are generated by git-cliff"))
        .unwrap();
    clock.advance_days(2.0);
    pm.retrieve("release notes", &RetrieveOptions::default())
        .unwrap();
    pm.retrieve("git-cliff", &RetrieveOptions::default())
        .unwrap();
    let quiet = RetrieveOptions {
        touch: false,
        ..RetrieveOptions::default()
    };
    pm.retrieve("release notes", &quiet).unwrap();
    let after = pm.get(&m.id).unwrap().unwrap();
    assert_eq!(after.access_count, 2);
    assert_eq!(after.last_accessed, m.created + 2 * DAY_MS);
    // reading does not make the content look fresh
    assert_eq!(after.updated, m.updated);
}

#[test]
fn embeddings_fuse_with_lexical_and_respect_the_floor() {
    let (pm, _) = memory();
    let mut pm = pm.with_embedder(Some(Arc::new(ConceptEmbedder)));
    pm.add(NewMemory::fact("The cat sits on the mat")).unwrap();
    pm.add(NewMemory::fact("Rust borrow checker error E0502"))
        .unwrap();
    pm.add(NewMemory::fact("Deploys happen on Fridays"))
        .unwrap();
    assert_eq!(pm.stats().unwrap().with_vectors, 3);
    // no shared word: found through the vector only
    let hits = pm
        .retrieve("a feline resting on a rug", &RetrieveOptions::default())
        .unwrap();
    assert_eq!(contents(&hits), vec!["The cat sits on the mat"]);
    assert!(hits[0].parts.lexical.is_none());
    assert!(hits[0].parts.semantic.unwrap() > 0.9);
    // both channels agree
    let hits = pm
        .retrieve("borrow checker", &RetrieveOptions::default())
        .unwrap();
    assert_eq!(contents(&hits), vec!["Rust borrow checker error E0502"]);
    assert!(hits[0].parts.lexical.is_some() && hits[0].parts.semantic.is_some());
}

#[test]
fn a_failing_embedder_falls_back_to_lexical_silently() {
    let (pm, _) = memory();
    let mut pm = pm.with_embedder(Some(Arc::new(DownEmbedder)));
    pm.add(NewMemory::fact("The cat sits on the mat")).unwrap();
    assert_eq!(pm.stats().unwrap().with_vectors, 0);
    let hits = pm.retrieve("cat mat", &RetrieveOptions::default()).unwrap();
    assert_eq!(contents(&hits), vec!["The cat sits on the mat"]);
    assert_eq!(hits[0].parts.semantic, None);
    // back-filling later works once the service is up
    let mut pm = pm.with_embedder(Some(Arc::new(ConceptEmbedder)));
    assert_eq!(pm.embed_missing(10).unwrap(), 1);
    assert_eq!(pm.embed_missing(10).unwrap(), 0);
}

#[test]
fn scope_and_type_filters() {
    let (mut pm, _) = memory();
    pm.add(NewMemory::fact("prefer tabs in makefiles").with_scope(alembic_memory::Scope::User))
        .unwrap();
    pm.add(NewMemory::fact("makefiles live in build dir"))
        .unwrap();
    let user = RetrieveOptions {
        scope: Some(alembic_memory::Scope::User),
        ..RetrieveOptions::default()
    };
    assert_eq!(
        contents(&pm.retrieve("makefiles", &user).unwrap()),
        vec!["prefer tabs in makefiles"]
    );
    let insights = RetrieveOptions {
        kind: Some(alembic_memory::MemoryType::Insight),
        ..RetrieveOptions::default()
    };
    assert!(pm.retrieve("makefiles", &insights).unwrap().is_empty());
    assert_eq!(
        pm.retrieve("makefiles", &RetrieveOptions::default())
            .unwrap()
            .len(),
        2
    );
}
