//! Team retrieval ranks as the SQLite store does: BM25 from the postings table (schema step
//! 3) gives FTS5's scores, and the postings follow every write.

use std::sync::Arc;

use alembic_memory::{
    MemoryBackend, MemoryConfig, MemoryUpdate, NewMemory, RetrieveOptions, ScoredMemory,
};
use alembic_team::schema::{MEMORY_COMPONENT, MEMORY_MIGRATIONS, migrate};
use alembic_team::{PgClient, PgMemory, TeamConfig};
use pretty_assertions::assert_eq;

use super::{KINDS, Kind, T0, fresh_database, open};

/// (content, score) of each hit, scores rounded to 1e-9.
fn ranked(hits: &[ScoredMemory]) -> Vec<(String, i64)> {
    hits.iter()
        .map(|h| (h.memory.content.clone(), (h.score * 1e9).round() as i64))
        .collect()
}

fn no_touch() -> RetrieveOptions {
    RetrieveOptions {
        limit: 20,
        touch: false,
        ..RetrieveOptions::default()
    }
}

/// The same writes on `pm`: memories of varied lengths, one with a context, then an edit, a
/// forget and a consolidation that replaces one, so postings must follow each of them.
fn write_history(pm: &mut dyn MemoryBackend) {
    let texts = [
        "The payment service retries failed charges three times",
        "Payment retries use exponential backoff with jitter in the payment worker",
        "The cache layer keeps payment tokens for five minutes",
        "Deploys go out on Tuesdays after the release review",
        "The scheduler worker drains the payment queue every minute",
        "Logging goes to the central collector",
    ];
    let mut ids = Vec::new();
    for t in texts {
        ids.push(pm.add(NewMemory::fact(t)).unwrap().id);
    }
    pm.add(
        NewMemory::fact("Charges are idempotent by request key")
            .with_context_text("payment retries and the worker queue"),
    )
    .unwrap();
    let edit = MemoryUpdate {
        content: Some("Deploys go out on Tuesdays; payment deploys need a second review".into()),
        ..MemoryUpdate::default()
    };
    pm.update(&ids[3], edit).unwrap();
    assert!(pm.forget(&ids[5]).unwrap());
    pm.consolidate(&[NewMemory::fact(
        "The cache layer no longer keeps payment tokens for five minutes",
    )])
    .unwrap();
}

#[test]
fn team_scores_equal_sqlite_scores_after_adds_edits_forgets_and_consolidation() {
    let mut results = Vec::new();
    for kind in KINDS {
        let (mut pm, _) = open(kind, MemoryConfig::default());
        write_history(pm.as_mut());
        let queries = [
            "payment retries worker",
            "payment",
            "cache tokens",
            "review",
        ];
        let hits: Vec<Vec<(String, i64)>> = queries
            .iter()
            .map(|q| ranked(&pm.retrieve(q, &no_touch()).unwrap()))
            .collect();
        assert!(hits[0].len() >= 4, "{kind:?}: {:?}", hits[0]);
        results.push((kind, hits));
    }
    let (sqlite, postgres) = (&results[0], &results[1]);
    assert_eq!((sqlite.0, postgres.0), (Kind::Sqlite, Kind::Postgres));
    assert_eq!(postgres.1, sqlite.1);
}

#[test]
fn upgrading_a_step_2_store_indexes_the_memories_it_holds() {
    let url = fresh_database();
    let team = TeamConfig::new(url, "platform", "ana");
    let admin = PgClient::connect(&team).unwrap();
    let server = admin.server().to_string();
    admin
        .run(move |pool| async move {
            migrate(&pool, &server, MEMORY_COMPONENT, &MEMORY_MIGRATIONS[..2]).await?;
            sqlx::raw_sql(
                "insert into team_memories (team, id, scope, type, content, source, importance,
                     last_accessed, created, updated, valid_from, author, search)
                 select 'platform', 'm' || i, 'team', 'fact', c, 'user', 5, 1767225600000,
                        1767225600000, 1767225600000, 1767225600000, 'ana',
                        setweight(to_tsvector('english', c), 'A')
                 from (values (1, 'Payment retries back off'), (2, 'The payment queue'),
                              (3, 'Release notes')) v(i, c)",
            )
            .execute(&pool)
            .await?;
            Ok(())
        })
        .unwrap();
    let clock = alembic_memory::ManualClock::new(T0);
    let mut pm = PgMemory::open(&team, MemoryConfig::default(), Arc::new(clock)).unwrap();
    let hits = pm.retrieve("payment retries", &no_touch()).unwrap();
    let contents: Vec<&str> = hits.iter().map(|h| h.memory.content.as_str()).collect();
    assert_eq!(contents, ["Payment retries back off", "The payment queue"]);
    // a memory added after the upgrade is indexed by the statement triggers
    pm.add(NewMemory::fact("Payment retries are capped at three"))
        .unwrap();
    let hits = pm.retrieve("capped", &no_touch()).unwrap();
    assert_eq!(hits.len(), 1);
}
