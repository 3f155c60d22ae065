//! [`PersistentMemory`]: the long-term store (CRUD, capacity, lifetimes) and the façade
//! over retrieval and consolidation.

use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, TransactionBehavior, params};
use serde::Serialize;

use crate::clock::{Clock, DAY_MS, SystemClock};
use crate::config::MemoryConfig;
use crate::consolidate::{ConsolidateStats, MemoryConsolidator};
use crate::embed::Embedder;
use crate::error::MemoryError;
use crate::model::{Memory, MemoryUpdate, NewMemory, Scope};
use crate::retriever::{MemoryRetriever, RetrieveOptions, ScoredMemory};
use crate::rows;
use crate::schema::{COMPONENT, MIGRATIONS};

/// Result of [`PersistentMemory::gc`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GcStats {
    pub expired: usize,
    pub forgotten: usize,
    pub archived: usize,
    pub remaining: usize,
}

/// Counts for `alembic memory stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemoryStats {
    /// Current memories (not superseded), archived included.
    pub current: usize,
    pub archived: usize,
    /// Superseded versions kept as history.
    pub history: usize,
    pub expired: usize,
    pub with_vectors: usize,
    pub by_scope: Vec<(String, usize)>,
    pub by_type: Vec<(String, usize)>,
    pub by_source: Vec<(String, usize)>,
    pub avg_importance: f64,
}

/// Which memories [`PersistentMemory::list`] returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListFilter {
    pub scope: Option<Scope>,
    pub include_archived: bool,
    /// Include superseded versions.
    pub include_history: bool,
    pub limit: Option<usize>,
}

/// Long-term memory in the project database (see the crate docs).
pub struct PersistentMemory {
    pub(crate) conn: Connection,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: MemoryConfig,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for PersistentMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentMemory")
            .field("config", &self.config)
            .field(
                "embedder",
                &self.embedder.as_ref().map(|e| e.model_id().to_string()),
            )
            .finish()
    }
}

/// Checks and normalises an input into a new memory row (not yet stored): trimmed content,
/// a new id, timestamps and TTL from `now`. Every backend prepares its rows with this.
pub fn prepare_memory(
    config: &MemoryConfig,
    input: &NewMemory,
    now: i64,
) -> Result<Memory, MemoryError> {
    input.check(config.max_content_chars)?;
    let content = input.content.trim().to_string();
    let valid_from = input.valid_from.unwrap_or(now);
    Ok(Memory {
        id: new_id(),
        scope: input.scope,
        kind: input.kind,
        content,
        source: input.source,
        importance: input.importance,
        access_count: 0,
        last_accessed: now,
        created: valid_from.min(now),
        updated: valid_from.min(now),
        expires_at: input.ttl_days.map(|d| now + (d * DAY_MS as f64) as i64),
        source_dimension: input.source_dimension.clone(),
        provenance: input.provenance.clone(),
        context: input.context.clone(),
        archived_at: None,
        valid_from,
        valid_to: None,
        superseded_by: None,
        tags: input.tags.clone(),
    })
}

/// Applies an edit to a memory read from the store: the same checks as a new memory's,
/// `updated` set to `now`. Every backend edits with this.
pub fn apply_update(
    config: &MemoryConfig,
    m: &mut Memory,
    change: &MemoryUpdate,
    now: i64,
) -> Result<(), MemoryError> {
    if let Some(content) = &change.content {
        let probe = NewMemory::fact(content.clone()).with_importance(m.importance);
        m.content = prepare_memory(config, &probe, now)?.content;
    }
    if let Some(importance) = change.importance {
        if !(1.0..=10.0).contains(&importance) {
            return Err(MemoryError::BadImportance { value: importance });
        }
        m.importance = importance;
    }
    if let Some(kind) = change.kind {
        m.kind = kind;
    }
    if let Some(ttl) = change.ttl_days {
        m.expires_at = ttl.map(|d| now + (d * DAY_MS as f64) as i64);
    }
    if let Some(tags) = &change.tags {
        m.tags = tags.clone();
    }
    m.updated = now;
    Ok(())
}

fn new_id() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("smem_{}", &hex[..12])
}

