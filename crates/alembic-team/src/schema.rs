//! Versioned schema of the team stores on PostgreSQL, like the SQLite store's
//! (`alembic_store::migrate`): steps per component in `alembic_schema_migrations`, each step
//! in the transaction that records it, under an advisory lock so two clients starting at
//! once do not both apply it. A server whose schema is newer than this build is refused.

use sqlx::PgPool;

use crate::error::TeamError;

/// One schema step. Never edit a released step; append a new one.
#[derive(Debug, Clone, Copy)]
pub struct PgMigration {
    pub version: i64,
    pub sql: &'static str,
}

/// Component name of the team memory tables.
pub const MEMORY_COMPONENT: &str = "team_memory";

/// The team memory schema. Rows carry their team, a version (bumped by every edit, checked
/// by optimistic writes) and the author of the last write. `search` holds content (weight A)
/// and context (weight D) after the same CJK unigram + bigram split as the SQLite index
/// (`alembic_tokens::text`); vectors are `real[]`, compared in the client.
pub const MEMORY_MIGRATIONS: &[PgMigration] = &[
    PgMigration {
        version: 1,
        sql: r#"
create table team_memories (
    seq bigserial primary key,
    team text not null,
    id text not null,
    scope text not null check (scope in ('project', 'user', 'team')),
    type text not null check (type in ('fact', 'insight', 'preference')),
    content text not null,
    source text not null check (source in ('bootstrap', 'user', 'system')),
    importance double precision not null check (importance >= 1 and importance <= 10),
    access_count bigint not null default 0,
    last_accessed bigint not null,
    created bigint not null,
    updated bigint not null,
    expires_at bigint,
    source_dimension text,
    provenance text,
    context text,
    archived_at bigint,
    valid_from bigint not null,
    valid_to bigint,
    superseded_by text,
    tags text not null default '[]',
    version bigint not null default 1,
    author text not null,
    search tsvector not null,
    vector_model text,
    vector real[],
    unique (team, id)
);
create index team_memories_search on team_memories using gin (search);
create index team_memories_current on team_memories (team, scope, valid_to, archived_at);
create index team_memories_superseded_by on team_memories (team, superseded_by);
"#,
    },
    PgMigration {
        version: 2,
        sql: r#"
-- BM25 as SQLite's FTS5 computes it needs each row's length in tokens and, per team, the
-- number of rows and their total length; triggers keep both in the writing transaction
alter table team_memories add column search_len integer not null default 0;
create function team_memories_search_len() returns trigger language plpgsql as $$
begin
    new.search_len := (select coalesce(sum(array_length(u.positions, 1)), 0) from unnest(new.search) u);
    return new;
end $$;
create trigger team_memories_search_len before insert or update of search on team_memories
    for each row execute function team_memories_search_len();
update team_memories set search = search;
create table team_memory_stats (
    team text primary key,
    rows bigint not null default 0,
    total_len bigint not null default 0
);
insert into team_memory_stats (team, rows, total_len)
    select team, count(*), sum(search_len) from team_memories group by team;
create function team_memory_stats_track() returns trigger language plpgsql as $$
begin
    if tg_op in ('UPDATE', 'DELETE') then
        update team_memory_stats set rows = rows - 1, total_len = total_len - old.search_len
            where team = old.team;
    end if;
    if tg_op in ('INSERT', 'UPDATE') then
        insert into team_memory_stats (team, rows, total_len) values (new.team, 1, new.search_len)
            on conflict (team) do update set rows = team_memory_stats.rows + 1,
                total_len = team_memory_stats.total_len + excluded.total_len;
    end if;
    return null;
end $$;
create trigger team_memory_stats_track after insert or delete or update of search_len, team
    on team_memories for each row execute function team_memory_stats_track();
"#,
    },
    PgMigration {
        version: 3,
        sql: crate::memory::migrations::POSTINGS,
    },
    PgMigration {
        version: 4,
        sql: crate::memory::migrations::ROW_SECURITY,
    },
    PgMigration {
        version: 5,
        sql: crate::memory::migrations::PACKED_POSTINGS,
    },
];

