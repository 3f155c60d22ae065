//! Rendering published entries into guideline blocks.

use std::collections::BTreeMap;
use std::path::Path;

use super::{BEGIN_MARKER, END_MARKER, FrontMatter, GuidelineFile, GuidelineFormat};
use crate::model::{Entry, Kind, Status};

/// Lines a block may hold between its markers. AGENTS.md should stay under about 300 lines;
/// entries past the budget are counted and pointed at, not written.
pub const MAX_BLOCK_LINES: usize = 250;
/// A code pattern longer than this is left out (the entry points at `alembic knowledge show`).
const MAX_PATTERN_LINES: usize = 15;
const MAX_SUMMARY_CHARS: usize = 300;

/// Renders the published entries among `entries` for `format`. `path` is where the main file
/// goes (relative to the project root); Cursor rules add one glob-attached file per language
/// beside it (`<stem>-<language>.mdc`). Output is deterministic: same entries, same bytes.
pub fn render(format: GuidelineFormat, entries: &[Entry], path: &str) -> Vec<GuidelineFile> {
    let mut published: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.status == Status::Published)
        .collect();
    published.sort_by(|a, b| {
        (kind_rank(a.kind), a.title.to_lowercase(), &a.id).cmp(&(
            kind_rank(b.kind),
            b.title.to_lowercase(),
            &b.id,
        ))
    });
    match format {
        GuidelineFormat::AgentsMd | GuidelineFormat::ClaudeMd => vec![GuidelineFile {
            path: path.to_owned(),
            front_matter: None,
            block: markdown_block(&published),
        }],
        GuidelineFormat::CursorRules => cursor_files(&published, path),
    }
}

fn kind_rank(kind: Kind) -> u8 {
    match kind {
        Kind::Rule => 0,
        Kind::Pattern => 1,
        Kind::Fact => 2,
    }
}

/// One section per language (language-free entries first, under "All code").
fn markdown_block(entries: &[&Entry]) -> String {
    let mut groups: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        groups.entry(language_key(e)).or_default().push(e);
    }
    let mut body = Vec::new();
    for (lang, group) in &groups {
        let title = if lang.is_empty() { "All code" } else { lang };
        body.push(Section {
            heading: Some(format!("### {title}")),
            entries: group.clone(),
        });
    }
    block(&body)
}

fn cursor_files(entries: &[&Entry], path: &str) -> Vec<GuidelineFile> {
    let mut general = Vec::new();
    let mut by_lang: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        let lang = language_key(e);
        if globs_for(&lang).is_empty() {
            general.push(*e);
        } else {
            by_lang.entry(lang).or_default().push(e);
        }
    }
    let mut files = vec![GuidelineFile {
        path: path.to_owned(),
        front_matter: Some(FrontMatter {
            description: "Project knowledge from Alembic that applies to all code".into(),
            globs: Vec::new(),
            always_apply: true,
        }),
        block: block(&[Section {
            heading: None,
            entries: general,
        }]),
    }];
    for (lang, group) in by_lang {
        files.push(GuidelineFile {
            path: sibling_path(path, &lang),
            front_matter: Some(FrontMatter {
                description: format!("Project knowledge from Alembic for {lang} code"),
                globs: globs_for(&lang).iter().map(|g| (*g).to_owned()).collect(),
                always_apply: false,
            }),
            block: block(&[Section {
                heading: None,
                entries: group,
            }]),
        });
    }
    files
}

/// `.cursor/rules/alembic.mdc` + `rust` → `.cursor/rules/alembic-rust.mdc`.
fn sibling_path(path: &str, lang: &str) -> String {
    let p = Path::new(path);
    let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("alembic");
    let name = format!("{stem}-{lang}.mdc");
    match p
        .parent()
        .and_then(|d| d.to_str())
        .filter(|d| !d.is_empty())
    {
        Some(dir) => format!("{dir}/{name}"),
        None => name,
    }
}

/// The entry's language as a lower-case slug (`objective-c`), empty when it has none.
fn language_key(e: &Entry) -> String {
    let slug: String = e
        .language
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    slug.trim_matches('-').to_owned()
}

