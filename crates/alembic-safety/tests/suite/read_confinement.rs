//! `run_safe_command` never reads outside the root (issue 36, hole 3): globs that
//! expand to `..`, `link/..` resolved by the kernel, recursion that follows links,
//! and the Landlock read sandbox behind the policy.
//!
//! The fixture's outside directory holds `OUTSIDE-SECRET`; every attack is run
//! through the real pipeline and must be refused or print nothing from outside.

use std::sync::Arc;

use alembic_safety::spawn::{SpawnRequest, landlock_available, run};
use alembic_safety::tools::TOOL_NAMES;
use alembic_safety::{PathGuard, PolicySafetyCheck, SafetyServices, register_tools};
use alembic_tools::{Allowlist, Caller, Pipeline, ToolCall, ToolOutcome, ToolRegistry};
use serde_json::json;

use super::fixture::{Fixture, SECRET};

struct Harness {
    fx: Fixture,
    pipeline: Arc<Pipeline>,
}

impl Harness {
    fn new() -> Self {
        Self::build(Fixture::new(), false)
    }

    /// As on a kernel without Landlock: the policy is the only layer.
    fn without_landlock() -> Self {
        Self::build(Fixture::new(), true)
    }

    fn build(fx: Fixture, no_landlock: bool) -> Self {
        let registry = Arc::new(ToolRegistry::new());
        let mut services = SafetyServices::for_root(&fx.root).unwrap();
        if no_landlock {
            let policy = services.policy.clone().assume_no_landlock();
            services = services.with_policy(policy);
        }
        let services = Arc::new(services);
        register_tools(&registry, Arc::clone(&services)).unwrap();
        let pipeline = Pipeline::builder(registry, &fx.root)
            .safety(Arc::new(PolicySafetyCheck::new(services)))
            .build();
        Self { fx, pipeline }
    }

    async fn call(&self, command: &str, cwd: &str) -> ToolOutcome {
        let caller = Caller::new("test", Allowlist::only(TOOL_NAMES));
        let args = json!({"command": command, "cwd": cwd});
        self.pipeline
            .execute(ToolCall::new("run_safe_command", args, caller))
            .await
    }

    /// The command was refused, or it ran and printed nothing from outside the root.
    async fn assert_contained(&self, command: &str, cwd: &str) -> String {
        let before = self.fx.outside_listing();
        let outcome = self.call(command, cwd).await;
        let mut stdout = String::new();
        if let Some(output) = &outcome.output {
            let data = &output.data;
            let printed = format!("{}{}", data["stdout"], data["stderr"]);
            assert!(!printed.contains(SECRET), "{command:?} in {cwd}: {printed}");
            stdout = data["stdout"].as_str().unwrap_or_default().to_owned();
        }
        assert_eq!(
            self.fx.outside_listing(),
            before,
            "{command:?} changed outside"
        );
        stdout
    }

    /// Runs a trusted set-up script directly (no policy, no sandbox).
    fn setup(&self, script: &str) {
        let guard = PathGuard::new(&self.fx.root).unwrap();
        let out = run(&guard, SpawnRequest::new("sh").args(["-c", script])).unwrap();
        assert_eq!(out.exit_code, Some(0), "{script}: {}", out.stderr);
    }

    async fn assert_refused(&self, command: &str, cwd: &str) -> String {
        let outcome = self.call(command, cwd).await;
        assert!(
            outcome.output.is_none(),
            "{command:?} in {cwd} ran: {outcome:?}"
        );
        format!("{outcome:?}")
    }

