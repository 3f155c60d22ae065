//! Tests against a real PostgreSQL server (never a mock): `scripts/test` starts one with
//! `scripts/setup-postgres` and exports its URL as `ALEMBIC_TEST_PG_URL`.

mod contract;
mod knowledge;
mod ranking;
mod ranking_random;
mod row_security;
mod team;
mod tools;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use alembic_memory::{ManualClock, MemoryBackend, MemoryConfig, PersistentMemory};
use alembic_team::{PgClient, PgMemory, TeamConfig};

/// 2026-01-01T00:00:00Z
pub const T0: i64 = 1_767_225_600_000;

/// The test server's URL. Unset is a failure, never a skip.
pub fn pg_url() -> String {
    std::env::var("ALEMBIC_TEST_PG_URL").unwrap_or_else(|_| {
        panic!(
            "ALEMBIC_TEST_PG_URL is not set: these tests need a PostgreSQL server; run \
             `export ALEMBIC_TEST_PG_URL=$(scripts/setup-postgres)` (or scripts/test, which does it)"
        )
    })
}

/// A team name no other test (or earlier run) uses.
pub fn fresh_team(label: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{label}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A new, empty database on the test server; returns its URL.
pub fn fresh_database() -> String {
    let url = pg_url();
    let name = fresh_team("db").replace('-', "_");
    let admin = PgClient::connect(&TeamConfig::new(url.clone(), "admin", "test")).unwrap();
    let sql = format!("create database {name}");
    admin
        .run(move |pool| async move {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&pool)
                .await?;
            Ok(())
        })
        .unwrap();
    let (base, _) = url.rsplit_once('/').unwrap();
    format!("{base}/{name}")
}

pub fn team_config(team: &str) -> TeamConfig {
    TeamConfig::new(pg_url(), team, "ana")
}

pub fn pg_memory(team: &str, config: MemoryConfig, clock: &ManualClock) -> PgMemory {
    PgMemory::open(&team_config(team), config, Arc::new(clock.clone())).unwrap()
}

/// The storage backends the contract suite runs against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

pub const KINDS: [Kind; 2] = [Kind::Sqlite, Kind::Postgres];

/// A fresh, empty store of `kind` with its own clock at [`T0`].
pub fn open(kind: Kind, config: MemoryConfig) -> (Box<dyn MemoryBackend>, ManualClock) {
    let clock = ManualClock::new(T0);
    let backend: Box<dyn MemoryBackend> = match kind {
        Kind::Sqlite => {
            Box::new(PersistentMemory::open_in_memory(config, Arc::new(clock.clone())).unwrap())
        }
        Kind::Postgres => Box::new(pg_memory(&fresh_team("contract"), config, &clock)),
    };
    (backend, clock)
}