/// Component name of the team knowledge tables.
pub const KNOWLEDGE_COMPONENT: &str = "team_knowledge";

/// The team knowledge base: entries, their review history, graph edges, evolution
/// proposals, guard runs and guard-rule overrides. Every table carries `team`, `version`
/// (bumped by every edit of the row) and `author` (who wrote it last). `search` is the
/// `tsvector` of the same index text as SQLite's (`alembic_knowledge::text`, CJK split into
/// unigrams and bigrams), English stemming as porter; `search_len` (kept by a trigger) feeds
/// BM25 computed as FTS5 does.
pub const KNOWLEDGE_MIGRATIONS: &[PgMigration] = &[
    PgMigration {
        version: 1,
        sql: r#"
create table team_knowledge_entries (
    seq bigserial primary key,
    team text not null,
    id text not null,
    title text not null,
    title_norm text not null,
    description text not null default '',
    kind text not null check (kind in ('rule', 'pattern', 'fact')),
    knowledge_type text not null default 'code-pattern',
    category text not null default 'general',
    language text not null default '',
    trigger text,
    content text not null default '',
    pattern text not null default '',
    rationale text not null default '',
    extra text not null default '{}',
    tags text not null default '[]',
    sources text not null default '[]',
    quality double precision,
    status text not null check (status in
        ('draft', 'submitted', 'approved', 'rejected', 'published', 'deprecated')),
    created_by text not null,
    created_at bigint not null,
    updated_at bigint not null,
    views bigint not null default 0,
    adoptions bigint not null default 0,
    applications bigint not null default 0,
    last_used_at bigint,
    version bigint not null default 1,
    author text not null,
    search_text text not null,
    search tsvector not null,
    search_len integer not null default 0,
    unique (team, id)
);
create index team_knowledge_entries_search on team_knowledge_entries using gin (search);
create index team_knowledge_entries_status on team_knowledge_entries (team, status);
create index team_knowledge_entries_title on team_knowledge_entries (team, title_norm);
create function team_knowledge_search_len() returns trigger language plpgsql as $$
begin
    new.search_len := (select coalesce(sum(array_length(u.positions, 1)), 0) from unnest(new.search) u);
    return new;
end $$;
create trigger team_knowledge_search_len before insert or update of search on team_knowledge_entries
    for each row execute function team_knowledge_search_len();

create table team_knowledge_history (
    seq bigserial primary key,
    team text not null,
    entry_id text not null,
    from_status text,
    to_status text not null,
    at bigint not null,
    by text not null,
    reason text,
    version bigint not null default 1,
    author text not null,
    foreign key (team, entry_id) references team_knowledge_entries (team, id) on delete cascade
);
create index team_knowledge_history_entry on team_knowledge_history (team, entry_id, seq);

create table team_knowledge_edges (
    team text not null,
    from_id text not null,
    to_id text not null,
    relation text not null,
    weight double precision not null default 1.0,
    created_by text not null,
    created_at bigint not null,
    version bigint not null default 1,
    author text not null,
    primary key (team, from_id, to_id, relation),
    check (from_id <> to_id),
    foreign key (team, from_id) references team_knowledge_entries (team, id) on delete cascade,
    foreign key (team, to_id) references team_knowledge_entries (team, id) on delete cascade
);
create index team_knowledge_edges_to on team_knowledge_edges (team, to_id);

create table team_evolution_proposals (
    seq bigserial primary key,
    team text not null,
    id text not null,
    entry_id text not null,
    type text not null,
    description text not null,
    evidence text not null default '{}',
    confidence double precision not null,
    status text not null check (status in ('open', 'executed', 'skipped')),
    proposed_by text not null,
    proposed_at bigint not null,
    resolved_at bigint,
    resolved_by text,
    resolution text,
    version bigint not null default 1,
    author text not null,
    unique (team, id),
    foreign key (team, entry_id) references team_knowledge_entries (team, id) on delete cascade
);
create index team_evolution_proposals_entry on team_evolution_proposals (team, entry_id, status);

create table team_guard_runs (
    seq bigserial primary key,
    team text not null,
    target text not null,
    language text not null,
    violation_count bigint not null,
    checked_at bigint not null,
    checked_by text not null,
    version bigint not null default 1,
    author text not null
);
create index team_guard_runs_target on team_guard_runs (team, target, seq);
create table team_guard_violations (
    seq bigserial primary key,
    team text not null,
    run_seq bigint not null references team_guard_runs (seq) on delete cascade,
    rule_id text not null,
    severity text not null,
    line integer not null,
    snippet text not null,
    message text not null,
    version bigint not null default 1,
    author text not null
);
create index team_guard_violations_run on team_guard_violations (team, run_seq);

create table team_guard_overrides (
    team text primary key,
    rules text not null,
    updated_by text not null,
    updated_at bigint not null,
    version bigint not null default 1,
    author text not null
);
"#,
    },
    PgMigration {
        version: 2,
        sql: KNOWLEDGE_ROW_SECURITY,
    },
];

