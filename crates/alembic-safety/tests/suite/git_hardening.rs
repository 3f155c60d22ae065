//! Issue 36, holes 1, 9 and 10: git through `run_safe_command` runs no program the
//! repository names, changes no branch, and ordinary read-only git keeps its exit codes.
//! Every case is real git on a real tree, called through the pipeline and its SafetyGate;
//! the wider list of variants is `tests/corpora/adversarial-git.jsonl`.

use std::sync::Arc;

use alembic_safety::spawn::{SpawnRequest, run};
use alembic_safety::tools::TOOL_NAMES;
use alembic_safety::{PathGuard, PolicySafetyCheck, SafetyServices, register_tools};
use alembic_tools::{
    Allowlist, Caller, OutcomeStatus, Pipeline, ToolCall, ToolOutcome, ToolRegistry,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::fixture::{Fixture, SECRET};

struct Project {
    fx: Fixture,
    pipeline: Arc<Pipeline>,
    /// A marker outside the root and outside the sandbox's reach test: `/tmp` stays writable.
    tmp_marker: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let fx = Fixture::new();
        let registry = Arc::new(ToolRegistry::new());
        let services = Arc::new(SafetyServices::for_root(&fx.root).unwrap());
        register_tools(&registry, Arc::clone(&services)).unwrap();
        let pipeline = Pipeline::builder(registry, &fx.root)
            .safety(Arc::new(PolicySafetyCheck::new(services)))
            .build();
        let tmp_marker = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        Self {
            fx,
            pipeline,
            tmp_marker,
        }
    }

    /// A repository with one commit of `f` ("hello") and an uncommitted "world" line.
    fn with_repo() -> Self {
        let p = Self::new();
        p.sh("git init -q -b main . && printf 'hello\\n' > f && git add f && git commit -qm one && printf 'world\\n' >> f");
        p
    }

    /// Shell words that, if run, leave a file in the root and one in `/tmp`.
    fn pwn(&self) -> String {
        format!(
            "touch {}/pwned {}/pwned",
            self.fx.root.display(),
            self.tmp_marker.path().display()
        )
    }

    fn ran(&self) -> bool {
        self.fx.path("pwned").exists() || self.tmp_marker.path().join("pwned").exists()
    }

    fn sh(&self, script: &str) {
        let guard = PathGuard::new(&self.fx.root).unwrap();
        let request = SpawnRequest::new("sh")
            .args(["-c", script])
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com");
        let out = run(&guard, request).unwrap();
        assert_eq!(out.exit_code, Some(0), "{script}: {}", out.stderr);
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.fx.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    async fn call_in(&self, command: &str, cwd: &str) -> ToolOutcome {
        let caller = Caller::new("test", Allowlist::only(TOOL_NAMES));
        let args = json!({"command": command, "cwd": cwd});
        self.pipeline
            .execute(ToolCall::new("run_safe_command", args, caller))
            .await
    }

    async fn call(&self, command: &str) -> ToolOutcome {
        self.call_in(command, ".").await
    }
}

fn data(outcome: &ToolOutcome) -> &Value {
    &outcome
        .output
        .as_ref()
        .unwrap_or_else(|| panic!("no output: {outcome:?}"))
        .data
}

/// (exit code, stdout) of a command that must run.
fn ran(outcome: &ToolOutcome) -> (i64, String) {
    assert!(outcome.is_ok(), "did not run: {outcome:?}");
    let d = data(outcome);
    let stdout = d["stdout"].as_str().unwrap().to_owned();
    assert!(!stdout.contains(SECRET), "{stdout}");
    (d["exitCode"].as_i64().unwrap(), stdout)
}

#[tokio::test]
async fn the_probes_bare_folder_diff_driver_runs_nothing() {
    for with_project_repo in [false, true] {
        let p = match with_project_repo {
            true => Project::with_repo(),
            false => Project::new(),
        };
        p.write("x/HEAD", "ref: refs/heads/main\n");
        std::fs::create_dir_all(p.fx.path("x/objects")).unwrap();
        std::fs::create_dir_all(p.fx.path("x/refs/heads")).unwrap();
        p.write(
            "x/config",
            &format!(
                "[core]\n\tbare = true\n[diff \"p\"]\n\tcommand = \"{}; true\"\n\ttextconv = \"{}; cat\"\n",
                p.pwn(),
                p.pwn()
            ),
        );
        p.write("x/info/attributes", "* diff=p\n");
        p.write("x/a", "a\n");
        p.write("x/b", "b\n");
        for command in ["git diff --no-index a b", "git log", "git status"] {
            let outcome = p.call_in(command, "x").await;
            assert!(
                !p.ran(),
                "{command} ran the bare folder's driver: {outcome:?}"
            );
        }
        let (exit, stdout) = ran(&p.call_in("git diff --no-index a b", "x").await);
        assert_eq!((exit, stdout.contains("+b")), (1, true), "{stdout}");
    }
}

#[tokio::test]
async fn drivers_in_the_projects_own_repository_are_neutralised_and_the_diff_still_shows() {
    let cases: [(&str, &str, &str); 4] = [
        ("diff.p.command", "; true", ".gitattributes"),
        ("diff.p.textconv", "; cat", ".git/info/attributes"),
        ("diff.external", "; true", ".gitattributes"),
        ("filter.p.process", "", ".gitattributes"),
    ];
    for (key, tail, attributes) in cases {
        let p = Project::with_repo();
        p.sh(&format!("git config {key} '{}{tail}'", p.pwn()));
        let attr = if key.starts_with("filter") {
            "filter"
        } else {
            "diff"
        };
        p.write(attributes, &format!("* {attr}=p\n"));
        p.sh("touch -d 2001-01-01 f");
        for command in [
            "git diff",
            "git diff HEAD",
            "git log -p",
            "git show",
            "git blame f",
            "git status",
        ] {
            let (exit, stdout) = ran(&p.call(command).await);
            assert_eq!(exit, 0, "{key}: {command}: {stdout}");
            assert!(!p.ran(), "{key}: {command} ran the repository's program");
        }
        let (_, stdout) = ran(&p.call("git diff").await);
        assert!(
            stdout.contains("+world"),
            "{key}: git diff lost the change: {stdout}"
        );
    }
}

#[tokio::test]
async fn signature_verification_runs_no_configured_program() {
    let p = Project::with_repo();
    // A commit carrying a (fake) signature makes git call the verifier.
    p.sh("git cat-file commit HEAD > c && { sed -n '1,/^$/p' c | sed '$d'; \
          printf 'gpgsig -----BEGIN PGP SIGNATURE-----\\n \\n x\\n -----END PGP SIGNATURE-----\\n\\n'; \
          sed '1,/^$/d' c; } > d && git update-ref HEAD $(git hash-object -t commit -w d) && rm c d");
    // Git runs gpg.program directly, not through a shell: the program is a script.
    p.write("evil.sh", &format!("#!/bin/sh\n{}\n", p.pwn()));
    p.sh(&format!(
        "chmod +x evil.sh && git config gpg.program {root}/evil.sh && git config gpg.ssh.program {root}/evil.sh \
         && git config log.showSignature true",
        root = p.fx.root.display()
    ));
    for command in [
        "git log",
        "git show --stat",
        "git log --format=%G?",
        "git log --show-signature",
    ] {
        let (exit, _) = ran(&p.call(command).await);
        assert_eq!(exit, 0, "{command}");
        assert!(!p.ran(), "{command} ran gpg.program");
    }
}

#[tokio::test]
async fn a_repository_that_reads_outside_files_or_links_out_is_refused_for_git_only() {
    let p = Project::with_repo();
    let secret = p.fx.outside.join("secret.txt");
    p.sh(&format!(
        "git config blame.ignoreRevsFile {}",
        secret.display()
    ));
    let outcome = p.call("git blame f").await;
    assert_eq!(outcome.status, OutcomeStatus::Blocked, "{outcome:?}");
    assert_eq!(outcome.rule.as_deref(), Some("git.unsafe_repository"));
    assert!(!outcome.text_for_model().contains(SECRET));
    assert_eq!(
        ran(&p.call("cat f").await).0,
        0,
        "non-git commands still run"
    );

    // An include the agent could rewrite between the listing and the command is refused;
    // one inside .git is listed, and its driver neutralised.
    let p = Project::with_repo();
    p.write(
        "inc.cfg",
        &format!("[diff \"p\"]\n\tcommand = \"{}; true\"\n", p.pwn()),
    );
    p.write(".gitattributes", "* diff=p\n");
    for include in [
        "../inc.cfg",
        "~/inc.cfg",
        "../later.cfg",
        "sub/../../inc.cfg",
    ] {
        p.sh(&format!(
            "git config --replace-all include.path '{include}'"
        ));
        let outcome = p.call("git diff").await;
        assert_eq!(
            outcome.status,
            OutcomeStatus::Blocked,
            "{include}: {outcome:?}"
        );
    }
    p.sh("cp inc.cfg .git/inc.cfg && git config --replace-all include.path inc.cfg");
    let (_, stdout) = ran(&p.call("git diff").await);
    assert!(stdout.contains("+world") && !p.ran(), "{stdout}");

    let p = Project::new();
    p.sh(&format!(
        "git init -q {o}/r && git -C {o}/r -c user.name=t -c user.email=t@e commit -q --allow-empty -m {SECRET} && ln -s {o}/r/.git .git",
        o = p.fx.outside.display()
    ));
    let outcome = p.call("git log").await;
    assert_eq!(outcome.status, OutcomeStatus::Blocked, "{outcome:?}");
    assert!(!outcome.text_for_model().contains(SECRET));
    // The same through a shipped `gitdir:` file; a real linked worktree still works.
    std::fs::remove_file(p.fx.path(".git")).unwrap();
    p.write(
        ".git",
        &format!("gitdir: {}/r/.git\n", p.fx.outside.display()),
    );
    let outcome = p.call("git log").await;
    assert_eq!(outcome.status, OutcomeStatus::Blocked, "{outcome:?}");
    assert!(!outcome.text_for_model().contains(SECRET));
    let p = Project::new();
    let main = p.fx.outside.join("main");
    p.sh(&format!(
        "git init -q -b main {m} && git -C {m} commit -q --allow-empty -m in-worktree && \
         rm -rf src README.md && git -C {m} worktree add -q -b wt {r}",
        m = main.display(),
        r = p.fx.root.display()
    ));
    let (exit, stdout) = ran(&p.call("git log --oneline").await);
    assert_eq!(
        (exit, stdout.contains("in-worktree")),
        (0, true),
        "{stdout}"
    );
}

#[tokio::test]
async fn abbreviated_branch_options_are_refused_and_the_branch_stays() {
    let p = Project::with_repo();
    for command in [
        "git branch -a --mov main renamed",
        "git branch --m main renamed",
        "git branch --del main",
        "git branch -dr main",
        "git branch -aD main",
        "git branch --cop main copy",
        "git branch --set-up=main",
        "git branch --unset-up",
        "git branch --edit-desc",
        "git branch --no-t x",
        "sort --o=out f",
        "sort -uo./out f",
        "tail --fo f",
        "rg --pr=sh x",
        "git diff --out=o",
        "git describe --dirty",
    ] {
        let outcome = p.call(command).await;
        assert_eq!(
            outcome.status,
            OutcomeStatus::Blocked,
            "{command}: {outcome:?}"
        );
    }
    let (_, stdout) = ran(&p.call("git branch --list").await);
    assert_eq!(stdout, "* main\n");
    assert!(!p.fx.path("out").exists() && !p.fx.path("o").exists());
}

#[tokio::test]
async fn ordinary_read_only_git_keeps_its_exit_codes() {
    let p = Project::with_repo();
    for (command, exit, shows) in [
        ("git diff", 0, "+world"),
        ("git diff --exit-code", 1, "+world"),
        ("git diff HEAD", 0, "+world"),
        ("git log -p", 0, "+hello"),
        ("git show", 0, "+hello"),
        ("git status --short", 0, " M f"),
        ("git blame f", 0, "hello"),
        ("git grep -n hello", 0, "f:1:hello"),
        ("git rev-parse --abbrev-ref HEAD", 0, "main"),
        ("git branch -a", 0, "main"),
        ("git show no-such-rev", 128, ""),
    ] {
        let (code, stdout) = ran(&p.call(command).await);
        assert_eq!(code, exit, "{command}: {stdout}");
        assert!(stdout.contains(shows), "{command}: {stdout}");
    }
    let (code, stdout) = ran(&p.call_in("git log --oneline", "src").await);
    assert_eq!((code, stdout.contains("one")), (0, true));
}

#[tokio::test]
async fn environment_info_runs_no_repository_program() {
    let p = Project::with_repo();
    p.sh(&format!(
        "git config core.fsmonitor '{pwn}; false' && git config diff.external '{pwn}; true' && git config core.pager '{pwn}'",
        pwn = p.pwn()
    ));
    let caller = Caller::new("test", Allowlist::only(TOOL_NAMES));
    let outcome = p
        .pipeline
        .execute(ToolCall::new(
            "get_environment_info",
            json!({"sections": ["git"]}),
            caller,
        ))
        .await;
    assert_eq!(data(&outcome)["git"]["branch"], "main", "{outcome:?}");
    assert!(!p.ran());
}
