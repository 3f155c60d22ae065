//! [`PathGuard`]: every file access of a tool, confined beneath the project root.
//!
//! Architecture invariant: confinement is decided by the kernel on directory
//! handles (openat2, or the component walk in `resolve.rs`), never by
//! comparing strings after `canonicalize`. The root is opened once, when the guard is built; renaming or replacing
//! the root directory later does not move the guard.

mod error;
mod lexical;
mod links;
mod optional;
mod protected;
mod remove;
mod resolve;
mod write;

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, fcntl_setfl, fstat, openat, statat};
use rustix::io::Errno;
use serde::Serialize;

pub use error::PathError;
use lexical::RelPath;
pub use remove::RemoveReport;
use resolve::ResolveError;
pub use resolve::{Strategy, openat2_unavailable};

/// Size caps and extra protected paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathLimits {
    /// Largest file [`PathGuard::read`] and [`PathGuard::open_read`] accept.
    pub max_read_bytes: u64,
    /// Largest content [`PathGuard::write`] accepts in one call.
    pub max_write_bytes: u64,
    /// Extra protected entries: a bare name protects that name at any depth,
    /// a path with `/` protects that path (and what is beneath it) from the root.
    pub extra_protected: Vec<String>,
}

impl Default for PathLimits {
    fn default() -> Self {
        Self {
            max_read_bytes: 16 * 1024 * 1024,
            max_write_bytes: 1024 * 1024,
            extra_protected: Vec::new(),
        }
    }
}

/// What a caller intends to do with a path, for [`PathGuard::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read a file or list a directory.
    Read,
    /// Create, replace or append to a file.
    Write,
}

/// How [`PathGuard::write`] treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// Replace the whole file atomically (temporary file, then rename).
    Replace,
    /// Append to the end, creating the file when missing.
    Append,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriteReport {
    /// Normalised path relative to the root.
    pub path: String,
    /// Bytes written by this call.
    pub bytes_written: u64,
    /// Size of the file afterwards.
    pub size: u64,
    /// True when the file did not exist before.
    pub created: bool,
    /// Replace or append.
    pub mode: WriteMode,
}

/// Kind of a directory entry, without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link (not followed).
    Symlink,
    /// FIFO, socket or device.
    Other,
}

/// One entry of [`PathGuard::read_dir`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirEntryInfo {
    /// File name (lossy UTF-8).
    pub name: String,
    /// Kind of the entry itself.
    pub kind: EntryKind,
    /// Size in bytes (of the link itself for symlinks).
    pub size: u64,
}

/// What [`PathGuard::metadata`] reports about a path (symlinks followed within the root).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileInfo {
    /// Normalised path relative to the root.
    pub path: String,
    /// Kind of the object reached.
    pub kind: EntryKind,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds since the Unix epoch.
    pub modified_unix: i64,
    /// Number of hard links.
    pub links: u64,
}

/// Confines file access beneath one project root, using directory handles.
///
/// Cheap to clone (the root handle is shared).
#[derive(Debug, Clone)]
pub struct PathGuard {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Canonical root path (for messages and absolute-path arguments).
    root: PathBuf,
    /// The root as the caller spelled it, when absolute and different.
    root_as_given: Option<PathBuf>,
    /// Handle opened once at construction.
    root_fd: OwnedFd,
    limits: PathLimits,
    strategy: Strategy,
}

