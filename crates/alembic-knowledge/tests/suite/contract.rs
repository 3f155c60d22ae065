//! The backend contract (`alembic_knowledge::contract`) on SQLite; alembic-team runs the
//! same checks on PostgreSQL.

use alembic_knowledge::contract::CHECKS;
use alembic_knowledge::{KnowledgeBackend, KnowledgeStore};

fn open() -> Box<dyn KnowledgeBackend> {
    Box::new(KnowledgeStore::open_in_memory().unwrap())
}

#[test]
fn sqlite_meets_the_knowledge_contract() {
    for (name, check) in CHECKS {
        eprintln!("{name}");
        check(&open);
    }
}

#[test]
fn old_rows_keep_the_version_bootstrap_kept_in_extra() {
    use alembic_knowledge::{NewEntry, Status};
    let dir = tempfile::tempdir().unwrap();
    let conn = alembic_store::open_project(dir.path()).unwrap();
    // a database at knowledge schema 1, with a revised bootstrap candidate
    let mut conn = conn;
    alembic_store::migrate(
        &mut conn,
        "knowledge",
        &alembic_knowledge::schema::MIGRATIONS[..1],
    )
    .unwrap();
    conn.execute(
        "insert into knowledge_entries (id, title, title_norm, kind, extra, status, created_by, \
         created_at, updated_at, search_text) values ('k-old', 'Old', 'old', 'fact', \
         '{\"version\": 3}', 'submitted', 'bootstrap', 0, 0, 'old')",
        [],
    )
    .unwrap();
    drop(conn);
    let mut kb = KnowledgeStore::open_project(dir.path()).unwrap();
    assert_eq!(kb.get("k-old").unwrap().version, 3);
    let fresh = kb
        .create(
            &NewEntry {
                title: "New".into(),
                ..NewEntry::default()
            },
            Status::Draft,
            "a",
            None,
        )
        .unwrap();
    assert_eq!(fresh.version, 1);
}
