//! Which `git` command lines read only.
//!
//! The words are checked here; what git reads from the repository (config that names
//! programs, attributes that pick drivers) is neutralised at run time by
//! [`super::hardened_git_env`]. Options are matched as git's parse-options reads them:
//! an abbreviation of a refused option is refused (see [`super::options`]).

use super::options::{abbreviates, long_name, refused_long, refused_short};

/// Git subcommands that only read.
pub(crate) const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "branch",
    "blame",
    "rev-parse",
    "ls-files",
    "grep",
    "describe",
];

/// Options of the read-only subcommands that run a program, write a file or the index.
const REFUSED: &[&str] = &[
    "--output",
    "--ext-diff",
    "--textconv",
    "--open-files-in-pager",
    "--paginate",
    "--config-env",
    "--exec",
    // describe --dirty/--broken refresh and write the index.
    "--dirty",
    "--broken",
];

/// `git` only with a read-only subcommand and no option that runs code or writes files.
pub(crate) fn check_git(args: &[&str]) -> Result<(), String> {
    let mut rest = args;
    while let Some((first, tail)) = rest.split_first() {
        // Git matches its own options (before the subcommand) exactly.
        if *first == "--no-pager" {
            rest = tail;
        } else if first.starts_with('-') {
            return Err(format!(
                "git option {first} is not allowed before the subcommand (-c, --config-env, -p, -C, --git-dir, --work-tree, --exec-path and others can run code or leave the project)"
            ));
        } else {
            break;
        }
    }
    let (sub, rest) = rest.split_first().ok_or("git without a subcommand")?;
    if !GIT_READ_ONLY.contains(sub) {
        return Err(format!(
            "git {sub} is not a read-only subcommand (allowed: {})",
            GIT_READ_ONLY.join(", ")
        ));
    }
    for arg in rest.iter().take_while(|a| **a != "--") {
        if let Some(refused) = refused_long(arg, REFUSED) {
            return Err(format!(
                "git {sub} {arg} can be read as {refused}, which runs external programs or writes files"
            ));
        }
        if *sub == "grep" && refused_short(arg, "O").is_some() {
            return Err(format!("git grep {arg} opens a pager program (-O)"));
        }
    }
    if *sub == "branch" {
        check_git_branch(rest)?;
    }
    Ok(())
}

/// Options of `git branch` that create, delete, rename, copy or configure branches.
const BRANCH_WRITES: &[&str] = &[
    "delete",
    "move",
    "copy",
    "force",
    "set-upstream-to",
    "set-upstream",
    "unset-upstream",
    "edit-description",
    "track",
    "no-track",
    "create-reflog",
    "recurse-submodules",
];

/// Options of `git branch` that only list (with or without a value).
const BRANCH_LISTS: &[&str] = &[
    "list",
    "all",
    "remotes",
    "verbose",
    "quiet",
    "contains",
    "no-contains",
    "merged",
    "no-merged",
    "points-at",
    "sort",
    "format",
    "color",
    "no-color",
    "column",
    "no-column",
    "abbrev",
    "no-abbrev",
    "ignore-case",
    "show-current",
    "omit-empty",
];

/// Listing options after which a plain word is a pattern or a commit, not a new branch.
const BRANCH_SELECTS: &[&str] = &[
    "list",
    "all",
    "remotes",
    "contains",
    "no-contains",
    "merged",
    "no-merged",
    "points-at",
];

/// Short options of `git branch` that only list: `-l -a -r -v -q -i`.
const BRANCH_SHORT_LISTS: &str = "larvqi";

/// `git branch` only lists: every option is a listing one (abbreviations included), and
/// a plain word is allowed only as a pattern or commit of a listing mode.
fn check_git_branch(args: &[&str]) -> Result<(), String> {
    let mut listing = false;
    let mut named = false;
    let mut options_done = false;
    for arg in args {
        if options_done || !arg.starts_with('-') || *arg == "-" {
            named = true;
        } else if *arg == "--" {
            options_done = true;
        } else if let Some(given) = long_name(arg) {
            if let Some(write) = BRANCH_WRITES.iter().find(|w| abbreviates(given, w)) {
                return Err(format!(
                    "git branch {arg} can be read as --{write}, which changes branches"
                ));
            }
            if !BRANCH_LISTS.iter().any(|l| abbreviates(given, l)) {
                return Err(format!(
                    "git branch {arg} is not a listing option (allowed: --{})",
                    BRANCH_LISTS.join(", --")
                ));
            }
            listing |= BRANCH_SELECTS.iter().any(|l| abbreviates(given, l));
        } else {
            let cluster = arg.trim_start_matches('-');
            if let Some(flag) = cluster.chars().find(|c| !BRANCH_SHORT_LISTS.contains(*c)) {
                return Err(format!(
                    "git branch {arg} contains -{flag}, which is not a listing option (allowed: -l -a -r -v -q -i)"
                ));
            }
            listing |= cluster.contains(['l', 'a', 'r']);
        }
    }
    if named && !listing {
        return Err("git branch with a name creates a branch; use --list to filter".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_listing_passes_and_every_write_spelling_is_refused() {
        for ok in [
            "",
            "-a",
            "-vv",
            "--list feat*",
            "-a --contains HEAD",
            "--li",
            "--show-current",
            "-r --format=%(refname)",
        ] {
            let args: Vec<&str> = ok.split_whitespace().collect();
            assert_eq!(check_git_branch(&args), Ok(()), "{ok}");
        }
        for bad in [
            "-a --mov feature renamed",
            "--m a b",
            "--del x",
            "-D x",
            "-dr origin/x",
            "-aM a b",
            "--set-up=origin/x",
            "--unset-up",
            "--edit-desc",
            "--no-t x",
            "--cr x",
            "--co a b",
            "--f x",
            "--recurse",
            "--bogus",
            "newbranch",
        ] {
            let args: Vec<&str> = bad.split_whitespace().collect();
            assert!(check_git_branch(&args).is_err(), "{bad}");
        }
    }
}
