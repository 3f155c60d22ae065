//! Benchmarks for Alembic, run through the `alembic-bench` binary (`src/main.rs` dispatches
//! one subcommand to each module). They print figures; targets are asserted by tests.
//!
//! - [`locomo`]: LoCoMo turn retrieval for persistent memory (hit@k, MRR, nDCG, latency).
//! - [`memory_scale`]: retrieval latency at 500 and 100,000 memories, add+consolidate throughput.
//! - [`mcp`]: `alembic mcp` spawn-to-first-`tools/list` time and cheap-call throughput.
//! - [`mcp_http`]: `alembic mcp --http` with 32 token-authenticated sessions × 500 mixed calls:
//!   errors, p50/p95 per tool, server RSS before and after.
//! - [`bootstrap`]: deterministic `alembic bootstrap` wall time and peak RSS on this repository
//!   and on a ~1,000-file tree from the local cargo registry.
//! - [`bootstrap_llm`]: the scripted LLM bootstrap path, requests/tokens/cache hits per
//!   dimension with a shared SessionStore and with one per dimension.
//! - [`monorepo`]: code intelligence on a copy of the cargo registry sources (~23,500
//!   files): full and one-file index, cold graph query, MCP latency and memory, search vs rg.
//! - [`team_mix`]: team memories at scale (issue 18): 8 clients mixing retrieve and
//!   add+consolidate over 100,000 memories on PostgreSQL and on SQLite; p50/p95/p99, errors,
//!   lost acknowledged writes.
//! - [`durability`]: the writer process used by the multi-process durability test.
//!
//! ```no_run
//! let data = std::path::Path::new("../shared/data/locomo-dev.json");
//! let conversations = alembic_bench::locomo::load(data).unwrap();
//! let report = alembic_bench::locomo::evaluate(&conversations, None).unwrap();
//! println!("{}", alembic_bench::locomo::render(&report));
//! ```

pub mod bootstrap;
pub mod bootstrap_llm;
pub mod durability;
pub mod locomo;
pub mod mcp;
pub mod mcp_http;
pub mod memory_scale;
pub mod monorepo;
pub mod team_mix;