impl PersistentMemory {
    /// Wraps an open connection, bringing the memory schema up to date.
    pub fn open(
        mut conn: Connection,
        config: MemoryConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<PersistentMemory, MemoryError> {
        alembic_store::migrate(&mut conn, COMPONENT, MIGRATIONS)?;
        Ok(PersistentMemory {
            conn,
            clock,
            config,
            embedder: None,
        })
    }

    /// The memory of the project at `root` (`<root>/.alembic/alembic.db`), system clock.
    pub fn open_project(
        root: &Path,
        config: MemoryConfig,
    ) -> Result<PersistentMemory, MemoryError> {
        Self::open(
            alembic_store::open_project(root)?,
            config,
            Arc::new(SystemClock),
        )
    }

    /// An in-memory store, for tests and benchmarks.
    pub fn open_in_memory(
        config: MemoryConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<PersistentMemory, MemoryError> {
        Self::open(alembic_store::open_in_memory()?, config, clock)
    }

    /// Uses `embedder` for new memories and for the semantic half of retrieval.
    pub fn with_embedder(mut self, embedder: Option<Arc<dyn Embedder>>) -> PersistentMemory {
        self.embedder = embedder;
        self
    }

    /// Replaces the embedder of an open store (a service attaches it on first need).
    pub fn set_embedder(&mut self, embedder: Option<Arc<dyn Embedder>>) {
        self.embedder = embedder;
    }

    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }

    pub fn config_mut(&mut self) -> &mut MemoryConfig {
        &mut self.config
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The underlying connection (read-only uses such as integrity checks).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn archive_cutoff(&self, now: i64) -> i64 {
        now - (self.config.archive_after_days * DAY_MS as f64) as i64
    }

    /// Checks and normalises an input into a new memory row (not yet stored).
    pub(crate) fn prepare(&self, input: &NewMemory, now: i64) -> Result<Memory, MemoryError> {
        prepare_memory(&self.config, input, now)
    }

    /// Embeds texts when an embedder is configured (see [`crate::backend::try_embed`]).
    pub(crate) fn try_embed(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        crate::backend::try_embed(self.embedder.as_ref(), texts)
    }

    /// Adds one memory without consolidation. Capacity is enforced in the same transaction.
    pub fn add(&mut self, input: NewMemory) -> Result<Memory, MemoryError> {
        let now = self.clock.now_ms();
        let memory = self.prepare(&input, now)?;
        let vector = self.try_embed(&[memory.content.as_str()]);
        let model = self.embedder.as_ref().map(|e| e.model_id().to_string());
        let max = self.config.max_per_scope;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        rows::evict_to(&tx, memory.scope, max.saturating_sub(1))?;
        let seq = rows::insert(&tx, &memory)?;
        if let (Some(v), Some(model)) = (vector.as_ref().and_then(|v| v.first()), model) {
            rows::put_vector(&tx, seq, &model, v)?;
        }
        tx.commit()?;
        Ok(memory)
    }

    /// Adds many memories in one transaction (import, benchmarks). Returns them in order.
    pub fn add_batch(&mut self, inputs: &[NewMemory]) -> Result<Vec<Memory>, MemoryError> {
        let now = self.clock.now_ms();
        let memories = inputs
            .iter()
            .map(|i| self.prepare(i, now))
            .collect::<Result<Vec<_>, _>>()?;
        let texts: Vec<&str> = memories.iter().map(|m| m.content.as_str()).collect();
        let vectors = self.try_embed(&texts);
        let model = self.embedder.as_ref().map(|e| e.model_id().to_string());
        let max = self.config.max_per_scope;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for (i, memory) in memories.iter().enumerate() {
            rows::evict_to(&tx, memory.scope, max.saturating_sub(1))?;
            let seq = rows::insert(&tx, memory)?;
            if let (Some(vs), Some(model)) = (&vectors, &model) {
                rows::put_vector(&tx, seq, model, &vs[i])?;
            }
        }
        tx.commit()?;
        Ok(memories)
    }

    /// One memory by id, whatever its state (archived and superseded ones included).
    pub fn get(&self, id: &str) -> Result<Option<Memory>, MemoryError> {
        rows::get(&self.conn, id)
    }

    /// Changes fields of a memory in place. A content change re-embeds it.
    pub fn update(&mut self, id: &str, change: MemoryUpdate) -> Result<Memory, MemoryError> {
        let now = self.clock.now_ms();
        let mut m = self
            .get(id)?
            .ok_or_else(|| MemoryError::NotFound { id: id.into() })?;
        apply_update(&self.config, &mut m, &change, now)?;
        let vector = match change.content {
            Some(_) => self.try_embed(&[m.content.as_str()]),
            None => None,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        rows::write_back(&tx, &m)?;
        if change.content.is_some() {
            let seq = rows::seq_of(&tx, id)?.unwrap_or_default();
            tx.execute("delete from memory_vectors where seq = ?1", [seq])?;
            if let (Some(v), Some(e)) = (vector.as_ref().and_then(|v| v.first()), &self.embedder) {
                rows::put_vector(&tx, seq, e.model_id(), v)?;
            }
        }
        tx.commit()?;
        Ok(m)
    }

    /// Memories ordered by most recently updated.
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<Memory>, MemoryError> {
        let sql = format!(
            "select {} from semantic_memories
             where (?1 is null or scope = ?1)
               and (?2 or archived_at is null)
               and (?3 or valid_to is null)
             order by updated desc, seq desc limit ?4",
            rows::COLUMNS
        );
        let limit = filter.limit.map_or(-1, |l| l as i64);
        rows::query_memories(
            &self.conn,
            &sql,
            params![
                filter.scope.map(|s| s.as_str()),
                filter.include_archived,
                filter.include_history,
                limit
            ],
        )
    }

    /// The versions of a memory: everything it superseded (transitively) and everything that
    /// superseded it, oldest first.
    pub fn history(&self, id: &str) -> Result<Vec<Memory>, MemoryError> {
        let sql = format!(
            "with recursive
                 older(id) as (select ?1 union select m.id from semantic_memories m
                               join older o on m.superseded_by = o.id),
                 newer(id) as (select ?1 union select m.superseded_by from semantic_memories m
                               join newer n on m.id = n.id where m.superseded_by is not null)
             select {} from semantic_memories
             where id in (select id from older union select id from newer)
             order by valid_from asc, created asc, seq asc",
            rows::COLUMNS
        );
        rows::query_memories(&self.conn, &sql, [id])
    }

    /// Deletes a memory and the history it superseded. False when the id does not exist.
    pub fn forget(&mut self, id: &str) -> Result<bool, MemoryError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let n = rows::delete_with_history(&tx, id)?;
        tx.commit()?;
        Ok(n > 0)
    }

    /// Brings an archived memory back into retrieval.
    pub fn restore(&mut self, id: &str) -> Result<Memory, MemoryError> {
        let now = self.clock.now_ms();
        let n = self.conn.execute(
            "update semantic_memories set archived_at = null, last_accessed = ?2 where id = ?1",
            params![id, now],
        )?;
        if n == 0 {
            return Err(MemoryError::NotFound { id: id.into() });
        }
        self.get(id)?
            .ok_or_else(|| MemoryError::NotFound { id: id.into() })
    }

    /// Applies the lifetimes now: deletes expired (TTL) memories, forgets memories not
    /// accessed for `forget_after_days`, archives those not accessed for `archive_after_days`.
    pub fn gc(&mut self) -> Result<GcStats, MemoryError> {
        let now = self.clock.now_ms();
        let forget_cutoff = now - (self.config.forget_after_days * DAY_MS as f64) as i64;
        let archive_cutoff = self.archive_cutoff(now);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let ids = |sql: &str, cutoff: i64| -> Result<Vec<String>, MemoryError> {
            let mut stmt = tx.prepare(sql)?;
            let v = stmt
                .query_map([cutoff], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(v)
        };
        let expired = ids(
            "select id from semantic_memories where valid_to is null
             and expires_at is not null and expires_at <= ?1",
            now,
        )?;
        for id in &expired {
            rows::delete_with_history(&tx, id)?;
        }
        let forgotten = ids(
            "select id from semantic_memories where valid_to is null and last_accessed < ?1",
            forget_cutoff,
        )?;
        for id in &forgotten {
            rows::delete_with_history(&tx, id)?;
        }
        let archived = tx.execute(
            "update semantic_memories set archived_at = ?2
             where valid_to is null and archived_at is null and last_accessed < ?1",
            params![archive_cutoff, now],
        )?;
        let remaining: i64 = tx.query_row(
            "select count(*) from semantic_memories where valid_to is null",
            [],
            |r| r.get(0),
        )?;
        tx.commit()?;
        Ok(GcStats {
            expired: expired.len(),
            forgotten: forgotten.len(),
            archived,
            remaining: remaining as usize,
        })
    }

    /// Counts by state, scope, type and source.
    pub fn stats(&self) -> Result<MemoryStats, MemoryError> {
        let now = self.clock.now_ms();
        let count = |sql: &str| -> Result<usize, MemoryError> {
            let n: i64 = self.conn.query_row(sql, [now], |r| r.get(0))?;
            Ok(n as usize)
        };
        let group = |col: &str| -> Result<Vec<(String, usize)>, MemoryError> {
            let sql = format!(
                "select {col}, count(*) from semantic_memories where valid_to is null
                 group by {col} order by {col}"
            );
            let mut stmt = self.conn.prepare(&sql)?;
            let v = stmt
                .query_map([], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as usize))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(v)
        };
        let avg: Option<f64> = self.conn.query_row(
            "select avg(importance) from semantic_memories where valid_to is null",
            [],
            |r| r.get(0),
        )?;
        Ok(MemoryStats {
            current: count(
                "select count(*) from semantic_memories where valid_to is null and ?1 = ?1",
            )?,
            archived: count(
                "select count(*) from semantic_memories where valid_to is null and archived_at is not null and ?1 = ?1",
            )?,
            history: count(
                "select count(*) from semantic_memories where valid_to is not null and ?1 = ?1",
            )?,
            expired: count(
                "select count(*) from semantic_memories where valid_to is null and expires_at <= ?1",
            )?,
            with_vectors: count("select count(*) from memory_vectors where ?1 = ?1")?,
            by_scope: group("scope")?,
            by_type: group("type")?,
            by_source: group("source")?,
            avg_importance: (avg.unwrap_or(0.0) * 10.0).round() / 10.0,
        })
    }

    /// Every row, history included, oldest first (for `export`).
    pub fn export(&self) -> Result<Vec<Memory>, MemoryError> {
        let sql = format!(
            "select {} from semantic_memories order by seq asc",
            rows::COLUMNS
        );
        rows::query_memories(&self.conn, &sql, [])
    }

    /// Inserts exported rows, keeping their ids and timestamps. Rows whose id already exists
    /// are left alone. Returns (imported, skipped). Capacity is enforced afterwards.
    pub fn import(&mut self, memories: &[Memory]) -> Result<(usize, usize), MemoryError> {
        let max = self.config.max_per_scope;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut imported = 0;
        for m in memories {
            if rows::seq_of(&tx, &m.id)?.is_none() {
                rows::insert(&tx, m)?;
                imported += 1;
            }
        }
        for scope in Scope::ALL {
            rows::evict_to(&tx, *scope, max)?;
        }
        tx.commit()?;
        Ok((imported, memories.len() - imported))
    }

    /// Embeds up to `batch` current memories that have no vector from the configured model.
    /// Returns how many were embedded (0 without an embedder).
    pub fn embed_missing(&mut self, batch: usize) -> Result<usize, MemoryError> {
        let Some(embedder) = self.embedder.clone() else {
            return Ok(0);
        };
        let mut stmt = self.conn.prepare(
            "select m.seq, m.content from semantic_memories m
             left join memory_vectors v on v.seq = m.seq and v.model = ?1
             where m.valid_to is null and v.seq is null limit ?2",
        )?;
        let todo: Vec<(i64, String)> = stmt
            .query_map(params![embedder.model_id(), batch as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        drop(stmt);
        if todo.is_empty() {
            return Ok(0);
        }
        let texts: Vec<&str> = todo.iter().map(|(_, c)| c.as_str()).collect();
        let vectors = embedder.embed(&texts)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for ((seq, _), v) in todo.iter().zip(&vectors) {
            rows::put_vector(&tx, *seq, embedder.model_id(), v)?;
        }
        tx.commit()?;
        Ok(todo.len())
    }

    /// Scored retrieval (see [`MemoryRetriever`]). Returned memories get their access counted.
    pub fn retrieve(
        &mut self,
        query: &str,
        options: &RetrieveOptions,
    ) -> Result<Vec<ScoredMemory>, MemoryError> {
        MemoryRetriever::new(self.config.retrieval.clone()).retrieve(self, query, options)
    }

    /// Consolidates candidates into the store (see [`MemoryConsolidator`]).
    pub fn consolidate(
        &mut self,
        candidates: &[NewMemory],
    ) -> Result<ConsolidateStats, MemoryError> {
        MemoryConsolidator::new(self.config.consolidation.clone()).consolidate(self, candidates)
    }
}
