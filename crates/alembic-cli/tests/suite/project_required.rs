//! No command makes a directory a project silently: a directory with no version-control
//! root, no project file and no `.alembic/` (or the home directory itself) is refused with
//! the `--project` and `alembic init` hints, and nothing is written there.

use std::path::Path;

use super::alembic;

/// Every entry under `dir`, so a test can assert that a refusal wrote nothing.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The commands that open a project, each as a front end would start it.
const COMMANDS: &[&[&str]] = &[
    &["bootstrap"],
    &["index"],
    &["memory", "add", "the build uses make"],
    &["memory", "list", "--json"],
    &["knowledge", "list", "--json"],
    &["knowledge", "export", "--format", "agents-md"],
    &["tools", "list"],
    &["tools", "call", "list_project_structure", "--args", "{}"],
    &["mcp"],
    &["mcp", "--http", "127.0.0.1:0"],
    &["mcp", "token", "list"],
    &["forge", "list"],
    &["safety", "check-command", "ls"],
    &["knowledge", "approve", "--all", "--yes"],
    &["team", "status"],
    &["ask", "what is this"],
    &["chat"],
];

fn assert_refused(cwd: &Path, args: &[&str], expect: &str) {
    let out = alembic(cwd).args(args).write_stdin("").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(expect), "{args:?}: {stderr}");
    assert!(stderr.contains("--project"), "{args:?}: {stderr}");
    assert!(stderr.contains("alembic init"), "{args:?}: {stderr}");
}

#[test]
fn a_bare_directory_is_refused_by_every_command_and_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "unrelated\n").unwrap();
    for args in COMMANDS {
        assert_refused(dir.path(), args, "does not look like a project");
        assert_eq!(tree(dir.path()), ["notes.txt"], "{args:?} wrote something");
    }
    // The same through --project from another directory.
    let elsewhere = tempfile::tempdir().unwrap();
    let target = dir.path().to_str().unwrap();
    assert_refused(
        elsewhere.path(),
        &["knowledge", "list", "--project", target],
        "does not look like a project",
    );
    assert_eq!(tree(dir.path()), ["notes.txt"]);
    assert!(tree(elsewhere.path()).is_empty());
}

#[test]
fn the_home_directory_is_refused_even_with_a_dotfiles_repository_until_init() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".git")).unwrap();
    for args in [&["index"][..], &["memory", "list", "--json"], &["mcp"]] {
        let out = alembic(home.path())
            .env("HOME", home.path())
            .args(args)
            .write_stdin("")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("home directory"), "{stderr}");
        assert!(stderr.contains("alembic init"), "{stderr}");
    }
    assert_eq!(tree(home.path()), [".git"]);
    // `alembic init` is the explicit way; afterwards the home directory is a project.
    alembic(home.path())
        .env("HOME", home.path())
        .arg("init")
        .assert()
        .success();
    alembic(home.path())
        .env("HOME", home.path())
        .args(["memory", "list", "--json"])
        .assert()
        .success();
}

#[test]
fn init_makes_any_directory_a_project() {
    let dir = tempfile::tempdir().unwrap();
    alembic(dir.path()).arg("init").assert().success();
    alembic(dir.path())
        .args(["knowledge", "list", "--json"])
        .assert()
        .success();
}

#[test]
fn a_vcs_root_above_or_a_project_file_makes_a_project() {
    let dir = tempfile::tempdir().unwrap();
    // A subdirectory of a git checkout (the VCS root is inherited).
    let sub = dir.path().join("repo/src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    assert_cmd::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path().join("repo"))
        .assert()
        .success();
    alembic(&sub).args(["index", "--json"]).assert().success();
    // Each kind of marker file, and a .NET project found by its extension.
    for marker in [
        "Cargo.toml",
        "package.json",
        "pyproject.toml",
        "go.mod",
        "pom.xml",
        "build.gradle.kts",
        "Package.swift",
        "Makefile",
        "App.csproj",
    ] {
        let p = tempfile::tempdir().unwrap();
        std::fs::write(p.path().join(marker), "").unwrap();
        alembic(p.path())
            .args(["memory", "list", "--json"])
            .assert()
            .success();
    }
    // A marker file above the directory is not inherited (a stray /tmp/Makefile must not
    // make every temporary directory a project).
    let parent = tempfile::tempdir().unwrap();
    std::fs::write(parent.path().join("Makefile"), "all:\n").unwrap();
    let child = parent.path().join("child");
    std::fs::create_dir(&child).unwrap();
    assert_refused(&child, &["index"], "does not look like a project");
    assert!(tree(&child).is_empty());
}

#[test]
fn a_read_only_checkout_keeps_its_state_beneath_alembic_state_dir() {
    let dir = tempfile::tempdir().unwrap();
    let checkout = dir.path().join("checkout");
    let state = dir.path().join("state");
    std::fs::create_dir_all(checkout.join("src")).unwrap();
    std::fs::write(checkout.join("Cargo.toml"), "[package]\nname = \"c\"\n").unwrap();
    std::fs::write(checkout.join("src/lib.rs"), "pub fn retry() {}\n").unwrap();
    let before = tree(&checkout);
    let run = |args: &[&str]| {
        let out = alembic(&checkout)
            .env("ALEMBIC_STATE_DIR", &state)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["memory", "add", "retry lives in src/lib.rs"]);
    run(&["index", "--json"]);
    run(&["bootstrap", "--no-llm", "--json"]);
    run(&["knowledge", "list", "--json"]);
    assert!(run(&["memory", "list", "--json"]).contains("retry lives in src/lib.rs"));
    assert!(run(&["audit", "tail", "--json"]).contains("memory_remember"));
    // Nothing was written in the checkout; the database is in the checkout's own directory.
    assert_eq!(tree(&checkout), before);
    let dirs: Vec<_> = std::fs::read_dir(&state).unwrap().flatten().collect();
    assert_eq!(dirs.len(), 1);
    assert!(dirs[0].path().join("alembic.db").is_file());
    assert!(
        dirs[0]
            .file_name()
            .to_string_lossy()
            .starts_with("checkout-")
    );
    // Without the variable the same checkout has none of that state.
    let out = alembic(&checkout)
        .args(["memory", "list", "--json"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("retry lives"));
}
