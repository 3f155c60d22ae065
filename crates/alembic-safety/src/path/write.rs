//! Writes beneath the root.
//!
//! Writes never go through a symlink, in any component: the parent directory
//! is reached by opening one component at a time with `O_NOFOLLOW` relative
//! to the previous handle, and the final name is created with `O_NOFOLLOW`
//! (a dangling symlink is never followed by `O_CREAT`). Because the
//! normalised path has no `..` and no symlinks, the lexical control-path
//! check names the very object that is written.

use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{
    AtFlags, FileType, Mode, OFlags, Stat, fchmod, fstat, fsync, mkdirat, openat, renameat, statat,
    unlinkat,
};
use rustix::io::Errno;

use super::{
    PathError, PathGuard, RelPath, WriteMode, WriteReport, errno_error, io_error, kind_name,
    protected,
};

/// Distinguishes temporary files of concurrent writes in one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Directory handle plus final name of a write target that passed every check.
struct WriteTarget {
    dir: OwnedFd,
    existing: Option<Stat>,
}

impl PathGuard {
    /// Writes `bytes` to `path` (creating parent directories beneath the root).
    ///
    /// Refuses control paths, symlinks anywhere on the path, files with more
    /// than one hard link, non-regular files and content over the write cap.
    /// [`WriteMode::Replace`] is atomic: readers see the old or the new file, never a mix.
    pub fn write(
        &self,
        path: &str,
        bytes: &[u8],
        mode: WriteMode,
    ) -> Result<WriteReport, PathError> {
        let rel = self.parse(path)?;
        let limit = self.inner.limits.max_write_bytes;
        if bytes.len() as u64 > limit {
            return Err(PathError::TooLarge {
                path: rel.to_string(),
                size: bytes.len() as u64,
                limit,
            });
        }
        let (parent, name) = self.write_parts(&rel, path)?;
        let dir =
            self.open_parent_dir(&parent, &rel, true)?
                .ok_or_else(|| PathError::NotFound {
                    path: rel.to_string(),
                })?;
        let target = WriteTarget {
            existing: inspect_existing(dir.as_fd(), name, &rel)?,
            dir,
        };
        match mode {
            WriteMode::Replace => replace(&target, name, bytes, &rel),
            WriteMode::Append => append(&target, name, bytes, &rel),
        }
    }

    /// The checks of [`PathGuard::write`] without writing or creating anything.
    pub(super) fn check_write_target(&self, rel: &RelPath, input: &str) -> Result<(), PathError> {
        let (parent, name) = self.write_parts(rel, input)?;
        if let Some(dir) = self.open_parent_dir(&parent, rel, false)? {
            inspect_existing(dir.as_fd(), name, rel)?;
        }
        Ok(())
    }

    /// Splits a write target into parent and name after the control-path check.
    pub(super) fn write_parts<'a>(
        &self,
        rel: &'a RelPath,
        input: &str,
    ) -> Result<(RelPath, &'a str), PathError> {
        let (parent, name) = rel.split_last().ok_or_else(|| PathError::IsADirectory {
            path: input.to_owned(),
        })?;
        if let Some(reason) =
            protected::protected_reason(rel.components(), &self.inner.limits.extra_protected)
        {
            return Err(PathError::Protected {
                path: rel.to_string(),
                reason,
            });
        }
        Ok((parent, name))
    }

    /// Opens the parent directory one component at a time without following
    /// symlinks; creates missing components when `create`, else returns `None`.
    pub(super) fn open_parent_dir(
        &self,
        parent: &RelPath,
        rel: &RelPath,
        create: bool,
    ) -> Result<Option<OwnedFd>, PathError> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut dir = openat(&self.inner.root_fd, ".", flags, Mode::empty())
            .map_err(|e| io_error("open", rel, e))?;
        for name in parent.components() {
            let next = match openat(&dir, name.as_str(), flags, Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    match mkdirat(&dir, name.as_str(), Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(io_error("create directory", rel, e)),
                    }
                    openat(&dir, name.as_str(), flags, Mode::empty())
                }
                Err(Errno::NOENT) => return Ok(None),
                other => other,
            };
            dir = match next {
                Ok(fd) => fd,
                Err(errno @ (Errno::NOTDIR | Errno::LOOP)) => {
                    return Err(classify_non_dir(&dir, name, rel, errno));
                }
                Err(e) => return Err(errno_error(e, rel, "open")),
            };
        }
        Ok(Some(dir))
    }
}

