//! The hard deny list: catastrophic commands, named by a rule id.
//!
//! This list is a guard rail and an explanation for people, not the
//! boundary: anything it misses still needs approval because it is not on
//! the safe list. It looks at every command in the script, nested ones
//! included (substitutions, subshells, functions, `find -exec`, wrappers
//! such as `timeout`/`env`/`xargs`, and scripts passed to `sh -c` or `eval`).

use super::syntax::{Analysis, Command, analyse};

mod rules;

use rules::{program_rules, redirect_target};

/// A matched deny rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    pub(crate) rule: &'static str,
    pub(crate) reason: String,
}

fn deny(rule: &'static str, reason: impl Into<String>) -> Option<Denial> {
    Some(Denial {
        rule,
        reason: reason.into(),
    })
}

/// Programs that run code they are given (for pipes from downloaders and nested scripts).
pub(crate) const INTERPRETERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "python", "python2",
    "python3", "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "source", ".",
];
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
];
const DOWNLOADERS: &[&str] = &["curl", "wget", "fetch", "aria2c", "http", "xh"];
/// Wrappers that run the rest of their arguments as a command.
const WRAPPERS: &[&str] = &[
    "env", "command", "builtin", "exec", "nohup", "time", "nice", "ionice", "timeout", "stdbuf",
    "setsid", "xargs", "busybox", "toybox", "chrt", "taskset", "unbuffer", "watch", "flock",
];
const MAX_NESTING: usize = 4;

/// First matching deny rule in an analysed script.
pub(crate) fn check(analysis: &Analysis) -> Option<Denial> {
    check_at_depth(analysis, 0)
}

fn check_at_depth(analysis: &Analysis, depth: usize) -> Option<Denial> {
    if let Some(d) = fork_bomb(analysis) {
        return Some(d);
    }
    if let Some(d) = pipe_to_interpreter(analysis) {
        return Some(d);
    }
    analysis
        .commands
        .iter()
        .find_map(|c| check_command(c, depth))
}

fn check_command(command: &Command, depth: usize) -> Option<Denial> {
    if let Some(d) = command
        .redirects
        .iter()
        .find_map(|r| r.target.as_deref().and_then(redirect_target))
    {
        return Some(d);
    }
    let name = command.name().map(basename).unwrap_or_default();
    if INTERPRETERS.contains(&name)
        && command
            .substituted_programs
            .iter()
            .any(|p| DOWNLOADERS.contains(&basename(p)))
    {
        return deny(
            "remote_code.process_substitution",
            format!("{name} runs code downloaded through a process substitution"),
        );
    }
    let argv: Vec<String> = command
        .argv()
        .into_iter()
        .map(|w| w.unwrap_or("\u{0}").to_owned())
        .collect();
    check_argv(&argv, depth)
}

/// Checks one argv, unwrapping wrappers and nested scripts. Non-literal words are `"\0"`.
fn check_argv(argv: &[String], depth: usize) -> Option<Denial> {
    if depth > MAX_NESTING {
        return None;
    }
    let name = basename(argv.first()?);
    if let Some(d) = program_rules(name, &argv[1..]) {
        return Some(d);
    }
    if let Some(script) = nested_script(name, &argv[1..]) {
        let nested = analyse(&script);
        return check_at_depth(&nested, depth + 1);
    }
    if WRAPPERS.contains(&name) {
        let inner = unwrap(name, &argv[1..]);
        return check_argv(inner, depth + 1);
    }
    None
}

/// The script run by `sh -c SCRIPT`, `bash -lc SCRIPT`, `eval ARGS`, `env -S STRING`.
fn nested_script(name: &str, args: &[String]) -> Option<String> {
    if name == "eval" {
        return Some(args.join(" "));
    }
    if SHELLS.contains(&name) {
        let at = args.iter().position(|a| is_short_cluster_with(a, 'c'))?;
        return args.get(at + 1).cloned();
    }
    if name == "env" {
        let at = args
            .iter()
            .position(|a| a == "-S" || a == "--split-string")?;
        return args.get(at + 1).cloned();
    }
    None
}

/// Arguments after a wrapper's own options: the command it runs.
fn unwrap<'a>(name: &str, args: &'a [String]) -> &'a [String] {
    let takes_value: &[&str] = match name {
        "nice" => &["-n", "--adjustment"],
        "ionice" => &["-c", "-n", "-p", "--class", "--classdata"],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "xargs" => &[
            "-I",
            "-n",
            "-P",
            "-d",
            "-L",
            "-s",
            "-E",
            "-a",
            "--arg-file",
            "--delimiter",
            "--max-args",
        ],
        "env" => &["-u", "--unset", "-C", "--chdir"],
        "stdbuf" => &["-i", "-o", "-e"],
        "flock" => &["-w", "--timeout", "-E"],
        "watch" => &["-n", "--interval"],
        _ => &[],
    };
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if takes_value.contains(&arg.as_str()) {
            i += 2;
        } else if arg.starts_with('-') || (name == "env" && arg.contains('=')) {
            i += 1;
        } else {
            break;
        }
    }
    // timeout DURATION CMD, taskset MASK CMD, chrt PRIO CMD, flock FILE CMD: skip the positional.
    if matches!(name, "timeout" | "taskset" | "chrt" | "flock") {
        i += 1;
    }
    args.get(i..).unwrap_or(&[])
}

fn fork_bomb(analysis: &Analysis) -> Option<Denial> {
    let (name, _) = analysis
        .functions
        .iter()
        .find(|(name, called)| called.contains(name))?;
    deny(
        "fork_bomb",
        format!("function {name:?} calls itself recursively (fork bomb)"),
    )
}

fn pipe_to_interpreter(analysis: &Analysis) -> Option<Denial> {
    for stages in &analysis.pipelines {
        let names: Vec<&str> = stages
            .iter()
            .filter_map(|&i| analysis.commands.get(i))
            .map(resolved_name)
            .collect();
        let fetch_at = names.iter().position(|n| DOWNLOADERS.contains(n));
        if let Some(at) = fetch_at
            && let Some(runner) = names[at + 1..].iter().find(|n| INTERPRETERS.contains(n))
        {
            return deny(
                "remote_code.pipe_to_shell",
                format!("downloaded content is piped into {runner}"),
            );
        }
    }
    None
}

/// Program name after unwrapping wrappers (`sudo bash` → `bash`).
fn resolved_name(command: &Command) -> &str {
    let argv: Vec<&str> = command
        .argv()
        .into_iter()
        .map(|w| w.unwrap_or(""))
        .collect();
    let mut i = 0;
    while let Some(word) = argv.get(i) {
        let name = basename(word);
        if WRAPPERS.contains(&name) || matches!(name, "sudo" | "doas") {
            i += 1;
            while argv.get(i).is_some_and(|a| a.starts_with('-')) {
                i += 1;
            }
        } else {
            return name;
        }
    }
    ""
}

fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// `-rf`, `-Rv`, `-lc`: a single-dash cluster containing `flag`.
pub(crate) fn is_short_cluster_with(arg: &str, flag: char) -> bool {
    arg.len() > 1
        && arg.starts_with('-')
        && !arg.starts_with("--")
        && arg[1..].chars().all(char::is_alphanumeric)
        && arg[1..].contains(flag)
}
