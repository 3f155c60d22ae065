//! [`PgMemory`]: persistent memory of one team on a PostgreSQL server, behind the same
//! [`MemoryBackend`] trait as the SQLite store.
//!
//! Rules are the memory crate's: rows are prepared with [`prepare_memory`], edited with
//! [`apply_update`], retrieval is scored by [`alembic_memory::MemoryRetriever::rank_channels`]
//! and consolidation decided by [`alembic_memory::MemoryConsolidator::decide`]. This module
//! only stores. Invariants:
//! - every statement filters by the client's team, so a team never reads or writes another
//!   team's rows;
//! - every write is one transaction holding the team's advisory lock, so capacity, archive
//!   and forget rules hold per team scope under concurrent writers;
//! - every write records its author and bumps the row's version; [`PgMemory::update_at`]
//!   refuses a write at a stale version with [`MemoryError::Conflict`] naming the memory.

pub(crate) mod migrations;
mod postings;
mod search;

use std::future::Future;
use std::sync::Arc;

use alembic_memory::tools::TeamOpener;
use alembic_memory::{
    Clock, ConsolidateStats, DAY_MS, Embedder, GcStats, ListFilter, Memory, MemoryBackend,
    MemoryConfig, MemoryError, MemoryUpdate, NewMemory, RetrieveOptions, Scope, ScoredMemory,
    apply_update, prepare_memory, try_embed,
};
use sqlx::PgPool;

use crate::client::PgClient;
use crate::config::TeamConfig;
use crate::error::TeamError;
use crate::schema::{MEMORY_COMPONENT, MEMORY_MIGRATIONS, migrate};
use crate::tx::begin_team;

pub(crate) mod rows;

pub use rows::Versioned;

/// The team and author every statement of one client carries.
#[derive(Debug, Clone)]
pub(crate) struct Who {
    pub team: String,
    pub author: String,
}

/// Team memories on a PostgreSQL server (see the module docs).
pub struct PgMemory {
    client: Arc<PgClient>,
    who: Who,
    clock: Arc<dyn Clock>,
    config: MemoryConfig,
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for PgMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgMemory")
            .field("server", &self.client.server())
            .field("team", &self.who.team)
            .finish_non_exhaustive()
    }
}

/// Team names: 1..=63 of `a-z 0-9 - _`, starting with a letter or digit.
pub fn check_team_name(name: &str) -> Result<(), TeamError> {
    let ok = (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(TeamError::BadTeam { name: name.into() })
    }
}

/// What a [`alembic_memory::MemoryService`] calls to open the team store on first use
/// ([`alembic_memory::MemoryService::with_team`]); the label names team and server.
pub fn team_opener(
    team: TeamConfig,
    config: MemoryConfig,
    clock: Arc<dyn Clock>,
) -> (String, TeamOpener) {
    let label = format!("team {}", team.team);
    let open: TeamOpener = Box::new(move |embedder| {
        PgMemory::open(&team, config.clone(), Arc::clone(&clock))
            .map(|m| Box::new(m.with_embedder(embedder)) as Box<dyn MemoryBackend>)
            .map_err(|e| e.to_string())
    });
    (label, open)
}

