//! The database file: private modes, and refusing empty or foreign files (issue 36, hole 10).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use alembic_store::{StoreError, open, open_project, project_db_path};
use pretty_assertions::assert_eq;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn companions(db: &Path) -> Vec<std::path::PathBuf> {
    ["-wal", "-shm"]
        .iter()
        .map(|s| {
            let mut n = db.as_os_str().to_os_string();
            n.push(s);
            n.into()
        })
        .collect()
}

#[test]
fn a_new_database_and_its_wal_files_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let conn = open_project(dir.path()).unwrap();
    conn.execute_batch("create table t (x); insert into t values (1);")
        .unwrap();
    let db = project_db_path(dir.path());
    assert_eq!(mode(&db), 0o600);
    for c in companions(&db) {
        assert!(
            c.exists(),
            "{} exists while the connection is open",
            c.display()
        );
        assert_eq!(mode(&c), 0o600, "{}", c.display());
    }
    // no temporary file is left beside it
    let names: Vec<String> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert_eq!(names, Vec::<String>::new());
}

#[test]
fn an_existing_world_readable_database_is_tightened_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    {
        let conn = open(&db).unwrap();
        conn.execute_batch("create table t (x); insert into t values (7);")
            .unwrap();
    }
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let conn = open(&db).unwrap();
    assert_eq!(mode(&db), 0o600);
    for c in companions(&db) {
        assert_eq!(mode(&c), 0o600, "{}", c.display());
    }
    let x: i64 = conn.query_row("select x from t", [], |r| r.get(0)).unwrap();
    assert_eq!(x, 7);
}

fn assert_refused(contents: &[u8], what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = project_db_path(dir.path());
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::write(&db, contents).unwrap();
    for result in [open(&db).map(drop), open_project(dir.path()).map(drop)] {
        let err = result.unwrap_err();
        assert!(matches!(err, StoreError::NotADatabase { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains(&db.display().to_string()), "{text}");
        assert!(text.contains(what), "{text}");
        assert!(
            text.contains("move it aside or restore it from a backup"),
            "{text}"
        );
    }
    // never reset: the file is exactly as it was
    assert_eq!(std::fs::read(&db).unwrap(), contents);
}

#[test]
fn an_empty_database_file_is_refused_not_re_created() {
    assert_refused(b"", "is empty (0 bytes)");
}

#[test]
fn a_file_that_is_not_sqlite_is_refused() {
    assert_refused(b"hello, this is a text file\n", "is not an SQLite database");
    // a header cut short, and one that differs only in its last byte
    assert_refused(b"SQLite fo", "is not an SQLite database");
    assert_refused(b"SQLite format 3X and more", "is not an SQLite database");
}
