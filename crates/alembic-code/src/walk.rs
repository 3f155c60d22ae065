//! Which files of a project are looked at: `.gitignore`/`.ignore`/`.alembicignore` are
//! honoured (inside a git repository or not), hidden entries and vendored or generated
//! directories are skipped, symlinks are not followed.

use std::path::{Path, PathBuf};

use ignore::{WalkBuilder, WalkState};

/// Directory names that hold third-party or generated code.
pub const VENDORED_DIRS: &[&str] = &[
    "vendor",
    "vendors",
    "third_party",
    "third-party",
    "thirdparty",
    "3rdparty",
    "external",
    "node_modules",
    "bower_components",
    "Pods",
    "Carthage",
    "target",
    "build",
    ".build",
    "DerivedData",
    "dist",
    "__pycache__",
    "venv",
    ".venv",
    "site-packages",
    ".gradle",
];

/// Project-specific ignore file, same syntax as `.gitignore`.
pub const IGNORE_FILE: &str = ".alembicignore";

/// True for a directory name that [`source_walker`] skips.
pub fn is_vendored_dir(name: &str) -> bool {
    VENDORED_DIRS.contains(&name)
}

/// A walker over the project's own files.
pub fn source_walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(true)
        .follow_links(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .parents(false)
        // `.gitignore` applies even when the project is not (yet) a git repository.
        .require_git(false)
        .add_custom_ignore_filename(IGNORE_FILE)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(is_dir
                && entry.depth() > 0
                && entry.file_name().to_str().is_some_and(is_vendored_dir))
        });
    builder
}

/// A regular file found by [`walk_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundFile {
    /// Path relative to the root with `/` separators.
    pub rel: String,
    pub abs: PathBuf,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch (0 when unknown).
    pub mtime_ns: i64,
}

/// All regular files under `root` accepted by `keep(rel_path)`, in path order. Walks
/// directories in parallel.
pub fn walk_files(root: &Path, keep: &(dyn Fn(&str) -> bool + Sync)) -> Vec<FoundFile> {
    let found = std::sync::Mutex::new(Vec::new());
    let mut builder = source_walker(root);
    // Parallel walking ignores the sort order; the result is sorted below.
    builder.sort_by_file_name(|_, _| std::cmp::Ordering::Equal);
    builder.build_parallel().run(|| {
        Box::new(|entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let Some(rel) = relative(root, entry.path()) else {
                return WalkState::Continue;
            };
            if !keep(&rel) {
                return WalkState::Continue;
            }
            let Ok(meta) = entry.metadata() else {
                return WalkState::Continue;
            };
            let file = FoundFile {
                rel,
                abs: entry.path().to_path_buf(),
                size: meta.len(),
                mtime_ns: mtime_ns(&meta),
            };
            if let Ok(mut v) = found.lock() {
                v.push(file);
            }
            WalkState::Continue
        })
    });
    let mut files = found.into_inner().unwrap_or_default();
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
}

/// `path` relative to `root` with `/` separators, `None` when not beneath it or not UTF-8.
pub fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_nanos()).ok())
        .unwrap_or(0)
}
