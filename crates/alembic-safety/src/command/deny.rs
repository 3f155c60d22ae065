//! The hard deny list: catastrophic commands, named by a rule id.
//!
//! This list is a guard rail and an explanation for people, not the
//! boundary: anything it misses still needs approval because it is not on
//! the safe list. It looks at every command in the script, nested ones
//! included (substitutions, subshells, functions, `find -exec`, wrappers
//! such as `timeout`/`env`/`xargs`, and scripts passed to `sh -c` or `eval`).

use super::syntax::{Analysis, Command, analyse};

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

fn program_rules(name: &str, args: &[String]) -> Option<Denial> {
    host_rules(name, args).or_else(|| project_rules(name, args))
}

/// Rules about the machine: privileges, disks, power, processes.
fn host_rules(name: &str, args: &[String]) -> Option<Denial> {
    match name {
        "sudo" | "doas" | "su" | "pkexec" | "run0" => deny(
            "privilege.escalation",
            format!("{name} runs commands with another user's privileges"),
        ),
        n if n.starts_with("mkfs")
            || matches!(
                n,
                "mke2fs" | "mkswap" | "wipefs" | "fdisk" | "sfdisk" | "parted"
            ) =>
        {
            deny(
                "disk.format",
                format!("{name} formats or repartitions a disk"),
            )
        }
        "dd" if args
            .iter()
            .any(|a| a.starts_with("of=/dev/") && a != "of=/dev/null") =>
        {
            deny("disk.dd_device", "dd writes directly to a device")
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            deny("host.shutdown", format!("{name} stops the host"))
        }
        "systemctl"
            if args
                .iter()
                .any(|a| matches!(a.as_str(), "poweroff" | "reboot" | "halt" | "kexec")) =>
        {
            deny("host.shutdown", "systemctl stops the host")
        }
        "init" | "telinit" if args.iter().any(|a| a == "0" || a == "6") => {
            deny("host.shutdown", "init changes runlevel")
        }
        "kill" if args.last().is_some_and(|a| a == "-1") => deny(
            "process.kill_all",
            "kill -1 signals every process of the user",
        ),
        "killall" | "killall5" => deny(
            "process.kill_all",
            format!("{name} kills processes by name"),
        ),
        _ => None,
    }
}

/// Rules about files, repositories, networks and releases.
fn project_rules(name: &str, args: &[String]) -> Option<Denial> {
    match name {
        "rm" => rm_rule(args),
        "chmod" | "chown" | "chgrp" => permission_rule(name, args),
        "git" => git_rule(args),
        "nc" | "ncat" | "netcat"
            if args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "-e" | "-c" | "--exec" | "--sh-exec" | "--lua-exec"
                )
            }) =>
        {
            deny(
                "network.shell",
                format!("{name} -e serves a shell over the network"),
            )
        }
        "socat"
            if args.iter().any(|a| {
                a.to_lowercase().contains("exec:") || a.to_lowercase().contains("system:")
            }) =>
        {
            deny("network.shell", "socat connects a program to the network")
        }
        "docker" | "podman" => container_rule(name, args),
        "terraform" | "tofu" if args.iter().any(|a| a == "destroy") => {
            deny("infra.destroy", "terraform destroy deletes infrastructure")
        }
        "kubectl" if args.first().is_some_and(|a| a == "delete") => {
            deny("infra.destroy", "kubectl delete removes cluster resources")
        }
        "npm" | "yarn" | "pnpm" | "cargo" | "gem" | "poetry"
            if args.first().is_some_and(|a| a == "publish" || a == "push") =>
        {
            deny(
                "release.publish",
                format!("{name} {} is an irreversible public release", args[0]),
            )
        }
        "twine" if args.first().is_some_and(|a| a == "upload") => deny(
            "release.publish",
            "twine upload is an irreversible public release",
        ),
        "crontab" => deny(
            "persistence.cron",
            "crontab installs commands that run later",
        ),
        "find" => find_rule(args),
        "tee" | "cp" | "mv" | "truncate" | "install" | "ln" | "shred" | "sed"
            if args.iter().any(|a| touches_control_path(a)) =>
        {
            deny(
                "policy.tamper",
                format!("{name} would modify Alembic's own files or git hooks"),
            )
        }
        _ => None,
    }
}

