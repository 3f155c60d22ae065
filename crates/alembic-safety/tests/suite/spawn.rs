//! The spawn function: confinement, environment, timeouts, process groups and descriptors.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use alembic_safety::PathGuard;
use alembic_safety::spawn::{MAX_TIMEOUT, SpawnError, SpawnRequest, run};
use pretty_assertions::assert_eq;

use super::fixture::Fixture;

fn guard(fx: &Fixture) -> PathGuard {
    PathGuard::new(&fx.root).unwrap()
}

/// True once `pid` no longer runs (gone, or a zombie waiting to be reaped).
fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (bounded) for the kernel to finish delivering SIGKILL.
fn wait_until_gone(pid: i32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if process_gone(pid) {
            return true;
        }
        std::thread::yield_now();
    }
    false
}

#[test]
fn runs_in_the_root_and_reports_exit_codes() {
    let fx = Fixture::new();
    let g = guard(&fx);
    let out = run(&g, SpawnRequest::new("pwd")).unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(
        out.stdout.trim_end(),
        fx.root.canonicalize().unwrap().to_str().unwrap()
    );
    let out = run(&g, SpawnRequest::new("pwd").cwd("src")).unwrap();
    assert!(
        out.stdout.trim_end().ends_with("/root/src"),
        "{}",
        out.stdout
    );
    let out = run(&g, SpawnRequest::new("ls").arg("no-such-file")).unwrap();
    assert_eq!(out.exit_code, Some(2));
    assert!(out.stderr.contains("no-such-file"));
    assert!(matches!(
        run(&g, SpawnRequest::new("pwd").cwd("..")),
        Err(SpawnError::Cwd(_))
    ));
    assert!(matches!(
        run(&g, SpawnRequest::new("no-such-program-x")),
        Err(SpawnError::NotFound { .. })
    ));
}

#[test]
fn environment_is_an_allow_list() {
    let fx = Fixture::new();
    let out = run(&guard(&fx), SpawnRequest::new("env")).unwrap();
    let names: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split('=').next())
        .collect();
    // cargo sets CARGO_MANIFEST_DIR, CARGO_PKG_* and RUST_BACKTRACE for tests; none may leak.
    for leaked in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME", "RUST_BACKTRACE"] {
        assert!(!names.contains(&leaked), "{leaked} leaked: {names:?}");
    }
    for name in &names {
        assert!(
            alembic_safety::spawn::INHERITED_ENV.contains(name)
                || [
                    "HOME",
                    "TERM",
                    "PAGER",
                    "GIT_PAGER",
                    "LESS",
                    "NO_COLOR",
                    "GIT_TERMINAL_PROMPT",
                    "GIT_CONFIG_NOSYSTEM",
                    "GIT_CONFIG_GLOBAL",
                    "RUSTUP_AUTO_INSTALL"
                ]
                .contains(name),
            "unexpected variable {name}"
        );
    }
    assert!(out.stdout.contains(&format!(
        "HOME={}",
        fx.root.canonicalize().unwrap().display()
    )));
}

#[test]
fn stdin_is_empty_and_no_new_privs_is_set() {
    let fx = Fixture::new();
    let out = run(&guard(&fx), SpawnRequest::new("cat")).unwrap();
    assert_eq!((out.exit_code, out.stdout.as_str()), (Some(0), ""));
    let out = run(
        &guard(&fx),
        SpawnRequest::new("grep").args(["NoNewPrivs", "/proc/self/status"]),
    )
    .unwrap();
    assert_eq!(
        out.stdout.split_whitespace().collect::<Vec<_>>(),
        vec!["NoNewPrivs:", "1"]
    );
}

#[test]
fn timeout_kills_the_whole_process_group() {
    let fx = Fixture::new();
    let request = SpawnRequest::new("sh")
        .args(["-c", "sleep 100 & echo $!; wait"])
        .timeout(Duration::from_millis(300));
    let out = run(&guard(&fx), request).unwrap();
    assert!(out.timed_out);
    assert_eq!((out.exit_code, out.signal), (None, Some(9)));
    let background: i32 = out.stdout.trim().parse().unwrap();
    assert!(
        wait_until_gone(background),
        "background sleep {background} survived"
    );
}