impl PgMemory {
    /// Connects to the team server (bounded by the connect timeout) and brings the team
    /// memory schema up to date; a server schema newer than this build is refused.
    pub fn open(
        team: &TeamConfig,
        config: MemoryConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<PgMemory, TeamError> {
        check_team_name(&team.team)?;
        let client = Arc::new(PgClient::connect(team)?);
        let server = client.server().to_string();
        client.run(move |pool| async move {
            migrate(&pool, &server, MEMORY_COMPONENT, MEMORY_MIGRATIONS).await
        })?;
        Ok(PgMemory {
            client,
            who: Who {
                team: team.team.clone(),
                author: team.author.clone(),
            },
            clock,
            config,
            embedder: None,
        })
    }

    /// Uses `embedder` for new memories and to re-rank lexical candidates.
    pub fn with_embedder(mut self, embedder: Option<Arc<dyn Embedder>>) -> PgMemory {
        self.embedder = embedder;
        self
    }

    pub fn team(&self) -> &str {
        &self.who.team
    }

    pub fn server(&self) -> &str {
        self.client.server()
    }

    /// Runs `f` with this client's team and author on the pool.
    fn run<T, F, Fut>(&self, f: F) -> Result<T, MemoryError>
    where
        T: Send + 'static,
        F: FnOnce(Who, PgPool) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, TeamError>> + Send + 'static,
    {
        self.client.run_as(&self.who, f)
    }

    /// After a bulk load (a large push, a benchmark's seed): vacuums and analyses the team
    /// memory tables, so posting blocks are read from the index alone (the visibility map is set)
    /// and the planner knows the new sizes. Autovacuum does the same later on its own.
    pub fn vacuum_analyze(&self) -> Result<(), MemoryError> {
        self.run(move |_, pool| async move {
            sqlx::raw_sql("vacuum (analyze) team_memories, team_memory_lists, team_memory_stats")
                .execute(&pool)
                .await?;
            Ok(())
        })
    }

    /// A memory with its version (for [`Self::update_at`]) and last author.
    pub fn get_versioned(&self, id: &str) -> Result<Option<Versioned>, MemoryError> {
        let id = id.to_string();
        self.run(move |who, pool| async move {
            let mut conn = begin_team(&pool, &who.team).await?;
            let found = rows::get(&mut conn, &who.team, &id).await?;
            conn.commit().await?;
            Ok(found)
        })
    }

    /// Edits a memory only if it is still at `version`; otherwise nothing is written and
    /// the error names the memory ([`MemoryError::Conflict`]): two people editing the same
    /// memory at once never lose an update silently.
    pub fn update_at(
        &mut self,
        id: &str,
        version: i64,
        change: MemoryUpdate,
    ) -> Result<Memory, MemoryError> {
        self.edit(id, Some(version), change)
    }

    fn edit(
        &mut self,
        id: &str,
        expected: Option<i64>,
        change: MemoryUpdate,
    ) -> Result<Memory, MemoryError> {
        let now = self.clock.now_ms();
        let Versioned {
            memory: mut m,
            version,
            ..
        } = self
            .get_versioned(id)?
            .ok_or_else(|| MemoryError::NotFound { id: id.into() })?;
        apply_update(&self.config, &mut m, &change, now)?;
        let vector = match change.content {
            Some(_) => try_embed(self.embedder.as_ref(), &[m.content.as_str()]),
            None => None,
        };
        let model = self.embedder.as_ref().map(|e| e.model_id().to_string());
        let content_changed = change.content.is_some();
        let expected = expected.unwrap_or(version);
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            rows::lock_team(&mut tx, &who.team).await?;
            if !rows::write_back(&mut tx, &who.team, &who.author, &m, Some(expected)).await? {
                return Err(TeamError::Memory(MemoryError::Conflict {
                    id: m.id.clone(),
                    version: expected,
                }));
            }
            if content_changed {
                let v = vector.as_ref().and_then(|v| v.first()).map(Vec::as_slice);
                let model = model.as_deref().unwrap_or("");
                rows::put_vector(&mut tx, &who.team, &m.id, model, v).await?;
            }
            tx.commit().await?;
            Ok(m)
        })
    }

    fn archive_cutoff(&self, now: i64) -> i64 {
        now - (self.config.archive_after_days * DAY_MS as f64) as i64
    }
}

impl MemoryBackend for PgMemory {
    fn describe(&self) -> String {
        format!("team {} on {}", self.who.team, self.client.server())
    }

