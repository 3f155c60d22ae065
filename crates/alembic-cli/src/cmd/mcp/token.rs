//! `alembic mcp token create|list|revoke`: the bearer tokens of `alembic mcp --http`.
//!
//! These commands write the token table directly, not through the tool pipeline: minting a
//! credential must never be a tool, since no agent preset could be trusted with it. The
//! server reads the table on every request, so a revocation applies to the next request.

use alembic_mcp::TokenStore;
use alembic_mcp::auth::TokenInfo;
use alembic_runtime::ProjectRuntime;
use clap::Subcommand;
use serde_json::json;

use crate::exit::{Exit, UsageError};
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it once (only its SHA-256 is stored)
    Create {
        /// Name of the token's holder; the audit log shows its calls as caller `mcp:NAME`
        name: String,
        /// The preset the token may use: its allowlist is the caller's allowlist
        #[arg(long, value_name = "P", default_value = "ide")]
        preset: String,
        /// Days until the token expires (default: never)
        #[arg(long, value_name = "DAYS")]
        expires: Option<u32>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// List tokens: name, preset, state (active, expired, revoked), created, expires
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// Revoke a token; the server refuses it from the next request on
    Revoke {
        name: String,
        #[command(flatten)]
        project: ProjectArgs,
    },
}

pub fn run(command: TokenCommand) -> CmdResult {
    match command {
        TokenCommand::Create {
            name,
            preset,
            expires,
            json,
            project,
        } => create(&project, &name, &preset, expires, json),
        TokenCommand::List { json, project } => list(&project, json),
        TokenCommand::Revoke { name, project } => {
            let info = store(&project)?
                .revoke(&name)
                .map_err(|e| UsageError(e.to_string()))?;
            println!(
                "revoked token {:?}: the server refuses it from the next request on",
                info.name
            );
            Ok(Exit::Ok)
        }
    }
}

fn store(project: &ProjectArgs) -> anyhow::Result<TokenStore> {
    let rt = ProjectRuntime::inspect_command(&project.project)?;
    Ok(TokenStore::open_project(&rt.root)?)
}

fn create(
    project: &ProjectArgs,
    name: &str,
    preset: &str,
    expires: Option<u32>,
    json: bool,
) -> CmdResult {
    let rt = ProjectRuntime::inspect_command(&project.project)?;
    rt.config
        .presets
        .allowlist(preset)
        .map_err(|e| UsageError(e.to_string()))?;
    let token = TokenStore::open_project(&rt.root)?
        .create(name, preset, expires)
        .map_err(|e| UsageError(e.to_string()))?;
    if json {
        let v = json!({"name": token.info.name, "preset": token.info.preset,
            "expires": token.info.expires_ms.map(iso), "token": token.secret});
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(Exit::Ok);
    }
    let until = token.info.expires_ms.map_or("never".to_string(), iso);
    println!(
        "token {:?} (preset {}, expires {until}); it is shown only now, store it:\n\n  {}\n",
        token.info.name, token.info.preset, token.secret
    );
    println!(
        "clients send it as `Authorization: Bearer <token>`; the audit log shows caller mcp:{name}"
    );
    Ok(Exit::Ok)
}

fn list(project: &ProjectArgs, json: bool) -> CmdResult {
    let tokens = store(project)?.list()?;
    let now = alembic_runtime::base::unix_ms(std::time::SystemTime::now());
    if json {
        let rows: Vec<_> = tokens.iter().map(|t| row_json(t, now)).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(Exit::Ok);
    }
    if tokens.is_empty() {
        println!("no tokens (alembic mcp token create NAME makes one)");
        return Ok(Exit::Ok);
    }
    println!(
        "{:<24} {:<20} {:<8} {:<21} EXPIRES",
        "NAME", "PRESET", "STATE", "CREATED"
    );
    for t in &tokens {
        println!(
            "{:<24} {:<20} {:<8} {:<21} {}",
            t.name,
            t.preset,
            t.state(now),
            iso(t.created_ms),
            t.expires_ms.map_or("never".to_string(), iso)
        );
    }
    Ok(Exit::Ok)
}

fn row_json(t: &TokenInfo, now: i64) -> serde_json::Value {
    json!({"name": t.name, "preset": t.preset, "state": t.state(now),
        "created": iso(t.created_ms), "expires": t.expires_ms.map(iso),
        "revoked": t.revoked_ms.map(iso)})
}

fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| ms.to_string())
}
