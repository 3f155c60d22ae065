//! Opening a relative path beneath a directory handle.
//!
//! Fast path: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` (plus
//! `RESOLVE_NO_SYMLINKS` when symlinks may not be followed at all). The kernel
//! then guarantees that no step of the lookup, `..` or symlink, leaves the
//! root, and reports an escape as `EXDEV` before looking at anything outside.
//!
//! Fallback (kernels before 5.6, or seccomp filters that return `ENOSYS`/`EPERM`):
//! a walk that opens one component at a time with `O_NOFOLLOW` relative to the
//! directory handle opened for the previous component, expands in-root
//! symlinks by hand (absolute targets are escapes) and keeps a stack of open
//! directory handles so `..` pops to a handle that is already open, even if
//! the directory is moved meanwhile. `..` with only the root on the stack is
//! an escape.

use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{
    AtFlags, FileType, Mode, OFlags, ResolveFlags, fstat, openat, openat2, readlinkat, statat,
};
use rustix::io::Errno;

use super::lexical::RelPath;

/// Most symlink expansions allowed in one lookup (the kernel's limit is 40 too).
pub(crate) const MAX_SYMLINK_EXPANSIONS: usize = 40;

/// Set once `openat2` turned out to be missing or filtered; never cleared.
static OPENAT2_UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// How paths are resolved beneath the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `openat2` when the kernel has it, else the component walk.
    Auto,
    /// Always the component walk (the fallback; selectable so tests cover it).
    ComponentWalk,
}

/// Why a lookup failed.
#[derive(Debug)]
pub(crate) enum ResolveError {
    /// A step would leave the root.
    Escape,
    /// Too many symlink expansions.
    Loop,
    /// A symlink was met where none may be followed.
    Symlink,
    /// Any other failure from the kernel.
    Os(Errno),
}

impl From<Errno> for ResolveError {
    fn from(errno: Errno) -> Self {
        Self::Os(errno)
    }
}

/// Opens `rel` beneath `root` with `flags`; `follow` says whether in-root symlinks may be followed.
pub(crate) fn open_beneath(
    root: BorrowedFd<'_>,
    rel: &RelPath,
    flags: OFlags,
    follow: bool,
    strategy: Strategy,
) -> Result<OwnedFd, ResolveError> {
    if strategy == Strategy::Auto
        && !OPENAT2_UNAVAILABLE.load(Ordering::Relaxed)
        && let Some(result) = open_with_openat2(root, rel, flags, follow)
    {
        return result;
    }
    open_by_walking(root, rel, flags, follow)
}

/// `None` when `openat2` is unavailable here, so the caller falls back.
fn open_with_openat2(
    root: BorrowedFd<'_>,
    rel: &RelPath,
    flags: OFlags,
    follow: bool,
) -> Option<Result<OwnedFd, ResolveError>> {
    let mut resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    if !follow {
        resolve |= ResolveFlags::NO_SYMLINKS;
    }
    let path = rel.as_os_path();
    let mut last = Errno::AGAIN;
    // A rename anywhere on the host can make the lookup return EAGAIN; retry a few times.
    for _ in 0..4 {
        match openat2(root, &path, flags | OFlags::CLOEXEC, Mode::empty(), resolve) {
            Ok(fd) => return Some(Ok(fd)),
            Err(Errno::AGAIN) => last = Errno::AGAIN,
            Err(Errno::NOSYS | Errno::PERM) => {
                OPENAT2_UNAVAILABLE.store(true, Ordering::Relaxed);
                return None;
            }
            Err(Errno::XDEV) => return Some(Err(ResolveError::Escape)),
            Err(Errno::LOOP) if follow => return Some(Err(ResolveError::Loop)),
            Err(Errno::LOOP) => return Some(Err(ResolveError::Symlink)),
            Err(errno) => return Some(Err(ResolveError::Os(errno))),
        }
    }
    Some(Err(ResolveError::Os(last)))
}

/// The component walk described in the module docs.
fn open_by_walking(
    root: BorrowedFd<'_>,
    rel: &RelPath,
    flags: OFlags,
    follow: bool,
) -> Result<OwnedFd, ResolveError> {
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut stack: Vec<OwnedFd> = vec![openat(root, ".", dir_flags, Mode::empty())?];
    let mut queue: VecDeque<String> = rel.components().iter().cloned().collect();
    let mut expansions = 0;
    if queue.is_empty() {
        return Ok(openat(root, ".", flags | OFlags::CLOEXEC, Mode::empty())?);
    }
    while let Some(name) = queue.pop_front() {
        let is_last = queue.is_empty();
        let top = stack.last().ok_or(ResolveError::Escape)?.as_fd();
        let name = match name.as_str() {
            "" | "." if is_last => ".".to_owned(),
            "" | "." => continue,
            ".." => {
                if stack.len() <= 1 {
                    return Err(ResolveError::Escape);
                }
                stack.pop();
                if is_last {
                    let top = stack.last().ok_or(ResolveError::Escape)?;
                    return Ok(openat(top, ".", flags | OFlags::CLOEXEC, Mode::empty())?);
                }
                continue;
            }
            _ => name,
        };
        let step_flags = if is_last { flags } else { dir_flags };
        match open_component(top, &name, step_flags)? {
            Step::Opened(fd) if is_last => return Ok(fd),
            Step::Opened(fd) => stack.push(fd),
            Step::Symlink if !follow => return Err(ResolveError::Symlink),
            Step::Symlink => {
                expansions += 1;
                if expansions > MAX_SYMLINK_EXPANSIONS {
                    return Err(ResolveError::Loop);
                }
                let target = read_link(top, &name)?;
                if target.starts_with('/') {
                    return Err(ResolveError::Escape);
                }
                for part in target.split('/').rev() {
                    queue.push_front(part.to_owned());
                }
            }
        }
    }
    Err(ResolveError::Os(Errno::NOENT))
}

/// What opening one component found.
enum Step {
    Opened(OwnedFd),
    Symlink,
}

/// Opens one name in `dir` without following it; reports symlinks instead of opening them.
fn open_component(dir: BorrowedFd<'_>, name: &str, flags: OFlags) -> Result<Step, ResolveError> {
    match openat(
        dir,
        name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => {
            // With O_PATH, O_NOFOLLOW opens the link itself instead of failing.
            if flags.contains(OFlags::PATH)
                && FileType::from_raw_mode(fstat(&fd)?.st_mode) == FileType::Symlink
            {
                return Ok(Step::Symlink);
            }
            Ok(Step::Opened(fd))
        }
        Err(errno @ (Errno::LOOP | Errno::NOTDIR)) => {
            let st = statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
            if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
                Ok(Step::Symlink)
            } else {
                Err(ResolveError::Os(errno))
            }
        }
        Err(errno) => Err(ResolveError::Os(errno)),
    }
}

/// Target of the symlink `name` in `dir`, as UTF-8 (other targets are refused as invalid).
fn read_link(dir: BorrowedFd<'_>, name: &str) -> Result<String, ResolveError> {
    let target = readlinkat(dir, name, Vec::new())?;
    String::from_utf8(target.into_bytes()).map_err(|_| ResolveError::Os(Errno::ILSEQ))
}

/// Whether `openat2` has been found unavailable (for diagnostics and tests).
pub fn openat2_unavailable() -> bool {
    OPENAT2_UNAVAILABLE.load(Ordering::Relaxed)
}
