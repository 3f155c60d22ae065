//! Row-level security on the team memory tables (schema step 4) and the team knowledge
//! tables (knowledge step 2): a role that is not a
//! superuser (superusers bypass it) sees only the team its transaction names, even in a
//! query without a team filter, and the team store works through it unchanged.

use std::sync::Arc;

use alembic_knowledge::contract::candidate;
use alembic_knowledge::{Filter, KnowledgeBackend, NewEntry, Status};
use alembic_memory::{MemoryBackend, MemoryConfig, NewMemory, RetrieveOptions};
use alembic_team::tx::{begin_team, begin_team_unflushed};
use alembic_team::{PgClient, PgKnowledge, PgMemory, TeamConfig};
use pretty_assertions::assert_eq;

use super::{T0, fresh_database, fresh_team, pg_url};

/// A login role without superuser rights, allowed to use the tables of the database at
/// `url`, without CREATE on the schema (a store that is up to date needs none); returns the
/// URL that connects as it.
fn plain_role(url: &str) -> String {
    let role = fresh_team("rls").replace('-', "_");
    let admin = PgClient::connect(&TeamConfig::new(url, "admin", "test")).unwrap();
    let sql = format!(
        "create role {role} login;
         revoke create on schema public from public;
         grant usage on schema public to {role};
         grant select, insert, update, delete on all tables in schema public to {role};
         grant usage on all sequences in schema public to {role};"
    );
    admin
        .run(move |pool| async move {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&pool)
                .await?;
            Ok(())
        })
        .unwrap();
    url.replacen("alembic@", &format!("{role}@"), 1)
}

fn open(url: &str, team: &str) -> PgMemory {
    let clock = alembic_memory::ManualClock::new(T0);
    PgMemory::open(
        &TeamConfig::new(url, team, "ana"),
        MemoryConfig::default(),
        Arc::new(clock),
    )
    .unwrap()
}

#[test]
fn a_query_without_the_team_filter_still_sees_only_its_team() {
    let url = fresh_database();
    open(&url, "red")
        .add(NewMemory::fact("Red deploys on Mondays"))
        .unwrap();
    open(&url, "blue")
        .add(NewMemory::fact("Blue deploys on Fridays"))
        .unwrap();
    let role_url = plain_role(&url);

    // the team store works as the plain role: every statement runs inside begin_team
    let mut red = open(&role_url, "red");
    red.add(NewMemory::fact("Red freezes deploys in December"))
        .unwrap();
    let hits = red
        .retrieve("deploys", &RetrieveOptions::default())
        .unwrap();
    let mut contents: Vec<String> = hits.into_iter().map(|h| h.memory.content).collect();
    contents.sort();
    assert_eq!(
        contents,
        ["Red deploys on Mondays", "Red freezes deploys in December"]
    );

    let client = PgClient::connect(&TeamConfig::new(role_url, "red", "ana")).unwrap();
    let (scoped, unscoped, foreign_insert) = client
        .run(|pool| async move {
            let mut tx = begin_team(&pool, "red").await?;
            let scoped: Vec<(String, String)> =
                sqlx::query_as("select team, content from team_memories order by content")
                    .fetch_all(&mut *tx)
                    .await?;
            let foreign = sqlx::query(
                "insert into team_memory_stats (team, rows, total_len) values ('blue', 0, 0)",
            )
            .execute(&mut *tx)
            .await
            .map_err(|e| e.to_string());
            tx.rollback().await?;
            let unscoped: i64 = sqlx::query_scalar("select count(*) from team_memories")
                .fetch_one(&pool)
                .await?;
            Ok((scoped, unscoped, foreign))
        })
        .unwrap();
    assert_eq!(
        scoped,
        [
            ("red".to_string(), "Red deploys on Mondays".to_string()),
            (
                "red".to_string(),
                "Red freezes deploys in December".to_string()
            ),
        ]
    );
    assert_eq!(unscoped, 0, "no team named: no rows");
    let err = foreign_insert.unwrap_err();
    assert!(err.contains("row-level security"), "{err}");
}