    fn add(&mut self, input: NewMemory) -> Result<Memory, MemoryError> {
        let now = self.clock.now_ms();
        let memory = prepare_memory(&self.config, &input, now)?;
        let vector = try_embed(self.embedder.as_ref(), &[memory.content.as_str()]);
        let model = self.embedder.as_ref().map(|e| e.model_id().to_string());
        let keep = self.config.max_per_scope.saturating_sub(1);
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            rows::lock_team(&mut tx, &who.team).await?;
            rows::evict_to(&mut tx, &who.team, memory.scope, keep).await?;
            let v = vector.as_ref().and_then(|v| v.first()).map(Vec::as_slice);
            let v = model.as_deref().zip(v);
            rows::insert(&mut tx, &who.team, &who.author, &memory, v).await?;
            tx.commit().await?;
            Ok(memory)
        })
    }

    fn get(&self, id: &str) -> Result<Option<Memory>, MemoryError> {
        Ok(self.get_versioned(id)?.map(|v| v.memory))
    }

    fn update(&mut self, id: &str, change: MemoryUpdate) -> Result<Memory, MemoryError> {
        self.edit(id, None, change)
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<Memory>, MemoryError> {
        let filter = filter.clone();
        self.run(move |who, pool| async move {
            let sql = concat!(
                "select ",
                rows::columns!(),
                " from team_memories
                 where team = $1 and ($2::text is null or scope = $2)
                   and ($3 or archived_at is null) and ($4 or valid_to is null)
                 order by updated desc, seq desc limit $5"
            );
            let mut tx = begin_team(&pool, &who.team).await?;
            let rows = sqlx::query(sql)
                .bind(&who.team)
                .bind(filter.scope.map(Scope::as_str))
                .bind(filter.include_archived)
                .bind(filter.include_history)
                .bind(filter.limit.map(|l| l as i64))
                .fetch_all(&mut *tx)
                .await?;
            tx.commit().await?;
            rows.iter().map(rows::decode).collect()
        })
    }

    fn history(&self, id: &str) -> Result<Vec<Memory>, MemoryError> {
        let id = id.to_string();
        self.run(move |who, pool| async move {
            let sql = concat!(
                "with recursive
                     older(id) as (select $2::text union select m.id from team_memories m
                                   join older o on m.superseded_by = o.id where m.team = $1),
                     newer(id) as (select $2::text union select m.superseded_by from team_memories m
                                   join newer n on m.id = n.id
                                   where m.team = $1 and m.superseded_by is not null)
                 select ",
                rows::columns!(),
                " from team_memories
                 where team = $1 and id in (select id from older union select id from newer)
                 order by valid_from asc, created asc, seq asc"
            );
            let mut conn = begin_team(&pool, &who.team).await?;
            let found = rows::select(&mut conn, sql, &who.team, Some(&id)).await?;
            conn.commit().await?;
            Ok(found)
        })
    }

    fn forget(&mut self, id: &str) -> Result<bool, MemoryError> {
        let id = id.to_string();
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            rows::lock_team(&mut tx, &who.team).await?;
            let n = rows::delete_with_history(&mut tx, &who.team, &id).await?;
            tx.commit().await?;
            Ok(n > 0)
        })
    }

    fn restore(&mut self, id: &str) -> Result<Memory, MemoryError> {
        let now = self.clock.now_ms();
        let id = id.to_string();
        self.run(move |who, pool| async move {
            let mut conn = begin_team(&pool, &who.team).await?;
            sqlx::query(
                "update team_memories set archived_at = null, last_accessed = $3,
                     version = version + 1, author = $4
                 where team = $1 and id = $2",
            )
            .bind(&who.team)
            .bind(&id)
            .bind(now)
            .bind(&who.author)
            .execute(&mut *conn)
            .await?;
            let found = rows::get(&mut conn, &who.team, &id).await?;
            conn.commit().await?;
            match found {
                Some(v) => Ok(v.memory),
                None => Err(TeamError::Memory(MemoryError::NotFound { id })),
            }
        })
    }

    fn gc(&mut self) -> Result<GcStats, MemoryError> {
        let now = self.clock.now_ms();
        let forget_cutoff = now - (self.config.forget_after_days * DAY_MS as f64) as i64;
        let archive_cutoff = self.archive_cutoff(now);
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            rows::lock_team(&mut tx, &who.team).await?;
            let stats = rows::gc(&mut tx, &who.team, now, forget_cutoff, archive_cutoff).await?;
            tx.commit().await?;
            Ok(stats)
        })
    }

    fn retrieve(
        &mut self,
        query: &str,
        options: &RetrieveOptions,
    ) -> Result<Vec<ScoredMemory>, MemoryError> {
        search::retrieve(self, query, options)
    }

    fn consolidate(&mut self, candidates: &[NewMemory]) -> Result<ConsolidateStats, MemoryError> {
        search::consolidate(self, candidates)
    }

    fn export(&self) -> Result<Vec<Memory>, MemoryError> {
        self.run(move |who, pool| async move {
            let sql = concat!(
                "select ",
                rows::columns!(),
                " from team_memories where team = $1 and $2::text is null order by seq asc"
            );
            let mut conn = begin_team(&pool, &who.team).await?;
            let all = rows::select(&mut conn, sql, &who.team, None).await?;
            conn.commit().await?;
            Ok(all)
        })
    }

    fn set_embedder(&mut self, embedder: Option<Arc<dyn Embedder>>) {
        self.embedder = embedder;
    }

    fn import(&mut self, memories: &[Memory]) -> Result<(usize, usize), MemoryError> {
        let memories = memories.to_vec();
        let max = self.config.max_per_scope;
        self.run(move |who, pool| async move {
            let mut tx = begin_team(&pool, &who.team).await?;
            rows::lock_team(&mut tx, &who.team).await?;
            let imported = rows::insert_many(&mut tx, &who.team, &who.author, &memories).await?;
            for scope in Scope::ALL {
                rows::evict_to(&mut tx, &who.team, *scope, max).await?;
            }
            tx.commit().await?;
            let imported = imported as usize;
            Ok((imported, memories.len() - imported))
        })
    }
}
