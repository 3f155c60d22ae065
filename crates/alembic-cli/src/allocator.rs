//! The process's memory allocator: mimalloc, for Rust and C code alike.
//!
//! A full index spends most of its time in tree-sitter, whose parse trees are millions of
//! small C allocations freed in bulk, and SQLite; with glibc's malloc about a tenth of the
//! index's CPU went to `malloc`, `free` and `malloc_consolidate`. The `override` feature
//! makes mimalloc define `malloc`/`free` for the whole executable (tree-sitter and SQLite
//! included), and it is also Rust's global allocator. Measured on the cargo registry (534
//! crates, 16,359 source files, release, 2 cores; `alembic-bench monorepo`): full index
//! 35–45 s wall and 56–60 CPU-s with glibc → 30–32 s and 48–54 CPU-s.
//!
//! A long-running server frees what a query allocated on tokio's blocking threads, which
//! come and go; mimalloc's default ten-millisecond purge delay then kept 549 MB resident
//! after 1,000 mixed queries on that tree. [`purge_promptly`] makes it return freed pages
//! at once: 114 MB, with the same query latencies. A one-shot index keeps the delay,
//! which saves it about 5 s of `madvise` calls.

use libmimalloc_sys::{mi_option_set, mi_option_t};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v2's `mimalloc.h` (libmimalloc-sys names no
/// constant for it).
const MI_OPTION_PURGE_DELAY: mi_option_t = 15;

/// Makes mimalloc return freed memory to the system without delay, unless the
/// environment sets `MIMALLOC_PURGE_DELAY` (mimalloc reads it itself). For servers
/// (`alembic mcp`, `alembic chat`), whose resident memory should follow what they hold.
pub fn purge_promptly() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mi_option_set only stores an option value that mimalloc reads when it
        // next purges; it is called on the main thread before the server starts others.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constant names mimalloc's purge delay: its default is ten milliseconds.
    #[test]
    fn the_purge_delay_option_is_the_one_purge_promptly_sets() {
        let expected = std::env::var("MIMALLOC_PURGE_DELAY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10);
        // SAFETY: reads an option value.
        let before = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(before, expected);
        purge_promptly();
        // SAFETY: reads an option value.
        let after = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        let env_set = std::env::var_os("MIMALLOC_PURGE_DELAY").is_some();
        assert_eq!(after, if env_set { expected } else { 0 });
    }
}
