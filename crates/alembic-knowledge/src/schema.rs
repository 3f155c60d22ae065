//! Versioned schema of the knowledge tables, applied through [`alembic_store::migrate`].

use alembic_store::{Migration, fts5_index_sql};

/// Component name in `schema_migrations`.
pub const COMPONENT: &str = "knowledge";

/// The knowledge schema. Never edit a released step; append a new one.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: concat!(
            r#"
create table knowledge_entries (
    seq integer primary key,
    id text not null unique,
    title text not null,
    -- lower-cased, whitespace-collapsed title: duplicate detection
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
    -- other structured fields (whenClause, doClause, usageGuide, reasoning, ...) as a JSON object
    extra text not null default '{}',
    tags text not null default '[]',
    sources text not null default '[]',
    quality real,
    status text not null check (status in
        ('draft', 'submitted', 'approved', 'rejected', 'published', 'deprecated')),
    created_by text not null,
    created_at integer not null,
    updated_at integer not null,
    views integer not null default 0,
    adoptions integer not null default 0,
    applications integer not null default 0,
    last_used_at integer,
    -- title + description + content + pattern with CJK runs split into uni/bigrams
    search_text text not null
);
create index knowledge_entries_status on knowledge_entries (status);
create index knowledge_entries_title_norm on knowledge_entries (title_norm);

"#,
            fts5_index_sql!(
                table: "knowledge_entries",
                fts: "knowledge_fts",
                rowid: "seq",
                columns: ["search_text"],
                tokenize: "porter unicode61 remove_diacritics 2",
            ),
            r#"
-- every status change, with who and why; the creation is a row with from_status null
create table knowledge_history (
    seq integer primary key,
    entry_id text not null references knowledge_entries (id) on delete cascade,
    from_status text,
    to_status text not null,
    at integer not null,
    by text not null,
    reason text
);
create index knowledge_history_entry on knowledge_history (entry_id, seq);

create table knowledge_edges (
    from_id text not null references knowledge_entries (id) on delete cascade,
    to_id text not null references knowledge_entries (id) on delete cascade,
    relation text not null,
    weight real not null default 1.0,
    created_by text not null,
    created_at integer not null,
    primary key (from_id, to_id, relation),
    check (from_id <> to_id)
) without rowid;
create index knowledge_edges_to on knowledge_edges (to_id);

create table guard_runs (
    seq integer primary key,
    target text not null,
    language text not null,
    violation_count integer not null,
    checked_at integer not null,
    checked_by text not null
);
create index guard_runs_target on guard_runs (target, seq);
create table guard_violations (
    seq integer primary key,
    run_seq integer not null references guard_runs (seq) on delete cascade,
    rule_id text not null,
    severity text not null,
    line integer not null,
    snippet text not null,
    message text not null
);
create index guard_violations_run on guard_violations (run_seq);

create table evolution_proposals (
    seq integer primary key,
    id text not null unique,
    entry_id text not null references knowledge_entries (id) on delete cascade,
    type text not null,
    description text not null,
    evidence text not null default '{}',
    confidence real not null,
    status text not null check (status in ('open', 'executed', 'skipped')),
    proposed_by text not null,
    proposed_at integer not null,
    resolved_at integer,
    resolved_by text,
    resolution text
);
create index evolution_proposals_entry on evolution_proposals (entry_id, status);
"#
        ),
    },
    Migration {
        version: 2,
        // Rows carry a version for optimistic writes (a conflict instead of a lost update).
        // Bootstrap kept a candidate's version in `extra.version`; old rows start from it.
        sql: r#"
alter table knowledge_entries add column version integer not null default 1;
update knowledge_entries set version = json_extract(extra, '$.version')
    where json_type(extra, '$.version') = 'integer' and json_extract(extra, '$.version') > 1;
-- guard-rule overrides kept in the store (a rules file's text), applied before the project's file
create table guard_overrides (
    id integer primary key check (id = 1),
    rules text not null,
    updated_by text not null,
    updated_at integer not null
);
"#,
    },
];
