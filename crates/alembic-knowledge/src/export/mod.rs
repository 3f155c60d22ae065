//! Agent guideline export: published knowledge rendered into the files coding agents read
//! without MCP — `AGENTS.md`, `CLAUDE.md` and Cursor rules (`.cursor/rules/*.mdc`).
//!
//! Pure functions: [`render`] turns entries into [`GuidelineFile`]s, [`merge`] puts a file's
//! block into the text already on disk. The block sits between two marker lines; text outside
//! it is never changed, a second export of the same knowledge gives a byte-identical file, and
//! a file whose markers are broken or duplicated is refused rather than guessed at.
//!
//! Cursor rules follow Cursor's front matter (`description`, unquoted comma-separated `globs`,
//! `alwaysApply` as a YAML boolean). Knowledge tied to a language becomes its own glob-attached
//! rule (`alembic-<language>.mdc`) instead of part of an always-on rule.

mod render;
#[cfg(test)]
mod tests;

use std::str::FromStr;

pub use render::{MAX_BLOCK_LINES, render};

/// First line of the managed block.
pub const BEGIN_MARKER: &str = "<!-- alembic:begin knowledge (written by `alembic knowledge export`; edits inside are replaced) -->";
/// Last line of the managed block.
pub const END_MARKER: &str = "<!-- alembic:end knowledge -->";
const BEGIN_PREFIX: &str = "<!-- alembic:begin";
const END_PREFIX: &str = "<!-- alembic:end";

/// Which agent's guideline file to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuidelineFormat {
    AgentsMd,
    ClaudeMd,
    CursorRules,
}

impl GuidelineFormat {
    pub const ACCEPTED: &'static str = "agents-md, claude-md, cursor-rules";

    /// Where the file goes, relative to the project root, when no path is given.
    pub fn default_path(self) -> &'static str {
        match self {
            GuidelineFormat::AgentsMd => "AGENTS.md",
            GuidelineFormat::ClaudeMd => "CLAUDE.md",
            GuidelineFormat::CursorRules => ".cursor/rules/alembic.mdc",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            GuidelineFormat::AgentsMd => "agents-md",
            GuidelineFormat::ClaudeMd => "claude-md",
            GuidelineFormat::CursorRules => "cursor-rules",
        }
    }
}

impl FromStr for GuidelineFormat {
    type Err = ExportError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "agents-md" | "agents.md" => Ok(GuidelineFormat::AgentsMd),
            "claude-md" | "claude.md" => Ok(GuidelineFormat::ClaudeMd),
            "cursor-rules" | "cursor" => Ok(GuidelineFormat::CursorRules),
            other => Err(ExportError::UnknownFormat {
                value: other.to_owned(),
            }),
        }
    }
}

/// Why an export was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExportError {
    #[error(
        "unknown export format \"{value}\": accepted formats are {}",
        GuidelineFormat::ACCEPTED
    )]
    UnknownFormat { value: String },
    #[error(
        "{path}: the alembic block markers are broken ({detail}); accepted is exactly one \
         \"{BEGIN_PREFIX} …\" line followed later by one \"{END_MARKER}\" line, or neither — \
         fix or remove them by hand, nothing was written"
    )]
    BrokenMarkers { path: String, detail: String },
    #[error(
        "{path}: front matter is not a valid Cursor rule header ({detail}); nothing was written"
    )]
    FrontMatter { path: String, detail: String },
}

/// Cursor rule front matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    pub description: String,
    /// Relative globs; empty for an always-applied rule.
    pub globs: Vec<String>,
    pub always_apply: bool,
}

impl FrontMatter {
    /// The header as Cursor reads it: globs comma-separated and unquoted, `alwaysApply` a
    /// YAML boolean (the string "true" would be ignored).
    pub fn render(&self) -> String {
        format!(
            "---\ndescription: {}\nglobs: {}\nalwaysApply: {}\n---\n",
            self.description,
            self.globs.join(","),
            self.always_apply
        )
    }
}

/// One file to write: its path relative to the project root, its front matter (Cursor rules
/// only, written when the file is created) and the block between the markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuidelineFile {
    pub path: String,
    pub front_matter: Option<FrontMatter>,
    /// The whole block, marker lines included, without a trailing newline.
    pub block: String,
}

