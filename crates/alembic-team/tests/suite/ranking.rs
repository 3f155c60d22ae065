//! Team retrieval ranks as the SQLite store does: BM25 from the packed posting lists (schema
//! step 5) gives FTS5's scores, the postings follow every write, and a store upgraded from
//! step 4 keeps every posting and ranks as a new one.

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

/// Writes at schema step 4 or later: rows on both sides of a block boundary of the packed
/// lists (seqs 4,094 to 4,101), one with a context, then an edit and a delete, so the step's
/// triggers index, re-index and drop postings before the upgrade.
const STEP_4_WRITES: &str = "
select setval('team_memories_seq_seq', 4093);
insert into team_memories (team, id, scope, type, content, context, source, importance,
    last_accessed, created, updated, valid_from, author, search, search_len)
select 'platform', 'm' || i, 'team', 'fact', c, x, 'user', 5, 1767225600000,
       1767225600000, 1767225600000, 1767225600000, 'ana',
       setweight(to_tsvector('english', c), 'A') || setweight(to_tsvector('english', coalesce(x, '')), 'D'),
       array_length(regexp_split_to_array(c || ' ' || coalesce(x, ''), '\\s+'), 1)
from (values (1, 'Payment retries back off with jitter', null),
             (2, 'The payment queue drains every minute', null),
             (3, 'Release notes go out on Tuesdays', 'payment release review'),
             (4, 'The cache keeps payment tokens for five minutes', null),
             (5, 'Payment workers retry payment charges', null),
             (6, 'Logging goes to the central collector', null),
             (7, 'Retries are capped at three for the payment worker', null),
             (8, 'The queue worker logs each retry', 'payment queue')) v(i, c, x);
update team_memories set content = 'The payment queue drains every second',
    search = setweight(to_tsvector('english', 'The payment queue drains every second'), 'A'),
    search_len = 6 where id = 'm2';
delete from team_memories where id = 'm6';
";

/// Every posting of the team as (lexeme, seq, tf_a, tf_d, len), sorted, from the step 4
/// table or the step 5 packed blocks (20 bytes a posting: seq, tf_a, tf_d, len, big-endian).
async fn all_postings(
    pool: &sqlx::PgPool,
    packed: bool,
) -> Result<Vec<(String, i64, i32, i32, i32)>, sqlx::Error> {
    if !packed {
        let sql = "select lexeme, seq, tf_a, tf_d, len from team_memory_postings order by 1, 2";
        return sqlx::query_as(sql).fetch_all(pool).await;
    }
    let blocks: Vec<(String, Vec<u8>)> =
        sqlx::query_as("select lexeme, postings from team_memory_lists")
            .fetch_all(pool)
            .await?;
    let int = |b: &[u8]| i32::from_be_bytes(b.try_into().unwrap());
    let mut all: Vec<(String, i64, i32, i32, i32)> = blocks
        .iter()
        .flat_map(|(lexeme, block)| {
            assert_eq!(block.len() % 20, 0, "{lexeme}: {} bytes", block.len());
            block.chunks_exact(20).map(|p| {
                let seq = i64::from_be_bytes(p[..8].try_into().unwrap());
                (
                    lexeme.clone(),
                    seq,
                    int(&p[8..12]),
                    int(&p[12..16]),
                    int(&p[16..20]),
                )
            })
        })
        .collect();
    all.sort();
    Ok(all)
}

fn step_5_rankings(team: &TeamConfig) -> Vec<Vec<(String, i64)>> {
    let clock = alembic_memory::ManualClock::new(T0);
    let mut pm = PgMemory::open(team, MemoryConfig::default(), Arc::new(clock)).unwrap();
    [
        "payment retries worker",
        "payment",
        "queue",
        "release review",
    ]
    .iter()
    .map(|q| ranked(&pm.retrieve(q, &no_touch()).unwrap()))
    .collect()
}

#[test]
fn upgrading_a_step_4_store_packs_the_same_postings_and_ranks_the_same() {
    // written at step 4, then upgraded by opening it
    let upgraded = TeamConfig::new(fresh_database(), "platform", "ana");
    let admin = PgClient::connect(&upgraded).unwrap();
    let server = admin.server().to_string();
    let before = admin
        .run(move |pool| async move {
            migrate(&pool, &server, MEMORY_COMPONENT, &MEMORY_MIGRATIONS[..4]).await?;
            sqlx::raw_sql(STEP_4_WRITES).execute(&pool).await?;
            Ok(all_postings(&pool, false).await?)
        })
        .unwrap();
    assert_eq!(
        before.iter().filter(|p| p.1 == 4099).count(),
        0,
        "m6 dropped"
    );
    assert!(before.iter().any(|p| p.1 < 4096) && before.iter().any(|p| p.1 >= 4096));
    let upgraded_hits = step_5_rankings(&upgraded);
    let after = admin
        .run(|pool| async move { Ok(all_postings(&pool, true).await?) })
        .unwrap();
    assert_eq!(after, before);
    assert!(upgraded_hits[0].len() >= 4, "{upgraded_hits:?}");

    // the same writes on a new store at step 5: its triggers keep the same lists
    let fresh = TeamConfig::new(fresh_database(), "platform", "ana");
    let _ = step_5_rankings(&fresh);
    let admin = PgClient::connect(&fresh).unwrap();
    let packed = admin
        .run(|pool| async move {
            sqlx::raw_sql(STEP_4_WRITES).execute(&pool).await?;
            Ok(all_postings(&pool, true).await?)
        })
        .unwrap();
    assert_eq!(packed, before);
    assert_eq!(step_5_rankings(&fresh), upgraded_hits);
}
