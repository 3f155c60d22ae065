//! Links in `.alembic/`: a repository can ship them, and the store must neither follow them
//! to create, open, chmod or overwrite files elsewhere (issue 36, must-show 4).

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use alembic_store::layout::{GitignoreChange, ensure_gitignore, state_dir};
use alembic_store::{StoreError, open_project};
use pretty_assertions::assert_eq;

/// A project `p` beside an outside directory `o` holding a file that must stay as it is.
fn project() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    let outside = dir.path().join("o");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("keep"), "outside\n").unwrap();
    std::fs::set_permissions(outside.join("keep"), std::fs::Permissions::from_mode(0o644)).unwrap();
    (dir, root, outside)
}

fn listing(dir: &Path) -> Vec<(String, String, u32)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, text, meta.permissions().mode() & 0o777)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_linked_state_directory_is_refused_and_nothing_is_created_through_it() {
    let (_dir, root, outside) = project();
    symlink(&outside, root.join(".alembic")).unwrap();
    let before = listing(&outside);
    let err = open_project(&root).unwrap_err();
    assert!(matches!(err, StoreError::Link { .. }), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(matches!(state_dir(&root), Err(StoreError::Link { .. })));
    assert!(matches!(
        ensure_gitignore(&root),
        Err(StoreError::Link { .. })
    ));
    assert_eq!(listing(&outside), before, "nothing was created outside");
}

#[test]
fn a_state_path_that_is_a_file_is_refused() {
    let (_dir, root, _) = project();
    std::fs::write(root.join(".alembic"), "x").unwrap();
    let err = open_project(&root).unwrap_err();
    assert!(matches!(err, StoreError::NotADirectory { .. }), "{err}");
}

#[test]
fn a_linked_database_or_companion_file_is_refused_and_its_target_untouched() {
    for name in [
        "alembic.db",
        "alembic.db-wal",
        "alembic.db-shm",
        "alembic.db-journal",
    ] {
        let (_dir, root, outside) = project();
        std::fs::create_dir(root.join(".alembic")).unwrap();
        if name != "alembic.db" {
            // a real database first, so only the companion is foreign
            drop(open_project(&root).unwrap());
            let _ = std::fs::remove_file(root.join(".alembic").join(name));
        }
        symlink(outside.join("keep"), root.join(".alembic").join(name)).unwrap();
        let before = listing(&outside);
        let err = open_project(&root).unwrap_err();
        assert!(matches!(err, StoreError::Link { .. }), "{name}: {err}");
        assert_eq!(
            listing(&outside),
            before,
            "{name}: the link's target changed"
        );
    }
}

#[test]
fn a_linked_gitignore_is_neither_read_nor_written_through() {
    let (_dir, root, outside) = project();
    std::fs::create_dir(root.join(".alembic")).unwrap();
    // The legacy content would be replaced if it were a plain file.
    std::fs::write(outside.join("keep"), "*\n").unwrap();
    symlink(outside.join("keep"), root.join(".alembic/.gitignore")).unwrap();
    assert_eq!(ensure_gitignore(&root).unwrap(), GitignoreChange::Kept);
    assert_eq!(
        std::fs::read_to_string(outside.join("keep")).unwrap(),
        "*\n"
    );
    // A plain legacy file is still upgraded, by a rename that leaves no temporary file.
    std::fs::remove_file(root.join(".alembic/.gitignore")).unwrap();
    std::fs::write(root.join(".alembic/.gitignore"), "*\n").unwrap();
    assert_eq!(ensure_gitignore(&root).unwrap(), GitignoreChange::Upgraded);
    let names: Vec<_> = listing(&root.join(".alembic"))
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(names, vec![".gitignore".to_string()]);
}
