//! The environment every git child runs with: pinned to the project's repository, and
//! with every config key that names a program overridden.
//!
//! Repository config (`.git/config`, `config.worktree`, anything it includes) and
//! attributes (`.gitattributes`, `.git/info/attributes`) are attacker-controlled. Git
//! reads `GIT_CONFIG_COUNT` entries last (command-line scope), so each override below
//! beats whatever the repository says. Attributes cannot be switched off
//! (`info/attributes` is always read), so instead every driver they could name is
//! neutralised: the repository's config is listed first (by git itself, includes
//! and conditions evaluated as the real command will) and each `diff.*`, `filter.*`
//! and `merge.*` driver found gets a harmless replacement.

use crate::path::{Access, PathGuard};
use crate::spawn::{self, SpawnRequest};

/// Fixed overrides: keys that name a program, fetch, or let the repository leave the root.
const FIXED: &[(&str, &str)] = &[
    // A folder shaped like a bare repository is never used unless named by GIT_DIR.
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.askPass", "false"),
    ("core.sshCommand", "false"),
    ("core.alternateRefsCommand", "true"),
    ("core.attributesFile", "/dev/null"),
    ("core.untrackedCache", "false"),
    // An empty helper resets the list: no credential helper runs.
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("log.showSignature", "false"),
    // The mailmap rewrites shown names from a file that could be outside the root.
    ("mailmap.file", "/dev/null"),
    ("diff.trustExitCode", "false"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("color.ui", "false"),
];

/// Why git cannot be made safe to run against this project's repository.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GitEnvError {
    /// `<root>/.git` (a link, or a `gitdir:` file that is not a linked worktree's) leads
    /// out of the project.
    #[error(
        "{path}/.git leads outside the project root to a repository that is not this checkout's, so git would read another repository"
    )]
    LinkOutside {
        /// The project root.
        path: String,
    },
    /// `git config --list` failed, so the drivers it defines are unknown.
    #[error(
        "cannot list the repository's git config or submodules ({message}); git is not run against it"
    )]
    ConfigUnlisted {
        /// What git said.
        message: String,
    },
    /// A key names a file git would read and echo from outside the root, or a config
    /// include the agent could rewrite while git runs.
    #[error(
        "the repository's git config sets {key} = {value:?}: git would read a file outside the project, or config from a file that project tools can rewrite; remove the key to use git here"
    )]
    ReadsOutside {
        /// The key as git lists it.
        key: String,
        /// Its value.
        value: String,
    },
}

/// Replaces an external diff program: the same unified diff, made by diff(1) from the
/// two files git hands over (`path old-file old-hex old-mode new-file …`).
const SAFE_EXTERNAL_DIFF: &str =
    r#"f() { diff -u --label "a/$1" --label "b/$1" -- "$2" "$5"; test $? -le 1; }; f"#;

/// Where git keeps the project's repository, or why git must find none.
enum Repository {
    /// `<root>/.git` (a directory or a `gitdir:` file) resolves inside the root.
    Pinned(String),
    /// No `.git` at the root: git runs as outside any repository.
    Absent(String),
    /// `.git` leads out of the root (a link, or a foreign `gitdir:` file).
    Refused,
}

/// Environment for a script that may run git: the repository pinned to the project
/// root (no discovery into nested or enclosing folders), no system or global config,
/// and no key that names a program left as the repository set it.
pub fn hardened_git_env(guard: &PathGuard) -> Result<Vec<(String, String)>, GitEnvError> {
    let root = guard.root().to_string_lossy().into_owned();
    let mut settings = fixed_settings();
    let git_dir = match locate(guard) {
        Repository::Pinned(dir) => {
            let overrides = repository_overrides(guard, &dir, &root, &settings, 0)?;
            for (key, value) in overrides {
                if !settings.iter().any(|(k, _)| *k == key) {
                    settings.push((key, value));
                }
            }
            dir
        }
        Repository::Absent(dir) => dir,
        Repository::Refused => return Err(GitEnvError::LinkOutside { path: root }),
    };
    let mut env = pinning(&git_dir, &root);
    env.extend(config_env(&settings));
    Ok(env)
}