/// Brings `component` up to the last of `steps`; returns the version now applied.
pub async fn migrate(
    pool: &PgPool,
    server: &str,
    component: &str,
    steps: &[PgMigration],
) -> Result<i64, TeamError> {
    let known = steps.iter().map(|s| s.version).max().unwrap_or(0);
    let mut tx = pool.begin().await?;
    sqlx::query("select pg_advisory_xact_lock(hashtext('alembic_schema_migrations'))")
        .execute(&mut *tx)
        .await?;
    // only create the table when it is missing: `create table if not exists` needs CREATE on
    // the schema even when the table exists, which a role that only uses the stores lacks
    let missing: bool =
        sqlx::query_scalar("select to_regclass('alembic_schema_migrations') is null")
            .fetch_one(&mut *tx)
            .await?;
    if missing {
        sqlx::raw_sql(
            "create table if not exists alembic_schema_migrations (
             component text not null,
             version bigint not null,
             applied_at timestamptz not null default now(),
             primary key (component, version)
         )",
        )
        .execute(&mut *tx)
        .await?;
    }
    let found: i64 = sqlx::query_scalar(
        "select coalesce(max(version), 0) from alembic_schema_migrations where component = $1",
    )
    .bind(component)
    .fetch_one(&mut *tx)
    .await?;
    if found > known {
        return Err(TeamError::SchemaTooNew {
            server: server.to_string(),
            component: component.to_string(),
            found,
            known,
        });
    }
    for step in steps.iter().filter(|s| s.version > found) {
        sqlx::raw_sql(step.sql).execute(&mut *tx).await?;
        sqlx::query("insert into alembic_schema_migrations (component, version) values ($1, $2)")
            .bind(component)
            .bind(step.version)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(known)
}

/// Knowledge step 2: row-level security, as the memory tables' step 4. Every statement of
/// `PgKnowledge` filters by team inside `tx::begin_team`; these policies make the server
/// enforce the same for the team the transaction names (FORCE: the tables' owner too).
const KNOWLEDGE_ROW_SECURITY: &str = r#"
do $$
declare t text;
begin
    foreach t in array array['team_knowledge_entries', 'team_knowledge_history',
        'team_knowledge_edges', 'team_evolution_proposals', 'team_guard_runs',
        'team_guard_violations', 'team_guard_overrides'] loop
        execute format('alter table %I enable row level security', t);
        execute format('alter table %I force row level security', t);
        execute format(
            'create policy %I on %I using (team = current_setting(''alembic.team'', true))',
            t || '_own_team', t);
    end loop;
end $$;
"#;