/// A component that could not be opened as a directory: a symlink or something else.
fn classify_non_dir(dir: &OwnedFd, name: &str, rel: &RelPath, errno: Errno) -> PathError {
    match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
            PathError::WriteThroughSymlink {
                path: rel.to_string(),
            }
        }
        _ => errno_error(errno, rel, "open"),
    }
}

/// Checks what is at the final name now: nothing, or a regular file with one link.
fn inspect_existing(
    dir: BorrowedFd<'_>,
    name: &str,
    rel: &RelPath,
) -> Result<Option<Stat>, PathError> {
    match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            require_single_regular(&st, rel)?;
            Ok(Some(st))
        }
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(errno_error(e, rel, "stat")),
    }
}

fn require_single_regular(st: &Stat, rel: &RelPath) -> Result<(), PathError> {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Symlink => {
            return Err(PathError::WriteThroughSymlink {
                path: rel.to_string(),
            });
        }
        FileType::Directory => {
            return Err(PathError::IsADirectory {
                path: rel.to_string(),
            });
        }
        FileType::RegularFile => {}
        _ => {
            return Err(PathError::NotRegular {
                path: rel.to_string(),
                kind: kind_name(st),
            });
        }
    }
    if st.st_nlink > 1 {
        return Err(PathError::HardLink {
            path: rel.to_string(),
            links: st.st_nlink,
        });
    }
    Ok(())
}

/// Writes a temporary file in the same directory and renames it over `name`.
/// The rename replaces the directory entry, so even a hard link planted after
/// the check cannot make the write reach another inode.
fn replace(
    target: &WriteTarget,
    name: &str,
    bytes: &[u8],
    rel: &RelPath,
) -> Result<WriteReport, PathError> {
    let temp = format!(
        ".alembic-write-{}-{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mode = target
        .existing
        .as_ref()
        .map_or(0o644, |st| st.st_mode & 0o7777);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(&target.dir, temp.as_str(), flags, Mode::from_raw_mode(mode))
        .map_err(|e| io_error("create", rel, e))?;
    let result = fill_and_rename(fd, target, &temp, name, bytes, mode, rel);
    if result.is_err() {
        let _ = unlinkat(&target.dir, temp.as_str(), AtFlags::empty());
    }
    result?;
    Ok(WriteReport {
        path: rel.to_string(),
        bytes_written: bytes.len() as u64,
        size: bytes.len() as u64,
        created: target.existing.is_none(),
        mode: WriteMode::Replace,
    })
}

fn fill_and_rename(
    fd: OwnedFd,
    target: &WriteTarget,
    temp: &str,
    name: &str,
    bytes: &[u8],
    mode: u32,
    rel: &RelPath,
) -> Result<(), PathError> {
    // The umask may have narrowed the creation mode; restore the old file's mode.
    fchmod(&fd, Mode::from_raw_mode(mode)).map_err(|e| io_error("chmod", rel, e))?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes).map_err(|source| PathError::Io {
        op: "write",
        path: rel.to_string(),
        source,
    })?;
    fsync(&file).map_err(|e| io_error("sync", rel, e))?;
    renameat(&target.dir, temp, &target.dir, name).map_err(|e| errno_error(e, rel, "rename"))
}

/// Appends to `name`, creating it when missing. The link count is checked on
/// the opened handle itself, so a swap after [`inspect_existing`] is caught.
fn append(
    target: &WriteTarget,
    name: &str,
    bytes: &[u8],
    rel: &RelPath,
) -> Result<WriteReport, PathError> {
    let flags = OFlags::WRONLY
        | OFlags::APPEND
        | OFlags::CREATE
        | OFlags::NOFOLLOW
        | OFlags::NONBLOCK
        | OFlags::NOCTTY
        | OFlags::CLOEXEC;
    let fd = match openat(&target.dir, name, flags, Mode::from_raw_mode(0o644)) {
        Ok(fd) => fd,
        Err(Errno::LOOP) => {
            return Err(PathError::WriteThroughSymlink {
                path: rel.to_string(),
            });
        }
        Err(e) => return Err(errno_error(e, rel, "open")),
    };
    let st = fstat(&fd).map_err(|e| io_error("stat", rel, e))?;
    require_single_regular(&st, rel)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes).map_err(|source| PathError::Io {
        op: "append",
        path: rel.to_string(),
        source,
    })?;
    let size = fstat(&file)
        .map(|st| u64::try_from(st.st_size).unwrap_or(0))
        .unwrap_or(0);
    Ok(WriteReport {
        path: rel.to_string(),
        bytes_written: bytes.len() as u64,
        size,
        created: target.existing.is_none(),
        mode: WriteMode::Append,
    })
}