/// Deepest submodule nesting whose config is listed; deeper repositories make git refuse.
const MAX_SUBMODULE_DEPTH: usize = 3;

/// Overrides for the drivers of one repository and, since git runs itself inside each
/// submodule (`git diff --submodule=diff`, `git status`) with these same overrides but
/// the submodule's own config, of every initialised submodule below it.
fn repository_overrides(
    guard: &PathGuard,
    git_dir: &str,
    work_tree: &str,
    settings: &[(String, String)],
    depth: usize,
) -> Result<Vec<(String, String)>, GitEnvError> {
    let entries = listed_config(guard, git_dir, work_tree, settings)?;
    check_file_keys(guard, git_dir, &entries)?;
    let mut overrides = driver_overrides(&entries);
    for path in gitlinks(guard, git_dir, work_tree, settings)? {
        let sub_tree = format!("{work_tree}/{path}");
        let sub_git = format!("{sub_tree}/.git");
        if std::fs::symlink_metadata(&sub_git).is_err() {
            continue; // not checked out: git does not go there
        }
        let relative = sub_git
            .strip_prefix(&format!("{}/", guard.root().to_string_lossy()))
            .unwrap_or(&sub_git);
        if guard.check(relative, Access::Read).is_err() {
            return Err(GitEnvError::LinkOutside { path: sub_tree });
        }
        if depth >= MAX_SUBMODULE_DEPTH {
            return Err(GitEnvError::ConfigUnlisted {
                message: format!(
                    "submodule {sub_tree} is nested more than {MAX_SUBMODULE_DEPTH} deep"
                ),
            });
        }
        overrides.extend(repository_overrides(
            guard,
            &sub_git,
            &sub_tree,
            settings,
            depth + 1,
        )?);
    }
    Ok(overrides)
}

/// Paths of the submodules (gitlinks, mode 160000) in a repository's index.
fn gitlinks(
    guard: &PathGuard,
    git_dir: &str,
    work_tree: &str,
    settings: &[(String, String)],
) -> Result<Vec<String>, GitEnvError> {
    let listing = git_output(
        guard,
        git_dir,
        work_tree,
        settings,
        &["ls-files", "--stage", "-z"],
    )?;
    Ok(listing
        .split('\0')
        .filter_map(|entry| entry.strip_prefix("160000 "))
        .filter_map(|rest| rest.split_once('\t').map(|(_, path)| path.to_owned()))
        .filter(|path| !path.split('/').any(|c| c == ".." || c.is_empty()))
        .collect())
}

/// The environment when [`hardened_git_env`] failed: git finds no repository at all, so
/// a program that runs git behind the script's back reads nothing from the project.
pub fn git_disabled_env(guard: &PathGuard) -> Vec<(String, String)> {
    let root = guard.root().to_string_lossy().into_owned();
    let mut env = pinning("/dev/null", &root);
    env.extend(config_env(&fixed_settings()));
    env
}

