//! Reading line windows of project files and drawing the project tree, always through
//! [`PathGuard`] (no `..`, no absolute paths outside the root, no symlink escapes).

use std::collections::BTreeMap;

use alembic_safety::{Access, PathGuard};
use serde::Serialize;

use crate::language::Lang;
use crate::walk::{relative, source_walker};

/// Default and largest window of [`read_window`].
pub const DEFAULT_MAX_LINES: usize = 200;
pub const MAX_LINES_CAP: usize = 2000;
/// Files listed with a line count only below this size.
const LINE_COUNT_MAX_BYTES: u64 = 512 * 1024;
/// Entries shown in one tree listing before it is cut.
const MAX_TREE_ENTRIES: usize = 2000;

/// Errors of the file tools.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Path(#[from] alembic_safety::PathError),
    #[error("{path} is not valid utf-8 text")]
    NotText { path: String },
    #[error("startLine {start} is past the end of {path} ({total} lines)")]
    PastEnd {
        path: String,
        start: usize,
        total: usize,
    },
    #[error("endLine {end} is before startLine {start}")]
    EmptyWindow { start: usize, end: usize },
}

/// A window of lines of one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileWindow {
    pub file_path: String,
    pub total_lines: usize,
    pub start_line: usize,
    pub end_line: usize,
    pub content: String,
    pub language: Option<&'static str>,
    /// True when the window was cut by `maxLines`.
    pub truncated: bool,
}

/// Reads lines `start..=end` (1-based; `end` defaults to EOF), at most `max_lines`.
pub fn read_window(
    guard: &PathGuard,
    path: &str,
    start: usize,
    end: Option<usize>,
    max_lines: usize,
) -> Result<FileWindow, FileError> {
    let rel = guard.check(path, Access::Read)?;
    let bytes = guard.read(&rel)?;
    if bytes.contains(&0) {
        return Err(FileError::NotText { path: rel });
    }
    let text = String::from_utf8(bytes).map_err(|_| FileError::NotText { path: rel.clone() })?;
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let start = start.max(1);
    if start > total.max(1) {
        return Err(FileError::PastEnd {
            path: rel,
            start,
            total,
        });
    }
    let wanted_end = end.unwrap_or(total).min(total);
    if wanted_end < start && total > 0 {
        return Err(FileError::EmptyWindow {
            start,
            end: wanted_end,
        });
    }
    let max_lines = max_lines.clamp(1, MAX_LINES_CAP);
    let end = wanted_end.min(start + max_lines - 1);
    let content = lines
        .get(start - 1..end)
        .map(|l| l.join("\n"))
        .unwrap_or_default();
    Ok(FileWindow {
        language: Lang::from_path(std::path::Path::new(&rel)).map(Lang::name),
        file_path: rel,
        total_lines: total,
        start_line: start,
        end_line: end,
        content,
        truncated: end < wanted_end,
    })
}

/// Counts under a listed directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TreeStats {
    pub total_files: usize,
    pub total_dirs: usize,
    pub by_language: BTreeMap<String, usize>,
    pub total_lines: usize,
}

/// A rendered project tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tree {
    pub directory: String,
    pub tree: String,
    pub stats: Option<TreeStats>,
    /// True when more than the listing cap existed.
    pub truncated: bool,
}

struct Entry {
    rel: String,
    /// A directory at the depth limit: its children were not listed.
    unexplored: bool,
    is_dir: bool,
    size: u64,
}

/// Draws the tree under `directory` (`""` or `.` = root) down to `depth` levels,
/// directories first, hidden entries, ignored files and vendored directories left out.
pub fn list_structure(
    guard: &PathGuard,
    directory: &str,
    depth: usize,
    with_stats: bool,
) -> Result<Tree, FileError> {
    let dir = if directory.trim().is_empty() {
        "."
    } else {
        directory.trim()
    };
    let rel = guard.check(dir, Access::Read)?;
    let base = guard
        .root()
        .join(if rel == "." { "" } else { rel.as_str() });
    let depth = depth.clamp(1, 5);
    let mut walker = source_walker(&base);
    walker.max_depth(Some(depth));
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in walker.build().flatten().skip(1) {
        if entries.len() >= MAX_TREE_ENTRIES {
            truncated = true;
            break;
        }
        let Some(rel_path) = relative(&base, entry.path()) else {
            continue;
        };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        entries.push(Entry {
            rel: rel_path,
            unexplored: is_dir && entry.depth() >= depth,
            is_dir,
            size,
        });
    }
    let stats = with_stats.then(|| stats(guard, &rel, &entries));
    Ok(Tree {
        directory: rel.clone(),
        tree: draw(&rel, &entries),
        stats,
        truncated,
    })
}

fn stats(guard: &PathGuard, dir: &str, entries: &[Entry]) -> TreeStats {
    let mut s = TreeStats::default();
    for e in entries {
        if e.is_dir {
            s.total_dirs += 1;
            continue;
        }
        s.total_files += 1;
        let Some(lang) = Lang::from_path(std::path::Path::new(&e.rel)) else {
            continue;
        };
        *s.by_language.entry(lang.name().to_string()).or_default() += 1;
        if e.size < LINE_COUNT_MAX_BYTES {
            let path = if dir == "." {
                e.rel.clone()
            } else {
                format!("{dir}/{}", e.rel)
            };
            if let Ok(bytes) = guard.read(&path) {
                s.total_lines += bytes.iter().filter(|&&b| b == b'\n').count();
            }
        }
    }
    s
}

/// Box-drawing tree; directories before files, each group sorted by name.
fn draw(root: &str, entries: &[Entry]) -> String {
    let mut children: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        let parent = e.rel.rsplit_once('/').map_or("", |(p, _)| p);
        children.entry(parent).or_default().push(e);
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then(a.rel.cmp(&b.rel)));
    }
    let mut out = format!("{}/\n", if root == "." { "." } else { root });
    draw_level(&children, "", "", &mut out);
    out
}

fn draw_level(
    children: &BTreeMap<&str, Vec<&Entry>>,
    parent: &str,
    indent: &str,
    out: &mut String,
) {
    let Some(list) = children.get(parent) else {
        return;
    };
    for (i, e) in list.iter().enumerate() {
        let last = i + 1 == list.len();
        let name = e.rel.rsplit('/').next().unwrap_or(&e.rel);
        let branch = if last { "└── " } else { "├── " };
        if e.is_dir {
            if e.unexplored {
                out.push_str(&format!("{indent}{branch}{name}/ …\n"));
                continue;
            }
            let count = children.get(e.rel.as_str()).map_or(0, Vec::len);
            out.push_str(&format!("{indent}{branch}{name}/ ({count})\n"));
            let next = format!("{indent}{}", if last { "    " } else { "│   " });
            draw_level(children, &e.rel, &next, out);
        } else {
            out.push_str(&format!(
                "{indent}{branch}{name} ({})\n",
                human_size(e.size)
            ));
        }
    }
}

fn human_size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
    }
}
