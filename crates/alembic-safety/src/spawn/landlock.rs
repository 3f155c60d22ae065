//! Landlock read and write confinement (Linux 5.13 and later).
//!
//! The ruleset is built in the parent with the `landlock` crate; the child
//! only makes the one `landlock_restrict_self` system call between fork and
//! exec (async-signal-safe). Writes, removals and creations are allowed only
//! beneath the project root, the extra directories (a private temp dir) and
//! `/dev/null`. Reads and execution are allowed there and in what a read-only
//! tool needs to start: the system program and library trees, the dynamic
//! loader's cache, the name-service and locale files, and a few devices.
//!
//! Everything else is unreadable, even through an in-root symlink: `/tmp`
//! outside the private dir, home directories and toolchain caches (`~/.cargo`,
//! `~/.rustup`, npm, pip), the rest of `/etc`, `/sys`, and all of `/proc`.
//! `/proc/self` is refused too: the child's own environment is already the
//! allow-list, but `/proc/self/root`, `cwd` and `fd/*` are magic links the
//! kernel would let it follow, and no tool on the safe list needs them.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, path_beneath_rules,
};

/// Newest ABI this code knows; older kernels get the subset they support.
const TARGET_ABI: ABI = ABI::V5;

/// Directory trees every program may read and execute from (missing ones are skipped):
/// programs, their libraries and data (`/usr/share/misc/magic`, locales, terminfo).
const SYSTEM_READ_DIRS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/nix/store",
    "/run/current-system",
];

/// Single files programs read at start-up (missing ones are skipped): the
/// loader's cache and configuration, user and group names for `ls -l`, the
/// local time zone, locale aliases and `file`'s local magic.
const SYSTEM_READ_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.preload",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/localtime",
    "/etc/locale.alias",
    "/etc/magic",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
];

/// A ruleset handle ready for `landlock_restrict_self`, or `None` when the
/// kernel has no Landlock (the caller then reports the child as not sandboxed).
pub(crate) fn sandbox_ruleset(
    root: &Path,
    writable: &[PathBuf],
    readable: &[PathBuf],
) -> Option<OwnedFd> {
    let mut write_roots: Vec<&Path> = vec![root, Path::new("/dev/null")];
    write_roots.extend(writable.iter().map(PathBuf::as_path));
    let read_roots = SYSTEM_READ_DIRS
        .iter()
        .chain(SYSTEM_READ_FILES)
        .map(Path::new)
        .chain(readable.iter().map(PathBuf::as_path));
    let created = Ruleset::default()
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .ok()?
        .create()
        .ok()?
        .add_rules(path_beneath_rules(
            read_roots,
            AccessFs::from_read(TARGET_ABI),
        ))
        .ok()?
        .add_rules(path_beneath_rules(
            write_roots,
            AccessFs::from_all(TARGET_ABI),
        ))
        .ok()?;
    created.into()
}

/// Whether this kernel enforces Landlock (ABI version > 0).
pub fn available() -> bool {
    // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the
    // VERSION flag only returns the ABI version; it touches no memory.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0_usize,
            1_u32,
        )
    };
    version > 0
}

/// In the child: applies the ruleset to itself. Requires `no_new_privs`.
pub(crate) fn restrict_self(ruleset_fd: i32) -> std::io::Result<()> {
    // SAFETY: a plain system call on an integer descriptor (see the caller).
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset_fd, 0_u32) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
