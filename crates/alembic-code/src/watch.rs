//! Keeping a long-running service's index live: a file-system watcher (the `notify` crate)
//! marks the tree changed, and the next query refreshes the index; while nothing changed,
//! queries skip the walk.
//!
//! Only the directories the walker keeps are watched, each on its own (not recursively):
//! `target/`, `node_modules/`, vendored, hidden and ignored directories cost no watch and
//! send no event. A directory that appears (created, moved in, or un-ignored by an edited
//! ignore file) asks for a resync: before the next refresh walks, the watch set is brought
//! in line with the walker's directories, so a file created in a new directory before its
//! watch existed is still found by that walk, and later ones send events.
//!
//! Invariant: the changed mark is cleared before a refresh walks, so an event that arrives
//! during the walk marks the tree again and the following query walks once more; a watcher
//! error or a dropped event queue (`need_rescan`) marks it too. Only events that cannot
//! concern an indexed file are ignored: reads, hidden and vendored directories (`.alembic/`,
//! `.git/`, `target/`, `node_modules/`…, which the walker skips too), hidden files other than
//! ignore files, and files whose extension is not a source language's.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use ignore::WalkState;
use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::language::Lang;
use crate::walk::{is_vendored_dir, source_walker};

/// The marks the watcher's callback sets for the next query.
#[derive(Default)]
struct Marks {
    /// Something an indexed file depends on changed.
    changed: AtomicBool,
    /// A directory appeared or an ignore file changed: the watch set may be short.
    resync: AtomicBool,
}

/// A running watcher, the directories it watches and the marks it sets.
pub(crate) struct TreeWatch {
    root: PathBuf,
    // Dropping the watcher stops it.
    watcher: RecommendedWatcher,
    watched: BTreeSet<PathBuf>,
    /// Most directories to watch; more fails as an exhausted inotify limit does.
    limit: Option<usize>,
    marks: Arc<Marks>,
}

impl TreeWatch {
    /// Watches every directory of `root` the walker keeps (at most `limit`). The tree
    /// starts marked changed, so the first query refreshes.
    pub(crate) fn start(root: &Path, limit: Option<usize>) -> notify::Result<TreeWatch> {
        let marks = Arc::new(Marks::default());
        marks.changed.store(true, Ordering::SeqCst);
        let mark = Arc::clone(&marks);
        let base = root.to_path_buf();
        let watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
            let Ok(e) = &event else {
                mark.resync.store(true, Ordering::SeqCst);
                mark.changed.store(true, Ordering::SeqCst);
                return;
            };
            if widens_watch(&base, e) {
                mark.resync.store(true, Ordering::SeqCst);
            }
            if concerns_index(&base, e) {
                mark.changed.store(true, Ordering::SeqCst);
            }
        })?;
        let mut watch = TreeWatch {
            root: root.to_path_buf(),
            watcher,
            watched: BTreeSet::new(),
            limit,
            marks,
        };
        watch.sync()?;
        Ok(watch)
    }

    /// Whether the tree changed since the last call (and clears the mark). When a
    /// directory appeared, first watches the walker's directories that are not watched
    /// yet; an error there (a watch limit reached) means the tree is no longer watched.
    pub(crate) fn take_changed(&mut self) -> notify::Result<bool> {
        if self.marks.resync.swap(false, Ordering::SeqCst)
            && let Err(e) = self.sync()
        {
            self.marks.resync.store(true, Ordering::SeqCst);
            return Err(e);
        }
        Ok(self.marks.changed.swap(false, Ordering::SeqCst))
    }

    /// Marks the tree changed again (a refresh that failed is retried by the next query).
    pub(crate) fn mark_changed(&self) {
        self.marks.changed.store(true, Ordering::SeqCst);
    }

    /// Directories watched now.
    pub(crate) fn watched(&self) -> usize {
        self.watched.len()
    }

    /// Watches exactly the directories the walker keeps now.
    fn sync(&mut self) -> notify::Result<()> {
        let dirs = walked_dirs(&self.root);
        if self.limit.is_some_and(|limit| dirs.len() > limit) {
            return Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch));
        }
        for gone in self.watched.difference(&dirs) {
            // A deleted directory's watch is already gone; nothing to undo then.
            let _ = self.watcher.unwatch(gone);
        }
        let mut paths = self.watcher.paths_mut();
        for dir in dirs.difference(&self.watched) {
            paths.add(dir, RecursiveMode::NonRecursive)?;
        }
        paths.commit()?;
        self.watched = dirs;
        Ok(())
    }
}

/// The directories [`source_walker`] descends into, the root included.
fn walked_dirs(root: &Path) -> BTreeSet<PathBuf> {
    let found = Mutex::new(BTreeSet::new());
    let mut builder = source_walker(root);
    builder.sort_by_file_name(|_, _| std::cmp::Ordering::Equal);
    builder.build_parallel().run(|| {
        Box::new(|entry| {
            if let Ok(entry) = entry
                && entry.file_type().is_some_and(|t| t.is_dir())
            {
                alembic_base::lock(&found).insert(entry.into_path());
            }
            WalkState::Continue
        })
    });
    found.into_inner().unwrap_or_default()
}

