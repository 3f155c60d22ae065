//! `alembic-bench`: benchmarks that print figures. One subcommand per module of the library.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use alembic_bench::{
    bootstrap, bootstrap_llm, durability, locomo, mcp, mcp_http, memory_scale, monorepo, team_mix,
};
use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "alembic-bench",
    about = "Alembic benchmarks (build with --release for timings)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// LoCoMo turn retrieval: hit@1/5/10, MRR, nDCG@10, latency; default vs relevance-only.
    Locomo {
        /// LoCoMo JSON (the dev split lives in ../shared/data/locomo-dev.json).
        #[arg(long)]
        data: PathBuf,
        /// Directory with all-MiniLM-L6-v2 (model.safetensors, tokenizer.json, config.json);
        /// without it retrieval is lexical only.
        #[arg(long)]
        embedder_dir: Option<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Store the memories in the team store on this PostgreSQL server instead of SQLite
        /// (one new team per conversation), to compare the two backends.
        #[arg(long, value_name = "URL")]
        team_url: Option<String>,
    },
    /// Persistent memory at scale: retrieval p50/p95 and add+consolidate throughput.
    MemoryScale {
        /// Store sizes to measure.
        #[arg(long, value_delimiter = ',', default_value = "500,100000")]
        sizes: Vec<usize>,
        /// Queries per size.
        #[arg(long, default_value_t = 200)]
        queries: usize,
        #[arg(long)]
        json: bool,
    },
    /// Team memories at scale (issue 18): concurrent clients mixing retrieve (80 %) and add
    /// with consolidation (20 %) on the team store, then the same on SQLite in one process;
    /// p50/p95/p99, errors, and every acknowledged write looked up after the run.
    TeamMix {
        /// The PostgreSQL server (a new team is made on it for the run).
        #[arg(long, value_name = "URL")]
        team_url: String,
        /// Memories seeded before the mix.
        #[arg(long, default_value_t = 100_000)]
        memories: usize,
        /// Concurrent clients (threads, each with its own team store handle).
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// Operations per client.
        #[arg(long, default_value_t = 250)]
        ops: usize,
        /// Run on this team instead of a new one: seeded on the first run, reused (not
        /// seeded again) while it holds at least `--memories` rows, to measure a change
        /// without waiting for the seed each time.
        #[arg(long, value_name = "NAME")]
        team: Option<String>,
        /// Skip the SQLite comparison.
        #[arg(long)]
        postgres_only: bool,
        #[arg(long)]
        json: bool,
    },
    /// `alembic mcp` over stdio: spawn → first tools/list answer, and calls/s of a cheap tool.
    Mcp {
        /// Project the server opens (any directory; .alembic/ is created in it).
        #[arg(long)]
        project: PathBuf,
        /// The alembic binary (default: next to this one).
        #[arg(long)]
        alembic: Option<PathBuf>,
        /// How many times to spawn the server for the startup figure.
        #[arg(long, default_value_t = 20)]
        spawns: usize,
        /// Calls for the throughput figure.
        #[arg(long, default_value_t = 2000)]
        calls: usize,
        #[arg(long)]
        json: bool,
    },
    /// `alembic mcp --http` under load: concurrent token-authenticated sessions making mixed
    /// tool calls on loopback; errors, p50/p95 per tool, server RSS before and after.
    McpHttp {
        #[arg(long, default_value_t = 32)]
        sessions: usize,
        /// Calls per session.
        #[arg(long, default_value_t = 500)]
        calls: usize,
        #[arg(long)]
        json: bool,
    },
    /// The server process of `mcp-http` (prints `listening <url>`, serves until killed).
    #[command(hide = true)]
    McpHttpServe {
        #[arg(long)]
        project: PathBuf,
    },
    /// Deterministic `alembic bootstrap`: wall time and peak RSS on this repository and on a
    /// ~1,000-file tree from the local cargo registry (copied to a temp dir first).
    Bootstrap {
        /// The repository to measure (default: the current directory).
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        /// Source files the registry tree should have.
        #[arg(long, default_value_t = 1000)]
        files: usize,
        /// The alembic binary (default: next to this one).
        #[arg(long)]
        alembic: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Scripted LLM bootstrap (fake server): requests, tokens and cache hits per dimension,
    /// shared SessionStore vs one per dimension.
    BootstrapLlm {
        #[arg(long)]
        json: bool,
    },
    /// Code intelligence at monorepo scale (issue 17) on a copy of the cargo registry
    /// sources: full and one-file index, cold graph query, MCP query latency and memory,
    /// search vs rg.
    Monorepo {
        /// Tree to copy instead of the cargo registry sources.
        #[arg(long)]
        tree: Option<PathBuf>,
        /// Copy registry crates (largest first) only until this many source files.
        #[arg(long)]
        max_files: Option<usize>,
        /// The alembic binary (default: next to this one).
        #[arg(long)]
        alembic: Option<PathBuf>,
        /// Measure the library in this process instead of the alembic binary.
        #[arg(long)]
        in_process: bool,
        /// Mixed queries before the memory reading.
        #[arg(long, default_value_t = 1000)]
        queries: usize,
        #[arg(long)]
        json: bool,
    },
    /// Writer process of the durability test (prints `ack <id>` per committed write).
    #[command(hide = true)]
    DurabilityWriter {
        #[arg(long)]
        db: PathBuf,
        #[arg(long)]
        writer: u32,
        #[arg(long, default_value_t = 10_000)]
        duration_ms: u64,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Locomo {
            data,
            embedder_dir,
            json,
            team_url,
        } => run_locomo(&data, embedder_dir, json, team_url),
        Command::MemoryScale {
            sizes,
            queries,
            json,
        } => {
            let report = memory_scale::run(&sizes, queries)?;
            print(json, &report, memory_scale::render(&report))
        }
        Command::TeamMix {
            team_url,
            memories,
            clients,
            ops,
            team,
            postgres_only,
            json,
        } => {
            let options = team_mix::Options {
                team_url,
                memories,
                clients,
                ops_per_client: ops,
                team,
                postgres_only,
            };
            let report = team_mix::run(&options)?;
            print(json, &report, team_mix::render(&report))
        }
        Command::Mcp {
            project,
            alembic,
            spawns,
            calls,
            json,
        } => {
            let alembic = match alembic {
                Some(p) => p,
                None => std::env::current_exe()?.with_file_name("alembic"),
            };
            let report = mcp::run(&alembic, &project, spawns, calls)?;
            print(json, &report, mcp::render(&report))
        }
        Command::McpHttp {
            sessions,
            calls,
            json,
        } => {
            let report = mcp_http::run(sessions, calls)?;
            print(json, &report, mcp_http::render(&report))
        }
        Command::McpHttpServe { project } => mcp_http::serve(&project),
        Command::Bootstrap {
            repo,
            files,
            alembic,
            json,
        } => {
            let alembic = match alembic {
                Some(p) => p,
                None => std::env::current_exe()?.with_file_name("alembic"),
            };
            let report = bootstrap::run(&alembic, &repo, files)?;
            print(json, &report, bootstrap::render(&report))
        }
        Command::Monorepo {
            tree,
            max_files,
            alembic,
            in_process,
            queries,
            json,
        } => {
            let alembic = match (in_process, alembic) {
                (true, _) => None,
                (false, Some(p)) => Some(p),
                (false, None) => Some(std::env::current_exe()?.with_file_name("alembic")),
            };
            let options = monorepo::Options {
                tree,
                max_files,
                alembic,
                queries,
            };
            let report = monorepo::run(&options)?;
            print(json, &report, monorepo::render(&report))
        }
        Command::BootstrapLlm { json } => {
            let report = bootstrap_llm::run()?;
            print(json, &report, bootstrap_llm::render(&report))
        }
        Command::DurabilityWriter {
            db,
            writer,
            duration_ms,
        } => {
            durability::run_writer(&db, writer, Duration::from_millis(duration_ms))?;
            Ok(())
        }
    }
}

fn run_locomo(
    data: &std::path::Path,
    embedder_dir: Option<PathBuf>,
    json: bool,
    team_url: Option<String>,
) -> Result<()> {
    let conversations = locomo::load(data)?;
    let embedder: Option<Arc<dyn alembic_memory::Embedder>> = match embedder_dir {
        Some(dir) => {
            alembic_memory::build_embedder(&alembic_memory::EmbedderConfig::Local { dir })?
        }
        None => None,
    };
    let backend = team_url.map_or(locomo::Backend::Sqlite, |url| locomo::Backend::Postgres {
        url,
    });
    let report = locomo::evaluate_on(&conversations, embedder, false, &backend)?;
    print(json, &report, locomo::render(&report))
}

fn print<T: serde::Serialize>(json: bool, value: &T, text: String) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        print!("{text}");
    }
    Ok(())
}
