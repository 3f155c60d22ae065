//! Operand checks of the safe commands: no argument reaches outside the root.
//!
//! Every operand is resolved physically beneath the root ([`PathGuard::check_physical`]:
//! `link/..` is the link target's parent, as the kernel sees it), glob words are
//! checked against the directory they expand in (including `..` for `.?`-style
//! patterns), brace lists are expanded as bash would, short options with a glued
//! file are checked, and link-following recursion needs a tree with no outward link.

use crate::path::{EntryKind, PathError, PathGuard};

use super::brace::{MAX_EXPANSIONS, brace_expansions};
use super::deny::is_short_cluster_with;
use super::glob::glob_may_match_dot_dot;
use super::syntax::Word;

/// Where the script runs: the guard and the working directory relative to the root.
pub(crate) struct Scope<'a> {
    pub(crate) guard: &'a PathGuard,
    pub(crate) cwd: &'a str,
    /// No Landlock behind the policy: refuse what only the sandbox could contain.
    pub(crate) strict: bool,
}

/// Every argument (and every `--option=value` value) must stay inside the root.
pub(crate) fn check_operands(name: &str, args: &[&Word], scope: &Scope<'_>) -> Result<(), String> {
    let texts: Vec<&str> = args.iter().filter_map(|w| w.literal.as_deref()).collect();
    if let Some(flag) = link_following_flag(name, &texts) {
        check_no_escaping_link(name, flag, scope)?;
    }
    for word in args {
        let arg = word.literal.as_deref().unwrap_or_default();
        check_braces(name, arg, word, scope)?;
        if word.tilde {
            return Err(format!(
                "{name} argument {arg:?} names the home directory, outside the project root"
            ));
        }
        let value = match arg.strip_prefix('-') {
            Some(_) => match arg.split_once('=') {
                Some((_, value)) => value,
                // An option-like glob (`-*`) still expands against the tree.
                None if word.glob => arg,
                None => {
                    check_attached_values(name, arg, scope)?;
                    continue;
                }
            },
            None => arg,
        };
        if value.is_empty() {
            continue;
        }
        if word.glob {
            check_glob(name, value, scope)?;
        } else {
            check_one_path(name, value, scope)?;
        }
    }
    Ok(())
}

/// The option that makes `name` follow symlinks it meets while recursing, if any.
/// Options that follow only the operands themselves (`-H`, `find -H`) are not
/// listed: operands are resolved physically already.
fn link_following_flag<'a>(name: &str, args: &[&'a str]) -> Option<&'a str> {
    let long_prefix = |arg: &str, long: &str| {
        let option = arg.split('=').next().unwrap_or_default();
        option.len() >= 3 && long.starts_with(option)
    };
    let (short, long): (char, &str) = match name {
        "grep" => ('R', "--dereference-recursive"),
        "ls" | "du" => ('L', "--dereference"),
        "rg" => ('L', "--follow"),
        "tree" => ('l', "--follow"),
        "find" => {
            return args
                .iter()
                .find(|a| matches!(**a, "-L" | "-follow"))
                .copied();
        }
        // GNU diff -r follows links unless told not to.
        "diff" if !args.contains(&"--no-dereference") => ('r', "--recursive"),
        _ => return None,
    };
    args.iter()
        .find(|a| is_short_cluster_with(a, short) || long_prefix(a, long))
        .copied()
}

/// Link-following recursion is allowed only when no symlink in the project leads out,
/// and only with Landlock behind it (a link created after the scan would be followed).
fn check_no_escaping_link(name: &str, flag: &str, scope: &Scope<'_>) -> Result<(), String> {
    if scope.strict {
        return Err(format!(
            "{name} {flag} follows symlinks, and without Landlock nothing stops one that leads out: drop {flag}"
        ));
    }
    match scope.guard.find_escaping_link(MAX_LINK_SCAN_ENTRIES) {
        Ok(None) => Ok(()),
        Ok(Some(link)) => Err(format!(
            "{name} {flag} follows symlinks, and {link:?} leads outside the project root: \
             drop {flag} (recursion without it does not follow links)"
        )),
        Err(e) => Err(format!(
            "{name} {flag} follows symlinks, and the project could not be checked for links that lead out ({e}): drop {flag}"
        )),
    }
}

/// Most entries scanned for outward links before link-following recursion is refused.
const MAX_LINK_SCAN_ENTRIES: usize = 200_000;

