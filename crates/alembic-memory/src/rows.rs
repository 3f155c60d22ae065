//! Row-level SQL on a connection or transaction. Callers own the transaction.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::MemoryError;
use crate::model::{Memory, Scope};
use crate::text::index_text;

pub(crate) const COLUMNS: &str = "id, scope, type, content, source, importance, access_count, \
     last_accessed, created, updated, expires_at, source_dimension, provenance, archived_at, \
     valid_from, valid_to, superseded_by, tags, context";

/// SQL condition (on alias `m`) for memories that retrieval may return at `?now`
/// given the archive cut-off `?cutoff`.
pub(crate) const ACTIVE: &str = "m.valid_to is null and m.archived_at is null \
     and (m.expires_at is null or m.expires_at > :now) and m.last_accessed >= :cutoff";

fn parse<T: std::str::FromStr<Err = MemoryError>>(id: &str, v: String) -> Result<T, MemoryError> {
    v.parse().map_err(|e: MemoryError| MemoryError::CorruptRow {
        id: id.to_string(),
        reason: e.to_string(),
    })
}

struct RawRow {
    texts: [String; 5],
    memory: Memory,
}

fn raw(row: &Row<'_>) -> rusqlite::Result<RawRow> {
    let tags: String = row.get(17)?;
    Ok(RawRow {
        texts: [row.get(0)?, row.get(1)?, row.get(2)?, row.get(4)?, tags],
        memory: Memory {
            id: row.get(0)?,
            scope: Scope::Project,
            kind: crate::model::MemoryType::Fact,
            content: row.get(3)?,
            source: crate::model::MemorySource::User,
            importance: row.get(5)?,
            access_count: row.get(6)?,
            last_accessed: row.get(7)?,
            created: row.get(8)?,
            updated: row.get(9)?,
            expires_at: row.get(10)?,
            source_dimension: row.get(11)?,
            provenance: row.get(12)?,
            archived_at: row.get(13)?,
            valid_from: row.get(14)?,
            valid_to: row.get(15)?,
            superseded_by: row.get(16)?,
            tags: Vec::new(),
            context: row.get(18)?,
        },
    })
}

fn finish(raw: RawRow) -> Result<Memory, MemoryError> {
    let [id, scope, kind, source, tags] = raw.texts;
    let mut m = raw.memory;
    m.scope = parse(&id, scope)?;
    m.kind = parse(&id, kind)?;
    m.source = parse(&id, source)?;
    m.tags = serde_json::from_str(&tags).unwrap_or_default();
    Ok(m)
}

/// Runs a query selecting [`COLUMNS`] and returns the memories.
pub(crate) fn query_memories(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Memory>, MemoryError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let raws = stmt
        .query_map(params, raw)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    raws.into_iter().map(finish).collect()
}

pub(crate) fn get(conn: &Connection, id: &str) -> Result<Option<Memory>, MemoryError> {
    let sql = format!("select {COLUMNS} from semantic_memories where id = ?1");
    Ok(query_memories(conn, &sql, [id])?.into_iter().next())
}

