//! Checkpoints of a session in the project database, so an interrupted bootstrap resumes.
//!
//! The whole session state (reports with all findings and evidence, cross-references,
//! reflections) is stored as one JSON document per session id. The reference cut analysis
//! texts to 500 characters and dropped evidence, so resumed dimensions lost their evidence.

use alembic_store::rusqlite::{Connection, OptionalExtension, params};
use alembic_store::{Migration, StoreError, migrate};

use super::{SessionState, SessionStore};

/// Component name in `schema_migrations`.
const COMPONENT: &str = "context_session";

/// Schema of the checkpoint table.
pub const CHECKPOINT_MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    sql: "create table session_checkpoints (
              session_id text primary key,
              saved_at_ms integer not null,
              body text not null
          )",
}];

/// Errors of checkpointing.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot access checkpoint of session {session_id}: {source}")]
    Sqlite {
        session_id: String,
        source: alembic_store::rusqlite::Error,
    },
    #[error("checkpoint of session {session_id} is not valid session JSON: {source}")]
    Corrupt {
        session_id: String,
        source: serde_json::Error,
    },
}

impl SessionStore {
    /// Saves the session as `session_id` (replacing an older checkpoint).
    pub fn save_checkpoint(
        &self,
        conn: &mut Connection,
        session_id: &str,
        now_ms: u64,
    ) -> Result<(), SessionError> {
        migrate(conn, COMPONENT, CHECKPOINT_MIGRATIONS)?;
        let body = serde_json::to_string(&self.state).map_err(|source| SessionError::Corrupt {
            session_id: session_id.to_string(),
            source,
        })?;
        conn.execute(
            "insert into session_checkpoints (session_id, saved_at_ms, body) values (?1, ?2, ?3)
             on conflict(session_id) do update set saved_at_ms = excluded.saved_at_ms, body = excluded.body",
            params![session_id, now_ms as i64, body],
        )
        .map_err(|source| SessionError::Sqlite {
            session_id: session_id.to_string(),
            source,
        })?;
        Ok(())
    }

    /// Loads the checkpoint of `session_id` if it is younger than `max_age_ms` at `now_ms`.
    pub fn load_checkpoint(
        conn: &mut Connection,
        session_id: &str,
        now_ms: u64,
        max_age_ms: u64,
    ) -> Result<Option<SessionStore>, SessionError> {
        migrate(conn, COMPONENT, CHECKPOINT_MIGRATIONS)?;
        let sql_err = |source| SessionError::Sqlite {
            session_id: session_id.to_string(),
            source,
        };
        let row: Option<(i64, String)> = conn
            .query_row(
                "select saved_at_ms, body from session_checkpoints where session_id = ?1",
                params![session_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(sql_err)?;
        let Some((saved_at, body)) = row else {
            return Ok(None);
        };
        if now_ms.saturating_sub(u64::try_from(saved_at).unwrap_or(0)) > max_age_ms {
            return Ok(None);
        }
        let state: SessionState =
            serde_json::from_str(&body).map_err(|source| SessionError::Corrupt {
                session_id: session_id.to_string(),
                source,
            })?;
        Ok(Some(SessionStore {
            state,
            ..SessionStore::default()
        }))
    }

    /// Deletes the checkpoint of `session_id` (after the bootstrap finished).
    pub fn delete_checkpoint(conn: &mut Connection, session_id: &str) -> Result<(), SessionError> {
        migrate(conn, COMPONENT, CHECKPOINT_MIGRATIONS)?;
        conn.execute(
            "delete from session_checkpoints where session_id = ?1",
            params![session_id],
        )
        .map_err(|source| SessionError::Sqlite {
            session_id: session_id.to_string(),
            source,
        })?;
        Ok(())
    }
}
