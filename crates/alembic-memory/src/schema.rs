//! Versioned schema of the memory tables, applied through [`alembic_store::migrate`].

use alembic_store::{Migration, fts5_index_sql};

/// Component name in `schema_migrations`.
pub const COMPONENT: &str = "memory";

/// The memory schema. Never edit a released step; append a new one.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: concat!(
            r#"
create table semantic_memories (
    seq integer primary key,
    id text not null unique,
    scope text not null default 'project' check (scope in ('project', 'user', 'team')),
    type text not null default 'fact' check (type in ('fact', 'insight', 'preference')),
    content text not null,
    -- content with CJK runs split into unigrams + bigrams; what FTS5 indexes
    search_text text not null,
    source text not null default 'user' check (source in ('bootstrap', 'user', 'system')),
    importance real not null default 5.0 check (importance >= 1 and importance <= 10),
    access_count integer not null default 0,
    last_accessed integer not null,
    created integer not null,
    updated integer not null,
    expires_at integer,
    source_dimension text,
    provenance text,
    archived_at integer,
    valid_from integer not null,
    valid_to integer,
    superseded_by text,
    tags text not null default '[]'
);
create index semantic_memories_scope_current on semantic_memories (scope, valid_to, archived_at);
create index semantic_memories_last_accessed on semantic_memories (last_accessed);
create index semantic_memories_superseded_by on semantic_memories (superseded_by);
create index semantic_memories_expires_at on semantic_memories (expires_at) where expires_at is not null;

"#,
            fts5_index_sql!(
                table: "semantic_memories",
                fts: "semantic_memories_fts",
                rowid: "seq",
                columns: ["search_text"],
                tokenize: "porter unicode61 remove_diacritics 2",
            ),
            r#"
-- one vector per memory, tagged with the model that made it; deleted with the memory
create table memory_vectors (
    seq integer primary key references semantic_memories (seq) on delete cascade,
    model text not null,
    dim integer not null,
    vector blob not null
);
"#
        ),
    },
    Migration {
        version: 2,
        sql: concat!(
            r#"
-- context: text around a memory (the preceding dialog turn, the paragraph it came from) that
-- helps find it; indexed in a second FTS column with a lower weight, never shown as content
alter table semantic_memories add column context text;
alter table semantic_memories add column context_search text not null default '';
drop trigger semantic_memories_fts_insert;
drop trigger semantic_memories_fts_delete;
drop trigger semantic_memories_fts_update;
drop table semantic_memories_fts;
"#,
            fts5_index_sql!(
                table: "semantic_memories",
                fts: "semantic_memories_fts",
                rowid: "seq",
                columns: ["search_text", "context_search"],
                tokenize: "porter unicode61 remove_diacritics 2",
            ),
            r#"
insert into semantic_memories_fts (semantic_memories_fts) values ('rebuild');
"#
        ),
    },
    Migration {
        version: 3,
        sql: r#"
-- current (not superseded) memories per scope, kept by triggers in the writing transaction,
-- so the capacity check on every insert reads one row instead of counting the scope
create table memory_scope_counts (
    scope text primary key,
    current integer not null
) without rowid;
insert into memory_scope_counts (scope, current)
    select scope, count(*) from semantic_memories where valid_to is null group by scope;
create trigger memory_scope_counts_insert after insert on semantic_memories
when new.valid_to is null begin
    insert into memory_scope_counts (scope, current) values (new.scope, 1)
        on conflict (scope) do update set current = current + 1;
end;
create trigger memory_scope_counts_delete after delete on semantic_memories
when old.valid_to is null begin
    update memory_scope_counts set current = current - 1 where scope = old.scope;
end;
create trigger memory_scope_counts_update after update of valid_to, scope on semantic_memories
begin
    update memory_scope_counts set current = current - 1
        where scope = old.scope and old.valid_to is null;
    insert into memory_scope_counts (scope, current) select new.scope, 1
        where new.valid_to is null
        on conflict (scope) do update set current = current + 1;
end;
"#,
    },
];
