//! The measured facts every extractor works from: the scanned files (with their text), the
//! code index's project graph (types, modules, entry points) and the detected profile.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alembic_code::role::{self, FileRole};
use alembic_code::{CodeService, ProjectGraph};
use alembic_safety::PathGuard;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::detect::{self, ProjectProfile};
use crate::error::BootstrapError;
use crate::extract::guard::GuardAudit;

/// Files above this size are not read (generated or vendored blobs).
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// A scanned file: a source file or a manifest.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Relative path with `/` separators.
    pub path: String,
    /// `None` for manifests.
    pub language: Option<&'static str>,
    /// The file as written: for quoting a line and for rules about comments.
    pub text: String,
    /// `text` with comments and literals blanked (`alembic_code::mask`; same lines and
    /// offsets): every pattern about the project's code matches this.
    pub code: String,
    /// `text` with only comments blanked: for rules about literal values (secrets).
    pub no_comments: String,
    /// Whether the file is a test file (by path or name).
    pub is_test: bool,
}

impl SourceFile {
    /// A scanned file; a source (with a `language`) is masked here, once.
    pub fn new(path: String, language: Option<&'static str>, text: String, is_test: bool) -> Self {
        let (code, no_comments) = if language.is_some() {
            let lang = alembic_code::Lang::detect(Path::new(&path), &text);
            (
                alembic_code::mask::code_only(lang, &text),
                alembic_code::mask::without_comments(lang, &text),
            )
        } else {
            (text.clone(), text.clone())
        };
        SourceFile {
            path,
            language,
            text,
            code,
            no_comments,
            is_test,
        }
    }

    pub fn line_count(&self) -> usize {
        self.text.lines().count()
    }

    /// The first line (1-based) that holds code, for evidence about the whole file; 1 when
    /// the file has none.
    pub fn first_code_line(&self) -> usize {
        self.code
            .lines()
            .position(|l| !l.trim().is_empty())
            .map_or(1, |i| i + 1)
    }
}

/// A place in the project: `file` relative to the root, `line` 1-based.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Evidence {
    pub file: String,
    pub line: usize,
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// Everything the deterministic extractors read.
#[derive(Debug)]
pub struct Facts {
    pub root: PathBuf,
    /// Sources and manifests in path order.
    pub files: Vec<SourceFile>,
    pub graph: Arc<ProjectGraph>,
    pub profile: ProjectProfile,
    /// The guard audit over the non-test sources (after the topology).
    pub guard: GuardAudit,
    /// Files not read as the project's code: fixtures, examples, vendored and generated
    /// code (path and role), in path order.
    pub set_aside: Vec<(String, FileRole)>,
}

/// The agent guideline files of the project (AGENTS.md, CLAUDE.md, Cursor and Copilot rules)
/// as scanned files without a language, so their lines can be cited and fingerprinted.
fn guideline_files(root: &Path, guard: &PathGuard) -> Vec<SourceFile> {
    crate::extract::guidelines::find(root)
        .into_iter()
        .filter_map(|path| {
            let small = guard
                .metadata(&path)
                .is_ok_and(|m| m.size <= MAX_FILE_BYTES);
            let text = guard.read_to_string(&path).ok().filter(|_| small)?;
            Some(SourceFile::new(path, None, text, false))
        })
        .collect()
}

const MANIFEST_NAMES: &[&str] = &[
    "Cargo.toml",
    "package.json",
    "tsconfig.json",
    "Package.swift",
    "Podfile",
    "pyproject.toml",
    "requirements.txt",
    "setup.py",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
];

fn wanted(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    detect::language_of(rel).is_some()
        || MANIFEST_NAMES.contains(&name)
        || name.ends_with(".csproj")
        || (name == "project.pbxproj" && rel.contains(".xcodeproj/"))
}

/// Whether `path` is a test file by the usual layouts of the supported languages.
pub use alembic_code::role::is_test_path;

