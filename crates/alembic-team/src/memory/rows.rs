//! Row-level SQL of the team memory table. Every statement filters by `team`; callers own
//! the transaction.

use alembic_memory::text::{index_len, index_text};
use alembic_memory::{GcStats, Memory, MemoryError, Scope};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::error::TeamError;

/// The memory columns, in the order [`decode`] reads them. A macro so every statement is
/// one literal (`concat!`): sqlx accepts only SQL text known at compile time.
macro_rules! columns {
    () => {
        "id, scope, type, content, source, importance, access_count, last_accessed, created, \
         updated, expires_at, source_dimension, provenance, archived_at, valid_from, valid_to, \
         superseded_by, tags, context"
    };
}

/// The text search configuration: English stemming for Latin words (as SQLite's porter);
/// CJK text arrives already split into unigrams and bigrams, which it keeps as they are.
macro_rules! ts_config {
    () => {
        "'english'"
    };
}
pub(crate) use {columns, ts_config};

fn parse<T: std::str::FromStr<Err = MemoryError>>(id: &str, v: String) -> Result<T, TeamError> {
    v.parse().map_err(|e: MemoryError| {
        TeamError::Memory(MemoryError::CorruptRow {
            id: id.to_string(),
            reason: e.to_string(),
        })
    })
}

/// Decodes a row selected with [`columns!`] first.
pub(crate) fn decode(row: &PgRow) -> Result<Memory, TeamError> {
    let id: String = row.try_get(0)?;
    let tags: String = row.try_get(17)?;
    Ok(Memory {
        scope: parse(&id, row.try_get(1)?)?,
        kind: parse(&id, row.try_get(2)?)?,
        content: row.try_get(3)?,
        source: parse(&id, row.try_get(4)?)?,
        importance: row.try_get(5)?,
        access_count: row.try_get(6)?,
        last_accessed: row.try_get(7)?,
        created: row.try_get(8)?,
        updated: row.try_get(9)?,
        expires_at: row.try_get(10)?,
        source_dimension: row.try_get(11)?,
        provenance: row.try_get(12)?,
        archived_at: row.try_get(13)?,
        valid_from: row.try_get(14)?,
        valid_to: row.try_get(15)?,
        superseded_by: row.try_get(16)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        context: row.try_get(18)?,
        id,
    })
}

/// Runs a query selecting [`columns!`] whose `$1` is the team and `$2` a text argument.
pub(crate) async fn select(
    conn: &mut PgConnection,
    sql: &'static str,
    team: &str,
    arg: Option<&str>,
) -> Result<Vec<Memory>, TeamError> {
    let rows = sqlx::query(sql)
        .bind(team)
        .bind(arg)
        .fetch_all(conn)
        .await?;
    rows.iter().map(decode).collect()
}

/// A team memory with its row version and the author of its last write.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned {
    pub memory: Memory,
    pub version: i64,
    pub author: String,
}

pub(crate) async fn get(
    conn: &mut PgConnection,
    team: &str,
    id: &str,
) -> Result<Option<Versioned>, TeamError> {
    let sql = concat!(
        "select ",
        columns!(),
        ", version, author from team_memories where team = $1 and id = $2"
    );
    let row = sqlx::query(sql)
        .bind(team)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.map(|r| {
        Ok(Versioned {
            memory: decode(&r)?,
            version: r.try_get(19)?,
            author: r.try_get(20)?,
        })
    })
    .transpose()
}

/// Serialises the writers of one team: capacity and lifetime rules hold under concurrent
/// clients because each writing transaction holds this lock until it commits.
pub(crate) async fn lock_team(conn: &mut PgConnection, team: &str) -> Result<(), TeamError> {
    sqlx::query("select pg_advisory_xact_lock(hashtextextended('alembic_team_memory:' || $1, 0))")
        .bind(team)
        .execute(conn)
        .await?;
    Ok(())
}

/// The row length BM25 normalises by: FTS5's count for the same text, so scores match the
/// SQLite store's (schema step 3).
fn search_len(m: &Memory) -> i32 {
    i32::try_from(index_len(&m.content, m.context.as_deref())).unwrap_or(i32::MAX)
}

