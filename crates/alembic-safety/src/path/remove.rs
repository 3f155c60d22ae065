//! Removal beneath the root.
//!
//! A recursive removal descends with `O_NOFOLLOW | O_DIRECTORY` relative to
//! the handle of the directory being emptied, so a subdirectory swapped for a
//! symlink mid-way (the `remove_dir_all` TOCTOU class) is unlinked as a link
//! and never entered.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, openat, statat, unlinkat};
use rustix::io::Errno;
use serde::Serialize;

use super::{PathError, PathGuard, RelPath, errno_error, io_error};

/// What [`PathGuard::remove`] removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemoveReport {
    /// Normalised path relative to the root.
    pub path: String,
    /// Files, links and directories removed.
    pub entries_removed: u64,
}

impl PathGuard {
    /// Removes a file or symlink, or a directory with everything in it when `recursive`.
    ///
    /// Refuses the root itself and control paths (the same rules as writes).
    pub fn remove(&self, path: &str, recursive: bool) -> Result<RemoveReport, PathError> {
        let rel = self.parse(path)?;
        let (parent, name) = self.write_parts(&rel, path)?;
        let dir =
            self.open_parent_dir(&parent, &rel, false)?
                .ok_or_else(|| PathError::NotFound {
                    path: rel.to_string(),
                })?;
        let st = statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| errno_error(e, &rel, "stat"))?;
        let mut removed = 0;
        if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
            if !recursive {
                return Err(PathError::IsADirectory {
                    path: rel.to_string(),
                });
            }
            removed += remove_tree(&dir, name, &rel)?;
        } else {
            unlinkat(&dir, name, AtFlags::empty()).map_err(|e| errno_error(e, &rel, "remove"))?;
            removed += 1;
        }
        Ok(RemoveReport {
            path: rel.to_string(),
            entries_removed: removed,
        })
    }
}

/// Empties and removes directory `name` in `parent`; returns the entries removed.
fn remove_tree(parent: &OwnedFd, name: &str, rel: &RelPath) -> Result<u64, PathError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = match openat(parent, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        // Swapped for a symlink or a file since the caller looked: unlink the entry itself.
        Err(Errno::LOOP | Errno::NOTDIR) => return unlink_entry(parent.as_fd(), name, rel),
        Err(e) => return Err(errno_error(e, rel, "open directory")),
    };
    let mut removed = 0;
    for child in child_names(&dir, rel)? {
        let st = match statat(&dir, child.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(io_error("stat", rel, e)),
        };
        removed += if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
            remove_tree(&dir, &child, rel)?
        } else {
            unlink_entry(dir.as_fd(), &child, rel)?
        };
    }
    match unlinkat(parent, name, AtFlags::REMOVEDIR) {
        Ok(()) => Ok(removed + 1),
        Err(Errno::NOENT) => Ok(removed),
        Err(e) => Err(io_error("remove directory", rel, e)),
    }
}

fn unlink_entry(dir: BorrowedFd<'_>, name: &str, rel: &RelPath) -> Result<u64, PathError> {
    match unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) => Ok(1),
        Err(Errno::NOENT) => Ok(0),
        // Became a directory again in a race: leave it, the caller's rmdir reports it.
        Err(Errno::ISDIR) => Ok(0),
        Err(e) => Err(io_error("remove", rel, e)),
    }
}

fn child_names(dir: &OwnedFd, rel: &RelPath) -> Result<Vec<String>, PathError> {
    let listing = Dir::read_from(dir).map_err(|e| io_error("list", rel, e))?;
    let mut names = Vec::new();
    for entry in listing {
        let entry = entry.map_err(|e| io_error("list", rel, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != "." && name != ".." {
            names.push(name);
        }
    }
    Ok(names)
}
