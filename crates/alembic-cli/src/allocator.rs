//! The process's memory allocator: mimalloc, for Rust and C code alike.
//!
//! A full index spends most of its time in tree-sitter, whose parse trees are millions of
//! small C allocations freed in bulk, and SQLite; with glibc's malloc about a tenth of the
//! index's CPU went to `malloc`, `free` and `malloc_consolidate`. The `override` feature
//! makes mimalloc define `malloc`/`free` for the whole executable (tree-sitter and SQLite
//! included), and it is also Rust's global allocator. Measured on the cargo registry (534
//! crates, 16,359 source files, release, 2 cores), full index 35.3–38.8 s → 31.1–31.9 s
//! wall and 56–57 → 51 CPU-s; the server's memory after 1,000 mixed queries stays under
//! glibc's with two arenas (`alembic-bench monorepo`).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
