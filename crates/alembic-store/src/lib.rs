//! Storage for Alembic: one SQLite database per project (`<root>/.alembic/alembic.db`).
//!
//! Every component that keeps state (audit log, persistent memory, code index, sessions)
//! opens its own [`rusqlite::Connection`] through [`open`] and brings its schema up to date
//! with [`migrate`]. Migrations are versioned per component, so components evolve their
//! tables independently and a database written by an older build is upgraded in place.
//! A full-text index over a table and its triggers come from one place, [`fts5_index_sql!`].
//!
//! ```
//! use alembic_store::{Migration, migrate, open_in_memory};
//! let mut conn = open_in_memory().unwrap();
//! let steps = [Migration { version: 1, sql: "create table t (x integer)" }];
//! migrate(&mut conn, "example", &steps).unwrap();
//! assert_eq!(alembic_store::schema_version(&conn, "example").unwrap(), 1);
//! ```

mod file;
mod fts;
pub mod layout;

pub use fts::{ReindexReport, rebuild_fts5};

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

pub use rusqlite;

/// Folder under the project root that holds everything Alembic stores for a project.
pub const STATE_DIR: &str = ".alembic";
/// File name of the project database inside [`STATE_DIR`].
pub const DB_FILE: &str = "alembic.db";

/// How long a writer waits for a competing writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors from opening or migrating a database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create state directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is a symbolic link; alembic keeps its state only in real files inside the project, so it will not follow it: remove the link (or replace it with what it points to) and run the command again"
    )]
    Link { path: PathBuf },
    #[error(
        "{path} is not a directory; alembic keeps its state in a directory there: move the file aside and run the command again"
    )]
    NotADirectory { path: PathBuf },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "{path} {what}; alembic will not replace it with a new database: move it aside or restore it from a backup, then run the command again"
    )]
    NotADatabase { path: PathBuf, what: String },
    #[error("migration {component} v{version} failed: {source}")]
    Migration {
        component: String,
        version: u32,
        source: rusqlite::Error,
    },
    #[error(
        "database schema for {component} is at v{found}, newer than this build knows (v{known}); upgrade alembic"
    )]
    TooNew {
        component: String,
        found: u32,
        known: u32,
    },
    #[error("migrations for {component} must have strictly increasing versions starting at 1")]
    BadMigrationList { component: String },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// One schema step of one component. Versions start at 1 and increase by one.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub version: u32,
    pub sql: &'static str,
}

/// Environment variable that moves a project's local state (the database: knowledge,
/// memories, code index, audit log) out of the checkout, for a read-only one. Each project
/// gets its own directory beneath it ([`external_state_dir`]); config, skills, saved tools
/// and guard rules are still read from `<root>/.alembic/`.
pub const STATE_DIR_ENV: &str = "ALEMBIC_STATE_DIR";

/// The directory beneath `base` that holds the local state of the project at `root`: the
/// root's folder name and a hash of its absolute path, so that two checkouts never share a
/// database and the name still says whose it is.
pub fn external_state_dir(base: &Path, root: &Path) -> PathBuf {
    use sha2::Digest as _;
    let absolute = root
        .canonicalize()
        .or_else(|_| std::path::absolute(root))
        .unwrap_or_else(|_| root.to_path_buf());
    let digest = sha2::Sha256::digest(absolute.as_os_str().as_encoded_bytes());
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let name: String = absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    base.join(format!("{name}-{hash}"))
}

