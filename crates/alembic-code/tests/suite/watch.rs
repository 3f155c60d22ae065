//! A watched service: queries stop walking the tree while nothing changes, and a saved file
//! shows in the next queries without a reindex.

use std::sync::{Arc, Mutex};
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

/// Log lines written while `f` runs on this thread.
fn logged<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    (out, text)
}

const FALLBACK: &str = "cannot watch the project tree";

fn chain(service: &CodeService, name: &str) -> Option<Vec<String>> {
    let g = service.graph_around(name, Reach::all()).unwrap();
    g.types_named(name)
        .first()
        .map(|t| g.inheritance_chain(&t.name))
}

#[test]
fn when_the_tree_cannot_be_watched_queries_walk_and_the_log_says_so_once() {
    let dir = project("python");
    let root = dir.path();
    // The fixture has two directories (the root and zoo/); one watch is as far as a host
    // at its inotify limit gets.
    let service = CodeService::new(root).unwrap().with_watch_limit(1);
    let ((), log) = logged(|| {
        assert!(!service.watch());
        assert!(!service.watch(), "a second attempt fails the same way");
        assert_eq!(service.watched_dirs(), None);
        assert_eq!(chain(&service, "Puppy").map(|c| c.len()), Some(3));
        let walks = service.tree_walks();
        std::fs::write(
            root.join("zoo/kennel.py"),
            "from zoo.animals import Puppy\n\nclass ShowDog(Puppy):\n    pass\n",
        )
        .unwrap();
        // No event will come: the very next query walks and sees the file.
        assert_eq!(chain(&service, "ShowDog").map(|c| c.len()), Some(4));
        chain(&service, "ShowDog");
        assert_eq!(service.tree_walks(), walks + 2);
    });
    assert_eq!(log.matches(FALLBACK).count(), 1, "{log}");
    assert!(log.contains("OS file watch limit reached"), "{log}");
}

#[test]
fn a_watch_that_reaches_its_limit_later_falls_back_to_walking_once_logged() {
    let dir = project("python");
    let root = dir.path();
    let service = CodeService::new(root).unwrap().with_watch_limit(2);
    let ((), log) = logged(|| {
        assert!(service.watch());
        assert_eq!(service.watched_dirs(), Some(2));
        chain(&service, "Puppy");
        std::fs::create_dir(root.join("zoo/birds")).unwrap();
        std::fs::write(
            root.join("zoo/birds/parrot.py"),
            "class Parrot:\n    pass\n",
        )
        .unwrap();
        // The new directory would be a third watch: the tree stops being watched, and the
        // query that found out walks, as every later one does.
        assert!(eventually(|| chain(&service, "Parrot").is_some()));
        assert_eq!(service.watched_dirs(), None);
        std::fs::write(root.join("zoo/birds/owl.py"), "class Owl:\n    pass\n").unwrap();
        assert!(chain(&service, "Owl").is_some());
        chain(&service, "Owl");
    });
    assert_eq!(log.matches(FALLBACK).count(), 1, "{log}");
}

#[test]
fn only_the_directories_the_walker_keeps_are_watched_and_new_ones_join() {
    let dir = project("python");
    let root = dir.path();
    for skipped in [
        "target/debug/build",
        "web/node_modules/left-pad",
        "generated/deep",
        ".cache",
    ] {
        std::fs::create_dir_all(root.join(skipped)).unwrap();
    }
    std::fs::write(root.join(".gitignore"), "generated/\n").unwrap();
    std::fs::create_dir_all(root.join("web/src")).unwrap();
    let service = CodeService::new(root).unwrap();
    assert!(service.watch());
    // The root, zoo/, web/ and web/src/: not target/, node_modules/, the ignored
    // generated/ or the hidden .cache/ (nor anything below them).
    assert_eq!(service.watched_dirs(), Some(4));
    chain(&service, "Puppy");

    std::fs::create_dir_all(root.join("zoo/birds/tropical")).unwrap();
    std::fs::write(
        root.join("zoo/birds/parrot.py"),
        "class Parrot:\n    pass\n",
    )
    .unwrap();
    assert!(eventually(|| chain(&service, "Parrot").is_some()));
    assert_eq!(service.watched_dirs(), Some(6));
    // Files created later in the new directories send their own events.
    let walks = service.tree_walks();
    std::fs::write(
        root.join("zoo/birds/tropical/macaw.py"),
        "class Macaw:\n    pass\n",
    )
    .unwrap();
    assert!(eventually(|| chain(&service, "Macaw").is_some()));
    assert!(service.tree_walks() > walks);
    // A write under target/ sends nothing: no query walks for it.
    std::thread::sleep(Duration::from_millis(200));
    chain(&service, "Macaw");
    let walks = service.tree_walks();
    std::fs::write(
        root.join("target/debug/build/gen.py"),
        "class Gen:\n    pass\n",
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(chain(&service, "Gen"), None);
    assert_eq!(service.tree_walks(), walks);
}
