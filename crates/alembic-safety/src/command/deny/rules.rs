//! The program rules of the deny list: what one command (by program name and arguments) or
//! one redirect target may not do. [`super`] finds every command to check; this file says
//! which ones are catastrophic.

use super::{Denial, basename, check_argv, deny, is_short_cluster_with};

pub(super) fn program_rules(name: &str, args: &[String]) -> Option<Denial> {
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

pub(super) fn redirect_target(target: &str) -> Option<Denial> {
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