impl Facts {
    /// Scans `root` (honouring .gitignore and .alembicignore), refreshes the code index and
    /// builds the project graph through `code`. At most `max_files` sources are read.
    pub fn gather(
        root: &Path,
        code: &CodeService,
        max_files: Option<usize>,
    ) -> Result<Facts, BootstrapError> {
        let guard = PathGuard::new(root).map_err(|e| BootstrapError::NoProject(e.to_string()))?;
        let found = alembic_code::walk::walk_files(root, &wanted);
        let mut files = Vec::new();
        let mut set_aside = Vec::new();
        for f in found.into_iter().filter(|f| f.size <= MAX_FILE_BYTES) {
            if max_files.is_some_and(|m| files.len() >= m) {
                break;
            }
            // Through the guard: a file swapped for a link after the walk is not read.
            let Ok(text) = guard.read_to_string(&f.rel) else {
                continue; // not UTF-8 (or gone): not a source we can cite
            };
            // Fixtures, examples, vendored and generated code never stand for the
            // project's conventions: they are not facts at all.
            let role = role::classify(&f.rel, &text);
            if !role.is_project_code() {
                set_aside.push((f.rel, role));
                continue;
            }
            let language = detect::language_of(&f.rel);
            files.push(SourceFile::new(
                f.rel,
                language,
                text,
                role == FileRole::Test,
            ));
        }
        files.extend(guideline_files(root, &guard));
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let graph = code.graph()?;
        let profile = detect::detect(&files);
        let guard = crate::extract::guard::audit(root, &files)?;
        Ok(Facts {
            root: root.to_path_buf(),
            files,
            graph,
            profile,
            guard,
            set_aside,
        })
    }

    /// Source files (not manifests).
    pub fn sources(&self) -> impl Iterator<Item = &SourceFile> {
        self.files.iter().filter(|f| f.language.is_some())
    }

    pub fn file(&self, path: &str) -> Option<&SourceFile> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.files[i])
    }

    /// Every code line (comments and literals blanked) of a non-test source in `languages`
    /// (all when empty) matching `re`.
    pub fn matches(&self, re: &Regex, languages: &[&str]) -> Vec<Evidence> {
        let mut out = Vec::new();
        for f in self.sources().filter(|f| !f.is_test) {
            let lang = f.language.unwrap_or_default();
            if !languages.is_empty() && !languages.contains(&lang) {
                continue;
            }
            for (i, line) in f.code.lines().enumerate() {
                if re.is_match(line) {
                    out.push(Evidence {
                        file: f.path.clone(),
                        line: i + 1,
                    });
                }
            }
        }
        out
    }

    /// The first code line of `file` matching `re`, if any.
    pub fn first_match(&self, file: &str, re: &Regex) -> Option<Evidence> {
        let f = self.file(file)?;
        f.code
            .lines()
            .position(|l| re.is_match(l))
            .map(|i| Evidence {
                file: file.to_string(),
                line: i + 1,
            })
    }

    /// The text of line `line` (1-based) of `file`.
    pub fn line_text(&self, file: &str, line: usize) -> Option<&str> {
        self.file(file)?.text.lines().nth(line.checked_sub(1)?)
    }

    /// Whether the project has a source in `language`.
    pub fn has_language(&self, language: &str) -> bool {
        self.profile.file_counts.contains_key(language)
    }
}

/// Up to `n` evidence places spread over distinct files first, in path order.
pub fn spread(evidence: &[Evidence], n: usize) -> Vec<Evidence> {
    let mut out: Vec<Evidence> = Vec::new();
    for e in evidence {
        if out.len() >= n {
            break;
        }
        if !out.iter().any(|o| o.file == e.file) {
            out.push(e.clone());
        }
    }
    for e in evidence {
        if out.len() >= n {
            break;
        }
        if !out.contains(e) {
            out.push(e.clone());
        }
    }
    out
}
