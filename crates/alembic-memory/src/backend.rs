//! [`MemoryBackend`]: the one storage trait of persistent memory. [`PersistentMemory`]
//! (SQLite, the embedded default) implements it here; the team store on PostgreSQL
//! (`alembic-team`) implements it there. Both run the same contract test suite
//! (`crates/alembic-team/tests/suite/contract.rs`), and both score retrieval with
//! [`crate::MemoryRetriever::rank_channels`] and consolidate with
//! [`crate::MemoryConsolidator::decide`], so a backend owns storage, never the rules.

use std::sync::Arc;

use crate::consolidate::ConsolidateStats;
use crate::embed::Embedder;
use crate::error::MemoryError;
use crate::model::{Memory, MemoryUpdate, NewMemory};
use crate::retriever::{RetrieveOptions, ScoredMemory};
use crate::store::{GcStats, ListFilter, PersistentMemory};

/// Where persistent memories are stored. Every write is one transaction; capacity, archive,
/// forget and TTL rules hold per scope (and, on a team server, per team).
pub trait MemoryBackend: Send {
    /// Names the store for messages ("sqlite", "team platform on 127.0.0.1:5432").
    fn describe(&self) -> String;
    /// Adds one memory without consolidation.
    fn add(&mut self, input: NewMemory) -> Result<Memory, MemoryError>;
    /// One memory by id, whatever its state.
    fn get(&self, id: &str) -> Result<Option<Memory>, MemoryError>;
    /// Changes fields of a memory in place.
    fn update(&mut self, id: &str, change: MemoryUpdate) -> Result<Memory, MemoryError>;
    /// Memories ordered by most recently updated.
    fn list(&self, filter: &ListFilter) -> Result<Vec<Memory>, MemoryError>;
    /// Every version of a memory, oldest first.
    fn history(&self, id: &str) -> Result<Vec<Memory>, MemoryError>;
    /// Deletes a memory and the history it superseded; false when it does not exist.
    fn forget(&mut self, id: &str) -> Result<bool, MemoryError>;
    /// Brings an archived memory back into retrieval.
    fn restore(&mut self, id: &str) -> Result<Memory, MemoryError>;
    /// Applies TTL expiry, forgetting and archiving now.
    fn gc(&mut self) -> Result<GcStats, MemoryError>;
    /// Scored retrieval; returned memories get their access counted when `options.touch`.
    fn retrieve(
        &mut self,
        query: &str,
        options: &RetrieveOptions,
    ) -> Result<Vec<ScoredMemory>, MemoryError>;
    /// Folds candidates into the store (REPLACE / UPDATE / MERGE / ADD).
    fn consolidate(&mut self, candidates: &[NewMemory]) -> Result<ConsolidateStats, MemoryError>;
    /// Every row, history included, oldest first.
    fn export(&self) -> Result<Vec<Memory>, MemoryError>;
    /// Inserts exported rows keeping their ids; existing ids are skipped. (imported, skipped).
    fn import(&mut self, memories: &[Memory]) -> Result<(usize, usize), MemoryError>;
    /// Embeds new memories and queries with `embedder` from now on (a store opened for a
    /// read gets the embedder when a search first needs it).
    fn set_embedder(&mut self, embedder: Option<Arc<dyn Embedder>>);
}

impl MemoryBackend for PersistentMemory {
    fn describe(&self) -> String {
        "sqlite".to_string()
    }
    fn add(&mut self, input: NewMemory) -> Result<Memory, MemoryError> {
        PersistentMemory::add(self, input)
    }
    fn get(&self, id: &str) -> Result<Option<Memory>, MemoryError> {
        PersistentMemory::get(self, id)
    }
    fn update(&mut self, id: &str, change: MemoryUpdate) -> Result<Memory, MemoryError> {
        PersistentMemory::update(self, id, change)
    }
    fn list(&self, filter: &ListFilter) -> Result<Vec<Memory>, MemoryError> {
        PersistentMemory::list(self, filter)
    }
    fn history(&self, id: &str) -> Result<Vec<Memory>, MemoryError> {
        PersistentMemory::history(self, id)
    }
    fn forget(&mut self, id: &str) -> Result<bool, MemoryError> {
        PersistentMemory::forget(self, id)
    }
    fn restore(&mut self, id: &str) -> Result<Memory, MemoryError> {
        PersistentMemory::restore(self, id)
    }
    fn gc(&mut self) -> Result<GcStats, MemoryError> {
        PersistentMemory::gc(self)
    }
    fn retrieve(
        &mut self,
        query: &str,
        options: &RetrieveOptions,
    ) -> Result<Vec<ScoredMemory>, MemoryError> {
        PersistentMemory::retrieve(self, query, options)
    }
    fn consolidate(&mut self, candidates: &[NewMemory]) -> Result<ConsolidateStats, MemoryError> {
        PersistentMemory::consolidate(self, candidates)
    }
    fn export(&self) -> Result<Vec<Memory>, MemoryError> {
        PersistentMemory::export(self)
    }
    fn import(&mut self, memories: &[Memory]) -> Result<(usize, usize), MemoryError> {
        PersistentMemory::import(self, memories)
    }
    fn set_embedder(&mut self, embedder: Option<Arc<dyn Embedder>>) {
        PersistentMemory::set_embedder(self, embedder)
    }
}

/// Embeds texts with `embedder` when there is one; a failing embedder yields `None` so the
/// write still succeeds (the vector is filled later, e.g. by `embed_missing`).
pub fn try_embed(embedder: Option<&Arc<dyn Embedder>>, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
    let embedder = embedder?;
    match embedder.embed(texts) {
        Ok(v) if v.len() == texts.len() => Some(v),
        Ok(_) => None,
        Err(e) => {
            tracing::debug!(error = %e, "embedding failed; memory stored without a vector");
            None
        }
    }
}
