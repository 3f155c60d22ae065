//! The project's standing adversarial corpus: every line of every
//! `tests/corpora/adversarial-*.jsonl`, run through `run_safe_command` on a real tree.
//!
//! Each line builds its own project (real files, links, bare-repository folders, git history)
//! beside an outside directory holding a secret, then calls the tool through the pipeline and
//! its SafetyGate. The format is documented in `tests/corpora/README.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use alembic_safety::spawn::{SpawnRequest, run};
use alembic_safety::tools::TOOL_NAMES;
use alembic_safety::{PathGuard, PolicySafetyCheck, SafetyServices, register_tools};
use alembic_tools::{Allowlist, Caller, OutcomeStatus, Pipeline, ToolCall, ToolRegistry};
use serde_json::{Value, json};

use super::fixture::{Fixture, SECRET};

/// One line of a corpus, with its file and line number for messages.
struct Case {
    at: String,
    line: Value,
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpora"))
}

fn cases() -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("adversarial-") && name.ends_with(".jsonl")
        })
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no adversarial corpus in {:?}",
        corpus_dir()
    );
    let mut out = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let line: Value = serde_json::from_str(raw)
                .unwrap_or_else(|e| panic!("{name}:{}: not JSON: {e}", i + 1));
            out.push(Case {
                at: format!("{name}:{} ({})", i + 1, line["id"].as_str().unwrap_or("?")),
                line,
            });
        }
    }
    out
}

/// A fresh project for one case, with the placeholders it substitutes.
struct Project {
    fx: Fixture,
    pipeline: Arc<Pipeline>,
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
        Self { fx, pipeline }
    }

    fn marker(&self) -> PathBuf {
        self.fx.outside.join("pwned")
    }

    fn fill(&self, text: &str) -> String {
        text.replace("{ROOT}", &self.fx.root.to_string_lossy())
            .replace("{MARKER}", &self.marker().to_string_lossy())
            .replace("{OUTSIDE}", &self.fx.outside.to_string_lossy())
    }

    fn str_field(&self, step: &Value, key: &str, at: &str) -> String {
        let text = step[key]
            .as_str()
            .unwrap_or_else(|| panic!("{at}: step {step} needs a string {key:?}"));
        self.fill(text)
    }

    fn set_up(&self, case: &Case) {
        let Some(steps) = case.line.get("setup") else {
            return;
        };
        for step in steps.as_array().unwrap() {
            let at = &case.at;
            if step.get("dir").is_some() {
                std::fs::create_dir_all(self.fx.path(&self.str_field(step, "dir", at))).unwrap();
            } else if step.get("file").is_some() {
                let path = self.fx.path(&self.str_field(step, "file", at));
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, self.str_field(step, "text", at)).unwrap();
            } else if step.get("link").is_some() {
                let path = self.fx.path(&self.str_field(step, "link", at));
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink(self.str_field(step, "to", at), path).unwrap();
            } else if step.get("sh").is_some() {
                self.sh(&self.str_field(step, "sh", at), at);
            } else {
                panic!("{at}: unknown setup step {step}: use dir, file+text, link+to or sh");
            }
        }
    }

    /// A trusted set-up script: straight through the spawner, with no policy.
    fn sh(&self, script: &str, at: &str) {
        let guard = PathGuard::new(&self.fx.root).unwrap();
        let request = SpawnRequest::new("sh")
            .args(["-c", script])
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com");
        let out = run(&guard, request).unwrap();
        assert_eq!(
            out.exit_code,
            Some(0),
            "{at}: setup {script}: {}",
            out.stderr
        );
    }
}

/// Every entry under `dir` (links not followed): path → kind and content or link target.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let to = std::fs::read_link(&path).unwrap();
                out.insert(rel, format!("link {}", to.display()));
            } else if meta.is_dir() {
                out.insert(rel, "dir".into());
                walk(base, &path, out);
            } else {
                let data = std::fs::read(&path).unwrap_or_default();
                out.insert(rel, format!("file {}", String::from_utf8_lossy(&data)));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// What one case did, for the summary line.
#[derive(Default)]
struct Tally {
    refused: usize,
    contained_runs: usize,
    runs: usize,
}

async fn run_case(case: &Case, tally: &mut Tally) {
    let project = Project::new();
    project.set_up(case);
    let line = &case.line;
    let at = &case.at;
    let command = project.fill(
        line["command"]
            .as_str()
            .unwrap_or_else(|| panic!("{at}: no command")),
    );
    let cwd = project.fill(line["cwd"].as_str().unwrap_or("."));
    let root_before = tree(&project.fx.root);
    let outside_before = tree(&project.fx.outside);
    let caller = Caller::new("adversarial", Allowlist::only(TOOL_NAMES));
    let outcome = project
        .pipeline
        .execute(ToolCall::new(
            "run_safe_command",
            json!({"command": command, "cwd": cwd}),
            caller,
        ))
        .await;
    let shown = format!(
        "{} {}",
        outcome.text_for_model(),
        outcome
            .output
            .as_ref()
            .map(|o| o.data.to_string())
            .unwrap_or_default()
    );
    let refused = outcome.status == OutcomeStatus::Blocked;
    let expect = line["expect"]
        .as_str()
        .unwrap_or_else(|| panic!("{at}: no expect"));
    match expect {
        "refuse" => assert!(refused, "{at}: `{command}` was not refused: {shown}"),
        "contained" => {}
        "runs" => {
            assert!(outcome.is_ok(), "{at}: `{command}` did not run: {shown}");
            let data = &outcome.output.as_ref().unwrap().data;
            if let Some(exit) = line.get("exit") {
                assert_eq!(&data["exitCode"], exit, "{at}: `{command}`: {shown}");
            }
            if let Some(want) = line.get("stdout_contains").and_then(Value::as_str) {
                let want = project.fill(want);
                let stdout = data["stdout"].as_str().unwrap_or_default();
                assert!(
                    stdout.contains(&want),
                    "{at}: `{command}` stdout lacks {want:?}: {stdout}"
                );
            }
        }
        other => panic!("{at}: expect {other:?}: use refuse, contained or runs"),
    }
    // Whatever the verdict, nothing leaks, nothing runs, nothing changes.
    assert!(
        !shown.contains(SECRET),
        "{at}: `{command}` showed the outside secret: {shown}"
    );
    assert!(
        !project.marker().exists(),
        "{at}: `{command}` ran a program ({shown})"
    );
    assert_eq!(
        tree(&project.fx.outside),
        outside_before,
        "{at}: outside changed"
    );
    assert_eq!(
        tree(&project.fx.root),
        root_before,
        "{at}: `{command}` changed the project"
    );
    match (refused, outcome.is_ok()) {
        (true, _) => tally.refused += 1,
        (false, true) if expect == "runs" => tally.runs += 1,
        _ => tally.contained_runs += 1,
    }
}

#[tokio::test]
async fn adversarial_corpus_is_refused_or_contained() {
    let cases = cases();
    let mut tally = Tally::default();
    for case in &cases {
        run_case(case, &mut tally).await;
    }
    eprintln!(
        "adversarial: {} cases: {} refused, {} ran contained, {} legitimate ran",
        cases.len(),
        tally.refused,
        tally.contained_runs,
        tally.runs
    );
    assert_eq!(
        tally.refused + tally.contained_runs + tally.runs,
        cases.len()
    );
}
