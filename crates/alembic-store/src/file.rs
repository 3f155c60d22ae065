//! The database file before SQLite sees it: private permissions, and a refusal to treat an
//! empty or foreign file as a database.
//!
//! SQLite turns a 0-byte file into a fresh, empty database without a word. A project database
//! truncated by accident (a full disk, a bad copy) or on purpose (to wipe the audit log) would
//! then be re-created and its audit chain would restart at record 1 "intact". So an existing
//! file must carry the SQLite header, and a new database is built under a temporary name and
//! linked into place only once its header is written: a file at the real path is never empty
//! because of us, and never replaced.
//!
//! The database holds memories, sessions and audit arguments, so it is created 0600 (SQLite
//! gives its `-wal` and `-shm` files the database's mode); an existing looser file and its
//! companions are tightened once, with a note.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::StoreError;

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// What a database file must be before it is opened.
pub(crate) enum Existing {
    /// No file at the path: the caller creates one.
    Missing,
    /// A file with the SQLite header.
    Database,
}

/// Checks an existing database file: its header, and its mode (tightened to 0600).
pub(crate) fn check_existing(path: &Path) -> Result<Existing, StoreError> {
    // A repository can ship `.alembic/alembic.db` or its `-wal`/`-shm`/`-journal` companions
    // as links: SQLite would follow them and write (or truncate) whatever they point to.
    for companion in std::iter::once(path.to_path_buf()).chain(companions(path)) {
        refuse_link(&companion)?;
    }
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Missing),
        Err(source) => return Err(read_error(path, source)),
    };
    let mut head = [0u8; 16];
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(source) => return Err(read_error(path, source)),
        }
    }
    if read == 0 {
        return Err(not_a_database(path, "is empty (0 bytes)"));
    }
    if &head[..read] != SQLITE_HEADER.as_slice() {
        return Err(not_a_database(path, "is not an SQLite database"));
    }
    tighten(path)?;
    Ok(Existing::Database)
}

fn read_error(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn not_a_database(path: &Path, what: &str) -> StoreError {
    StoreError::NotADatabase {
        path: path.to_path_buf(),
        what: what.to_string(),
    }
}

/// The temporary name a new database is built under, beside the real one.
pub(crate) fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}-{}.tmp", std::process::id(), unique()));
    path.with_file_name(name)
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Creates an empty file readable by its owner only (the temporary database).
pub(crate) fn create_private(path: &Path) -> Result<(), StoreError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .map(drop)
        .map_err(|source| read_error(path, source))
}

/// Links the finished temporary database to `path` unless a file got there first (another
/// process creating the same database); the temporary name is removed either way.
pub(crate) fn link_into_place(tmp: &Path, path: &Path) -> Result<(), StoreError> {
    let linked = std::fs::hard_link(tmp, path);
    let _ = std::fs::remove_file(tmp);
    match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(read_error(path, source)),
    }
}

/// Makes the database and its `-wal`/`-shm`/`-journal` files 0600 where they are looser.
pub(crate) fn tighten(path: &Path) -> Result<(), StoreError> {
    for file in std::iter::once(path.to_path_buf()).chain(companions(path)) {
        refuse_link(&file)?;
        tighten_one(&file)?;
    }
    Ok(())
}

/// The files SQLite keeps beside a database: WAL, shared memory, rollback journal.
fn companions(path: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    ["-wal", "-shm", "-journal"].into_iter().map(move |suffix| {
        let mut name = path.as_os_str().to_os_string();
        name.push(suffix);
        PathBuf::from(name)
    })
}

#[cfg(unix)]
fn tighten_one(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::PermissionsExt;
    // Not following links: a link was refused above, and chmod must never reach its target.
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(read_error(path, source)),
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 == 0 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))
        .map_err(|source| read_error(path, source))?;
    tracing::info!(
        "{} was readable by others (mode {mode:o}); it holds project memory and audit records, so it is now {:o}",
        path.display(),
        mode & 0o700
    );
    Ok(())
}

#[cfg(not(unix))]
fn tighten_one(_path: &Path) -> Result<(), StoreError> {
    Ok(())
}

/// Refuses a symbolic link at `path` (a missing path is fine).
pub(crate) fn refuse_link(path: &Path) -> Result<(), StoreError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(StoreError::Link {
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}