/// The text of `file.path` after the export: `existing` with its block replaced (or the block
/// appended when it has none), or a new file. Text outside the block is kept byte for byte.
pub fn merge(existing: Option<&str>, file: &GuidelineFile) -> Result<String, ExportError> {
    let merged = match existing {
        None => {
            let header = file.front_matter.as_ref().map(FrontMatter::render);
            format!("{}{}\n", header.unwrap_or_default(), file.block)
        }
        Some(text) => replace_block(text, file)?,
    };
    if file.front_matter.is_some() {
        check_front_matter(&merged).map_err(|detail| ExportError::FrontMatter {
            path: file.path.clone(),
            detail,
        })?;
    }
    Ok(merged)
}

fn replace_block(text: &str, file: &GuidelineFile) -> Result<String, ExportError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let begins = marker_lines(&lines, BEGIN_PREFIX);
    let ends = marker_lines(&lines, END_PREFIX);
    match (begins.as_slice(), ends.as_slice()) {
        ([], []) => {
            let mut out = text.to_owned();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&file.block);
            out.push('\n');
            Ok(out)
        }
        ([b], [e]) if b < e => {
            let before: String = lines[..*b].concat();
            let after: String = lines[e + 1..].concat();
            Ok(format!("{before}{}\n{after}", file.block))
        }
        _ => Err(ExportError::BrokenMarkers {
            path: file.path.clone(),
            detail: describe_markers(&begins, &ends),
        }),
    }
}

/// Indexes of lines that start with a marker prefix (at column 0: block content is never
/// rendered there with that text, see `render::one_line`).
fn marker_lines(lines: &[&str], prefix: &str) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with(prefix))
        .map(|(i, _)| i)
        .collect()
}

fn describe_markers(begins: &[usize], ends: &[usize]) -> String {
    let list = |v: &[usize]| {
        v.iter()
            .map(|i| (i + 1).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let part = |n: usize, what: &str, at: String| match n {
        0 => format!("no {what} marker"),
        1 => format!("1 {what} marker (line {at})"),
        _ => format!("{n} {what} markers (lines {at})"),
    };
    let mut detail = format!(
        "{}, {}",
        part(begins.len(), "begin", list(begins)),
        part(ends.len(), "end", list(ends))
    );
    if let ([b], [e]) = (begins, ends)
        && e < b
    {
        detail.push_str(", the end comes before the begin");
    }
    detail
}

/// Checks that `text` starts with a Cursor front matter that a YAML reader accepts: `---`
/// lines around `key: value` lines, only the three known keys, each at most once, and
/// `alwaysApply` a real boolean. Returns what is wrong.
pub fn check_front_matter(text: &str) -> Result<FrontMatter, String> {
    let Some(rest) = text.strip_prefix("---\n") else {
        return Err("the file must start with a \"---\" line".into());
    };
    let end = if rest.starts_with("---\n") {
        Some(0)
    } else {
        rest.find("\n---\n").map(|i| i + 1)
    };
    let Some(end) = end else {
        return Err("no closing \"---\" line".into());
    };
    let mut fm = FrontMatter {
        description: String::new(),
        globs: Vec::new(),
        always_apply: false,
    };
    let mut seen: Vec<&str> = Vec::new();
    for line in rest[..end].lines().filter(|l| !l.trim().is_empty()) {
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| format!("line \"{line}\" is not \"key: value\""))?;
        let (key, value) = (key.trim(), value.trim());
        if seen.contains(&key) {
            return Err(format!("key \"{key}\" appears twice"));
        }
        seen.push(key);
        match key {
            "description" => fm.description = value.to_owned(),
            "globs" => fm.globs = split_globs(value),
            "alwaysApply" => fm.always_apply = parse_bool(value)?,
            other => {
                return Err(format!(
                    "unknown key \"{other}\": accepted keys are description, globs, alwaysApply"
                ));
            }
        }
    }
    Ok(fm)
}

fn split_globs(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_owned)
        .collect()
}

fn parse_bool(value: &str) -> Result<bool, String> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!(
            "alwaysApply must be the YAML boolean true or false, got {other}"
        )),
    }
}
