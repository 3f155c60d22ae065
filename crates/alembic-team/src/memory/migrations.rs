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

/// Step 5: packed posting lists. A retrieval read its terms' postings one index row each
/// (~21,000 rows for two common words at 100,000 memories, ~29 ms of a 42 ms p50); here a
/// term's list is a few rows, one per (team, lexeme, block of 4,096 seqs), each holding its
/// postings packed in one `bytea` (20 bytes each: seq, content and context term
/// frequencies, row length, big-endian), so the same lists are some fifty rows.
///
/// Why bytes, not arrays: the server encodes an array for the client element by element
/// (a send function call and a buffer each, a sixth of its time in team-mix), and the
/// client decoded it the same way; bytes are sent and read as they are.
///
/// Why blocks, not one row per lexeme: a row is rewritten whole, so a common word's single
/// row (~200 KB at 100,000 memories) would be copied by every add holding the word; a block
/// is at most 4,096 postings (~80 KB, ~8 KB for a word in a tenth of the memories) and only
/// the last blocks take new memories. A seq always lives in the block `seq >> 12`, so an
/// edit or delete finds its postings by the whole key.
///
/// The triggers keep the step 3 contract (per statement, transition tables; a bulk insert
/// changes each block once) and take the blocks' row locks in key order (`for update ...
/// order by`, then the upsert in the same order), so two writers never wait on each other in
/// opposite orders. Blocks are stored uncompressed (`storage external`): a read does not pay
/// for decompressing what barely compresses. Postings within a block are in no set order
/// (an edit appends its seq again); the client's sum does not depend on it. The migration
/// copies the step 3 postings (owner reads them without the row-level policy, which it
/// lifts for this transaction) and drops the table and its triggers: nothing reads it after.
pub(crate) const PACKED_POSTINGS: &str = r#"
drop trigger team_memory_index_insert on team_memories;
drop trigger team_memory_index_delete on team_memories;
drop trigger team_memory_index_update on team_memories;
drop function team_memory_index_insert();
drop function team_memory_index_delete();
drop function team_memory_index_update();
drop function team_memory_postings_drop(text, bigint, tsvector);

create table team_memory_lists (
    team text not null,
    lexeme text not null,
    block bigint not null,
    postings bytea not null,
    primary key (team, lexeme, block)
);
alter table team_memory_lists alter column postings set storage external;
-- one posting as stored: seq, content and context term frequencies, row length (big-endian)
create function team_memory_posting(seq bigint, tf_a integer, tf_d integer, len integer)
    returns bytea language sql immutable as $$
    select int8send(seq) || int4send(tf_a) || int4send(tf_d) || int4send(len)
$$;
-- the seq of the `i`-th posting (from 0) of a block
create function team_memory_posting_seq(postings bytea, i integer)
    returns bigint language sql immutable as $$
    select ('x' || encode(substring(postings from i * 20 + 1 for 8), 'hex'))::bit(64)::bigint
$$;

alter table team_memory_postings no force row level security;
insert into team_memory_lists (team, lexeme, block, postings)
    select team, lexeme, seq >> 12,
           string_agg(team_memory_posting(seq, tf_a, tf_d, len), ''::bytea order by seq)
    from team_memory_postings group by team, lexeme, seq >> 12;
drop table team_memory_postings;
analyze team_memory_lists;

alter table team_memory_lists enable row level security;
alter table team_memory_lists force row level security;
create policy team_memory_lists_own_team on team_memory_lists
    using (team = current_setting('alembic.team', true));

-- adds the postings of `ms` to their blocks, each block once, locks in key order
create function team_memory_lists_add(ms team_memories[]) returns void language sql as $$
    insert into team_memory_lists as l (team, lexeme, block, postings)
        select p.team, p.lexeme, p.seq >> 12,
               string_agg(team_memory_posting(p.seq, p.tf_a, p.tf_d, p.len), ''::bytea
                          order by p.seq)
        from unnest(ms) m, team_memory_postings_of(m) p
        group by p.team, p.lexeme, p.seq >> 12
        order by p.team, p.lexeme, p.seq >> 12
    on conflict (team, lexeme, block) do update set postings = l.postings || excluded.postings
$$;

-- locks the existing blocks holding the lexemes of `ms`, in key order, so writers that
-- touch the same blocks queue instead of deadlocking
create function team_memory_lists_lock(ms team_memories[]) returns void
    language plpgsql as $$
begin
    perform 1 from team_memory_lists l
        where (l.team, l.lexeme, l.block) in (
            select m.team, u.lexeme, m.seq >> 12
            from unnest(ms) m, unnest(tsvector_to_array(m.search)) u(lexeme))
        order by l.team, l.lexeme, l.block for update;
end $$;

-- removes the postings of `ms` (as they were: their old `search`) from their blocks, and the
-- blocks left empty
create function team_memory_lists_drop(ms team_memories[]) returns void
    language sql as $$
    update team_memory_lists l set
        postings = (
            select coalesce(string_agg(substring(l.postings from i * 20 + 1 for 20), ''::bytea
                                       order by i), ''::bytea)
            from generate_series(0, length(l.postings) / 20 - 1) i
            where team_memory_posting_seq(l.postings, i) <> all (g.seqs))
        from (select m.team, u.lexeme, m.seq >> 12 as block, array_agg(m.seq) as seqs
              from unnest(ms) m, unnest(tsvector_to_array(m.search)) u(lexeme)
              group by m.team, u.lexeme, m.seq >> 12) g
        where l.team = g.team and l.lexeme = g.lexeme and l.block = g.block;
    delete from team_memory_lists l
        where (l.team, l.lexeme, l.block) in (
            select m.team, u.lexeme, m.seq >> 12
            from unnest(ms) m, unnest(tsvector_to_array(m.search)) u(lexeme))
          and length(l.postings) = 0;
$$;

create function team_memory_index_insert() returns trigger language plpgsql as $$
begin
    perform team_memory_lists_add(array(select m::team_memories from new_rows m));
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
    gone team_memories[] := array(select m::team_memories from old_rows m);
begin
    perform team_memory_lists_lock(gone);
    perform team_memory_lists_drop(gone);
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
    gone team_memories[] := array(
        select o::team_memories from old_rows o join new_rows n on n.seq = o.seq
        where (o.search, o.search_len) is distinct from (n.search, n.search_len));
    came team_memories[] := array(
        select n::team_memories from new_rows n join old_rows o on o.seq = n.seq
        where (o.search, o.search_len) is distinct from (n.search, n.search_len));
begin
    -- access counts and archiving leave the index alone
    if cardinality(gone) = 0 then
        return null;
    end if;
    perform team_memory_lists_lock(gone || came);
    perform team_memory_lists_drop(gone);
    perform team_memory_lists_add(came);
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