/// Inserts a full row (ids included) with its author, its search vector and, when given,
/// its embedding.
pub(crate) async fn insert(
    conn: &mut PgConnection,
    team: &str,
    author: &str,
    m: &Memory,
    vector: Option<(&str, &[f32])>,
) -> Result<(), TeamError> {
    let sql = concat!(
        "insert into team_memories (team, author, ",
        columns!(),
        ", search, vector_model, vector, search_len)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 $18, $19, $20, $21,
                 setweight(to_tsvector(",
        ts_config!(),
        ", $22), 'A') || setweight(to_tsvector(",
        ts_config!(),
        ", $23), 'D'), $24, $25, $26)"
    );
    sqlx::query(sql)
        .bind(team)
        .bind(author)
        .bind(&m.id)
        .bind(m.scope.as_str())
        .bind(m.kind.as_str())
        .bind(&m.content)
        .bind(m.source.as_str())
        .bind(m.importance)
        .bind(m.access_count)
        .bind(m.last_accessed)
        .bind(m.created)
        .bind(m.updated)
        .bind(m.expires_at)
        .bind(&m.source_dimension)
        .bind(&m.provenance)
        .bind(m.archived_at)
        .bind(m.valid_from)
        .bind(m.valid_to)
        .bind(&m.superseded_by)
        .bind(serde_json::to_string(&m.tags).unwrap_or_else(|_| "[]".into()))
        .bind(&m.context)
        .bind(index_text(&m.content))
        .bind(index_text(m.context.as_deref().unwrap_or("")))
        .bind(vector.map(|v| v.0))
        .bind(vector.map(|v| v.1.to_vec()))
        .bind(search_len(m))
        .execute(conn)
        .await?;
    Ok(())
}

/// Rows one bulk statement carries.
const BULK_ROWS: usize = 1000;

/// Inserts full rows (ids included, without vectors) a thousand per statement, skipping ids
/// the team already has; returns how many were inserted. One statement per thousand rows
/// lets the statement triggers index them together (a push, or seeding a benchmark).
pub(crate) async fn insert_many(
    conn: &mut PgConnection,
    team: &str,
    author: &str,
    memories: &[Memory],
) -> Result<u64, TeamError> {
    let sql = concat!(
        "insert into team_memories (team, author, ",
        columns!(),
        ", search, search_len)
         select $1, $2, u.id, u.scope, u.type, u.content, u.source, u.importance, u.access_count,
                u.last_accessed, u.created, u.updated, u.expires_at, u.source_dimension,
                u.provenance, u.archived_at, u.valid_from, u.valid_to, u.superseded_by, u.tags,
                u.context,
                setweight(to_tsvector(",
        ts_config!(),
        ", u.text), 'A') || setweight(to_tsvector(",
        ts_config!(),
        ", u.ctx), 'D'), u.len
         from unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                     $8::float8[], $9::int8[], $10::int8[], $11::int8[], $12::int8[], $13::int8[],
                     $14::text[], $15::text[], $16::int8[], $17::int8[], $18::int8[], $19::text[],
                     $20::text[], $21::text[], $22::text[], $23::text[], $24::int4[])
              as u(id, scope, type, content, source, importance, access_count, last_accessed,
                   created, updated, expires_at, source_dimension, provenance, archived_at,
                   valid_from, valid_to, superseded_by, tags, context, text, ctx, len)
         on conflict (team, id) do nothing"
    );
    let mut inserted = 0;
    for chunk in memories.chunks(BULK_ROWS) {
        let col = |f: fn(&Memory) -> String| chunk.iter().map(f).collect::<Vec<String>>();
        let opt = |f: fn(&Memory) -> Option<String>| chunk.iter().map(f).collect::<Vec<_>>();
        let num = |f: fn(&Memory) -> i64| chunk.iter().map(f).collect::<Vec<i64>>();
        let opt_num = |f: fn(&Memory) -> Option<i64>| chunk.iter().map(f).collect::<Vec<_>>();
        inserted += sqlx::query(sql)
            .bind(team)
            .bind(author)
            .bind(col(|m| m.id.clone()))
            .bind(col(|m| m.scope.as_str().to_string()))
            .bind(col(|m| m.kind.as_str().to_string()))
            .bind(col(|m| m.content.clone()))
            .bind(col(|m| m.source.as_str().to_string()))
            .bind(chunk.iter().map(|m| m.importance).collect::<Vec<f64>>())
            .bind(num(|m| m.access_count))
            .bind(num(|m| m.last_accessed))
            .bind(num(|m| m.created))
            .bind(num(|m| m.updated))
            .bind(opt_num(|m| m.expires_at))
            .bind(opt(|m| m.source_dimension.clone()))
            .bind(opt(|m| m.provenance.clone()))
            .bind(opt_num(|m| m.archived_at))
            .bind(num(|m| m.valid_from))
            .bind(opt_num(|m| m.valid_to))
            .bind(opt(|m| m.superseded_by.clone()))
            .bind(col(|m| {
                serde_json::to_string(&m.tags).unwrap_or_else(|_| "[]".into())
            }))
            .bind(opt(|m| m.context.clone()))
            .bind(col(|m| index_text(&m.content)))
            .bind(col(|m| index_text(m.context.as_deref().unwrap_or(""))))
            .bind(chunk.iter().map(search_len).collect::<Vec<i32>>())
            .execute(&mut *conn)
            .await?
            .rows_affected();
    }
    Ok(inserted)
}

/// Writes the fields an edit or consolidation may change, bumping the version. With
/// `expected`, the write happens only at that version; `false` means someone else won.
pub(crate) async fn write_back(
    conn: &mut PgConnection,
    team: &str,
    author: &str,
    m: &Memory,
    expected: Option<i64>,
) -> Result<bool, TeamError> {
    let sql = concat!(
        "update team_memories set type = $3, content = $4, importance = $5, access_count = $6,
             last_accessed = $7, updated = $8, expires_at = $9, tags = $10,
             search = setweight(to_tsvector(",
        ts_config!(),
        ", $11), 'A') || setweight(to_tsvector(",
        ts_config!(),
        ", $12), 'D'),
             search_len = $15, version = version + 1, author = $13
         where team = $1 and id = $2 and ($14::bigint is null or version = $14)"
    );
    let n = sqlx::query(sql)
        .bind(team)
        .bind(&m.id)
        .bind(m.kind.as_str())
        .bind(&m.content)
        .bind(m.importance)
        .bind(m.access_count)
        .bind(m.last_accessed)
        .bind(m.updated)
        .bind(m.expires_at)
        .bind(serde_json::to_string(&m.tags).unwrap_or_else(|_| "[]".into()))
        .bind(index_text(&m.content))
        .bind(index_text(m.context.as_deref().unwrap_or("")))
        .bind(author)
        .bind(expected)
        .bind(search_len(m))
        .execute(conn)
        .await?
        .rows_affected();
    Ok(n > 0)
}

pub(crate) async fn put_vector(
    conn: &mut PgConnection,
    team: &str,
    id: &str,
    model: &str,
    vector: Option<&[f32]>,
) -> Result<(), TeamError> {
    sqlx::query(
        "update team_memories set vector_model = $3, vector = $4 where team = $1 and id = $2",
    )
    .bind(team)
    .bind(id)
    .bind(vector.map(|_| model))
    .bind(vector.map(<[f32]>::to_vec))
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks `old` as superseded by `new_id` at `now` (REPLACE / MERGE keep the old version).
pub(crate) async fn supersede(
    conn: &mut PgConnection,
    team: &str,
    author: &str,
    old: &str,
    new_id: &str,
    now: i64,
) -> Result<(), TeamError> {
    sqlx::query(
        "update team_memories set valid_to = $4, superseded_by = $3, version = version + 1,
             author = $5
         where team = $1 and id = $2",
    )
    .bind(team)
    .bind(old)
    .bind(new_id)
    .bind(now)
    .bind(author)
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes a memory together with the history it superseded. Returns rows deleted.
pub(crate) async fn delete_with_history(
    conn: &mut PgConnection,
    team: &str,
    id: &str,
) -> Result<u64, TeamError> {
    Ok(sqlx::query(
        "with recursive chain(id) as (
             select $2::text
             union select m.id from team_memories m join chain c on m.superseded_by = c.id
                 where m.team = $1
         )
         delete from team_memories where team = $1 and id in (select id from chain)",
    )
    .bind(team)
    .bind(id)
    .execute(conn)
    .await?
    .rows_affected())
}

/// Evicts current memories of `scope` until at most `keep` remain: lowest
/// access_count × importance first, then the oldest (the SQLite store's rule).
pub(crate) async fn evict_to(
    conn: &mut PgConnection,
    team: &str,
    scope: Scope,
    keep: usize,
) -> Result<(), TeamError> {
    // the team's rows in every state bound the current ones of any scope: under the
    // capacity there is nothing to count (a count over 100,000 rows cost every add ~45 ms
    // under the team lock on a loaded machine)
    let all: i64 = sqlx::query_scalar(
        "select coalesce((select rows from team_memory_stats where team = $1), 0)",
    )
    .bind(team)
    .fetch_one(&mut *conn)
    .await?;
    if all <= keep as i64 {
        return Ok(());
    }
    let count: i64 = sqlx::query_scalar(
        "select count(*) from team_memories where team = $1 and scope = $2 and valid_to is null",
    )
    .bind(team)
    .bind(scope.as_str())
    .fetch_one(&mut *conn)
    .await?;
    let excess = count - keep as i64;
    if excess <= 0 {
        return Ok(());
    }
    let ids: Vec<String> = sqlx::query_scalar(
        "select id from team_memories where team = $1 and scope = $2 and valid_to is null
         order by access_count * importance asc, created asc, seq asc limit $3",
    )
    .bind(team)
    .bind(scope.as_str())
    .bind(excess)
    .fetch_all(&mut *conn)
    .await?;
    for id in &ids {
        delete_with_history(conn, team, id).await?;
    }
    Ok(())
}

/// Deletes (with their history) the current memories `sql` selects by team and cut-off.
async fn delete_selected(
    conn: &mut PgConnection,
    team: &str,
    sql: &'static str,
    cutoff: i64,
) -> Result<usize, TeamError> {
    let ids: Vec<String> = sqlx::query_scalar(sql)
        .bind(team)
        .bind(cutoff)
        .fetch_all(&mut *conn)
        .await?;
    for id in &ids {
        delete_with_history(conn, team, id).await?;
    }
    Ok(ids.len())
}

/// The lifetimes at `now` (the SQLite store's rules): deletes expired memories, forgets
/// those not accessed since `forget_cutoff`, archives those not accessed since
/// `archive_cutoff`.
pub(crate) async fn gc(
    conn: &mut PgConnection,
    team: &str,
    now: i64,
    forget_cutoff: i64,
    archive_cutoff: i64,
) -> Result<GcStats, TeamError> {
    let expired = delete_selected(
        conn,
        team,
        "select id from team_memories where team = $1 and valid_to is null
         and expires_at is not null and expires_at <= $2",
        now,
    )
    .await?;
    let forgotten = delete_selected(
        conn,
        team,
        "select id from team_memories where team = $1 and valid_to is null
         and last_accessed < $2",
        forget_cutoff,
    )
    .await?;
    let archived = sqlx::query(
        "update team_memories set archived_at = $3
         where team = $1 and valid_to is null and archived_at is null and last_accessed < $2",
    )
    .bind(team)
    .bind(archive_cutoff)
    .bind(now)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    let remaining: i64 = sqlx::query_scalar(
        "select count(*) from team_memories where team = $1 and valid_to is null",
    )
    .bind(team)
    .fetch_one(conn)
    .await?;
    Ok(GcStats {
        expired,
        forgotten,
        archived: archived as usize,
        remaining: remaining as usize,
    })
}