fn knowledge(url: &str, team: &str) -> PgKnowledge {
    let clock = alembic_memory::ManualClock::new(T0);
    PgKnowledge::open(&TeamConfig::new(url, team, "ana"), Arc::new(clock)).unwrap()
}

fn recipe(title: &str) -> NewEntry {
    candidate(title, &format!("{title}: run the blue pipeline"))
}

#[test]
fn knowledge_rows_are_guarded_by_the_server_too() {
    let url = fresh_database();
    knowledge(&url, "red")
        .create(&recipe("Red release"), Status::Submitted, "ana", None)
        .unwrap();
    knowledge(&url, "blue")
        .create(&recipe("Blue release"), Status::Submitted, "bo", None)
        .unwrap();
    let role_url = plain_role(&url);

    // the knowledge store works as the plain role
    let mut red = knowledge(&role_url, "red");
    red.create(&recipe("Red hotfix"), Status::Submitted, "ana", None)
        .unwrap();
    let mut titles: Vec<String> = red
        .search("blue pipeline", &Filter::default())
        .unwrap()
        .into_iter()
        .map(|h| h.entry.title)
        .collect();
    titles.sort();
    assert_eq!(titles, ["Red hotfix", "Red release"]);

    let client = PgClient::connect(&TeamConfig::new(role_url, "red", "ana")).unwrap();
    let (scoped, unscoped, foreign_insert) = client
        .run(|pool| async move {
            let mut tx = begin_team(&pool, "red").await?;
            let scoped: Vec<String> =
                sqlx::query_scalar("select distinct team from team_knowledge_entries order by 1")
                    .fetch_all(&mut *tx)
                    .await?;
            let foreign = sqlx::query(
                "insert into team_guard_overrides (team, rules, updated_by, updated_at, author) \
                 values ('blue', '', 'x', 0, 'x')",
            )
            .execute(&mut *tx)
            .await
            .map_err(|e| e.to_string());
            tx.rollback().await?;
            let unscoped: i64 = sqlx::query_scalar("select count(*) from team_knowledge_entries")
                .fetch_one(&pool)
                .await?;
            Ok((scoped, unscoped, foreign))
        })
        .unwrap();
    assert_eq!(scoped, ["red"]);
    assert_eq!(unscoped, 0, "no team named: no rows");
    let err = foreign_insert.unwrap_err();
    assert!(err.contains("row-level security"), "{err}");
}

#[test]
fn begin_team_names_the_team_verbatim_and_unflushed_relaxes_only_its_own_transaction() {
    let admin = PgClient::connect(&TeamConfig::new(pg_url(), "admin", "test")).unwrap();
    let setting = "select coalesce(current_setting('alembic.team', true), ''), \
                   current_setting('synchronous_commit')";
    let got = admin
        .run(move |_| async move {
            // one connection, so each transaction and the last read share it
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(1)
                .connect(&pg_url())
                .await?;
            let mut seen = Vec::new();
            for (team, unflushed) in [(r"o'brien\n", false), ("red", true), ("blue", false)] {
                let mut tx = if unflushed {
                    begin_team_unflushed(&pool, team).await?
                } else {
                    begin_team(&pool, team).await?
                };
                seen.push(
                    sqlx::query_as::<_, (String, String)>(setting)
                        .fetch_one(&mut *tx)
                        .await?,
                );
                tx.commit().await?;
            }
            // both settings were local to their transactions
            seen.push(sqlx::query_as(setting).fetch_one(&pool).await?);
            Ok(seen)
        })
        .unwrap();
    let want = |team: &str, sync: &str| (team.to_string(), sync.to_string());
    assert_eq!(
        got,
        [
            want(r"o'brien\n", "on"),
            want("red", "off"),
            want("blue", "on"),
            want("", "on"),
        ]
    );
}