pub(crate) fn seq_of(conn: &Connection, id: &str) -> Result<Option<i64>, MemoryError> {
    Ok(conn
        .query_row(
            "select seq from semantic_memories where id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()?)
}

/// Inserts a full row (ids included) and returns its `seq`.
pub(crate) fn insert(conn: &Connection, m: &Memory) -> Result<i64, MemoryError> {
    let mut stmt = conn.prepare_cached(
        "insert into semantic_memories (id, scope, type, content, search_text, source, importance,
             access_count, last_accessed, created, updated, expires_at, source_dimension, provenance,
             archived_at, valid_from, valid_to, superseded_by, tags, context, context_search)
         values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
    )?;
    stmt.execute(params![
        m.id,
        m.scope.as_str(),
        m.kind.as_str(),
        m.content,
        index_text(&m.content),
        m.source.as_str(),
        m.importance,
        m.access_count,
        m.last_accessed,
        m.created,
        m.updated,
        m.expires_at,
        m.source_dimension,
        m.provenance,
        m.archived_at,
        m.valid_from,
        m.valid_to,
        m.superseded_by,
        serde_json::to_string(&m.tags).unwrap_or_else(|_| "[]".into()),
        m.context,
        index_text(m.context.as_deref().unwrap_or("")),
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Writes every mutable field of `m` back to its row.
pub(crate) fn write_back(conn: &Connection, m: &Memory) -> Result<(), MemoryError> {
    conn.prepare_cached(
        "update semantic_memories set type = ?2, content = ?3, search_text = ?4, importance = ?5,
             access_count = ?6, last_accessed = ?7, updated = ?8, expires_at = ?9, archived_at = ?10,
             valid_to = ?11, superseded_by = ?12, tags = ?13
         where id = ?1",
    )?
    .execute(params![
        m.id,
        m.kind.as_str(),
        m.content,
        index_text(&m.content),
        m.importance,
        m.access_count,
        m.last_accessed,
        m.updated,
        m.expires_at,
        m.archived_at,
        m.valid_to,
        m.superseded_by,
        serde_json::to_string(&m.tags).unwrap_or_else(|_| "[]".into()),
    ])?;
    Ok(())
}

/// Marks `old` as superseded by `new_id` at `now` (non-destructive REPLACE / MERGE).
pub(crate) fn supersede(
    conn: &Connection,
    old: &str,
    new_id: &str,
    now: i64,
) -> Result<(), MemoryError> {
    conn.prepare_cached(
        "update semantic_memories set valid_to = ?3, superseded_by = ?2 where id = ?1",
    )?
    .execute(params![old, new_id, now])?;
    Ok(())
}

/// Deletes a memory together with the history it superseded. Returns rows deleted.
pub(crate) fn delete_with_history(conn: &Connection, id: &str) -> Result<usize, MemoryError> {
    Ok(conn
        .prepare_cached(
            "with recursive chain(id) as (
             select ?1
             union select m.id from semantic_memories m join chain c on m.superseded_by = c.id
         )
         delete from semantic_memories where id in (select id from chain)",
        )?
        .execute([id])?)
}

/// Current (not superseded) memories in a scope, archived ones included. Reads the count the
/// triggers of schema step 3 maintain, so it costs the same at 100 or 100,000 memories.
pub(crate) fn count_current(conn: &Connection, scope: Scope) -> Result<usize, MemoryError> {
    let n: Option<i64> = conn
        .prepare_cached("select current from memory_scope_counts where scope = ?1")?
        .query_row([scope.as_str()], |r| r.get(0))
        .optional()?;
    Ok(n.unwrap_or(0).max(0) as usize)
}

/// Evicts current memories of `scope` until at most `keep` remain: lowest
/// access_count × importance first, then the oldest. Returns the evicted ids.
pub(crate) fn evict_to(
    conn: &Connection,
    scope: Scope,
    keep: usize,
) -> Result<Vec<String>, MemoryError> {
    let count = count_current(conn, scope)?;
    if count <= keep {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = conn
        .prepare_cached(
            "select id from semantic_memories where scope = ?1 and valid_to is null
             order by access_count * importance asc, created asc, seq asc limit ?2",
        )?
        .query_map(params![scope.as_str(), (count - keep) as i64], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in &ids {
        delete_with_history(conn, id)?;
    }
    Ok(ids)
}

/// Stores a vector for a memory, replacing any older one.
pub(crate) fn put_vector(
    conn: &Connection,
    seq: i64,
    model: &str,
    vector: &[f32],
) -> Result<(), MemoryError> {
    let blob: Vec<u8> = vector.iter().flat_map(|f| f.to_le_bytes()).collect();
    conn.prepare_cached(
        "insert or replace into memory_vectors (seq, model, dim, vector) values (?1, ?2, ?3, ?4)",
    )?
    .execute(params![seq, model, vector.len() as i64, blob])?;
    Ok(())
}

pub(crate) fn decode_vector(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
