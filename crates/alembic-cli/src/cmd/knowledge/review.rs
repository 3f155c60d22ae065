//! `alembic knowledge review`: the candidates one at a time, each with its claim and the
//! cited evidence lines, and one key to decide: approve, reject (with a reason), edit the
//! title and summary, publish (approving first when needed), skip, or quit. Keys are read a
//! line at a time from stdin, so the same flow runs on a terminal or from a script. Every
//! decision is the lifecycle tool's call as caller `cli`, like the single-entry commands.

use std::io::{BufRead, Write};

use alembic_runtime::ProjectRuntime;
use alembic_runtime::knowledge::{Entry, Filter, Status};
use clap::Args;
use serde_json::{Value, json};

use super::{JsonArgs, line, move_call, read_with, usage_err};
use crate::CmdResult;
use crate::exit::{Exit, UsageError};

/// Lines of the content shown under the summary.
const CONTENT_LINES: usize = 8;
/// Evidence places shown per candidate.
const EVIDENCE_PLACES: usize = 5;

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Only candidates of this bootstrap dimension
    #[arg(long, value_name = "D")]
    pub dimension: Option<String>,
    /// Which candidates: submitted (default) or approved
    #[arg(long, value_name = "S", default_value = "submitted")]
    pub status: String,
    #[command(flatten)]
    pub out: JsonArgs,
}

/// What the session did, by decision.
#[derive(Default)]
struct Tally {
    approved: Vec<String>,
    published: Vec<String>,
    rejected: Vec<String>,
    edited: Vec<String>,
    skipped: Vec<String>,
}

pub fn run(a: ReviewArgs) -> CmdResult {
    let status: Status = a.status.parse().map_err(usage_err)?;
    if !matches!(status, Status::Submitted | Status::Approved) {
        return Err(UsageError(format!(
            "--status {status}: review takes submitted or approved candidates"
        ))
        .into());
    }
    let rt = ProjectRuntime::open_command(&a.out.project.project)?;
    let filter = Filter {
        statuses: vec![status],
        limit: 100_000,
        ..Filter::default()
    };
    let mut queue = read_with(&rt, |kb| kb.list(&filter))??;
    if let Some(d) = &a.dimension {
        queue.retain(|e| super::bulk::in_dimension(e, d));
    }
    queue.reverse();
    // The human flow goes to stdout; with --json it goes to stderr and stdout holds the tally.
    let mut out: Box<dyn Write> = match a.out.json {
        true => Box::new(std::io::stderr()),
        false => Box::new(std::io::stdout()),
    };
    let mut input = std::io::stdin().lock();
    let mut tally = Tally::default();
    let total = queue.len();
    'entries: for (n, mut entry) in queue.into_iter().enumerate() {
        loop {
            show(&rt, &mut *out, &entry, n + 1, total)?;
            write!(
                out,
                "[a]pprove  [r]eject  [e]dit  [p]ublish  [s]kip  [q]uit > "
            )?;
            out.flush()?;
            let Some(key) = read_line(&mut input)? else {
                break 'entries;
            };
            match key.as_str() {
                "a" | "approve" => {
                    if decide(&rt, &mut *out, &entry, Status::Approved, None)? {
                        tally.approved.push(entry.id.clone());
                    }
                }
                "p" | "publish" => {
                    let approved = entry.status == Status::Approved
                        || decide(&rt, &mut *out, &entry, Status::Approved, None)?;
                    if approved && decide(&rt, &mut *out, &entry, Status::Published, None)? {
                        tally.published.push(entry.id.clone());
                    }
                }
                "r" | "reject" => {
                    write!(out, "reason > ")?;
                    out.flush()?;
                    let reason = read_line(&mut input)?.unwrap_or_default();
                    if reason.is_empty() {
                        writeln!(out, "a reason is required to reject; not rejected")?;
                        continue;
                    }
                    if decide(&rt, &mut *out, &entry, Status::Rejected, Some(&reason))? {
                        tally.rejected.push(entry.id.clone());
                    }
                }
                "e" | "edit" => {
                    if let Some(edited) = edit(&rt, &mut *out, &mut input, &entry)? {
                        tally.edited.push(entry.id.clone());
                        entry = edited;
                    }
                    continue;
                }
                "s" | "skip" | "" => tally.skipped.push(entry.id.clone()),
                "q" | "quit" => break 'entries,
                other => {
                    writeln!(out, "unknown key {other:?}: a, r, e, p, s or q")?;
                    continue;
                }
            }
            continue 'entries;
        }
    }
    report(&a, &mut *out, &tally, total)?;
    Ok(Exit::Ok)
}

