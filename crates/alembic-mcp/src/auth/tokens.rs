//! Bearer tokens of `alembic mcp --http`, stored in the project database (`mcp_tokens`).
//!
//! A token is 32 random bytes (`alm_` + 64 hex digits), shown once at creation. Only its
//! SHA-256 is stored. A slow password KDF (argon2, bcrypt) is not needed: it exists to make
//! guessing *low-entropy* secrets expensive, while a 256-bit random token cannot be guessed
//! or recovered from its hash at any hashing speed, and a fast hash keeps the check cheap on
//! every request. Verification compares the presented token's hash against every stored hash
//! in constant time (`subtle`), without stopping at a match, and reads the table on every
//! request, so a revocation from another process (`alembic mcp token revoke`) takes effect on
//! the next request.

use std::path::Path;
use std::sync::{Arc, Mutex};

use alembic_base::{Clock, DAY_MS, SystemClock, lock};
use alembic_store::rusqlite::{self, Connection, OptionalExtension, params};
use alembic_store::{Migration, StoreError};
use serde::Serialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const COMPONENT: &str = "mcp_tokens";
const MIGRATIONS: [Migration; 1] = [Migration {
    version: 1,
    sql: "create table mcp_tokens (
        name text primary key,
        hash blob not null,
        preset text not null,
        created_ms integer not null,
        expires_ms integer,
        revoked_ms integer
    )",
}];

/// What every token starts with, so a leaked one is recognisable (secret scanners, logs).
pub const TOKEN_PREFIX: &str = "alm_";
const MAX_NAME: usize = 64;

/// Why a token operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot open the token table: {0}")]
    Store(#[from] StoreError),
    #[error("token table: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(
        "invalid token name {name:?}: expected 1..=64 characters of a-z, A-Z, 0-9, '.', '_' or '-', starting with a letter or digit"
    )]
    BadName { name: String },
    #[error(
        "a token named {name:?} is active; revoke it first (alembic mcp token revoke {name}) or choose another name"
    )]
    Exists { name: String },
    #[error("no token named {name:?} (alembic mcp token list shows them)")]
    Unknown { name: String },
    #[error("token {name:?} is already revoked")]
    AlreadyRevoked { name: String },
    #[error("invalid --expires {days}: expected whole days 1..=3650")]
    BadExpiry { days: u32 },
    #[error("cannot generate a random token: {0}")]
    Random(String),
}

/// A stored token, without its secret.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    pub name: String,
    pub preset: String,
    pub created_ms: i64,
    pub expires_ms: Option<i64>,
    pub revoked_ms: Option<i64>,
}

impl TokenInfo {
    /// `active`, `expired` or `revoked` at `now_ms`.
    pub fn state(&self, now_ms: i64) -> &'static str {
        if self.revoked_ms.is_some() {
            "revoked"
        } else if self.expires_ms.is_some_and(|e| e <= now_ms) {
            "expired"
        } else {
            "active"
        }
    }
}

/// A freshly created token: the secret is shown once and never stored.
#[derive(Debug)]
pub struct NewToken {
    pub secret: String,
    pub info: TokenInfo,
}

/// Why a presented token was not accepted (the 401's `error_description`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefusal {
    #[error("unknown token")]
    Unknown,
    #[error("token {name:?} has expired")]
    Expired { name: String },
    #[error("token {name:?} has been revoked")]
    Revoked { name: String },
}

/// The project's MCP tokens.
pub struct TokenStore {
    conn: Mutex<Connection>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenStore").finish_non_exhaustive()
    }
}

fn hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

fn check_name(name: &str) -> Result<(), TokenError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(TokenError::BadName {
            name: name.to_string(),
        })
    }
}

impl TokenStore {
    /// Opens the token table in the project database (creating it when needed).
    pub fn open_project(root: &Path) -> Result<Self, TokenError> {
        Self::with_connection(alembic_store::open_project(root)?, Arc::new(SystemClock))
    }

