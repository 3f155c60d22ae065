//! Server-side reads never follow links out of the project (issue 36, must-show 4): a
//! repository that ships links for its guideline files, config, guard rules or skills gets
//! nothing from outside it into candidates, the database or error messages.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::alembic;

const SECRET: &str = "OUTSIDE-SECRET-7f3a";

/// A small project `p` beside `o`, whose files all carry the secret.
fn project() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    let outside = dir.path().join("o");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"p\"\n").unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "/// Adds.\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    )
    .unwrap();
    let rules =
        format!("# Rules\n\n- Always run `{SECRET}` before a commit.\n- Never push to main.\n");
    std::fs::write(outside.join("rules.md"), rules).unwrap();
    std::fs::write(
        outside.join("config.toml"),
        format!("[safety]\n{SECRET} = 1\n"),
    )
    .unwrap();
    std::fs::write(
        outside.join("lib.rs"),
        format!("pub fn {}() {{}}\n", SECRET.replace('-', "_")),
    )
    .unwrap();
    (dir, root, outside)
}

/// Every byte alembic keeps for the project (database and companions, exports, state files).
fn state_bytes(root: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for e in walkdir(&root.join(".alembic")) {
        out.extend(std::fs::read(e).unwrap_or_default());
    }
    out
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                out.extend(walkdir(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn linked_guideline_and_source_files_reach_no_candidate_and_no_database_row() {
    let (_dir, root, outside) = project();
    for name in ["AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md"] {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        symlink(outside.join("rules.md"), path).unwrap();
    }
    std::fs::create_dir_all(root.join(".cursor/rules")).unwrap();
    symlink(
        outside.join("rules.md"),
        root.join(".cursor/rules/team.mdc"),
    )
    .unwrap();
    symlink(outside.join("lib.rs"), root.join("src/linked.rs")).unwrap();
    let out = alembic(&root)
        .args(["bootstrap", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(!contains(&out.stdout, SECRET) && !contains(&out.stderr, SECRET));
    let state = state_bytes(&root);
    assert!(!state.is_empty(), "bootstrap wrote its database");
    assert!(
        !contains(&state, SECRET),
        "an outside file reached the database"
    );
    assert!(!contains(&state, &SECRET.replace('-', "_")));
    // The same rules in a real file inside the project are read: the links alone were skipped.
    let (_dir, root, outside) = project();
    std::fs::copy(outside.join("rules.md"), root.join("AGENTS.md")).unwrap();
    alembic(&root)
        .args(["bootstrap", "--json"])
        .assert()
        .success();
    assert!(
        contains(&state_bytes(&root), SECRET),
        "an in-root AGENTS.md is used"
    );
}

#[test]
fn a_linked_config_or_guard_rules_file_is_refused_by_name_without_its_text() {
    for (file, target) in [
        ("config.toml", "config.toml"),
        ("guard-rules.toml", "config.toml"),
    ] {
        let (_dir, root, outside) = project();
        std::fs::create_dir_all(root.join(".alembic")).unwrap();
        symlink(outside.join(target), root.join(".alembic").join(file)).unwrap();
        let out = alembic(&root)
            .args(["bootstrap", "--json"])
            .assert()
            .failure()
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(file), "{file}: {stderr}");
        assert!(
            stderr.contains("outside the project root"),
            "{file}: {stderr}"
        );
        assert!(
            !contains(&out.stdout, SECRET) && !stderr.contains(SECRET),
            "{stderr}"
        );
    }
}

#[test]
fn a_linked_state_directory_or_skill_is_refused() {
    let (_dir, root, outside) = project();
    symlink(&outside, root.join(".alembic")).unwrap();
    let out = alembic(&root)
        .args(["bootstrap"])
        .assert()
        .failure()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(
        !outside.join("alembic.db").exists(),
        "no database was created outside"
    );
    assert!(!outside.join(".gitignore").exists());

    let (_dir, root, outside) = project();
    std::fs::create_dir_all(root.join(".alembic/skills/leaky-skill")).unwrap();
    let skill = format!("---\nname: leaky-skill\ndescription: {SECRET}\n---\n\n{SECRET}\n");
    std::fs::write(outside.join("SKILL.md"), skill).unwrap();
    symlink(
        outside.join("SKILL.md"),
        root.join(".alembic/skills/leaky-skill/SKILL.md"),
    )
    .unwrap();
    let out = alembic(&root)
        .args([
            "tools",
            "call",
            "load_skill",
            "--args",
            r#"{"skillName": "leaky-skill"}"#,
        ])
        .assert()
        .failure()
        .get_output()
        .clone();
    let stderr = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stderr.contains("outside the project root"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
}