impl PathGuard {
    /// Opens `root` with the default limits.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, PathError> {
        Self::with_limits(root, PathLimits::default())
    }

    /// Opens `root` with explicit limits.
    pub fn with_limits(root: impl AsRef<Path>, limits: PathLimits) -> Result<Self, PathError> {
        Self::build(root.as_ref(), limits, Strategy::Auto)
    }

    /// Like [`PathGuard::with_limits`] but always resolves with the given strategy;
    /// tests use it to exercise the component-walk fallback on kernels with `openat2`.
    pub fn with_strategy(
        root: impl AsRef<Path>,
        limits: PathLimits,
        strategy: Strategy,
    ) -> Result<Self, PathError> {
        Self::build(root.as_ref(), limits, strategy)
    }

    fn build(root: &Path, limits: PathLimits, strategy: Strategy) -> Result<Self, PathError> {
        let root_error = |source: std::io::Error| PathError::Root {
            root: root.to_owned(),
            source,
        };
        // Canonicalising the root once is fine: it only names the directory we open;
        // confinement below never compares strings.
        let canonical = std::fs::canonicalize(root).map_err(root_error)?;
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let root_fd = openat(rustix::fs::CWD, &canonical, flags, Mode::empty())
            .map_err(|e| root_error(e.into()))?;
        let root_as_given = (root.is_absolute() && root != canonical).then(|| root.to_owned());
        Ok(Self {
            inner: Arc::new(Inner {
                root: canonical,
                root_as_given,
                root_fd,
                limits,
                strategy,
            }),
        })
    }

    /// The canonical project root.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The limits in force.
    pub fn limits(&self) -> &PathLimits {
        &self.inner.limits
    }

    /// Checks `path` for `access` without side effects; returns the normalised
    /// relative path (`.` for the root). Reads require the target to exist.
    pub fn check(&self, path: &str, access: Access) -> Result<String, PathError> {
        let rel = self.parse(path)?;
        match access {
            Access::Read => {
                self.open(&rel, path, OFlags::PATH, "open")?;
            }
            Access::Write => {
                self.check_write_target(&rel, path)?;
            }
        }
        Ok(rel.to_string())
    }

    /// Opens a regular file for reading; refuses other file types and files over the read cap.
    pub fn open_read(&self, path: &str) -> Result<File, PathError> {
        let rel = self.parse(path)?;
        // O_NONBLOCK so a FIFO cannot block the open; cleared again for regular files.
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
        let fd = self.open(&rel, path, flags, "open")?;
        let st = fstat(&fd).map_err(|e| io_error("stat", &rel, e))?;
        require_regular(&st, &rel)?;
        let size = u64::try_from(st.st_size).unwrap_or(0);
        if size > self.inner.limits.max_read_bytes {
            return Err(PathError::TooLarge {
                path: rel.to_string(),
                size,
                limit: self.inner.limits.max_read_bytes,
            });
        }
        fcntl_setfl(&fd, OFlags::empty()).map_err(|e| io_error("open", &rel, e))?;
        Ok(File::from(fd))
    }

    /// Reads a whole regular file (at most the read cap, even if it grows while read).
    pub fn read(&self, path: &str) -> Result<Vec<u8>, PathError> {
        let file = self.open_read(path)?;
        let limit = self.inner.limits.max_read_bytes;
        let mut bytes = Vec::new();
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|source| PathError::Io {
                op: "read",
                path: path.to_owned(),
                source,
            })?;
        let size = bytes.len() as u64;
        if size > limit {
            return Err(PathError::TooLarge {
                path: path.to_owned(),
                size,
                limit,
            });
        }
        Ok(bytes)
    }

    /// Reads a whole regular file as UTF-8.
    pub fn read_to_string(&self, path: &str) -> Result<String, PathError> {
        let bytes = self.read(path)?;
        String::from_utf8(bytes).map_err(|_| PathError::Io {
            op: "decode",
            path: path.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "file is not valid utf-8"),
        })
    }

    /// Lists a directory, sorted by name; entries are described without following symlinks.
    pub fn read_dir(&self, path: &str) -> Result<Vec<DirEntryInfo>, PathError> {
        let rel = self.parse(path)?;
        self.read_dir_rel(&rel, path)
    }

    /// Like [`PathGuard::read_dir`], with `path` resolved as the kernel does
    /// (see [`PathGuard::check_physical`]): the directory a shell glob expands in.
    pub fn read_dir_physical(&self, path: &str) -> Result<Vec<DirEntryInfo>, PathError> {
        let rel = RelPath::parse_unfolded(path, &self.roots())?;
        self.read_dir_rel(&rel, path)
    }

    fn read_dir_rel(&self, rel: &RelPath, path: &str) -> Result<Vec<DirEntryInfo>, PathError> {
        let rel = rel.clone();
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let fd = self.open(&rel, path, flags, "open directory")?;
        let dir = rustix::fs::Dir::read_from(&fd).map_err(|e| io_error("list", &rel, e))?;
        let mut entries = Vec::new();
        for entry in dir {
            let entry = entry.map_err(|e| io_error("list", &rel, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            let (kind, size) = match statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => (entry_kind(&st), u64::try_from(st.st_size).unwrap_or(0)),
                // Removed between listing and stat: skip it rather than fail the listing.
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(io_error("stat", &rel, e)),
            };
            entries.push(DirEntryInfo { name, kind, size });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Describes the object at `path` (symlinks inside the root are followed).
    pub fn metadata(&self, path: &str) -> Result<FileInfo, PathError> {
        let rel = self.parse(path)?;
        let fd = self.open(&rel, path, OFlags::PATH, "open")?;
        let st = fstat(&fd).map_err(|e| io_error("stat", &rel, e))?;
        Ok(FileInfo {
            path: rel.to_string(),
            kind: entry_kind(&st),
            size: u64::try_from(st.st_size).unwrap_or(0),
            modified_unix: st.st_mtime,
            links: st.st_nlink,
        })
    }

    /// Parses and opens `path` with `flags` (symlinks inside the root followed).
    pub(crate) fn open_checked(&self, path: &str, flags: OFlags) -> Result<OwnedFd, PathError> {
        let rel = self.parse(path)?;
        self.open(&rel, path, flags, "open")
    }

    /// Checks `path` for reading the way the kernel will open it: `..` after a
    /// symlink climbs from the link's target, never folded away as text
    /// (`outside_link/../outside/x` is outside). Command operands use this,
    /// because the command's own `open` resolves them the same way.
    pub fn check_physical(&self, path: &str) -> Result<String, PathError> {
        let rel = RelPath::parse_unfolded(path, &self.roots())?;
        self.open(&rel, path, OFlags::PATH, "open")?;
        Ok(rel.to_string())
    }

    fn roots(&self) -> Vec<&Path> {
        let mut roots: Vec<&Path> = vec![&self.inner.root];
        if let Some(given) = &self.inner.root_as_given {
            roots.push(given);
        }
        roots
    }

    fn parse(&self, path: &str) -> Result<RelPath, PathError> {
        RelPath::parse(path, &self.roots())
    }

    /// Opens `rel` beneath the root, following in-root symlinks.
    fn open(
        &self,
        rel: &RelPath,
        input: &str,
        flags: OFlags,
        op: &'static str,
    ) -> Result<OwnedFd, PathError> {
        resolve::open_beneath(
            self.inner.root_fd.as_fd(),
            rel,
            flags,
            true,
            self.inner.strategy,
        )
        .map_err(|e| resolve_error(e, input, rel, op))
    }
}

/// Maps a lookup failure to the public error; escapes name only the path as given.
fn resolve_error(err: ResolveError, input: &str, rel: &RelPath, op: &'static str) -> PathError {
    match err {
        ResolveError::Escape => PathError::Escape {
            path: input.to_owned(),
        },
        ResolveError::Loop => PathError::SymlinkLoop {
            path: rel.to_string(),
            limit: resolve::MAX_SYMLINK_EXPANSIONS,
        },
        ResolveError::Symlink => PathError::WriteThroughSymlink {
            path: rel.to_string(),
        },
        ResolveError::Os(errno) => errno_error(errno, rel, op),
    }
}

fn errno_error(errno: Errno, rel: &RelPath, op: &'static str) -> PathError {
    let path = rel.to_string();
    match errno {
        Errno::NOENT => PathError::NotFound { path },
        Errno::NOTDIR => PathError::NotADirectory { path },
        Errno::ISDIR => PathError::IsADirectory { path },
        Errno::NAMETOOLONG => PathError::TooLong {
            path,
            limit: lexical::MAX_PATH_BYTES,
        },
        errno => io_error(op, rel, errno),
    }
}

fn io_error(op: &'static str, rel: &RelPath, errno: Errno) -> PathError {
    PathError::Io {
        op,
        path: rel.to_string(),
        source: errno.into(),
    }
}

fn entry_kind(st: &Stat) -> EntryKind {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

fn kind_name(st: &Stat) -> &'static str {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        _ => "special file",
    }
}

fn require_regular(st: &Stat, rel: &RelPath) -> Result<(), PathError> {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(()),
        FileType::Directory => Err(PathError::IsADirectory {
            path: rel.to_string(),
        }),
        _ => Err(PathError::NotRegular {
            path: rel.to_string(),
            kind: kind_name(st),
        }),
    }
}