    /// A store over any connection and clock (tests use an in-memory database and a manual clock).
    pub fn with_connection(
        mut conn: Connection,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, TokenError> {
        alembic_store::migrate(&mut conn, COMPONENT, &MIGRATIONS)?;
        Ok(TokenStore {
            conn: Mutex::new(conn),
            clock,
        })
    }

    /// Creates a token for `preset` (the caller checks that the preset exists), valid for
    /// `expires_days` days or without end. A revoked or expired token of that name is replaced.
    pub fn create(
        &self,
        name: &str,
        preset: &str,
        expires_days: Option<u32>,
    ) -> Result<NewToken, TokenError> {
        check_name(name)?;
        if let Some(days) = expires_days.filter(|d| !(1..=3650).contains(d)) {
            return Err(TokenError::BadExpiry { days });
        }
        let now = self.clock.now_ms();
        if let Some(old) = self.get(name)?
            && old.state(now) == "active"
        {
            return Err(TokenError::Exists {
                name: name.to_string(),
            });
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let secret = format!("{TOKEN_PREFIX}{}", hex::encode(bytes));
        let info = TokenInfo {
            name: name.to_string(),
            preset: preset.to_string(),
            created_ms: now,
            expires_ms: expires_days.map(|d| now + i64::from(d) * DAY_MS),
            revoked_ms: None,
        };
        lock(&self.conn).execute(
            "insert or replace into mcp_tokens (name, hash, preset, created_ms, expires_ms, revoked_ms)
             values (?1, ?2, ?3, ?4, ?5, null)",
            params![info.name, &hash(&secret)[..], info.preset, info.created_ms, info.expires_ms],
        )?;
        Ok(NewToken { secret, info })
    }

    fn get(&self, name: &str) -> Result<Option<TokenInfo>, TokenError> {
        let conn = lock(&self.conn);
        let row = conn
            .query_row(
                "select name, preset, created_ms, expires_ms, revoked_ms from mcp_tokens where name = ?1",
                [name],
                info_from_row,
            )
            .optional()?;
        Ok(row)
    }

    /// Every token, oldest first.
    pub fn list(&self) -> Result<Vec<TokenInfo>, TokenError> {
        let conn = lock(&self.conn);
        let mut stmt = conn.prepare(
            "select name, preset, created_ms, expires_ms, revoked_ms from mcp_tokens order by created_ms, name",
        )?;
        let rows = stmt.query_map([], info_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Revokes `name`; the next request with it is refused.
    pub fn revoke(&self, name: &str) -> Result<TokenInfo, TokenError> {
        let Some(mut info) = self.get(name)? else {
            return Err(TokenError::Unknown {
                name: name.to_string(),
            });
        };
        if info.revoked_ms.is_some() {
            return Err(TokenError::AlreadyRevoked {
                name: name.to_string(),
            });
        }
        let now = self.clock.now_ms();
        lock(&self.conn).execute(
            "update mcp_tokens set revoked_ms = ?2 where name = ?1",
            params![name, now],
        )?;
        info.revoked_ms = Some(now);
        Ok(info)
    }

    /// Whether any token could be accepted now (the server refuses a network address otherwise).
    pub fn has_active(&self) -> Result<bool, TokenError> {
        let now = self.clock.now_ms();
        Ok(self.list()?.iter().any(|t| t.state(now) == "active"))
    }

    /// The token `presented` belongs to, if it is active. Every stored hash is compared in
    /// constant time, whatever matches.
    pub fn verify(&self, presented: &str) -> Result<Result<TokenInfo, TokenRefusal>, TokenError> {
        let wanted = hash(presented);
        let rows = {
            let conn = lock(&self.conn);
            let mut stmt = conn.prepare(
                "select name, preset, created_ms, expires_ms, revoked_ms, hash from mcp_tokens",
            )?;
            let rows = stmt.query_map([], |r| Ok((info_from_row(r)?, r.get::<_, Vec<u8>>(5)?)))?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        let mut found = None;
        for (info, stored) in rows {
            if bool::from(stored.as_slice().ct_eq(&wanted[..])) {
                found = Some(info);
            }
        }
        let now = self.clock.now_ms();
        Ok(match found {
            None => Err(TokenRefusal::Unknown),
            Some(info) => match info.state(now) {
                "revoked" => Err(TokenRefusal::Revoked { name: info.name }),
                "expired" => Err(TokenRefusal::Expired { name: info.name }),
                _ => Ok(info),
            },
        })
    }
}

fn info_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TokenInfo> {
    Ok(TokenInfo {
        name: r.get(0)?,
        preset: r.get(1)?,
        created_ms: r.get(2)?,
        expires_ms: r.get(3)?,
        revoked_ms: r.get(4)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alembic_base::ManualClock;
    use pretty_assertions::assert_eq;

    fn store() -> (TokenStore, ManualClock) {
        let clock = ManualClock::new(1_000_000);
        let conn = alembic_store::open_in_memory().unwrap();
        (
            TokenStore::with_connection(conn, Arc::new(clock.clone())).unwrap(),
            clock,
        )
    }

    #[test]
    fn a_token_is_shown_once_and_only_its_hash_is_stored() {
        let (store, _) = store();
        let t = store.create("alice", "ide", None).unwrap();
        assert!(t.secret.starts_with(TOKEN_PREFIX));
        assert_eq!(t.secret.len(), TOKEN_PREFIX.len() + 64);
        let stored: Vec<u8> = lock(&store.conn)
            .query_row("select hash from mcp_tokens", [], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, hash(&t.secret).to_vec());
        let all: String = lock(&store.conn)
            .query_row(
                "select name || preset || created_ms || hash from mcp_tokens",
                [],
                |r| r.get(0),
            )
            .unwrap_or_default();
        assert!(!all.contains(&t.secret[TOKEN_PREFIX.len()..]));
        assert_eq!(store.verify(&t.secret).unwrap(), Ok(t.info.clone()));
        assert_eq!(store.verify("alm_00").unwrap(), Err(TokenRefusal::Unknown));
        let other = store.create("bob", "chat", None).unwrap();
        assert_ne!(other.secret, t.secret);
        assert_eq!(store.verify(&other.secret).unwrap().unwrap().preset, "chat");
    }

    #[test]
    fn revocation_and_expiry_refuse_the_next_check() {
        let (store, clock) = store();
        let t = store.create("ci", "ide", Some(2)).unwrap();
        assert!(store.verify(&t.secret).unwrap().is_ok());
        clock.advance_days(2.0);
        assert_eq!(
            store.verify(&t.secret).unwrap(),
            Err(TokenRefusal::Expired { name: "ci".into() })
        );
        assert!(!store.has_active().unwrap());
        // An expired name may be reused; the old secret stays dead.
        let t2 = store.create("ci", "ide", None).unwrap();
        assert_eq!(store.verify(&t.secret).unwrap(), Err(TokenRefusal::Unknown));
        store.revoke("ci").unwrap();
        assert_eq!(
            store.verify(&t2.secret).unwrap(),
            Err(TokenRefusal::Revoked { name: "ci".into() })
        );
        assert_eq!(store.list().unwrap()[0].state(clock.now_ms()), "revoked");
    }

    #[test]
    fn bad_names_duplicates_and_unknown_names_are_refused_with_the_way_out() {
        let (store, _) = store();
        for bad in ["", "../x", "a b", "-x", &"n".repeat(65), "名前"] {
            assert!(
                matches!(
                    store.create(bad, "ide", None),
                    Err(TokenError::BadName { .. })
                ),
                "{bad}"
            );
        }
        store.create("alice", "ide", None).unwrap();
        assert_eq!(
            store.create("alice", "ide", None).unwrap_err().to_string(),
            "a token named \"alice\" is active; revoke it first (alembic mcp token revoke alice) or choose another name"
        );
        assert_eq!(
            store.revoke("nobody").unwrap_err().to_string(),
            "no token named \"nobody\" (alembic mcp token list shows them)"
        );
        assert_eq!(
            store.create("x", "ide", Some(0)).unwrap_err().to_string(),
            "invalid --expires 0: expected whole days 1..=3650"
        );
        store.revoke("alice").unwrap();
        assert!(matches!(
            store.revoke("alice"),
            Err(TokenError::AlreadyRevoked { .. })
        ));
    }
}