/// File globs of a language, for glob-attached rules; empty for an unknown language.
fn globs_for(lang: &str) -> &'static [&'static str] {
    match lang {
        "rust" => &["**/*.rs"],
        "swift" => &["**/*.swift"],
        "objective-c" | "objc" => &["**/*.m", "**/*.mm", "**/*.h"],
        "python" => &["**/*.py"],
        "typescript" => &["**/*.ts", "**/*.tsx"],
        "javascript" => &["**/*.js", "**/*.jsx", "**/*.mjs"],
        "go" => &["**/*.go"],
        "java" => &["**/*.java"],
        "kotlin" => &["**/*.kt", "**/*.kts"],
        "c" => &["**/*.c", "**/*.h"],
        "cpp" | "c--" => &["**/*.cpp", "**/*.cc", "**/*.hpp", "**/*.h"],
        "csharp" | "c-" => &["**/*.cs"],
        "ruby" => &["**/*.rb"],
        "dart" => &["**/*.dart"],
        _ => &[],
    }
}

struct Section<'a> {
    heading: Option<String>,
    entries: Vec<&'a Entry>,
}

/// The whole block: markers, a heading, the sections while they fit [`MAX_BLOCK_LINES`], and
/// a count of what did not fit.
fn block(sections: &[Section<'_>]) -> String {
    let mut lines: Vec<String> = vec![
        BEGIN_MARKER.to_owned(),
        "## Project knowledge (Alembic)".to_owned(),
        String::new(),
        "Reviewed and published by the team; `alembic knowledge show <id>` has the full entry."
            .to_owned(),
    ];
    let total: usize = sections.iter().map(|s| s.entries.len()).sum();
    let mut written = 0;
    for section in sections.iter().filter(|s| !s.entries.is_empty()) {
        let mut part: Vec<String> = Vec::new();
        if let Some(h) = &section.heading {
            part.extend([String::new(), h.clone()]);
        }
        part.push(String::new());
        let mut any = false;
        for e in &section.entries {
            let entry = entry_lines(e);
            if lines.len() + part.len() + entry.len() + 2 > MAX_BLOCK_LINES {
                break;
            }
            part.extend(entry);
            written += 1;
            any = true;
        }
        if any {
            lines.extend(part);
        }
    }
    if total == 0 {
        lines.extend([String::new(), "No published knowledge yet.".to_owned()]);
    } else if written < total {
        lines.extend([
            String::new(),
            format!(
                "{} more published entries did not fit: `alembic knowledge list --status published`.",
                total - written
            ),
        ]);
    }
    lines.push(END_MARKER.to_owned());
    lines.join("\n")
}

/// One entry as a list item: title, kind and id, summary, why, where, and a short pattern.
fn entry_lines(e: &Entry) -> Vec<String> {
    let mut out = vec![format!(
        "- **{}** ({}, `{}`): {}",
        one_line(&e.title, 120),
        e.kind.as_str(),
        e.id,
        one_line(summary(e), MAX_SUMMARY_CHARS)
    )];
    if !e.rationale.trim().is_empty() {
        out.push(format!(
            "  Why: {}",
            one_line(&e.rationale, MAX_SUMMARY_CHARS)
        ));
    }
    if !e.sources.is_empty() {
        let files: Vec<String> = e
            .sources
            .iter()
            .take(5)
            .map(|s| format!("`{}`", one_line(s, 120)))
            .collect();
        out.push(format!("  Seen in: {}", files.join(", ")));
    }
    let pattern = e.pattern.trim_end();
    if !pattern.trim().is_empty() && pattern.lines().count() <= MAX_PATTERN_LINES {
        let fence = fence_for(pattern);
        let lang = language_key(e);
        out.push(format!("  {fence}{lang}"));
        out.extend(
            pattern
                .lines()
                .map(|l| format!("  {l}").trim_end().to_owned()),
        );
        out.push(format!("  {fence}"));
    }
    out
}

fn summary(e: &Entry) -> &str {
    if !e.description.trim().is_empty() {
        return &e.description;
    }
    e.content
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("")
}

/// Whitespace collapsed to single spaces and cut at `max` characters. Every rendered text
/// line starts with "- ", "  " or "#", so no entry text can form a marker line.
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

/// A code fence longer than any backtick run inside the pattern (at least three).
fn fence_for(pattern: &str) -> String {
    let longest = pattern.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}
