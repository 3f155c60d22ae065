//! `alembic knowledge export --format agents-md|claude-md|cursor-rules [--output PATH]`
//!
//! Renders the published knowledge (`alembic_knowledge::export`) and writes it inside the
//! marked block of the target file. Every file is merged before anything is written, so a
//! refused file (broken markers, invalid Cursor front matter) leaves every file as it was.
//! Writes are `write_project_file` calls as caller `cli` (PathGuard-confined beneath the
//! project root, audited); a file whose text would not change is not written. With nothing
//! published no file is written at all: the command says how many candidates await review.

use std::path::Path;

use alembic_runtime::ProjectRuntime;
use alembic_runtime::knowledge::export::{self as guideline, GuidelineFormat};
use alembic_runtime::knowledge::{Filter, Status};
use alembic_runtime::safety::PathError;
use clap::Args;
use serde_json::json;

use super::{JsonArgs, read_with};
use crate::CmdResult;
use crate::exit::{Exit, UsageError};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// agents-md (AGENTS.md), claude-md (CLAUDE.md) or cursor-rules (.cursor/rules/alembic.mdc,
    /// plus one glob-attached rule per language beside it)
    #[arg(long, value_name = "FORMAT")]
    pub format: String,
    /// File to write, relative to the project root (default: the format's usual file)
    #[arg(long, value_name = "PATH")]
    pub output: Option<String>,
    #[command(flatten)]
    pub out: JsonArgs,
}

/// One file of the export and what happens to it.
struct Planned {
    path: String,
    text: String,
    status: &'static str,
}

pub fn run(a: ExportArgs) -> CmdResult {
    let format: GuidelineFormat = a
        .format
        .parse()
        .map_err(|e: guideline::ExportError| UsageError(e.to_string()))?;
    let rt = ProjectRuntime::open_command(&a.out.project.project)?;
    let path = relative_output(&rt.root, a.output.as_deref(), format)?;
    let filter = Filter {
        statuses: vec![Status::Published],
        limit: 100_000,
        ..Filter::default()
    };
    let entries = read_with(&rt, |kb| kb.list(&filter))??;
    if entries.is_empty() {
        return nothing_published(&rt, &a, format);
    }
    let files = guideline::render(format, &entries, &path);
    let mut planned = Vec::new();
    for file in &files {
        let existing = existing_text(&rt, &file.path)?;
        let text =
            guideline::merge(existing.as_deref(), file).map_err(|e| UsageError(e.to_string()))?;
        let status = match existing {
            None => "created",
            Some(old) if old == text => "unchanged",
            Some(_) => "updated",
        };
        planned.push(Planned {
            path: file.path.clone(),
            text,
            status,
        });
    }
    for p in planned.iter().filter(|p| p.status != "unchanged") {
        let args = json!({"filePath": p.path, "content": p.text});
        if let Err(exit) = crate::tool_call::call_as_cli(&rt, "write_project_file", args)? {
            return Ok(exit);
        }
    }
    print_report(&a, format, entries.len(), &planned)?;
    Ok(Exit::Ok)
}

/// With nothing published an export would write an empty block: write nothing, and say how
/// many candidates await review and how to review them.
fn nothing_published(rt: &ProjectRuntime, a: &ExportArgs, format: GuidelineFormat) -> CmdResult {
    let waiting = Filter {
        statuses: vec![Status::Submitted, Status::Approved],
        limit: 100_000,
        ..Filter::default()
    };
    let candidates = read_with(rt, |kb| kb.list(&waiting))??;
    let approved = candidates
        .iter()
        .filter(|e| e.status == Status::Approved)
        .count();
    let submitted = candidates.len() - approved;
    let hint = "review them with `alembic knowledge list --status submitted`, then                 `alembic knowledge approve --all` (or IDs) and `alembic knowledge publish --all`";
    if a.out.json {
        let data = json!({
            "format": format.as_str(), "entries": 0, "files": [],
            "awaitingReview": {"submitted": submitted, "approved": approved},
            "hint": hint,
        });
        println!("{}", serde_json::to_string_pretty(&data)?);
        return Ok(Exit::Ok);
    }
    println!(
        "nothing published yet, so no file was written; {} candidates await review \
         ({submitted} submitted, {approved} approved): {hint}",
        candidates.len()
    );
    Ok(Exit::Ok)
}

/// The output path relative to the project root; an absolute path must lie beneath it.
fn relative_output(
    root: &Path,
    output: Option<&str>,
    format: GuidelineFormat,
) -> anyhow::Result<String> {
    let Some(out) = output else {
        return Ok(format.default_path().to_owned());
    };
    let p = Path::new(out);
    if !p.is_absolute() {
        return Ok(out.to_owned());
    }
    p.strip_prefix(root)
        .ok()
        .and_then(|r| r.to_str())
        .map(str::to_owned)
        .ok_or_else(|| {
            UsageError(format!(
                "--output {out} is outside the project root {}: give a path beneath it",
                root.display()
            ))
            .into()
        })
}

/// The file's text, `None` when it does not exist yet (read through the project's PathGuard).
fn existing_text(rt: &ProjectRuntime, path: &str) -> anyhow::Result<Option<String>> {
    match rt.services().safety.guard.read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(PathError::NotFound { .. }) => Ok(None),
        Err(e) => Err(UsageError(format!("cannot read {path}: {e}")).into()),
    }
}

fn print_report(
    a: &ExportArgs,
    format: GuidelineFormat,
    entries: usize,
    planned: &[Planned],
) -> anyhow::Result<()> {
    if a.out.json {
        let files: Vec<_> = planned
            .iter()
            .map(|p| json!({"path": p.path, "status": p.status}))
            .collect();
        let data = json!({"format": format.as_str(), "entries": entries, "files": files});
        println!("{}", serde_json::to_string_pretty(&data)?);
        return Ok(());
    }
    for p in planned {
        println!("{} {} ({entries} published entries)", p.status, p.path);
    }
    Ok(())
}
