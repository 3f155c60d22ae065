//! Control paths inside the root that agents may not write.
//!
//! Writing these is code execution or policy tampering for a later command:
//! git hooks and config (`core.fsmonitor`, `core.hooksPath`), git attribute
//! filters, Alembic's own config, database and audit log, environment files
//! and lock files. Names compare without regard to letter case, because the
//! same project may live on a case-insensitive file system.

/// Directories whose whole subtree is protected, at any depth.
const PROTECTED_DIRS: &[&str] = &[".git", ".alembic"];

/// File names protected at any depth.
const PROTECTED_FILES: &[&str] = &[
    ".gitattributes",
    ".gitmodules",
    "cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "bun.lock",
    "poetry.lock",
    "pipfile.lock",
    "uv.lock",
    "gemfile.lock",
    "go.sum",
    "composer.lock",
    "podfile.lock",
    "package.resolved",
    "flake.lock",
    "mix.lock",
    "pubspec.lock",
];

/// Why a normalised relative path is protected, or `None` when it may be written.
///
/// `extra` entries come from configuration: an entry without `/` names a file
/// or directory at any depth; an entry with `/` names a path (and everything
/// beneath it) relative to the root.
pub(crate) fn protected_reason(components: &[String], extra: &[String]) -> Option<String> {
    let lower: Vec<String> = components.iter().map(|c| c.to_lowercase()).collect();
    if let Some(dir) = lower.iter().find(|c| PROTECTED_DIRS.contains(&c.as_str())) {
        return Some(format!("inside {dir}/"));
    }
    let name = lower.last()?;
    if name.starts_with(".env") {
        return Some("environment file .env*".to_owned());
    }
    if PROTECTED_FILES.contains(&name.as_str()) {
        return Some(format!("{name} is a lock or git control file"));
    }
    extra.iter().find_map(|entry| extra_match(&lower, entry))
}

/// Whether a configured extra entry covers the path.
fn extra_match(lower: &[String], entry: &str) -> Option<String> {
    let entry_lower = entry.trim_matches('/').to_lowercase();
    if entry_lower.is_empty() {
        return None;
    }
    let parts: Vec<&str> = entry_lower.split('/').filter(|p| !p.is_empty()).collect();
    let hit = if parts.len() == 1 {
        lower.iter().any(|c| c == parts[0])
    } else {
        lower.len() >= parts.len() && lower.iter().zip(&parts).all(|(a, b)| a == b)
    };
    hit.then(|| format!("configured protected path {entry}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(path: &str, extra: &[&str]) -> Option<String> {
        let parts: Vec<String> = path.split('/').map(str::to_owned).collect();
        let extra: Vec<String> = extra.iter().map(|s| (*s).to_owned()).collect();
        protected_reason(&parts, &extra)
    }

    #[test]
    fn control_paths_are_protected_in_any_case() {
        for path in [
            ".git/config",
            ".GIT/hooks/pre-commit",
            "sub/.Git/config",
            ".alembic/alembic.db",
            ".ENV",
            ".env.local",
            ".envrc",
            "web/Cargo.lock",
            "yarn.lock",
            ".gitattributes",
        ] {
            assert!(reason(path, &[]).is_some(), "{path}");
        }
    }

    #[test]
    fn ordinary_paths_are_not_protected() {
        for path in [
            "src/main.rs",
            "environment.md",
            "git/config",
            ".gitignore",
            "Cargo.toml",
        ] {
            assert_eq!(reason(path, &[]), None, "{path}");
        }
    }

    #[test]
    fn configured_additions_match_names_and_prefixes() {
        assert!(reason("a/Makefile", &["makefile"]).is_some());
        assert!(reason(".github/workflows/ci.yml", &[".github/workflows"]).is_some());
        assert_eq!(
            reason("docs/.github/workflows/x", &[".github/workflows"]),
            None
        );
    }
}