/// Whether an event can add a directory to watch: a directory created or moved in, or an
/// ignore file changed (it may un-ignore one), or a dropped event queue.
fn widens_watch(root: &Path, event: &Event) -> bool {
    if event.need_rescan() {
        return true;
    }
    let touches_ignore_file = || {
        event.paths.iter().any(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| IGNORE_FILES.contains(&n))
        })
    };
    match event.kind {
        EventKind::Create(CreateKind::Folder) => {
            event.paths.iter().any(|p| path_concerns_index(root, p))
        }
        EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(_)) => {
            event.paths.iter().any(|p| p.is_dir()) || touches_ignore_file()
        }
        EventKind::Access(_) => false,
        _ => touches_ignore_file(),
    }
}

/// Whether an event can change what the index holds.
fn concerns_index(root: &Path, event: &Event) -> bool {
    if event.need_rescan() {
        return true;
    }
    if let EventKind::Access(kind) = event.kind
        && kind != AccessKind::Close(AccessMode::Write)
    {
        return false;
    }
    event.paths.iter().any(|p| path_concerns_index(root, p))
}

fn path_concerns_index(root: &Path, path: &Path) -> bool {
    let rel: PathBuf = path.strip_prefix(root).unwrap_or(path).to_path_buf();
    let parts: Vec<&str> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    let Some((last, dirs)) = parts.split_last() else {
        return true;
    };
    // The walker skips hidden and vendored directories (`.alembic/` and `.git/` among them),
    // and hidden files other than ignore files.
    let skipped_dir = |name: &&str| name.starts_with('.') || is_vendored_dir(name);
    if dirs.iter().any(skipped_dir) || is_vendored_dir(last) {
        return false;
    }
    if last.starts_with('.') {
        return IGNORE_FILES.contains(last);
    }
    // No extension: a directory, or an extensionless file the walker may keep.
    path.extension().is_none() || Lang::from_path(path).is_some()
}

/// Files whose change changes which files the walker keeps.
const IGNORE_FILES: [&str; 3] = [".gitignore", ".ignore", crate::walk::IGNORE_FILE];

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, path: &str) -> Event {
        Event::new(kind).add_path(PathBuf::from(path))
    }

    #[test]
    fn only_events_that_can_change_the_index_count() {
        let root = Path::new("/p");
        let modify = EventKind::Modify(ModifyKind::Any);
        for (e, expected) in [
            (event(modify, "/p/src/a.rs"), true),
            (
                event(EventKind::Create(CreateKind::Folder), "/p/src/new"),
                true,
            ),
            (event(modify, "/p/.gitignore"), true),
            (event(modify, "/p/.alembic/alembic.db-wal"), false),
            (event(modify, "/p/.git/index"), false),
            (event(modify, "/p/notes.txt"), false),
            (event(modify, "/p/target/debug/build/out/gen.rs"), false),
            (event(modify, "/p/web/node_modules/x/index.js"), false),
            (
                event(EventKind::Create(CreateKind::Folder), "/p/target"),
                false,
            ),
            (event(modify, "/p/src/.scratch.rs"), false),
            (event(modify, "/p/src/.alembicignore"), true),
            (
                event(EventKind::Access(AccessKind::Read), "/p/src/a.rs"),
                false,
            ),
            (
                event(
                    EventKind::Access(AccessKind::Close(AccessMode::Write)),
                    "/p/src/a.rs",
                ),
                true,
            ),
        ] {
            assert_eq!(concerns_index(root, &e), expected, "{e:?}");
        }
    }

    #[test]
    fn new_directories_and_ignore_files_ask_for_a_resync() {
        let root = Path::new("/p");
        let modify = EventKind::Modify(ModifyKind::Any);
        for (e, expected) in [
            (
                event(EventKind::Create(CreateKind::Folder), "/p/src/new"),
                true,
            ),
            (
                event(EventKind::Create(CreateKind::Folder), "/p/target/debug"),
                false,
            ),
            (
                event(EventKind::Create(CreateKind::Folder), "/p/src/.cache"),
                false,
            ),
            (event(modify, "/p/.gitignore"), true),
            (event(modify, "/p/src/.alembicignore"), true),
            (event(modify, "/p/src/a.rs"), false),
            (
                event(EventKind::Create(CreateKind::File), "/p/src/a.rs"),
                false,
            ),
            (
                event(EventKind::Access(AccessKind::Read), "/p/.gitignore"),
                false,
            ),
        ] {
            assert_eq!(widens_watch(root, &e), expected, "{e:?}");
        }
    }
}