    async fn assert_runs(&self, command: &str, cwd: &str) -> String {
        let outcome = self.call(command, cwd).await;
        let output = outcome
            .output
            .unwrap_or_else(|| panic!("{command:?} in {cwd} was refused: {:?}", outcome.status));
        assert_eq!(output.data["exitCode"], 0, "{command:?}: {}", output.data);
        output.data["stdout"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn symlink(&self, target: &str, rel: &str) {
        let target = target.replace("{OUTSIDE}", &self.fx.outside.to_string_lossy());
        self.fx.symlink(target, rel);
    }
}

#[tokio::test]
async fn globs_that_can_expand_to_the_parent_are_refused_or_contained() {
    let h = Harness::new();
    std::fs::write(h.fx.path(".hidden"), "x").unwrap();
    for pattern in [
        ".?", ".*", ".[.]", ".[!a]", ".[^a]", "[.][.]", "[.].", ".*?", "\\.?", ".[,-/]", "?.",
        ".??*", "-*",
    ] {
        for command in [
            format!("ls -a {pattern}"),
            format!("ls -la {pattern}"),
            format!("grep -rs {SECRET} {pattern}"),
            format!("cat {pattern}/outside/secret.txt"),
            format!("find {pattern} -name secret.txt"),
            format!("du -a {pattern}"),
            format!("wc -c {pattern}/outside/*"),
        ] {
            // A listing of the fixture's parent would show the outside directory.
            let stdout = h.assert_contained(&command, ".").await;
            assert!(
                !stdout.contains("outside"),
                "{command:?} listed the parent: {stdout}"
            );
        }
    }
    // The exact probe: refused with a reason that names the parent.
    let reason = h.assert_refused("ls -a .?", ".").await;
    assert!(reason.contains("can match"), "{reason}");
    h.assert_refused(&format!("grep -rs {SECRET} .?"), ".")
        .await;
}

#[tokio::test]
async fn brace_lists_are_checked_as_bash_would_expand_them() {
    let h = Harness::new();
    h.symlink("../outside", "outside_link");
    h.symlink("../../outside", "src/deep");
    for command in [
        "ls -a {..,x}",
        "ls -a {,.}.",
        "ls -a x/{..,y}/..",
        "cat {outside_link/..,x}/outside/secret.txt",
        "cat src/{deep,x}/secret.txt",
        "grep {-R,x} OUTSIDE .",
        "grep -{R,r} OUTSIDE .",
        "grep --{dereference-recursive,x} OUTSIDE .",
        "cat {.,..}/outside/secret.txt",
        "ls {a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}",
    ] {
        h.assert_refused(command, ".").await;
    }
    // Braces that expand to harmless words, and quoted regex braces, still run.
    // (dash, the `sh` here, leaves the braces alone: the word is allowed, cat finds no such file).
    let harmless = h.call("cat {README.md,src/main.rs}", ".").await;
    assert!(harmless.output.is_some(), "{harmless:?}");
    assert_eq!(
        h.assert_runs("grep -c -E 'i{1,3}n' README.md", ".").await,
        "1\n"
    );
}

#[tokio::test]
async fn globs_below_the_root_keep_working() {
    let h = Harness::new();
    std::fs::write(h.fx.path("src/.hidden"), "hidden\n").unwrap();
    // From `src`, `..` is the root: `.?` may expand to it.
    let listing = h.assert_runs("ls -a .?", "src").await;
    assert!(listing.contains("README.md"), "{listing}");
    assert_eq!(h.assert_runs("cat src/.h*", ".").await, "hidden\n");
    assert!(h.assert_runs("ls *", ".").await.contains("main.rs"));
    // Without Landlock, a glob that can match `..` is refused even where it is safe.
    let strict = Harness::without_landlock();
    strict.assert_refused("ls -a .?", "src").await;
    assert!(strict.assert_runs("ls *", ".").await.contains("main.rs"));
}

#[tokio::test]
async fn link_dot_dot_is_resolved_by_the_kernel_not_folded_as_text() {
    let h = Harness::new();
    h.symlink("../outside", "outside_link");
    h.symlink("{OUTSIDE}", "abs_link");
    h.symlink("../../outside", "src/deep_link");
    h.symlink("/proc/self", "proc_link");
    std::fs::create_dir(h.fx.path("outside")).unwrap();
    let root = h.fx.root.to_string_lossy().into_owned();
    for operand in [
        "outside_link/../outside/secret.txt".to_owned(),
        "abs_link/../outside/secret.txt".to_owned(),
        "./outside_link/./../outside/secret.txt".to_owned(),
        "outside_link/../../root/../outside/secret.txt".to_owned(),
        "src/deep_link/../outside/secret.txt".to_owned(),
        "src/../outside_link/../outside/secret.txt".to_owned(),
        format!("{root}/outside_link/../outside/secret.txt"),
        "proc_link/../self/environ".to_owned(),
        "proc_link/../1/environ".to_owned(),
        "proc_link/environ".to_owned(),
    ] {
        for program in [
            "cat",
            "head -c 99",
            "tail -n 1",
            "wc -c",
            "grep -r .",
            "sort",
            "stat",
        ] {
            let command = format!("{program} {operand}");
            h.assert_refused(&command, ".").await;
        }
        h.assert_refused(&format!("grep --file={operand} README.md"), ".")
            .await;
        h.assert_refused(&format!("diff {operand} README.md"), ".")
            .await;
    }
    // A short option's value glued on: `-f../x`, `-f/abs`, `-fLINK/../x`.
    let outside = h.fx.outside.to_string_lossy().into_owned();
    for arg in [
        "-f../outside/secret.txt".to_owned(),
        format!("-f{outside}/secret.txt"),
        "-foutside_link/../outside/secret.txt".to_owned(),
        "-if../outside/secret.txt".to_owned(),
    ] {
        h.assert_refused(&format!("grep {arg} README.md"), ".")
            .await;
    }
    assert_eq!(
        h.assert_runs("grep -n -m1 -e inside README.md", ".").await,
        "1:inside\n"
    );
    // The same through the working directory: `cwd` "src" and `deep_link/..`.
    h.assert_refused("cat deep_link/../outside/secret.txt", "src")
        .await;
    // A link inside the root still folds as the kernel sees it.
    h.symlink("src", "src_link");
    assert_eq!(
        h.assert_runs("cat src_link/../README.md", ".").await,
        "inside\n"
    );
}

#[test]
fn physical_resolution_agrees_with_the_kernel_under_both_strategies() {
    let fx = Fixture::new();
    fx.symlink("../outside", "outside_link");
    fx.symlink("/proc/self", "proc_link");
    std::fs::create_dir_all(fx.path("src/deep")).unwrap();
    fx.symlink("src/deep", "deep_link");
    for (strategy, guard) in fx.guards() {
        for escape in [
            "outside_link/../outside/secret.txt",
            "outside_link/..",
            "proc_link/../1/environ",
            "src/../outside_link/../outside",
        ] {
            let error = guard.check_physical(escape).unwrap_err();
            assert_eq!(error.rule(), "path.escape", "{strategy:?} {escape}");
        }
        // `deep_link/..` is src (the target's parent), not the root.
        assert_eq!(
            guard.read_dir_physical("deep_link/..").unwrap()[0].name,
            "deep"
        );
        assert!(
            guard.check_physical("deep_link/../main.rs").is_ok(),
            "{strategy:?}"
        );
        assert!(
            guard.check_physical("deep_link/../README.md").is_err(),
            "{strategy:?}"
        );
    }
}

#[tokio::test]
async fn a_glob_after_link_dot_dot_expands_where_the_kernel_goes() {
    let h = Harness::new();
    std::fs::create_dir_all(h.fx.path("src/deep")).unwrap();
    h.symlink("src/deep", "deep_link");
    h.symlink("{OUTSIDE}", "src/evil");
    // The shell expands `deep_link/../*` in src, which holds a link out.
    let reason = h.assert_refused("cat deep_link/../*", ".").await;
    assert!(reason.contains("evil"), "{reason}");
    h.assert_contained("grep -r OUTSIDE deep_link/../*", ".")
        .await;
}

#[tokio::test]
async fn recursion_that_follows_links_is_refused_while_a_link_leads_out() {
    let h = Harness::new();
    std::fs::create_dir_all(h.fx.path("a")).unwrap();
    std::fs::create_dir_all(h.fx.path("b/l")).unwrap();
    std::fs::write(h.fx.path("b/l/secret.txt"), "mine\n").unwrap();
    h.symlink("../../outside", "a/l");
    for command in [
        "grep -R OUTSIDE .",
        "grep -rR OUTSIDE .",
        "grep -nRi OUTSIDE",
        "grep --dereference-recursive OUTSIDE .",
        "grep --dereference-rec OUTSIDE .",
        "grep --dere OUTSIDE .",
        "rg -L OUTSIDE",
        "rg --follow OUTSIDE",
        "rg --fol OUTSIDE",
        "find -L . -name secret.txt",
        "find . -follow -name secret.txt",
        "ls -RL",
        "ls -R --dereference",
        "ls -R --deref",
        "du -aL",
        "du -a --dereference",
        "tree -l",
        "diff -r a b",
        "diff -ru a b",
        "diff --recursive a b",
        "diff --rec a b",
    ] {
        h.assert_contained(command, ".").await;
        h.assert_refused(command, ".").await;
    }
    // Recursion that does not follow links still runs, and stays inside.
    for command in [
        "grep -r OUTSIDE .",
        "rg OUTSIDE",
        "find . -name secret.txt",
        "ls -R",
        "du -a",
        "diff -r --no-dereference a b",
        "tree",
    ] {
        h.assert_contained(command, ".").await;
    }
    assert!(
        h.assert_runs("find . -name secret.txt", ".")
            .await
            .contains("b/l/secret.txt")
    );
}

#[tokio::test]
async fn link_following_recursion_runs_when_no_link_leads_out() {
    let h = Harness::new();
    h.symlink("src", "src_link");
    let found = h.assert_runs("grep -R main .", ".").await;
    assert!(found.contains("src_link/main.rs"), "{found}");
    assert!(h.assert_runs("ls -RL", ".").await.contains("main.rs"));
    // Without Landlock the scan could race a new link, so the flag is refused.
    let strict = Harness::without_landlock();
    let reason = strict.assert_refused("grep -R main .", ".").await;
    assert!(reason.contains("without Landlock"), "{reason}");
    let first = strict.call("ls", ".").await;
    let second = strict.call("ls", ".").await;
    let note = |o: &ToolOutcome| o.output.as_ref().unwrap().data["sandboxNote"].clone();
    assert!(
        note(&first)
            .as_str()
            .unwrap()
            .contains("Landlock is not available")
    );
    assert_eq!(note(&second), json!(null), "the note is given once");
}

#[tokio::test]
async fn ordinary_reads_keep_working_under_the_sandbox() {
    let h = Harness::new();
    h.setup(
        "git init -q . && git add README.md && git -c user.name=t -c user.email=t@t commit -qm x",
    );
    assert!(
        h.assert_runs("git status --short", ".")
            .await
            .contains("src/")
    );
    assert!(h.assert_runs("git log --oneline", ".").await.contains(" x"));
    assert!(h.assert_runs("ls -la", ".").await.contains("README.md"));
    assert_eq!(h.assert_runs("cat README.md", ".").await, "inside\n");
    assert!(
        h.assert_runs("grep -rn fn src", ".")
            .await
            .contains("src/main.rs:1:")
    );
    assert!(h.assert_runs("rg -n fn", ".").await.contains("main.rs"));
    assert!(
        h.assert_runs("find . -name '*.rs'", ".")
            .await
            .contains("./src/main.rs")
    );
    assert!(h.assert_runs("tree", ".").await.contains("main.rs"));
    assert!(
        h.assert_runs("du -a src", ".")
            .await
            .contains("src/main.rs")
    );
    assert!(h.assert_runs("file README.md", ".").await.contains("text"));
    assert!(
        h.assert_runs("stat -c %s README.md", ".")
            .await
            .contains('7')
    );
    assert_eq!(
        h.assert_runs("sort README.md | uniq | wc -l", ".").await,
        "1\n"
    );
    assert_eq!(h.assert_runs("sed -n 1p README.md", ".").await, "inside\n");
    assert!(h.assert_runs("which ls", ".").await.contains("/ls"));
}

/// Runs `script` directly with the sandbox, as the tool would, bypassing the policy.
fn sandboxed(fx: &Fixture, script: &str) -> alembic_safety::spawn::ProcessOutput {
    let guard = PathGuard::new(&fx.root).unwrap();
    run(
        &guard,
        SpawnRequest::new("sh")
            .args(["-c", script])
            .sandbox(Vec::new()),
    )
    .unwrap()
}

#[test]
fn the_sandbox_confines_reads_to_the_project_and_system_paths() {
    let fx = Fixture::new();
    let probe = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(probe.path(), SECRET).unwrap();
    let home = std::env::var("HOME").unwrap();
    let cargo = std::path::Path::new(&home).join(".cargo");
    assert!(
        cargo.is_dir(),
        "the toolchain home {cargo:?} exists on this machine"
    );
    let targets = [
        fx.outside.join("secret.txt").to_string_lossy().into_owned(),
        probe.path().to_string_lossy().into_owned(),
        "/proc/1/environ".to_owned(),
        "/proc/self/environ".to_owned(),
        "/etc/hostname".to_owned(),
    ];
    let mut script = String::new();
    for target in &targets {
        script.push_str(&format!(
            "cat {target} >/dev/null 2>&1; echo \"{target}=$?\"; "
        ));
    }
    script.push_str(&format!(
        "ls {} >/dev/null 2>&1; echo \"cargo=$?\"; ",
        cargo.display()
    ));
    script.push_str(
        "ls /tmp >/dev/null 2>&1; echo \"tmp=$?\"; ls /proc >/dev/null 2>&1; echo \"proc=$?\"; ",
    );
    script.push_str("cat README.md; ls /usr/bin >/dev/null; echo \"usr=$?\"");
    let out = sandboxed(&fx, &script);
    assert_eq!(out.sandboxed, landlock_available());
    assert!(
        out.stdout.contains("inside\n") && out.stdout.contains("usr=0"),
        "{}",
        out.stdout
    );
    let readable = |name: &str| out.stdout.contains(&format!("{name}=0"));
    if out.sandboxed {
        for name in targets
            .iter()
            .map(String::as_str)
            .chain(["cargo", "tmp", "proc"])
        {
            assert!(!readable(name), "{name} was readable: {}", out.stdout);
        }
    } else {
        assert!(
            readable(&targets[0]),
            "without Landlock nothing stops the read"
        );
    }
}

#[test]
fn each_sandboxed_child_gets_a_fresh_private_temp_dir() {
    let fx = Fixture::new();
    let script = "echo \"$TMPDIR\"; echo data > \"$TMPDIR/f\" && cat \"$TMPDIR/f\"";
    let first = sandboxed(&fx, script);
    let second = sandboxed(&fx, script);
    let dir =
        |out: &alembic_safety::spawn::ProcessOutput| out.stdout.lines().next().unwrap().to_owned();
    assert!(first.stdout.ends_with("data\n"), "{}", first.stdout);
    assert_ne!(dir(&first), dir(&second));
    assert!(dir(&first).contains("alembic-cmd-"), "{}", first.stdout);
    assert!(
        !std::path::Path::new(&dir(&first)).exists(),
        "removed after the command"
    );
}

#[test]
fn the_servers_secrets_never_reach_a_child() {
    let keys = [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ALEMBIC_AUTH_TOKEN",
        "ALEMBIC_TOKEN_SECRET",
    ];
    for key in keys {
        // SAFETY: nextest runs each test in its own process, and nothing else here reads these.
        unsafe { std::env::set_var(key, "sk-leaked-value") };
    }
    let fx = Fixture::new();
    let guard = PathGuard::new(&fx.root).unwrap();
    for sandbox in [false, true] {
        let mut request = SpawnRequest::new("sh").args(["-c", "env; cat /proc/self/environ"]);
        if sandbox {
            request = request.sandbox(Vec::new());
        }
        let out = run(&guard, request).unwrap();
        assert!(!out.stdout.contains("sk-leaked-value"), "{}", out.stdout);
        for line in out.stdout.lines().filter(|l| l.contains('=')) {
            let name = line.split('=').next().unwrap();
            assert!(
                !name.contains("KEY") && !name.contains("TOKEN") && !name.contains("SECRET"),
                "{name} reached the child"
            );
        }
    }
    let names: Vec<String> = alembic_safety::spawn::allowed_env(&fx.root)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert!(
        keys.iter().all(|k| !names.iter().any(|n| n == k)),
        "{names:?}"
    );
}
