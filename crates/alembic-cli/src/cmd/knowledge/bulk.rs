//! Bulk review: `alembic knowledge approve|reject|publish|deprecate` with several ids, or a
//! selection (`--all`, `--dimension D`, `--status S`). A selection is counted and confirmed
//! on a terminal (or `--yes`) before anything moves; without a terminal and without `--yes`
//! it is a usage error, so a script never moves more than it meant to. Each move is its own
//! lifecycle-tool call as caller `cli` (policy-checked and audited like a single move).

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use alembic_runtime::ProjectRuntime;
use alembic_runtime::knowledge::{Entry, Filter, KnowledgeError, Status};
use clap::Args;
use serde_json::json;

use super::{MoveArgs, line, move_call, read_with, usage_err};
use crate::CmdResult;
use crate::exit::{Exit, UsageError};

#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Every entry the move applies to (approve: every submitted candidate; publish: every
    /// approved one; reject: submitted and approved ones)
    #[arg(long, conflicts_with = "ids")]
    pub all: bool,
    /// Only entries of this bootstrap dimension (its `dimension:D` tag)
    #[arg(long, value_name = "D", conflicts_with = "ids")]
    pub dimension: Option<String>,
    /// Only entries in this status (one the move is allowed from)
    #[arg(long, value_name = "S", conflicts_with = "ids")]
    pub status: Option<String>,
    /// Move the selection without asking
    #[arg(long, short = 'y')]
    pub yes: bool,
}

impl SelectArgs {
    pub fn any(&self) -> bool {
        self.all || self.dimension.is_some() || self.status.is_some()
    }
}

/// Imperative verb of a move to `to` ("approve").
fn verb(to: Status) -> &'static str {
    match to {
        Status::Approved => "approve",
        Status::Rejected => "reject",
        Status::Published => "publish",
        Status::Deprecated => "deprecate",
        Status::Submitted => "submit",
        Status::Draft => "reopen",
    }
}

pub fn run(rt: &ProjectRuntime, a: &MoveArgs, to: Status) -> CmdResult {
    let reason = a.reason.as_deref().filter(|r| !r.trim().is_empty());
    if to.needs_reason() && reason.is_none() {
        return Err(UsageError(format!(
            "a --reason is required to {} entries (it is kept in each entry's history)",
            verb(to)
        ))
        .into());
    }
    let selected = if a.select.any() {
        select(rt, &a.select, to)?
    } else {
        named(rt, &a.ids, to)?
    };
    if selected.is_empty() {
        return report(a, to, &[], &[]);
    }
    if a.select.any() && !a.select.yes && !confirm(selected.len(), to)? {
        eprintln!("nothing changed");
        return Ok(Exit::Ok);
    }
    let (mut moved, mut failed) = (Vec::new(), Vec::new());
    let mut exit = Exit::Ok;
    for entry in &selected {
        let (tool, args) = move_call(to, &entry.id, reason);
        match crate::tool_call::call_as_cli(rt, tool, args)? {
            Ok(_) => moved.push(read_with(rt, |kb| kb.get(&entry.id))??),
            Err(code) => {
                if exit == Exit::Ok {
                    exit = code;
                }
                failed.push(entry.id.clone());
            }
        }
    }
    report(a, to, &moved, &failed)?;
    Ok(exit)
}

/// The entries named by id, all checked before any moves: a missing id or one whose state
/// does not allow the move is an error naming it.
fn named(rt: &ProjectRuntime, ids: &[String], to: Status) -> anyhow::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for id in ids {
        let entry = read_with(rt, |kb| kb.get(id))??;
        if !entry.status.can_move_to(to) {
            return Err(usage_err(KnowledgeError::InvalidTransition {
                id: id.clone(),
                from: entry.status,
                to,
                allowed: entry.status.next(),
            }));
        }
        out.push(entry);
    }
    Ok(out)
}

/// The entries a selection names that can move to `to`, oldest first.
fn select(rt: &ProjectRuntime, s: &SelectArgs, to: Status) -> anyhow::Result<Vec<Entry>> {
    let from: Vec<Status> = Status::ALL
        .into_iter()
        .filter(|st| st.can_move_to(to))
        .collect();
    let statuses = match &s.status {
        None => from,
        Some(text) => {
            let st: Status = text.parse().map_err(usage_err)?;
            if !st.can_move_to(to) {
                let allowed: Vec<&str> = from.iter().map(|f| f.as_str()).collect();
                return Err(UsageError(format!(
                    "--status {st}: {} moves entries from {} only",
                    verb(to),
                    allowed.join(" or ")
                ))
                .into());
            }
            vec![st]
        }
    };
    let filter = Filter {
        statuses,
        limit: 100_000,
        ..Filter::default()
    };
    let mut entries = read_with(rt, |kb| kb.list(&filter))??;
    if let Some(d) = &s.dimension {
        entries.retain(|e| in_dimension(e, d));
    }
    entries.reverse();
    Ok(entries)
}

/// Whether `e` belongs to bootstrap dimension `d` (its tag or its recorded dimension id).
pub(super) fn in_dimension(e: &Entry, d: &str) -> bool {
    let tag = format!("dimension:{d}");
    e.tags.iter().any(|t| t.eq_ignore_ascii_case(&tag))
        || e.extra
            .get("dimensionId")
            .and_then(|v| v.as_str())
            .is_some_and(|v| v.eq_ignore_ascii_case(d))
}

/// Asks on the terminal; without one, a usage error that names `--yes`.
fn confirm(count: usize, to: Status) -> anyhow::Result<bool> {
    let question = format!("{} {count} entries?", verb(to));
    if !std::io::stdin().is_terminal() {
        return Err(UsageError(format!(
            "{question} there is no terminal to confirm on: pass --yes to {} them",
            verb(to)
        ))
        .into());
    }
    eprint!("{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

fn report(a: &MoveArgs, to: Status, moved: &[Entry], failed: &[String]) -> CmdResult {
    if a.out.json {
        let data = json!({
            "action": verb(to),
            "count": moved.len(),
            "moved": moved,
            "failed": failed,
        });
        println!("{}", serde_json::to_string_pretty(&data)?);
        return Ok(Exit::Ok);
    }
    if moved.is_empty() && failed.is_empty() {
        println!("nothing to {}", verb(to));
        return Ok(Exit::Ok);
    }
    moved.iter().for_each(|e| println!("{}", line(e)));
    println!("{} {} entries", to.as_str(), moved.len());
    if !failed.is_empty() {
        println!("not moved ({}): {}", failed.len(), failed.join(", "));
    }
    Ok(Exit::Ok)
}
