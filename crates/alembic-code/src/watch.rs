//! Keeping a long-running service's index live: a file-system watcher (the `notify` crate)
//! marks the tree changed, and the next query refreshes the index; while nothing changed,
//! queries skip the walk.
//!
//! Invariant: the changed mark is cleared before a refresh walks, so an event that arrives
//! during the walk marks the tree again and the following query walks once more; a watcher
//! error or a dropped event queue (`need_rescan`) marks it too. Only events that cannot
//! concern an indexed file are ignored: reads, hidden and vendored directories (`.alembic/`,
//! `.git/`, `target/`, `node_modules/`…, which the walker skips too), hidden files other than
//! ignore files, and files whose extension is not a source language's.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::language::Lang;
use crate::walk::is_vendored_dir;

/// A running watcher and the mark it sets.
pub(crate) struct TreeWatch {
    // Dropping the watcher stops it.
    _watcher: RecommendedWatcher,
    changed: Arc<AtomicBool>,
}

impl TreeWatch {
    /// Watches `root` recursively. The tree starts marked changed, so the first query
    /// refreshes.
    pub(crate) fn start(root: &Path) -> notify::Result<TreeWatch> {
        let changed = Arc::new(AtomicBool::new(true));
        let mark = Arc::clone(&changed);
        let base = root.to_path_buf();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
            let relevant = match &event {
                Ok(e) => concerns_index(&base, e),
                Err(_) => true,
            };
            if relevant {
                mark.store(true, Ordering::SeqCst);
            }
        })?;
        watcher.watch(root, RecursiveMode::Recursive)?;
        Ok(TreeWatch {
            _watcher: watcher,
            changed,
        })
    }

    /// Whether the tree changed since the last call (and clears the mark).
    pub(crate) fn take_changed(&self) -> bool {
        self.changed.swap(false, Ordering::SeqCst)
    }

    /// Marks the tree changed again (a refresh that failed is retried by the next query).
    pub(crate) fn mark_changed(&self) {
        self.changed.store(true, Ordering::SeqCst);
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
    use notify::event::{CreateKind, ModifyKind};

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
}
