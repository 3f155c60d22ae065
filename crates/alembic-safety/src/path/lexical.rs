//! Lexical checks on a path argument, before any file system call.
//!
//! Only `/` separates components (a backslash is an ordinary character on
//! Linux), `.` is dropped and `..` is folded into its parent. A path whose `..`
//! would climb above the root is refused here, before the kernel sees it.
//! Nothing is decoded or expanded: `~`, `$HOME`, `%2e%2e` and full-width dots
//! stay literal names.

use std::path::Path;

use super::PathError;

/// Longest path argument accepted (Linux `PATH_MAX`).
pub(crate) const MAX_PATH_BYTES: usize = 4096;
/// Longest single component accepted (Linux `NAME_MAX`).
const MAX_COMPONENT_BYTES: usize = 255;

/// A path relative to the project root, with no `.`, `..` or empty components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RelPath {
    components: Vec<String>,
}

impl RelPath {
    /// Checks and normalises `input`; `root` is the canonical project root used
    /// to accept absolute paths that lie inside it.
    pub(crate) fn parse(input: &str, roots: &[&Path]) -> Result<Self, PathError> {
        if input.trim().is_empty() {
            return Err(PathError::Empty);
        }
        if input.contains('\0') {
            return Err(PathError::Nul {
                path: input.replace('\0', "\\0"),
            });
        }
        if input.len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong {
                path: shorten(input),
                limit: MAX_PATH_BYTES,
            });
        }
        let escape = || PathError::Escape {
            path: input.to_owned(),
        };
        let components = if input.starts_with('/') {
            let absolute = fold(input).ok_or_else(escape)?;
            roots
                .iter()
                .find_map(|root| strip_root(&absolute, root))
                .ok_or_else(escape)?
        } else {
            fold(input).ok_or_else(escape)?
        };
        if components.iter().any(|c| c.len() > MAX_COMPONENT_BYTES) {
            return Err(PathError::TooLong {
                path: shorten(input),
                limit: MAX_COMPONENT_BYTES,
            });
        }
        Ok(Self { components })
    }

    /// Like [`RelPath::parse`] (same checks and refusals), but keeps `..` as a
    /// component instead of folding it, so the kernel resolves it physically after
    /// any symlink before it (`link/..` is the link target's parent, not `.`).
    pub(crate) fn parse_unfolded(input: &str, roots: &[&Path]) -> Result<Self, PathError> {
        Self::parse(input, roots)?;
        let raw: Vec<String> = input
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .map(str::to_owned)
            .collect();
        if !input.starts_with('/') {
            return Ok(Self { components: raw });
        }
        roots
            .iter()
            .filter_map(|root| root.to_str().and_then(fold))
            .find_map(|root| raw.strip_prefix(root.as_slice()).map(<[String]>::to_vec))
            .map(|components| Self { components })
            .ok_or_else(|| PathError::Escape {
                path: input.to_owned(),
            })
    }

    /// The components, outermost first.
    pub(crate) fn components(&self) -> &[String] {
        &self.components
    }

    /// True for the root itself.
    pub(crate) fn is_root(&self) -> bool {
        self.components.is_empty()
    }

    /// The path as given to `openat2`: components joined by `/`, or `.` for the root.
    pub(crate) fn as_os_path(&self) -> String {
        if self.is_root() {
            ".".to_owned()
        } else {
            self.components.join("/")
        }
    }

    /// Parent directory and final name; `None` for the root.
    pub(crate) fn split_last(&self) -> Option<(RelPath, &str)> {
        let (last, parent) = self.components.split_last()?;
        Some((
            RelPath {
                components: parent.to_vec(),
            },
            last.as_str(),
        ))
    }
}

impl std::fmt::Display for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_os_path())
    }
}

/// Drops `.` and empty components and folds `..`; `None` when `..` climbs above the start.
fn fold(path: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            name => out.push(name.to_owned()),
        }
    }
    Some(out)
}

/// Components of `absolute` below `root`, when it lies inside it.
fn strip_root(absolute: &[String], root: &Path) -> Option<Vec<String>> {
    let root_parts = root.to_str().and_then(fold)?;
    let rest = absolute.strip_prefix(root_parts.as_slice())?;
    Some(rest.to_vec())
}

/// First 80 bytes of a long path, cut on a character boundary, for messages.
fn shorten(input: &str) -> String {
    let mut end = input.len().min(80);
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &input[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(input: &str) -> Result<String, &'static str> {
        RelPath::parse(input, &[Path::new("/work/proj")])
            .map(|p| p.to_string())
            .map_err(|e| e.rule())
    }

    #[test]
    fn folds_dots_and_separators() {
        assert_eq!(parse("./a//b/./c"), Ok("a/b/c".into()));
        assert_eq!(parse("a/b/../c"), Ok("a/c".into()));
        assert_eq!(parse("."), Ok(".".into()));
        assert_eq!(parse("a/.."), Ok(".".into()));
    }

    #[test]
    fn refuses_climbs_and_outside_absolute_paths() {
        for input in [
            "..",
            "../x",
            "a/../../x",
            "./././../x",
            "/etc/passwd",
            "/work/projx/a",
        ] {
            assert_eq!(parse(input), Err("path.escape"), "{input}");
        }
    }

    #[test]
    fn accepts_absolute_paths_inside_the_root() {
        assert_eq!(parse("/work/proj/src/main.rs"), Ok("src/main.rs".into()));
        assert_eq!(parse("/work/proj"), Ok(".".into()));
        assert_eq!(parse("/work/other/../proj/a"), Ok("a".into()));
    }

    #[test]
    fn unfolded_parse_keeps_dot_dot_for_the_kernel() {
        let unfolded = |input: &str| {
            RelPath::parse_unfolded(input, &[Path::new("/work/proj")])
                .map(|p| p.to_string())
                .map_err(|e| e.rule())
        };
        assert_eq!(
            unfolded("link/../outside/x"),
            Ok("link/../outside/x".into())
        );
        assert_eq!(unfolded("./a//./b/.."), Ok("a/b/..".into()));
        assert_eq!(unfolded("/work/proj/l/../x"), Ok("l/../x".into()));
        assert_eq!(unfolded("/work/proj"), Ok(".".into()));
        // Lexical refusals still hold, and an absolute path must name the root literally.
        assert_eq!(unfolded("../x"), Err("path.escape"));
        assert_eq!(unfolded("/work/other/../proj/a"), Err("path.escape"));
    }

    #[test]
    fn keeps_expansion_syntax_literal() {
        assert_eq!(parse("~/.ssh/id_rsa"), Ok("~/.ssh/id_rsa".into()));
        assert_eq!(parse("$HOME/x"), Ok("$HOME/x".into()));
        assert_eq!(parse("%2e%2e%2fetc"), Ok("%2e%2e%2fetc".into()));
        assert_eq!(parse("．．／x"), Ok("．．／x".into()));
        assert_eq!(parse("..\\..\\x"), Ok("..\\..\\x".into()));
    }

    #[test]
    fn refuses_empty_nul_and_overlong() {
        assert_eq!(parse(""), Err("path.empty"));
        assert_eq!(parse("  "), Err("path.empty"));
        assert_eq!(parse("a\0b"), Err("path.nul"));
        assert_eq!(parse(&"a/".repeat(2500)), Err("path.too_long"));
        assert_eq!(parse(&"x".repeat(256)), Err("path.too_long"));
    }
}