fn fixed_settings() -> Vec<(String, String)> {
    FIXED
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Keys naming files git reads: `blame.ignoreRevsFile` (git echoes its lines) must stay
/// inside the root, and an included config file must not be one the agent can rewrite
/// between this listing and the command (a driver added then would escape the overrides).
fn check_file_keys(
    guard: &PathGuard,
    git_dir: &str,
    entries: &[(String, String)],
) -> Result<(), GitEnvError> {
    for (key, value) in entries {
        let refused = if key == "blame.ignorerevsfile" {
            !value.is_empty()
                && (value.starts_with(['/', '~', '%']) || guard.check(value, Access::Read).is_err())
        } else if key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path"))
        {
            writable_by_agent(guard, git_dir, value)
        } else {
            false
        };
        if refused {
            return Err(GitEnvError::ReadsOutside {
                key: key.clone(),
                value: value.clone(),
            });
        }
    }
    Ok(())
}

/// Whether an include target (relative to the git dir, `~/` to HOME, which is the root
/// for children) lands in the project outside `.git`, following links that exist.
fn writable_by_agent(guard: &PathGuard, git_dir: &str, value: &str) -> bool {
    let root = guard.root();
    let target = match value.strip_prefix("~/") {
        Some(rest) => root.join(rest),
        None => std::path::Path::new(git_dir).join(value),
    };
    // Resolve the longest existing ancestor: a missing file could be created later.
    let mut existing = target.as_path();
    let mut missing = Vec::new();
    let resolved = loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            break missing.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_owned());
                existing = parent;
            }
            // `..` or the filesystem root unresolved: treat as writable.
            _ => return true,
        }
    };
    let git = std::fs::canonicalize(root.join(".git")).unwrap_or_else(|_| root.join(".git"));
    resolved.starts_with(root) && !resolved.starts_with(git)
}

fn locate(guard: &PathGuard) -> Repository {
    let dot_git = guard.root().join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return Repository::Absent(dot_git.to_string_lossy().into_owned());
    };
    let inside = guard.check(".git", Access::Read).is_ok();
    if !inside || (meta.is_file() && !gitfile_is_ours(guard, &dot_git)) {
        return Repository::Refused;
    }
    Repository::Pinned(dot_git.to_string_lossy().into_owned())
}

/// A `gitdir:` file may name a directory outside the root only when that directory is
/// this checkout's linked worktree entry: its `gitdir` file points back at our `.git`.
/// Anything else would let a shipped `.git` file read another repository on the machine.
fn gitfile_is_ours(guard: &PathGuard, dot_git: &std::path::Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dot_git) else {
        return false;
    };
    let Some(target) = text.lines().next().and_then(|l| l.strip_prefix("gitdir: ")) else {
        return false;
    };
    let Ok(target) = std::fs::canonicalize(guard.root().join(target.trim())) else {
        return false;
    };
    if target.starts_with(guard.root()) {
        return true;
    }
    std::fs::read_to_string(target.join("gitdir"))
        .ok()
        .and_then(|back| std::fs::canonicalize(back.trim()).ok())
        .is_some_and(|back| back == dot_git)
}

/// The git directories outside the root that a linked worktree of this checkout needs read:
/// its entry under the main repository's `.git/worktrees/` and that repository's common
/// directory. Empty unless `.git` is a `gitdir:` file that [`gitfile_is_ours`] accepts.
pub fn worktree_git_dirs(guard: &PathGuard) -> Vec<std::path::PathBuf> {
    let dot_git = guard.root().join(".git");
    if !std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file())
        || !gitfile_is_ours(guard, &dot_git)
    {
        return Vec::new();
    }
    let Some(entry) = std::fs::read_to_string(&dot_git)
        .ok()
        .and_then(|t| t.lines().next().map(str::to_owned))
        .and_then(|l| {
            l.strip_prefix("gitdir: ")
                .map(|p| guard.root().join(p.trim()))
        })
        .and_then(|p| std::fs::canonicalize(p).ok())
    else {
        return Vec::new();
    };
    if entry.starts_with(guard.root()) {
        return Vec::new();
    }
    let common = std::fs::read_to_string(entry.join("commondir"))
        .ok()
        .and_then(|c| std::fs::canonicalize(entry.join(c.trim())).ok());
    std::iter::once(entry).chain(common).collect()
}

fn pinning(git_dir: &str, root: &str) -> Vec<(String, String)> {
    let parent = std::path::Path::new(root)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    [
        ("GIT_DIR", git_dir),
        ("GIT_WORK_TREE", root),
        // Children that clear GIT_DIR (submodules) still never climb above the root.
        ("GIT_CEILING_DIRECTORIES", parent.as_str()),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_ATTR_NOSYSTEM", "1"),
        // A partial clone would fetch missing objects, through a transport the config picks.
        ("GIT_NO_LAZY_FETCH", "1"),
        ("GIT_ALLOW_PROTOCOL", "none"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_OPTIONAL_LOCKS", "0"),
        ("GIT_PAGER", "cat"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

fn config_env(settings: &[(String, String)]) -> Vec<(String, String)> {
    let mut env = vec![("GIT_CONFIG_COUNT".to_owned(), settings.len().to_string())];
    for (i, (key, value)) in settings.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), key.clone()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), value.clone()));
    }
    env
}