/// Where `sh` is bash, `{..,x}` and `{-R,x}` expand: each result must be a safe
/// operand, and none may turn into an option the policy did not see.
fn check_braces(name: &str, arg: &str, word: &Word, scope: &Scope<'_>) -> Result<(), String> {
    if !arg.contains('{') {
        return Ok(());
    }
    let expansions = brace_expansions(arg).ok_or_else(|| {
        format!("{name} argument {arg:?} expands to more than {MAX_EXPANSIONS} words under bash")
    })?;
    if expansions.len() < 2 {
        return Ok(());
    }
    if let Some(option) = expansions.iter().find(|e| e.starts_with('-')) {
        return Err(format!(
            "{name} argument {arg:?} expands to the option {option:?} under bash: write options without braces"
        ));
    }
    for expanded in expansions.iter().filter(|e| !e.is_empty()) {
        if word.glob {
            check_glob(name, expanded, scope)?;
        } else {
            check_one_path(name, expanded, scope)?;
        }
    }
    Ok(())
}

/// A short option may carry its file glued on (`grep -f../x`, `-f/etc/passwd`):
/// the rest after the first letter, and every tail from a `/`, must stay inside.
fn check_attached_values(name: &str, arg: &str, scope: &Scope<'_>) -> Result<(), String> {
    if arg.starts_with("--") || arg.len() <= 2 {
        return Ok(());
    }
    let rest = arg.get(2..).unwrap_or_default();
    let tails = rest.match_indices('/').map(|(at, _)| &rest[at..]);
    for value in std::iter::once(rest).chain(tails) {
        check_one_path(name, value, scope)
            .map_err(|e| format!("{e}: a short option carries it as its value ({arg:?})"))?;
    }
    Ok(())
}

/// `value` joined to the working directory, as the child will open it.
fn in_cwd(value: &str, scope: &Scope<'_>) -> String {
    if value.starts_with('/') || scope.cwd == "." {
        value.to_owned()
    } else {
        format!("{}/{value}", scope.cwd)
    }
}

/// Resolves the operand physically (the kernel's order: a symlink first, then `..`).
fn check_one_path(name: &str, value: &str, scope: &Scope<'_>) -> Result<(), String> {
    match scope.guard.check_physical(&in_cwd(value, scope)) {
        Err(e @ (PathError::Escape { .. } | PathError::SymlinkLoop { .. })) => Err(format!(
            "{name} argument {value:?} leads outside the project root ({})",
            e.rule()
        )),
        // Missing files, patterns and revisions are not paths that escape.
        _ => Ok(()),
    }
}

/// A glob expands inside its directory: that directory must be inside the root and
/// hold no symlinks (which could lead out) and no names starting with `-` (options),
/// and when the pattern can match `..` (`.?`, `.*`, `.[!a]`), that parent must be
/// inside the root too.
fn check_glob(name: &str, value: &str, scope: &Scope<'_>) -> Result<(), String> {
    let first_glob = value.find(['*', '?', '[']).unwrap_or(value.len());
    let (dir, pattern) = match value[..first_glob].rfind('/') {
        Some(0) => ("/", &value[1..]),
        Some(at) => (&value[..at], &value[at + 1..]),
        None => (".", value),
    };
    if pattern.contains('/') {
        return Err(format!(
            "{name} argument {value:?} has a glob in a directory component"
        ));
    }
    check_one_path(name, dir, scope)?;
    if glob_may_match_dot_dot(pattern) && scope.strict {
        return Err(format!(
            "{name} glob {value:?} can match \"..\", and without Landlock only a literal path can be checked: name the directory"
        ));
    }
    if glob_may_match_dot_dot(pattern) {
        check_one_path(name, &format!("{dir}/.."), scope).map_err(|_| {
            format!(
                "{name} glob {value:?} can match \"..\", the parent directory, which is outside the project root"
            )
        })?;
    }
    let entries = scope
        .guard
        .read_dir_physical(&in_cwd(dir, scope))
        .unwrap_or_default();
    if let Some(risky) = entries
        .iter()
        .find(|e| e.kind == EntryKind::Symlink || e.name.starts_with('-'))
    {
        return Err(format!(
            "{name} glob {value:?} could expand to {:?} (a symlink or an option-like name)",
            risky.name
        ));
    }
    Ok(())
}