fn rm_rule(args: &[String]) -> Option<Denial> {
    if args.iter().any(|a| a == "--no-preserve-root") {
        return deny(
            "rm.no_preserve_root",
            "rm --no-preserve-root disables the guard against deleting /",
        );
    }
    let recursive = args.iter().any(|a| {
        a == "--recursive" || is_short_cluster_with(a, 'r') || is_short_cluster_with(a, 'R')
    });
    let target = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .find(|a| is_sweeping_target(a))?;
    recursive.then(|| Denial {
        rule: "rm.recursive_root",
        reason: format!(
            "rm -r on {:?} deletes the file system, the home directory or the whole project",
            target.replace('\u{0}', "<computed>")
        ),
    })
}

/// `/`, a top-level directory, the home directory, the project root or everything in it.
fn is_sweeping_target(target: &str) -> bool {
    let trimmed = target.trim_end_matches('/');
    let top_level = trimmed.starts_with('/') && trimmed.matches('/').count() <= 1;
    top_level
        || trimmed.is_empty()
        || target.starts_with('~')
        || target.starts_with("$HOME")
        || target.contains('\u{0}')
        || matches!(trimmed, "." | ".." | "*" | "./*" | ".*" | "/*")
        || trimmed.starts_with("../")
}

fn permission_rule(name: &str, args: &[String]) -> Option<Denial> {
    let recursive = args
        .iter()
        .any(|a| a == "--recursive" || is_short_cluster_with(a, 'R'));
    let operands: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let (mode, targets) = operands.split_first()?;
    if name == "chmod" {
        let octal_special =
            mode.len() == 4 && mode.chars().all(|c| c.is_ascii_digit()) && !mode.starts_with('0');
        if octal_special || (mode.contains('s') && mode.contains('+')) {
            return deny(
                "perm.setuid",
                format!("chmod {mode} sets the set-user/group-ID bit"),
            );
        }
    }
    let target = targets.iter().find(|a| is_sweeping_target(a))?;
    recursive.then(|| Denial {
        rule: "perm.recursive_root",
        reason: format!(
            "{name} -R on {target:?} changes permissions system-wide or of the home directory"
        ),
    })
}

/// Git config keys whose value is a program git runs later.
fn is_exec_config_key(key: &str) -> bool {
    let key = key.to_lowercase();
    let key = key.split('=').next().unwrap_or_default();
    matches!(
        key,
        "core.fsmonitor"
            | "core.hookspath"
            | "core.pager"
            | "core.editor"
            | "core.sshcommand"
            | "core.askpass"
            | "core.gitproxy"
            | "diff.external"
            | "sequence.editor"
            | "gpg.program"
            | "credential.helper"
            | "uploadpack.packobjectshook"
            | "pager.log"
            | "pager.diff"
            | "pager.show"
            | "pager.status"
    ) || key.starts_with("alias.")
        || key.ends_with(".textconv")
        || key.ends_with(".command")
        || key.ends_with(".clean")
        || key.ends_with(".smudge")
        || key.ends_with(".process")
}

/// Index of git's subcommand after the global options, or a denial for a
/// `-c`/`--config-env` override that makes git run a program.
fn git_global_options(args: &[String]) -> Result<usize, Denial> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "-c"
            || arg.starts_with("--config-env")
            || (arg.starts_with("-c") && arg.len() > 2)
        {
            let value = if arg == "-c" {
                args.get(i + 1).map(String::as_str).unwrap_or("")
            } else {
                arg.trim_start_matches("-c")
            };
            let key = value.trim_start_matches("--config-env=");
            if arg.starts_with("--config-env") || is_exec_config_key(key) {
                return Err(Denial {
                    rule: "git.config_exec",
                    reason: "git config overrides can make git run arbitrary programs".into(),
                });
            }
        }
        if !arg.starts_with('-') {
            break;
        }
        i += if arg == "-c" || arg == "-C" { 2 } else { 1 };
    }
    Ok(i)
}

