//! Finding symlinks in the project that lead outside it.
//!
//! A read-only command that follows links while recursing (`grep -R`, `du -L`,
//! `diff -r`) is safe only when no link in the tree leads out. The scan never
//! follows a link itself: it descends only into entries that are directories
//! when looked at without following, and resolves each link it meets
//! physically beneath the root.

use std::collections::VecDeque;

use super::{EntryKind, PathError, PathGuard};

impl PathGuard {
    /// The first symlink (relative path) whose target lies outside the root or
    /// loops, scanning at most `max_entries` entries; `None` when there is none.
    /// A tree larger than the budget is an error, because it was not verified.
    pub fn find_escaping_link(&self, max_entries: usize) -> Result<Option<String>, PathError> {
        let mut queue = VecDeque::from([".".to_owned()]);
        let mut seen = 0usize;
        while let Some(dir) = queue.pop_front() {
            let entries = match self.read_dir(&dir) {
                Ok(entries) => entries,
                // Removed or swapped meanwhile: nothing below it to follow.
                Err(PathError::NotFound { .. } | PathError::NotADirectory { .. }) => continue,
                Err(e) => return Err(e),
            };
            for entry in entries {
                seen += 1;
                if seen > max_entries {
                    return Err(PathError::TreeTooLarge { limit: max_entries });
                }
                let rel = if dir == "." {
                    entry.name.clone()
                } else {
                    format!("{dir}/{}", entry.name)
                };
                match entry.kind {
                    EntryKind::Dir => queue.push_back(rel),
                    EntryKind::Symlink => {
                        if let Err(PathError::Escape { .. } | PathError::SymlinkLoop { .. }) =
                            self.check_physical(&rel)
                        {
                            return Ok(Some(rel));
                        }
                    }
                    EntryKind::File | EntryKind::Other => {}
                }
            }
        }
        Ok(None)
    }
}
