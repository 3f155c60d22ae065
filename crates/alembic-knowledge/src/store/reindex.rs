//! Re-indexing: every entry's search text recomputed with the current tokenizer, and the
//! full-text index rebuilt from it (`rebuild_index`).

use alembic_store::{ReindexReport, rebuild_fts5};
use rusqlite::{TransactionBehavior, params};

use super::KnowledgeStore;
use super::rows::search_text_of;
use crate::error::KnowledgeError;

impl KnowledgeStore {
    /// Recomputes the search text of every entry and rebuilds `knowledge_fts`, in one
    /// transaction. With `dry_run` it only counts the entries whose stored text is stale.
    pub(crate) fn reindex_entries(
        &mut self,
        dry_run: bool,
    ) -> Result<ReindexReport, KnowledgeError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let rows: Vec<(i64, String, String)> = {
            let mut stmt = tx.prepare(
                "select seq, title, description, content, pattern, tags, search_text \
                 from knowledge_entries order by seq",
            )?;
            let rows = stmt.query_map([], |r| {
                let tags: String = r.get(5)?;
                let tags: Vec<String> = serde_json::from_str(&tags).unwrap_or_default();
                let text = search_text_of(
                    &r.get::<_, String>(1)?,
                    &r.get::<_, String>(2)?,
                    &r.get::<_, String>(3)?,
                    &r.get::<_, String>(4)?,
                    &tags,
                );
                Ok((r.get(0)?, text, r.get(6)?))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let stale: Vec<&(i64, String, String)> = rows.iter().filter(|r| r.1 != r.2).collect();
        let report = ReindexReport {
            rows: rows.len() as u64,
            stale: stale.len() as u64,
            written: !dry_run,
        };
        if dry_run {
            return Ok(report);
        }
        for (seq, text, _) in stale {
            tx.execute(
                "update knowledge_entries set search_text = ?2 where seq = ?1",
                params![seq, text],
            )?;
        }
        rebuild_fts5(&tx, "knowledge_fts")?;
        tx.commit()?;
        Ok(report)
    }
}
