//! Re-indexing the persistent memory (`rebuild_index`): index text recomputed with the
//! current tokenizer, the full-text index rebuilt, and embeddings made for memories that lack
//! one from the configured model.

use alembic_store::{ReindexReport, rebuild_fts5};
use rusqlite::{TransactionBehavior, params};

use crate::error::MemoryError;
use crate::store::PersistentMemory;
use crate::text::index_text;

/// Memories embedded per embedder call while re-embedding.
const EMBED_BATCH: usize = 64;

impl PersistentMemory {
    /// Recomputes the index text of every memory and rebuilds `semantic_memories_fts`, in one
    /// transaction. With `dry_run` it only counts the memories whose stored text is stale.
    pub fn reindex(&mut self, dry_run: bool) -> Result<ReindexReport, MemoryError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let rows: Vec<(i64, String, String, bool)> = {
            let mut stmt = tx.prepare(
                "select seq, content, coalesce(context, ''), search_text, \
                 coalesce(context_search, '') from semantic_memories order by seq",
            )?;
            let rows = stmt.query_map([], |r| {
                let text = index_text(&r.get::<_, String>(1)?);
                let context = index_text(&r.get::<_, String>(2)?);
                let stale = text != r.get::<_, String>(3)? || context != r.get::<_, String>(4)?;
                Ok((r.get(0)?, text, context, stale))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let stale: Vec<&(i64, String, String, bool)> = rows.iter().filter(|r| r.3).collect();
        let report = ReindexReport {
            rows: rows.len() as u64,
            stale: stale.len() as u64,
            written: !dry_run,
        };
        if dry_run {
            return Ok(report);
        }
        for (seq, text, context, _) in stale {
            tx.execute(
                "update semantic_memories set search_text = ?2, context_search = ?3 where seq = ?1",
                params![seq, text, context],
            )?;
        }
        rebuild_fts5(&tx, "semantic_memories_fts")?;
        tx.commit()?;
        Ok(report)
    }

    /// The configured embedding model and how many current memories have no vector from it
    /// (all of them when `all`); `None` without an embedder.
    pub fn vectors_to_make(&self, all: bool) -> Result<Option<(String, u64)>, MemoryError> {
        let Some(embedder) = &self.embedder else {
            return Ok(None);
        };
        let model = embedder.model_id().to_string();
        let n: i64 = self.conn.query_row(
            "select count(*) from semantic_memories m \
             left join memory_vectors v on v.seq = m.seq and v.model = ?1 \
             where m.valid_to is null and (?2 or v.seq is null)",
            params![model, all],
            |r| r.get(0),
        )?;
        Ok(Some((model, u64::try_from(n).unwrap_or(0))))
    }

    /// Embeds every current memory without a vector from the configured model (every one,
    /// after dropping the old vectors, when `all`); `progress` gets the count done so far.
    /// Returns how many were embedded (0 without an embedder).
    pub fn reembed(&mut self, all: bool, progress: &dyn Fn(u64)) -> Result<u64, MemoryError> {
        if self.embedder.is_none() {
            return Ok(0);
        }
        if all {
            self.conn.execute("delete from memory_vectors", [])?;
        }
        // Bounded by the count before the first batch, so an embedder that returns fewer
        // vectors than texts cannot keep this loop going.
        let total = self.vectors_to_make(false)?.map_or(0, |(_, n)| n);
        let mut done = 0;
        while done < total {
            let n = self.embed_missing(EMBED_BATCH)?;
            if n == 0 {
                break;
            }
            done += n as u64;
            progress(done.min(total));
        }
        Ok(done.min(total))
    }
}
