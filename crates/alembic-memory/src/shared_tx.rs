//! Writing memories inside a transaction another component owns, so that memories and that
//! component's own rows commit together or not at all (bootstrap writes a dimension's
//! candidates, memories and checkpoint in one transaction). Vectors are not computed here;
//! [`crate::PersistentMemory::embed_missing`] fills them later.

use rusqlite::{Connection, params};

use crate::config::MemoryConfig;
use crate::error::MemoryError;
use crate::model::{Memory, NewMemory};
use crate::rows;
use crate::schema::{COMPONENT, MIGRATIONS};
use crate::store::prepare_memory;

/// Brings the memory schema of `conn` up to date (do this before opening the transaction).
pub fn migrate(conn: &mut Connection) -> Result<(), MemoryError> {
    alembic_store::migrate(conn, COMPONENT, MIGRATIONS)?;
    Ok(())
}

/// Adds `inputs` without consolidation on `conn`, which must be inside a transaction the
/// caller commits. Capacity per scope is enforced as [`crate::PersistentMemory::add`] does.
pub fn add_in_transaction(
    conn: &Connection,
    config: &MemoryConfig,
    now: i64,
    inputs: &[NewMemory],
) -> Result<Vec<Memory>, MemoryError> {
    let memories = inputs
        .iter()
        .map(|i| prepare_memory(config, i, now))
        .collect::<Result<Vec<_>, _>>()?;
    for memory in &memories {
        rows::evict_to(conn, memory.scope, config.max_per_scope.saturating_sub(1))?;
        rows::insert(conn, memory)?;
    }
    Ok(memories)
}

/// Makes `input` the current memory of its `source_dimension` and source: nothing is written
/// when a current memory of that dimension already says exactly this (`None`); otherwise it
/// is added and supersedes the dimension's earlier memories (their history is kept).
pub fn replace_dimension_memory(
    conn: &Connection,
    config: &MemoryConfig,
    now: i64,
    input: &NewMemory,
) -> Result<Option<Memory>, MemoryError> {
    let current: Vec<(String, String)> = conn
        .prepare(
            "select id, content from semantic_memories
             where source_dimension = ?1 and source = ?2 and valid_to is null",
        )?
        .query_map(
            params![input.source_dimension.as_deref(), input.source.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .collect::<Result<_, _>>()?;
    if current.iter().any(|(_, c)| c == input.content.trim()) {
        return Ok(None);
    }
    let added = add_in_transaction(conn, config, now, std::slice::from_ref(input))?;
    let Some(new) = added.into_iter().next() else {
        return Ok(None);
    };
    for (old, _) in &current {
        rows::supersede(conn, old, &new.id, now)?;
    }
    Ok(Some(new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ListFilter, MemorySource, PersistentMemory};
    use std::sync::Arc;

    #[test]
    fn memories_written_in_a_rolled_back_transaction_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = alembic_store::open_project(dir.path()).unwrap();
        migrate(&mut conn).unwrap();
        let input = NewMemory::fact("The project layers modules bottom-up")
            .with_source(MemorySource::Bootstrap);
        let tx = conn.transaction().unwrap();
        add_in_transaction(
            &tx,
            &MemoryConfig::default(),
            1,
            std::slice::from_ref(&input),
        )
        .unwrap();
        drop(tx); // rollback
        let tx = conn.transaction().unwrap();
        let kept = add_in_transaction(&tx, &MemoryConfig::default(), 2, &[input]).unwrap();
        tx.commit().unwrap();
        let pm = PersistentMemory::open(
            alembic_store::open_project(dir.path()).unwrap(),
            MemoryConfig::default(),
            Arc::new(crate::SystemClock),
        )
        .unwrap();
        let all = pm.list(&ListFilter::default()).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].id, kept[0].id);
        assert_eq!(all[0].source, MemorySource::Bootstrap);
    }

    #[test]
    fn a_dimension_memory_is_replaced_only_when_it_changes() {
        let mut conn = alembic_store::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        let cfg = MemoryConfig::default();
        let mk = |text: &str| {
            let mut m = NewMemory::fact(text).with_source(MemorySource::Bootstrap);
            m.source_dimension = Some("architecture".into());
            m
        };
        let first = replace_dimension_memory(&conn, &cfg, 1, &mk("two layers")).unwrap();
        assert!(first.is_some());
        assert!(
            replace_dimension_memory(&conn, &cfg, 2, &mk("two layers"))
                .unwrap()
                .is_none()
        );
        let second = replace_dimension_memory(&conn, &cfg, 3, &mk("three layers"))
            .unwrap()
            .unwrap();
        let old = crate::rows::get(&conn, &first.unwrap().id)
            .unwrap()
            .unwrap();
        assert_eq!(old.superseded_by.as_deref(), Some(second.id.as_str()));
        assert_eq!(old.valid_to, Some(3));
    }
}
