//! The two files beside the database that the chain relies on: the key and the anchor.
//!
//! - `<db>-audit.key`: 32 random bytes, mode 0600. Records are HMAC-SHA256'd with it, so
//!   someone who can write the database but cannot read this file cannot recompute the chain.
//! - `<db>-audit.anchor`: the last sequence number and hash the writer committed, and the
//!   first keyed record. Deleting rows from the table (the last ones, or all) leaves the anchor
//!   pointing past the table's end.
//!
//! Both names match the `/*.db-*` line of `.alembic/.gitignore`, so neither is ever committed.
//! Each is written under a temporary name (created 0600, synced) and moved into place, so a
//! reader sees the old file or the new one, never half of one.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::AuditError;

/// Bytes of key material.
pub const KEY_BYTES: usize = 32;
const ANCHOR_FORMAT: &str = "alembic-audit-anchor-v1";

/// The per-project audit key, held as a keyed HMAC state that each record clones.
#[derive(Clone)]
pub struct AuditKey(pub(crate) hmac::Hmac<sha2::Sha256>);

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditKey(..)")
    }
}

/// What the anchor file records: the chain's end as last committed, and where keying began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    pub seq: i64,
    pub hash: String,
    /// The first record written under the key: every record from here on must be keyed.
    pub keyed_from: i64,
}

#[derive(Serialize, Deserialize)]
struct AnchorFile {
    format: String,
    #[serde(flatten)]
    anchor: Anchor,
}

/// Where the key and the anchor of the database at `db` live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainFiles {
    pub key: PathBuf,
    pub anchor: PathBuf,
}

impl ChainFiles {
    pub fn for_db(db: &Path) -> Self {
        let beside = |suffix: &str| {
            let mut name = db.as_os_str().to_os_string();
            name.push(suffix);
            PathBuf::from(name)
        };
        ChainFiles {
            key: beside("-audit.key"),
            anchor: beside("-audit.anchor"),
        }
    }

    /// The files of the database `conn` has open; an in-memory database has none.
    pub fn for_conn(conn: &alembic_store::rusqlite::Connection) -> Result<Self, AuditError> {
        match conn.path() {
            Some(p) if !p.is_empty() => Ok(Self::for_db(Path::new(p))),
            _ => Err(AuditError::NoDatabaseFile),
        }
    }
}

fn io_error(path: &Path, what: &str, source: std::io::Error) -> AuditError {
    AuditError::File {
        path: path.to_path_buf(),
        what: format!("{what}: {source}"),
    }
}

/// Reads a regular file (never through a link) of at most `max` bytes; `None` when missing.
fn read_regular(path: &Path, max: usize) -> Result<Option<Vec<u8>>, AuditError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, "cannot read", e)),
    };
    if !meta.file_type().is_file() {
        return Err(AuditError::File {
            path: path.to_path_buf(),
            what: "is not a regular file (a link or a directory); it must be a plain file".into(),
        });
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max as u64 + 1).read_to_end(&mut bytes))
        .map_err(|e| io_error(path, "cannot read", e))?;
    Ok(Some(bytes))
}

/// The key, if its file exists. A file that is not exactly [`KEY_BYTES`] bytes is an error.
pub fn read_key(path: &Path) -> Result<Option<AuditKey>, AuditError> {
    let Some(bytes) = read_regular(path, KEY_BYTES)? else {
        return Ok(None);
    };
    let bad = |what: String| AuditError::File {
        path: path.to_path_buf(),
        what,
    };
    if bytes.len() != KEY_BYTES {
        return Err(bad(format!(
            "holds {} bytes; an audit key is exactly {KEY_BYTES} random bytes",
            bytes.len()
        )));
    }
    let mac = <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(&bytes)
        .map_err(|e| bad(format!("is not a usable key: {e}")))?;
    Ok(Some(AuditKey(mac)))
}

/// The key, created (32 random bytes, 0600) when missing; a looser existing file is tightened
/// once, with a note. Two processes creating it at once end up with the same key.
pub fn load_or_create_key(path: &Path) -> Result<AuditKey, AuditError> {
    if let Some(key) = read_key(path)? {
        tighten(path)?;
        return Ok(key);
    }
    let mut key = [0u8; KEY_BYTES];
    getrandom::fill(&mut key).map_err(|e| AuditError::File {
        path: path.to_path_buf(),
        what: format!("cannot get random bytes for a new key: {e}"),
    })?;
    let tmp = write_temporary(path, &key)?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => sync_dir(path),
        // Another writer created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_error(path, "cannot create", e)),
    }
    read_key(path)?.ok_or_else(|| AuditError::File {
        path: path.to_path_buf(),
        what: "vanished right after it was created".into(),
    })
}

/// The anchor, if its file exists; a file that does not parse is an error naming the format.
pub fn read_anchor(path: &Path) -> Result<Option<Anchor>, AuditError> {
    let Some(bytes) = read_regular(path, 4096)? else {
        return Ok(None);
    };
    let file: AnchorFile = serde_json::from_slice(&bytes).map_err(|e| AuditError::File {
        path: path.to_path_buf(),
        what: format!(
            "is not an audit anchor ({e}); expected {{\"format\":\"{ANCHOR_FORMAT}\",\"seq\":N,\"hash\":\"..\",\"keyed_from\":N}}"
        ),
    })?;
    if file.format != ANCHOR_FORMAT {
        return Err(AuditError::File {
            path: path.to_path_buf(),
            what: format!(
                "has format {:?}; this version reads {ANCHOR_FORMAT:?}",
                file.format
            ),
        });
    }
    Ok(Some(file.anchor))
}

/// Replaces the anchor atomically (temporary file, fsync, rename, fsync of the directory).
pub fn write_anchor(path: &Path, anchor: &Anchor) -> Result<(), AuditError> {
    let file = AnchorFile {
        format: ANCHOR_FORMAT.into(),
        anchor: anchor.clone(),
    };
    let mut text = serde_json::to_vec(&file).map_err(|e| AuditError::File {
        path: path.to_path_buf(),
        what: format!("cannot encode: {e}"),
    })?;
    text.push(b'\n');
    let tmp = write_temporary(path, &text)?;
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(path, "cannot replace", e));
    }
    sync_dir(path);
    Ok(())
}

/// Writes `bytes` to a new 0600 file beside `path` and syncs it; returns its name.
fn write_temporary(path: &Path, bytes: &[u8]) -> Result<PathBuf, AuditError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(
        ".{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = path.with_file_name(name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(&tmp, "cannot write", e));
    }
    Ok(tmp)
}

/// Best effort: makes a rename or link durable. A failure here loses nothing already written.
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
}

#[cfg(unix)]
fn tighten(path: &Path) -> Result<(), AuditError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| io_error(path, "cannot read", e))?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 == 0 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io_error(path, "cannot tighten", e))?;
    tracing::warn!(
        "{} was readable by others (mode {mode:o}); anyone who read it can forge audit records, so it is now 600",
        path.display()
    );
    Ok(())
}

#[cfg(not(unix))]
fn tighten(_path: &Path) -> Result<(), AuditError> {
    Ok(())
}