/// One line of stdin, trimmed; `None` at the end of input.
fn read_line(input: &mut impl BufRead) -> anyhow::Result<Option<String>> {
    let mut text = String::new();
    if input.read_line(&mut text)? == 0 {
        return Ok(None);
    }
    Ok(Some(text.trim().to_string()))
}

fn show(
    rt: &ProjectRuntime,
    out: &mut dyn Write,
    e: &Entry,
    n: usize,
    total: usize,
) -> anyhow::Result<()> {
    writeln!(out, "\n[{n}/{total}] {}", line(e))?;
    if !e.description.trim().is_empty() {
        writeln!(out, "  {}", e.description.trim())?;
    }
    for l in e.content.lines().take(CONTENT_LINES) {
        writeln!(out, "  | {l}")?;
    }
    let places = evidence(e);
    if !places.is_empty() {
        writeln!(out, "  evidence:")?;
    }
    for (file, at) in places.iter().take(EVIDENCE_PLACES) {
        // Read through the project's PathGuard: evidence names come from the repository.
        let text = rt
            .services()
            .safety
            .guard
            .read_to_string(file)
            .ok()
            .and_then(|t| t.lines().nth(at.saturating_sub(1)).map(str::to_owned))
            .unwrap_or_else(|| "(line not readable)".into());
        writeln!(out, "    {file}:{at}  {}", text.trim())?;
    }
    Ok(())
}

/// The `file:line` places of `extra.evidence`.
fn evidence(e: &Entry) -> Vec<(String, usize)> {
    let Some(Value::Array(items)) = e.extra.get("evidence") else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|v| {
            let file = v.get("file")?.as_str()?.to_string();
            let at = usize::try_from(v.get("line")?.as_u64()?).ok()?;
            Some((file, at))
        })
        .collect()
}

/// Moves `e` to `to` through the lifecycle tool; false (after saying why) when refused.
fn decide(
    rt: &ProjectRuntime,
    out: &mut dyn Write,
    e: &Entry,
    to: Status,
    reason: Option<&str>,
) -> anyhow::Result<bool> {
    let (tool, args) = move_call(to, &e.id, reason);
    let moved = crate::tool_call::call_as_cli(rt, tool, args)?.is_ok();
    if moved {
        writeln!(out, "{} -> {}", e.id, to.as_str())?;
    }
    Ok(moved)
}

/// Asks for a new title and summary (empty keeps each) and saves them with `update_recipe`
/// (the candidate stays under review); the entry as stored afterwards.
fn edit(
    rt: &ProjectRuntime,
    out: &mut dyn Write,
    input: &mut impl BufRead,
    e: &Entry,
) -> anyhow::Result<Option<Entry>> {
    write!(out, "title [{}] > ", e.title)?;
    out.flush()?;
    let title = read_line(input)?.unwrap_or_default();
    write!(out, "summary [{}] > ", e.description.trim())?;
    out.flush()?;
    let summary = read_line(input)?.unwrap_or_default();
    let mut updates = serde_json::Map::new();
    if !title.is_empty() {
        updates.insert("title".into(), json!(title));
    }
    if !summary.is_empty() {
        updates.insert("description".into(), json!(summary));
    }
    if updates.is_empty() {
        writeln!(out, "nothing changed")?;
        return Ok(None);
    }
    let args = json!({"candidateId": e.id, "updates": updates, "resubmit": false});
    if crate::tool_call::call_as_cli(rt, "update_recipe", args)?.is_err() {
        return Ok(None);
    }
    Ok(Some(read_with(rt, |kb| kb.get(&e.id))??))
}

fn report(a: &ReviewArgs, out: &mut dyn Write, t: &Tally, total: usize) -> anyhow::Result<()> {
    if a.out.json {
        let data = json!({
            "candidates": total,
            "approved": t.approved, "published": t.published, "rejected": t.rejected,
            "edited": t.edited, "skipped": t.skipped,
        });
        println!("{}", serde_json::to_string_pretty(&data)?);
        return Ok(());
    }
    if total == 0 {
        writeln!(out, "no candidates to review")?;
        return Ok(());
    }
    writeln!(
        out,
        "\nreviewed: {} approved, {} published, {} rejected, {} edited, {} skipped (of {total})",
        t.approved.len(),
        t.published.len(),
        t.rejected.len(),
        t.edited.len(),
        t.skipped.len()
    )?;
    Ok(())
}
