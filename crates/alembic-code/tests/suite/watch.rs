//! A watched service: queries stop walking the tree while nothing changes, and a saved file
//! shows in the next queries without a reindex.

use std::time::{Duration, Instant};

use alembic_code::{CodeService, Reach};
use pretty_assertions::assert_eq;

use super::fixtures::project;

/// Polls `check` until it holds; the watcher delivers events asynchronously, so the test
/// waits for them (a generous deadline, not a timing assertion).
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_watched_service_walks_only_after_a_change_and_sees_a_saved_file() {
    let dir = project("python");
    let root = dir.path();
    let service = CodeService::new(root).unwrap();
    assert!(service.watch());
    let hierarchy = |name: &str| {
        let g = service.graph_around(name, Reach::all()).unwrap();
        g.types_named(name)
            .first()
            .map(|t| g.inheritance_chain(&t.name))
    };
    assert_eq!(
        hierarchy("Puppy"),
        Some(vec!["Puppy".into(), "Dog".into(), "Animal".into()])
    );
    // Queries while nothing changes, including writes to the database under .alembic/,
    // do not walk again.
    let walks = service.tree_walks();
    for _ in 0..5 {
        hierarchy("Dog");
        service.summary("zoo/animals.py").unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    hierarchy("Dog");
    assert_eq!(service.tree_walks(), walks);

    std::fs::write(
        root.join("zoo/kennel.py"),
        "from zoo.animals import Puppy\n\nclass ShowDog(Puppy):\n    pass\n",
    )
    .unwrap();
    assert!(eventually(|| hierarchy("ShowDog").is_some()));
    assert_eq!(
        hierarchy("ShowDog"),
        Some(vec![
            "ShowDog".into(),
            "Puppy".into(),
            "Dog".into(),
            "Animal".into()
        ])
    );
    assert!(service.tree_walks() > walks);
    // Late events of that save are absorbed by one more query; then a non-source file
    // does not make the next query walk.
    std::thread::sleep(Duration::from_millis(200));
    hierarchy("ShowDog");
    let walks = service.tree_walks();
    std::fs::write(root.join("notes.txt"), "not code\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    hierarchy("ShowDog");
    assert_eq!(service.tree_walks(), walks);
}