/// Every entry (key, value) of the repository's effective config, as git itself reads
/// it: includes and conditions evaluated as the real command will.
fn listed_config(
    guard: &PathGuard,
    git_dir: &str,
    work_tree: &str,
    settings: &[(String, String)],
) -> Result<Vec<(String, String)>, GitEnvError> {
    let listing = git_output(
        guard,
        git_dir,
        work_tree,
        settings,
        &["config", "--list", "-z"],
    )?;
    Ok(listing
        .split('\0')
        .filter(|e| !e.is_empty())
        .map(|e| match e.split_once('\n') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (e.to_owned(), String::new()),
        })
        .collect())
}

/// Standard output of a git command that reads only config or the index, run pinned.
fn git_output(
    guard: &PathGuard,
    git_dir: &str,
    work_tree: &str,
    settings: &[(String, String)],
    args: &[&str],
) -> Result<String, GitEnvError> {
    let mut request = SpawnRequest::new("git")
        .args(args.iter().copied())
        .timeout(std::time::Duration::from_secs(10))
        .output_limit(4 * 1024 * 1024);
    for (key, value) in pinning(git_dir, work_tree)
        .into_iter()
        .chain(config_env(settings))
    {
        request = request.env(key, value);
    }
    let unlisted = |message: String| GitEnvError::ConfigUnlisted { message };
    let out = spawn::run(guard, request).map_err(|e| unlisted(e.to_string()))?;
    if out.exit_code != Some(0) || out.truncated {
        return Err(unlisted(format!(
            "git {}: {}",
            args.join(" "),
            out.stderr.trim()
        )));
    }
    Ok(out.stdout)
}

/// Harmless replacements for every driver a repository defines.
fn driver_overrides(entries: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut push = |key: String, value: &str| {
        if !out.iter().any(|(k, _)| *k == key) {
            out.push((key, value.to_owned()));
        }
    };
    for (key, _) in entries {
        // `git config --list` lower-cases the section and the key, never the subsection.
        if key == "diff.external" {
            push(key.clone(), SAFE_EXTERNAL_DIFF);
            continue;
        }
        let Some((section, rest)) = key.split_once('.') else {
            continue;
        };
        let Some((name, _)) = rest.rsplit_once('.') else {
            continue;
        };
        match section {
            "diff" => {
                push(format!("diff.{name}.command"), SAFE_EXTERNAL_DIFF);
                push(format!("diff.{name}.textconv"), "cat");
                push(format!("diff.{name}.cachetextconv"), "false");
                push(format!("diff.{name}.trustExitCode"), "false");
            }
            // An empty clean, smudge or process command means no filter.
            "filter" => {
                for part in ["clean", "smudge", "process"] {
                    push(format!("filter.{name}.{part}"), "");
                }
                push(format!("filter.{name}.required"), "false");
            }
            "merge" => push(format!("merge.{name}.driver"), "false"),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_driver_subsection_gets_an_override() {
        let keys: Vec<(String, String)> = ["core.bare", "diff.P.q.textconv", "filter.lfs.clean"]
            .map(|k| (k.to_owned(), "x".to_owned()))
            .to_vec();
        let keys: Vec<String> = driver_overrides(&keys)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(
            keys,
            [
                "diff.P.q.command",
                "diff.P.q.textconv",
                "diff.P.q.cachetextconv",
                "diff.P.q.trustExitCode",
                "filter.lfs.clean",
                "filter.lfs.smudge",
                "filter.lfs.process",
                "filter.lfs.required",
            ]
        );
    }
}
