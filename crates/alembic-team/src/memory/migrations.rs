//! SQL of the team memory schema steps after the first two (listed in
//! [`crate::schema::MEMORY_MIGRATIONS`]). Never edit a released step; append a new one.

/// Step 3: an inverted index for retrieval at scale.
///
/// BM25 as FTS5 computes it needs, for every query term, each matching row's term frequency
/// (content and context apart) and length, and the term's document frequency. Reading them
/// from each candidate's `tsvector` meant unnesting every lexeme of every match (some
/// 20,000 rows for two common terms at 100,000 memories, ~0.7 s). Postings keep one row per
/// (memory, lexeme) with those numbers in one btree, so a query reads its terms' postings
/// from the index alone; the document frequency of a term is the length of its posting list.
///
/// Row lengths become FTS5's (`alembic_memory::text::index_len`, stopwords counted), written
/// by the client with the row: PostgreSQL's `english` configuration drops stopwords, so a
/// length read from the `tsvector` made the same memory score differently than in SQLite.
/// Rows already on the server get an approximation (words of content and context).
///
/// The triggers are per statement with transition tables, so a bulk insert (seeding, push)
/// indexes all its rows in one statement; the per-row stats trigger of step 2 is replaced
/// by them for the same reason. Updates that leave `search` and its length unchanged
/// (access counts, archiving) touch neither postings nor stats.
pub(crate) const POSTINGS: &str = r#"
drop trigger team_memories_search_len on team_memories;
drop function team_memories_search_len();
update team_memories set search_len =
    (select count(*) from regexp_matches(content || ' ' || coalesce(context, ''), '[[:alnum:]]+', 'g'));
drop trigger team_memory_stats_track on team_memories;
drop function team_memory_stats_track();

create table team_memory_postings (
    team text not null,
    lexeme text not null,
    seq bigint not null,
    tf_a integer not null,
    tf_d integer not null,
    len integer not null,
    primary key (team, lexeme, seq) include (tf_a, tf_d, len)
);
create function team_memory_postings_of(m team_memories)
    returns table (team text, lexeme text, seq bigint, tf_a integer, tf_d integer, len integer)
    language sql immutable as $$
    select m.team, u.lexeme, m.seq,
           cardinality(array_positions(u.weights, 'A')),
           cardinality(u.weights) - cardinality(array_positions(u.weights, 'A')),
           m.search_len
    from unnest(m.search) u
$$;
insert into team_memory_postings
    select p.* from team_memories m, team_memory_postings_of(m) p;
-- one memory's postings, found by the whole key (a join on team and seq alone was planned
-- as a scan of the team's postings)
create function team_memory_postings_drop(p_team text, p_seq bigint, p_search tsvector)
    returns void language sql as $$
    delete from team_memory_postings
    where team = p_team and lexeme = any(tsvector_to_array(p_search)) and seq = p_seq
$$;

create function team_memory_index_insert() returns trigger language plpgsql as $$
begin
    insert into team_memory_postings select p.* from new_rows m, team_memory_postings_of(m) p;
    insert into team_memory_stats (team, rows, total_len)
        select team, count(*), sum(search_len) from new_rows group by team
        on conflict (team) do update set rows = team_memory_stats.rows + excluded.rows,
            total_len = team_memory_stats.total_len + excluded.total_len;
    return null;
end $$;
create trigger team_memory_index_insert after insert on team_memories
    referencing new table as new_rows
    for each statement execute function team_memory_index_insert();

create function team_memory_index_delete() returns trigger language plpgsql as $$
declare
    m record;
begin
    for m in select team, seq, search from old_rows loop
        perform team_memory_postings_drop(m.team, m.seq, m.search);
    end loop;
    update team_memory_stats s set rows = s.rows - d.n, total_len = s.total_len - d.len
        from (select team, count(*) as n, sum(search_len) as len from old_rows group by team) d
        where s.team = d.team;
    return null;
end $$;
create trigger team_memory_index_delete after delete on team_memories
    referencing old table as old_rows
    for each statement execute function team_memory_index_delete();

create function team_memory_index_update() returns trigger language plpgsql as $$
declare
    m record;
begin
    for m in select o.team, o.seq, o.search from old_rows o join new_rows n on n.seq = o.seq
             where (o.search, o.search_len) is distinct from (n.search, n.search_len) loop
        perform team_memory_postings_drop(m.team, m.seq, m.search);
    end loop;
    insert into team_memory_postings
        select p.* from new_rows n join old_rows o on o.seq = n.seq,
                        team_memory_postings_of(n) p
        where (o.search, o.search_len) is distinct from (n.search, n.search_len);
    update team_memory_stats s set total_len = s.total_len + d.delta
        from (select n.team, sum(n.search_len - o.search_len) as delta
              from new_rows n join old_rows o on o.seq = n.seq
              where n.search_len <> o.search_len group by n.team) d
        where s.team = d.team;
    return null;
end $$;
create trigger team_memory_index_update after update on team_memories
    referencing old table as old_rows new table as new_rows
    for each statement execute function team_memory_index_update();
"#;

/// Step 4: row-level security. Every statement already filters by team; these policies make
/// the server enforce it too, for the team named by the transaction
/// (`alembic_team::tx::begin_team` sets `alembic.team`), so a query that forgot its filter
/// still sees only its team's rows. FORCE applies them to the tables' owner as well
/// (superusers bypass row-level security whatever is set).
pub(crate) const ROW_SECURITY: &str = r#"
alter table team_memories enable row level security;
alter table team_memories force row level security;
create policy team_memories_own_team on team_memories
    using (team = current_setting('alembic.team', true));
alter table team_memory_postings enable row level security;
alter table team_memory_postings force row level security;
create policy team_memory_postings_own_team on team_memory_postings
    using (team = current_setting('alembic.team', true));
alter table team_memory_stats enable row level security;
alter table team_memory_stats force row level security;
create policy team_memory_stats_own_team on team_memory_stats
    using (team = current_setting('alembic.team', true));
"#;