/// `$ALEMBIC_STATE_DIR` when set to a non-empty value.
pub fn state_dir_override() -> Option<PathBuf> {
    std::env::var_os(STATE_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The directory of the project's database: `<root>/.alembic`, or beneath
/// `$ALEMBIC_STATE_DIR` when that is set ([`external_state_dir`]).
pub fn local_state_dir(root: &Path) -> PathBuf {
    match state_dir_override() {
        Some(base) => external_state_dir(&base, root),
        None => root.join(STATE_DIR),
    }
}

/// Path of the project database for a project root (see [`local_state_dir`]).
pub fn project_db_path(root: &Path) -> PathBuf {
    local_state_dir(root).join(DB_FILE)
}

/// Opens (creating if needed) the project database of `root`, creating `.alembic/`, or the
/// project's directory beneath `$ALEMBIC_STATE_DIR` (nothing is then written in the root).
pub fn open_project(root: &Path) -> Result<Connection, StoreError> {
    let dir = match state_dir_override() {
        Some(base) => {
            let dir = external_state_dir(&base, root);
            std::fs::create_dir_all(&dir).map_err(|source| StoreError::CreateDir {
                path: dir.clone(),
                source,
            })?;
            dir
        }
        None => layout::state_dir(root)?,
    };
    open(&dir.join(DB_FILE))
}

/// Opens a database file in WAL mode with a busy timeout, so several processes can share it.
///
/// An existing file must be an SQLite database: an empty or foreign file is refused
/// ([`StoreError::NotADatabase`]), never silently replaced. A new database is created 0600
/// (see `file.rs`), and a looser existing one is tightened.
pub fn open(path: &Path) -> Result<Connection, StoreError> {
    let is_uri = path
        .to_str()
        .is_some_and(|p| p.starts_with("file:") || p == ":memory:");
    if !is_uri && matches!(file::check_existing(path)?, file::Existing::Missing) {
        create_database(path)?;
        file::check_existing(path)?;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).map_err(|source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    configure(&conn).map_err(|source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    if !is_uri {
        // The -wal and -shm files that configure just created or found.
        file::tighten(path)?;
    }
    Ok(conn)
}

/// Builds a new database under a temporary name, with its header written, and links it to
/// `path`: a reader never finds an empty file there that we made.
fn create_database(path: &Path) -> Result<(), StoreError> {
    let tmp = file::temporary_path(path);
    file::create_private(&tmp)?;
    let built = Connection::open(&tmp).and_then(|conn| {
        ensure_migration_table(&conn)?;
        conn.close().map_err(|(_, e)| e)
    });
    if let Err(source) = built {
        let _ = std::fs::remove_file(&tmp);
        return Err(StoreError::Open {
            path: path.to_path_buf(),
            source,
        });
    }
    file::link_into_place(&tmp, path)
}

/// An in-memory database with the same settings, for tests and ephemeral sessions.
pub fn open_in_memory() -> Result<Connection, StoreError> {
    let conn = Connection::open_in_memory().map_err(|source| StoreError::Open {
        path: PathBuf::from(":memory:"),
        source,
    })?;
    configure(&conn).map_err(|source| StoreError::Open {
        path: PathBuf::from(":memory:"),
        source,
    })?;
    Ok(conn)
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // journal_mode returns a row, so it cannot go through execute_batch on every build.
    let _mode: String = conn.query_row("pragma journal_mode = wal", [], |r| r.get(0))?;
    conn.execute_batch(
        "pragma synchronous = normal;
         pragma foreign_keys = on;",
    )?;
    Ok(())
}

fn ensure_migration_table(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "create table if not exists schema_migrations (
             component text not null,
             version integer not null,
             applied_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
             primary key (component, version)
         )",
    )
}

/// Current schema version of a component (0 when it has never been migrated).
pub fn schema_version(conn: &Connection, component: &str) -> Result<u32, StoreError> {
    ensure_migration_table(conn)?;
    let v: Option<u32> = conn
        .query_row(
            "select max(version) from schema_migrations where component = ?1",
            params![component],
            |r| r.get(0),
        )
        .optional()?
        .flatten();
    Ok(v.unwrap_or(0))
}

/// Applies the migrations of `component` that the database has not seen yet.
///
/// Each step runs in its own immediate transaction together with its bookkeeping row, so a
/// crash leaves the schema at a whole version, and two processes migrating at once serialise.
pub fn migrate(
    conn: &mut Connection,
    component: &str,
    migrations: &[Migration],
) -> Result<(), StoreError> {
    let ordered = migrations
        .iter()
        .enumerate()
        .all(|(i, m)| m.version as usize == i + 1);
    if !ordered {
        return Err(StoreError::BadMigrationList {
            component: component.to_string(),
        });
    }
    ensure_migration_table(conn)?;
    let known = migrations.len() as u32;
    for m in migrations {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let current = schema_version(&tx, component)?;
        if current > known {
            return Err(StoreError::TooNew {
                component: component.to_string(),
                found: current,
                known,
            });
        }
        if m.version <= current {
            continue;
        }
        let wrap = |source| StoreError::Migration {
            component: component.to_string(),
            version: m.version,
            source,
        };
        tx.execute_batch(m.sql).map_err(wrap)?;
        tx.execute(
            "insert into schema_migrations (component, version) values (?1, ?2)",
            params![component, m.version],
        )
        .map_err(wrap)?;
        tx.commit()?;
    }
    let current = schema_version(conn, component)?;
    if current > known {
        return Err(StoreError::TooNew {
            component: component.to_string(),
            found: current,
            known,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn each_checkout_gets_its_own_external_state_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("x/app"), dir.path().join("y/app"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let base = Path::new("/state");
        let (sa, sb) = (external_state_dir(base, &a), external_state_dir(base, &b));
        assert_ne!(sa, sb, "two checkouts named app share a state directory");
        assert_eq!(sa.parent(), Some(base));
        let name = sa.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("app-") && name.len() == "app-".len() + 16,
            "{name}"
        );
        // The same checkout through a relative path or a link maps to the same directory.
        std::os::unix::fs::symlink(&a, dir.path().join("link")).unwrap();
        assert_eq!(external_state_dir(base, &dir.path().join("link")), sa);
        assert_eq!(external_state_dir(base, &a.join("../app")), sa);
        // A hostile folder name stays one path component.
        let odd = dir.path().join("a b;..");
        std::fs::create_dir_all(&odd).unwrap();
        let so = external_state_dir(base, &odd);
        assert_eq!(so.parent(), Some(base));
        assert!(
            so.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("a_b___-")
        );
    }

    const STEPS: [Migration; 2] = [
        Migration {
            version: 1,
            sql: "create table a (x integer)",
        },
        Migration {
            version: 2,
            sql: "alter table a add column y text",
        },
    ];

    #[test]
    fn migrations_apply_once_and_in_order() {
        let mut conn = open_in_memory().unwrap();
        migrate(&mut conn, "c", &STEPS[..1]).unwrap();
        assert_eq!(schema_version(&conn, "c").unwrap(), 1);
        migrate(&mut conn, "c", &STEPS).unwrap();
        migrate(&mut conn, "c", &STEPS).unwrap();
        assert_eq!(schema_version(&conn, "c").unwrap(), 2);
        conn.execute("insert into a (x, y) values (1, 'z')", [])
            .unwrap();
    }

    #[test]
    fn a_failing_step_leaves_the_previous_version() {
        let mut conn = open_in_memory().unwrap();
        let bad = [
            STEPS[0],
            Migration {
                version: 2,
                sql: "alter table a add column y text; this is not sql",
            },
        ];
        let err = migrate(&mut conn, "c", &bad).unwrap_err();
        assert!(
            matches!(err, StoreError::Migration { version: 2, .. }),
            "{err}"
        );
        assert_eq!(schema_version(&conn, "c").unwrap(), 1);
        // the half of step 2 that did run was rolled back
        assert!(
            conn.execute("insert into a (x, y) values (1, 'z')", [])
                .is_err()
        );
    }

    #[test]
    fn a_newer_database_is_refused() {
        let mut conn = open_in_memory().unwrap();
        migrate(&mut conn, "c", &STEPS).unwrap();
        let err = migrate(&mut conn, "c", &STEPS[..1]).unwrap_err();
        assert!(matches!(
            err,
            StoreError::TooNew {
                found: 2,
                known: 1,
                ..
            }
        ));
    }

    #[test]
    fn gaps_in_versions_are_refused() {
        let mut conn = open_in_memory().unwrap();
        let err = migrate(&mut conn, "c", &STEPS[1..]).unwrap_err();
        assert!(matches!(err, StoreError::BadMigrationList { .. }));
    }

    #[test]
    fn project_database_is_created_under_the_state_dir() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open_project(dir.path()).unwrap();
        let mode: String = conn
            .query_row("pragma journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        assert!(project_db_path(dir.path()).exists());
    }
}