fn git_rule(args: &[String]) -> Option<Denial> {
    let i = match git_global_options(args) {
        Ok(subcommand_at) => subcommand_at,
        Err(denial) => return Some(denial),
    };
    let sub = args.get(i)?.as_str();
    let rest = &args[i + 1..];
    let has = |flag: &str| rest.iter().any(|a| a == flag);
    match sub {
        "push"
            if rest.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "-f" | "--force" | "--mirror" | "--delete" | "-d"
                ) || a.starts_with("--force-with-lease")
                    || a.starts_with('+')
            }) =>
        {
            deny(
                "git.force_push",
                "git push --force rewrites or deletes shared history",
            )
        }
        "reset" if has("--hard") || has("--merge") => deny(
            "git.discard_work",
            "git reset --hard discards uncommitted work",
        ),
        "clean"
            if rest
                .iter()
                .any(|a| a == "--force" || is_short_cluster_with(a, 'f')) =>
        {
            deny(
                "git.discard_work",
                "git clean -f deletes untracked files git cannot restore",
            )
        }
        "config" if rest.iter().any(|a| is_exec_config_key(a)) => deny(
            "git.config_exec",
            "this git config key makes later git commands run a program",
        ),
        _ => None,
    }
}

fn container_rule(name: &str, args: &[String]) -> Option<Denial> {
    let host_mount = args
        .windows(2)
        .any(|w| matches!(w[0].as_str(), "-v" | "--volume") && w[1].starts_with("/:"))
        || args
            .iter()
            .any(|a| a.starts_with("--volume=/:") || a.contains("source=/,"));
    if args.iter().any(|a| a == "--privileged") || host_mount {
        return deny(
            "container.host_root",
            format!("{name} with --privileged or / mounted gives the container the host"),
        );
    }
    None
}

fn find_rule(args: &[String]) -> Option<Denial> {
    let starts: Vec<&String> = args
        .iter()
        .take_while(|a| !a.starts_with('-') && !a.starts_with('(') && *a != "!")
        .collect();
    if args.iter().any(|a| a == "-delete")
        && starts
            .iter()
            .any(|s| is_sweeping_target(s) && s.as_str() != ".")
    {
        return deny(
            "find.delete_outside",
            "find -delete outside the project deletes files across the disk",
        );
    }
    let exec_at = args
        .iter()
        .position(|a| matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))?;
    let inner: Vec<String> = args[exec_at + 1..]
        .iter()
        .take_while(|a| *a != ";" && *a != "+")
        .cloned()
        .collect();
    let program = inner.first().map(|p| basename(p)).unwrap_or_default();
    if matches!(
        program,
        "rm" | "shred" | "unlink" | "wipe" | "srm" | "dd" | "truncate"
    ) {
        return deny(
            "find.exec_destructive",
            format!("find -exec {program} deletes or destroys every match"),
        );
    }
    check_argv(&inner, 1)
}

fn redirect_target(target: &str) -> Option<Denial> {
    let lower = target.to_lowercase();
    if lower.starts_with("/dev/tcp/") || lower.starts_with("/dev/udp/") {
        return deny(
            "network.dev_tcp",
            "redirect to /dev/tcp opens a network connection (reverse shell)",
        );
    }
    let devices = [
        "/dev/sd",
        "/dev/hd",
        "/dev/vd",
        "/dev/xvd",
        "/dev/nvme",
        "/dev/mmcblk",
        "/dev/disk/",
        "/dev/mapper/",
        "/dev/mem",
        "/dev/kmem",
        "/dev/port",
    ];
    if devices.iter().any(|d| lower.starts_with(d)) {
        return deny(
            "disk.device_write",
            format!("redirect writes directly to the device {target}"),
        );
    }
    let rc = [
        ".bashrc",
        ".bash_profile",
        ".profile",
        ".zshrc",
        ".zprofile",
        ".bash_login",
        ".config/fish/config.fish",
    ];
    if target.starts_with('~') && rc.iter().any(|f| lower.ends_with(f)) {
        return deny(
            "persistence.shell_rc",
            "writing a shell start-up file runs commands in every later shell",
        );
    }
    if touches_control_path(target) {
        return deny(
            "policy.tamper",
            format!("redirect would modify {target}, a control file of Alembic or git"),
        );
    }
    None
}

/// `.alembic/…` (Alembic's config, database and audit log) and `.git/hooks`, `.git/config`.
fn touches_control_path(arg: &str) -> bool {
    let lower = arg.to_lowercase();
    let parts: Vec<&str> = lower.split('/').collect();
    parts.contains(&".alembic")
        || parts
            .windows(2)
            .any(|w| w[0] == ".git" && matches!(w[1], "hooks" | "config" | "info"))
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
