//! The safe list and each safe program's argument checks.
//!
//! A command is allowed only when its name is a plain word on the list, its
//! arguments pass that program's checks, and no argument names a path outside
//! the project root (checked through [`PathGuard`](crate::PathGuard), so an in-root symlink that
//! leads out counts as outside).

use super::git::check_git;
use super::operands::{Scope, check_operands};
use super::options;
use super::syntax::{Command, Word};

/// Whether a program's arguments are file names or plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operands {
    /// Arguments may name files: each is checked against the root.
    Paths,
    /// Arguments are text (echo, which, tr): never opened as files.
    Text,
}

/// One entry of the safe list.
struct Spec {
    name: &'static str,
    operands: Operands,
    /// Long options refused (also when abbreviated or given `=value`).
    long: &'static [&'static str],
    /// Short options refused, alone or inside a cluster such as `-nz`.
    short: &'static str,
    /// Exact arguments refused (find's primaries).
    exact: &'static [&'static str],
}

const fn spec(name: &'static str, operands: Operands) -> Spec {
    Spec {
        name,
        operands,
        long: &[],
        short: "",
        exact: &[],
    }
}

/// The default safe list. `git` and `sed` have their own checks below.
const SPECS: &[Spec] = &[
    spec("ls", Operands::Paths),
    spec("cat", Operands::Paths),
    spec("head", Operands::Paths),
    Spec {
        long: &["--follow", "--retry"],
        short: "fF",
        ..spec("tail", Operands::Paths)
    },
    Spec {
        long: &["--files0-from"],
        ..spec("wc", Operands::Paths)
    },
    spec("grep", Operands::Paths),
    Spec {
        long: &[
            "--pre",
            "--pre-glob",
            "--search-zip",
            "--hostname-bin",
            "--follow",
        ],
        short: "zL",
        ..spec("rg", Operands::Paths)
    },
    Spec {
        exact: &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls", "-L", "-follow",
        ],
        ..spec("find", Operands::Paths)
    },
    spec("echo", Operands::Text),
    spec("pwd", Operands::Text),
    Spec {
        long: &[
            "--output",
            "--compress-program",
            "--temporary-directory",
            "--files0-from",
        ],
        short: "oT",
        ..spec("sort", Operands::Paths)
    },
    spec("uniq", Operands::Paths),
    spec("cut", Operands::Paths),
    spec("tr", Operands::Text),
    spec("stat", Operands::Paths),
    Spec {
        long: &["--files0-from"],
        ..spec("du", Operands::Paths)
    },
    Spec {
        long: &["--compile", "--files-from"],
        short: "Cf",
        ..spec("file", Operands::Paths)
    },
    spec("diff", Operands::Paths),
    Spec {
        long: &["--fromfile", "--output"],
        short: "oRl",
        ..spec("tree", Operands::Paths)
    },
    spec("which", Operands::Text),
    spec("sed", Operands::Paths),
    spec("git", Operands::Paths),
];

/// Names on the default safe list.
pub(crate) fn default_names() -> Vec<&'static str> {
    SPECS.iter().map(|s| s.name).collect()
}

/// A safe-list entry added by configuration: a program, optionally with a fixed first argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExtraEntry {
    pub(crate) program: String,
    pub(crate) first_arg: Option<String>,
}

/// `Ok` when this command is provably safe; otherwise the reason.
pub(crate) fn check(
    command: &Command,
    extra: &[ExtraEntry],
    scope: &Scope<'_>,
) -> Result<(), String> {
    let name_word = command.words.first().ok_or("empty command")?;
    let name = name_word.literal.as_deref().unwrap_or_default();
    if !name_word.plain {
        return Err(format!(
            "the program name {name:?} is quoted, escaped or computed"
        ));
    }
    if command.words.iter().any(|w| w.literal.is_none()) {
        return Err(format!("an argument of {name} is not literal"));
    }
    let args: Vec<&Word> = command.words[1..].iter().collect();
    let texts: Vec<&str> = args.iter().filter_map(|w| w.literal.as_deref()).collect();
    if let Some(spec) = SPECS.iter().find(|s| s.name == name) {
        check_options(spec, &texts)?;
        match name {
            "git" => check_git(&texts)?,
            "sed" => check_sed(&texts)?,
            "uniq" => check_uniq(&args)?,
            _ => {}
        }
        if spec.operands == Operands::Paths {
            check_operands(name, &args, scope)?;
        }
        return Ok(());
    }
    let listed = extra.iter().any(|e| {
        e.program == name
            && e.first_arg
                .as_deref()
                .is_none_or(|a| texts.first() == Some(&a))
    });
    if !listed {
        return Err(format!("{name:?} is not on the safe command list"));
    }
    check_operands(name, &args, scope)
}

fn check_options(spec: &Spec, args: &[&str]) -> Result<(), String> {
    for arg in args {
        if spec.exact.contains(arg) {
            return Err(format!(
                "{} {arg} can run programs, delete or write files",
                spec.name
            ));
        }
        if let Some(refused) = options::refused_long(arg, spec.long) {
            return Err(format!(
                "{} {arg} can be read as {refused}, which can run programs or write files",
                spec.name
            ));
        }
        if let Some(flag) = options::refused_short(arg, spec.short) {
            return Err(format!(
                "{} {arg} contains -{flag}, which can run programs, write files or never finish",
                spec.name
            ));
        }
    }
    Ok(())
}

/// `sed` only as a printer: `-n` with a script of line-number `p` commands.
fn check_sed(args: &[&str]) -> Result<(), String> {
    const OPTIONS: &[&str] = &[
        "-n",
        "--quiet",
        "--silent",
        "-E",
        "-r",
        "--regexp-extended",
        "-s",
        "--separate",
    ];
    let mut quiet = false;
    let mut script = None;
    for arg in args {
        if arg.starts_with('-') && *arg != "-" {
            if !OPTIONS.contains(arg) {
                return Err(format!(
                    "sed {arg} is not allowed (only -n with a print script)"
                ));
            }
            quiet |= matches!(*arg, "-n" | "--quiet" | "--silent");
        } else if script.is_none() {
            script = Some(*arg);
        }
    }
    let script = script.ok_or("sed without a script")?;
    if !quiet || !script.split(';').all(is_print_command) {
        return Err(format!(
            "sed script {script:?} is not a print-only script like -n 1,20p"
        ));
    }
    Ok(())
}

/// `Np`, `N,Mp`, `$p`, `N,$p`.
fn is_print_command(cmd: &str) -> bool {
    let is_address = |a: &str| a == "$" || (!a.is_empty() && a.chars().all(|c| c.is_ascii_digit()));
    let Some(addresses) = cmd.trim().strip_suffix('p') else {
        return false;
    };
    match addresses.split_once(',') {
        Some((from, to)) => is_address(from) && is_address(to),
        None => is_address(addresses),
    }
}

/// `uniq` writes its second operand: at most one file.
fn check_uniq(args: &[&Word]) -> Result<(), String> {
    let operands = args
        .iter()
        .filter(|w| {
            w.literal
                .as_deref()
                .is_some_and(|a| !a.starts_with('-') || a == "-")
        })
        .count();
    if operands > 1 || args.iter().any(|w| w.glob) {
        return Err("uniq with a second file writes to it: give at most one input file".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_print_scripts() {
        for ok in ["1p", "1,20p", "$p", "5,$p", "1p;3p"] {
            assert!(ok.split(';').all(is_print_command), "{ok}");
        }
        for bad in ["1p;e id", "s/a/b/e", "w out", "1d", "p", ""] {
            assert!(!bad.split(';').all(is_print_command), "{bad}");
        }
    }
}
