//! `alembic audit tail|verify`

use alembic_runtime::tools::audit::{self, AuditRecord};
use anyhow::Context;
use clap::{Args, Subcommand};

use crate::exit::Exit;
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Print the most recent tool calls
    Tail(TailArgs),
    /// Check the keyed hash chain and its anchor; names the first break and exits non-zero
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct TailArgs {
    /// How many records
    #[arg(short = 'n', long, default_value_t = 20)]
    pub n: usize,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
}

pub fn run(cmd: AuditCommand) -> CmdResult {
    match cmd {
        AuditCommand::Tail(a) => tail(a),
        AuditCommand::Verify(a) => verify(a),
    }
}

fn open(project: &ProjectArgs) -> anyhow::Result<alembic_runtime::store::rusqlite::Connection> {
    let path = alembic_runtime::store::project_db_path(&project.project);
    if !path.exists() {
        anyhow::bail!(crate::exit::UsageError(format!(
            "no audit log at {} (run a tool first, or alembic init)",
            path.display()
        )));
    }
    audit::open_audit_db(&path).with_context(|| format!("cannot open {}", path.display()))
}

fn tail(args: TailArgs) -> CmdResult {
    let conn = open(&args.project)?;
    let rows = audit::tail(&conn, args.n)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        for r in &rows {
            println!("{}", render(r));
        }
    }
    Ok(Exit::Ok)
}

fn render(r: &AuditRecord) -> String {
    let e = &r.entry;
    let rule = e
        .rule
        .as_deref()
        .map(|x| format!(" [{x}]"))
        .unwrap_or_default();
    let parent = e
        .parent_call_id
        .as_deref()
        .map(|p| format!(" (in {p})"))
        .unwrap_or_default();
    format!(
        "#{} {} {} {} {}{rule} {:.1}ms{parent}: {}",
        r.seq,
        e.ts,
        e.caller,
        e.tool,
        e.verdict,
        e.duration_us as f64 / 1000.0,
        e.outcome.lines().next().unwrap_or_default()
    )
}

fn verify(args: VerifyArgs) -> CmdResult {
    let conn = open(&args.project)?;
    let report = audit::verify(&conn)?;
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["intact"] = report.is_intact().into();
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        for note in &report.notes {
            println!("note: {note}");
        }
        match &report.first_break {
            None => println!(
                "ok: {} records, chain intact{}",
                report.records,
                match &report.anchor {
                    Some(a) => format!(" (anchored at seq {})", a.seq),
                    None => String::new(),
                }
            ),
            Some(b) => println!(
                "broken at record #{}: {} ({} records)",
                b.seq, b.reason, report.records
            ),
        }
    }
    Ok(if report.is_intact() {
        Exit::Ok
    } else {
        Exit::ToolError
    })
}
