//! Every line of every corpus in `../shared/corpora` (beside the repository).

use std::path::PathBuf;

use alembic_safety::{Access, CommandPolicy, CommandVerdict, PathGuard, WriteMode};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::fixture::{Fixture, SECRET};

pub fn corpus(name: &str) -> Vec<Value> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpora"
    ));
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "corpus {} is missing ({e}): the repository must be cloned beside shared/",
            path.display()
        )
    });
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty(), "corpus {name} is empty");
    lines
}

#[test]
fn paths_escape_corpus_never_reaches_outside() {
    let fx = Fixture::new();
    let before = fx.outside_listing();
    let mut refused = 0;
    let mut literal = 0;
    let cases = corpus("paths-escape.jsonl");
    for (strategy, guard) in fx.guards() {
        for case in &cases {
            let path = case["path"].as_str().unwrap();
            assert_eq!(case["expect"], "refuse_or_literal");
            match guard.check(path, Access::Write) {
                Err(e) => {
                    assert!(
                        matches!(e.rule(), "path.escape" | "path.empty" | "path.nul"),
                        "{strategy:?} {path:?}: {e}"
                    );
                    assert!(guard.read(path).is_err());
                    refused += 1;
                }
                Ok(rel) => {
                    // Accepted only as a literal name inside the root.
                    assert!(
                        !rel.starts_with('/') && !rel.split('/').any(|c| c == ".."),
                        "{path:?} -> {rel}"
                    );
                    guard.write(path, b"literal", WriteMode::Replace).unwrap();
                    assert_eq!(guard.read(path).unwrap(), b"literal");
                    assert!(fx.root.join(&rel).is_file());
                    literal += 1;
                }
            }
            if let Ok(bytes) = guard.read(path) {
                assert_ne!(bytes, SECRET.as_bytes());
            }
        }
    }
    assert_eq!(fx.outside_listing(), before);
    eprintln!(
        "paths-escape: {} lines, {refused} refused, {literal} literal (both strategies)",
        cases.len()
    );
    assert_eq!(refused + literal, cases.len() * 2);
}

#[test]
fn paths_write_protected_corpus_is_refused_in_any_case() {
    let fx = Fixture::new();
    let cases = corpus("paths-write-protected.jsonl");
    for (_, guard) in fx.guards() {
        for case in &cases {
            let path = case["path"].as_str().unwrap();
            assert_eq!(case["expect"], "refuse_write");
            for variant in [path.to_owned(), path.to_uppercase(), path.to_lowercase()] {
                assert_eq!(
                    guard.check(&variant, Access::Write).unwrap_err().rule(),
                    "path.protected",
                    "{variant}"
                );
                assert_eq!(
                    guard
                        .write(&variant, b"x", WriteMode::Replace)
                        .unwrap_err()
                        .rule(),
                    "path.protected"
                );
                assert_eq!(
                    guard
                        .write(&variant, b"x", WriteMode::Append)
                        .unwrap_err()
                        .rule(),
                    "path.protected"
                );
            }
        }
    }
    assert!(!fx.root.join(".git").exists() && !fx.root.join(".env").exists());
}

/// Runs the policy on every line of a command corpus; returns (allowed, needs approval, denied).
fn command_counts(name: &str, check: impl Fn(&str, &CommandVerdict)) -> (usize, usize, usize) {
    let fx = Fixture::new();
    std::fs::write(fx.root.join("Cargo.toml"), "[package]\n").unwrap();
    let guard = PathGuard::new(&fx.root).unwrap();
    let policy = CommandPolicy::new();
    let mut counts = (0, 0, 0);
    for case in corpus(name) {
        let command = case["command"].as_str().unwrap();
        let verdict = policy.evaluate(command, &guard);
        check(command, &verdict);
        match verdict {
            CommandVerdict::Allow => counts.0 += 1,
            CommandVerdict::NeedsApproval { .. } => counts.1 += 1,
            CommandVerdict::Deny { .. } => counts.2 += 1,
        }
    }
    counts
}

#[test]
fn commands_refuse_corpus_is_never_allowed() {
    let (allowed, approval, denied) =
        command_counts("commands-refuse.jsonl", |command, verdict| {
            assert!(!verdict.is_allow(), "{command:?} was allowed");
        });
    eprintln!("commands-refuse: {allowed} allowed, {approval} needs approval, {denied} denied");
    assert_eq!(allowed, 0);
}

#[test]
fn commands_allow_corpus_is_allowed() {
    let (allowed, approval, denied) = command_counts("commands-allow.jsonl", |command, verdict| {
        assert_eq!(verdict, &CommandVerdict::Allow, "{command:?}");
    });
    eprintln!("commands-allow: {allowed} allowed, {approval} needs approval, {denied} denied");
}
