//! `alembic`: the command line of the Alembic tool runtime and memory system.

mod allocator;
mod cmd;
mod exit;
mod tool_call;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::exit::Exit;

#[derive(Debug, Parser)]
#[command(
    name = "alembic",
    version,
    about = "Tool runtime and memory for AI coding agents",
    long_about = "Alembic runs tools for AI coding agents safely (allowlists, path confinement, command policy, \
                  audit log) and keeps what they learn about a codebase across sessions.\n\n\
                  Exit codes: 0 ok, 1 tool error, 2 usage or validation error, 3 refused by policy.\n\n\
                  Environment: ALEMBIC_STATE_DIR=DIR keeps each project's database (knowledge, memories, \
                  code index, audit log) in its own directory beneath DIR instead of .alembic/, so a \
                  read-only checkout can be used; ALEMBIC_LOG sets the log level (warn)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Options shared by commands that work on a project.
#[derive(Debug, Clone, clap::Args)]
pub struct ProjectArgs {
    /// Project root (defaults to the current directory). It must have .alembic/, a
    /// version-control root (.git, .hg, .svn, .jj) in it or above it, or a project file
    /// (Cargo.toml, package.json, ...); the home directory needs .alembic/. `alembic init`
    /// makes any directory a project
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub project: PathBuf,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create .alembic/ with a commented config.toml
    Init(cmd::init::InitArgs),
    /// List, inspect and call tools through the full pipeline
    #[command(subcommand)]
    Tools(cmd::tools::ToolsCommand),
    /// Inspect and verify the audit log
    #[command(subcommand)]
    Audit(cmd::audit::AuditCommand),
    /// Serve the project's tools to IDE agents over MCP (stdio, or streamable HTTP with --http)
    Mcp(cmd::mcp::McpArgs),
    /// Build or refresh the code index (incremental; honours .gitignore)
    Index(cmd::index::IndexArgs),
    /// Explain the safety verdict for a command or a path (runs and touches nothing)
    #[command(subcommand)]
    Safety(cmd::safety::SafetyCommand),
    /// Persistent memory: add (consolidating), search, list, show, forget, gc, stats, export, import
    #[command(subcommand)]
    Memory(cmd::memory::MemoryCommand),
    /// Ask the agent one question about the project (answer, then a short trace)
    Ask(cmd::ask::AskArgs),
    /// Talk with the agent about the project (/tools, /memory, /exit)
    Chat(cmd::chat::ChatArgs),
    /// Forge tools: reuse with pre-filled arguments, compose, generate (sandboxed), save, promote
    #[command(subcommand)]
    Forge(cmd::forge::ForgeCommand),
    /// Knowledge base: list, show, search, stats; review candidates (approve, reject, publish, deprecate); export to AGENTS.md, CLAUDE.md or Cursor rules
    #[command(subcommand)]
    Knowledge(cmd::knowledge::KnowledgeCommand),
    /// Cold-start analysis of a project into knowledge candidates and memories (no API key needed)
    Bootstrap(cmd::bootstrap::BootstrapArgs),
    /// Team store on PostgreSQL ([team] in config.toml): set up, inspect, push and pull team memories and the knowledge base
    #[command(subcommand)]
    Team(cmd::team::TeamCommand),
}

fn main() {
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Init(a) => cmd::init::run(a),
        Command::Tools(c) => cmd::tools::run(c),
        Command::Audit(c) => cmd::audit::run(c),
        Command::Mcp(a) => cmd::mcp::run(a),
        Command::Index(a) => cmd::index::run(a),
        Command::Safety(c) => cmd::safety::run(c),
        Command::Memory(c) => cmd::memory::run(c),
        Command::Ask(a) => cmd::ask::run(a),
        Command::Chat(a) => cmd::chat::run(a),
        Command::Forge(c) => cmd::forge::run(c),
        Command::Knowledge(c) => cmd::knowledge::run(c),
        Command::Bootstrap(a) => cmd::bootstrap::run(a),
        Command::Team(c) => cmd::team::run(c),
    };
    std::process::exit(exit::report(result));
}

/// Logs to stderr at `ALEMBIC_LOG` (warn by default) and, separately, copies Alembic's own
/// events to the MCP log bus, which `alembic mcp` forwards to clients that set a level.
fn init_tracing() {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("ALEMBIC_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(filter),
        )
        .with(alembic_mcp::logging::layer())
        .init();
}

/// Result type of every command: `Ok(Exit)` carries a non-error exit code (e.g. a refused tool call).
pub type CmdResult = anyhow::Result<Exit>;