#[test]
fn background_children_do_not_outlive_a_normal_exit() {
    let fx = Fixture::new();
    let out = run(
        &guard(&fx),
        SpawnRequest::new("sh").args(["-c", "sleep 100 & echo $!"]),
    )
    .unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert!(!out.timed_out);
    let background: i32 = out.stdout.trim().parse().unwrap();
    assert!(
        wait_until_gone(background),
        "background sleep {background} survived"
    );
}

#[test]
fn timeout_is_clamped_and_cancel_kills() {
    let request = SpawnRequest::new("sleep").timeout(Duration::from_secs(100_000));
    assert_eq!(request.effective_timeout(), MAX_TIMEOUT);
    let fx = Fixture::new();
    let flag = Arc::new(AtomicBool::new(true));
    let out = run(
        &guard(&fx),
        SpawnRequest::new("sleep").arg("100").cancel_flag(flag),
    )
    .unwrap();
    assert!(out.cancelled && !out.timed_out);
    assert_eq!(out.signal, Some(9));
}

#[test]
fn no_file_descriptors_are_inherited() {
    let fx = Fixture::new();
    // Descriptors opened WITHOUT close-on-exec, like a careless library might;
    // several, so at least one has a number ls would not reuse for itself.
    let leaky: Vec<_> = (0..8)
        .map(|_| {
            rustix::fs::open(
                fx.path("README.md").as_path(),
                rustix::fs::OFlags::RDONLY,
                rustix::fs::Mode::empty(),
            )
            .unwrap()
        })
        .collect();
    let out = run(&guard(&fx), SpawnRequest::new("ls").arg("/proc/self/fd")).unwrap();
    let fds: Vec<&str> = out.stdout.split_whitespace().collect();
    // 0-2 plus the directory ls itself opened to list /proc/self/fd.
    assert_eq!(fds, vec!["0", "1", "2", "3"]);
    drop(leaky);
}

#[test]
fn long_output_keeps_head_and_tail() {
    let fx = Fixture::new();
    let out = run(
        &guard(&fx),
        SpawnRequest::new("seq")
            .args(["1", "100000"])
            .output_limit(1000),
    )
    .unwrap();
    assert!(out.truncated);
    assert_eq!(out.stdout_bytes, 588_895);
    assert!(out.stdout.starts_with("1\n2\n3\n"));
    assert!(out.stdout.ends_with("99999\n100000\n"));
    assert!(out.stdout.contains("bytes omitted"));
    assert!(out.stdout.len() < 1100);
}

#[test]
fn landlock_confines_the_child_to_the_root_when_the_kernel_has_it() {
    let fx = Fixture::new();
    let outside = fx.outside.join("written.txt");
    let secret = fx.outside.join("secret.txt");
    let script = format!(
        "echo x > {0}; echo outside=$?; cat {1}; echo read_outside=$?; echo y > inside.txt; echo inside=$?; \
         cat README.md >/dev/null; echo read_inside=$?; ls /usr/bin >/dev/null; echo read_system=$?; \
         echo z > /dev/null; echo null=$?",
        outside.display(),
        secret.display()
    );
    let request = SpawnRequest::new("sh")
        .args(["-c", script.as_str()])
        .sandbox(vec![]);
    let out = run(&guard(&fx), request).unwrap();
    let enforced = alembic_safety::spawn::landlock_available();
    eprintln!("landlock enforced on this kernel: {enforced}");
    assert_eq!(out.sandboxed, enforced);
    for ok in ["inside=0", "read_inside=0", "read_system=0", "null=0"] {
        assert!(out.stdout.contains(ok), "{ok}: {}", out.stdout);
    }
    assert!(fx.path("inside.txt").exists());
    if enforced {
        assert!(
            !out.stdout.contains("outside=0") && !out.stdout.contains("read_outside=0"),
            "{}",
            out.stdout
        );
        assert!(!out.stdout.contains(super::fixture::SECRET));
        assert!(!outside.exists(), "write outside the root got through");
    } else {
        assert!(outside.exists());
    }
}
