//! How many malloc arenas the process keeps.
//!
//! glibc gives each thread that allocates under contention an arena of its own, up to eight
//! per core, and returns little of their free memory to the system. A long-running `alembic
//! mcp` or `chat` answers queries on tokio's and rayon's threads, so its resident memory
//! grew with the arenas rather than with what it held: after 1,000 mixed queries on the
//! cargo registry (534 crates) it was 589 MB with the default and 276 MB with two arenas,
//! with the same query latencies and index time (`alembic-bench monorepo`, release).

/// Arenas the process uses unless `MALLOC_ARENA_MAX` says otherwise.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const ARENAS: libc::c_int = 2;

/// Caps glibc's malloc arenas at [`ARENAS`], unless the environment sets
/// `MALLOC_ARENA_MAX` (glibc reads it itself). Does nothing on other C libraries.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only changes allocator parameters; it is called before any
        // thread is started, and a refused value (return 0) leaves the default in place.
        let changed = unsafe { libc::mallopt(libc::M_ARENA_MAX, ARENAS) };
        if changed == 0 {
            eprintln!("warning: could not limit malloc arenas; memory may grow with threads");
        }
    }
}
