//! REPLACE only for the same claim: the issue-38 reproduction, a real contradiction with
//! history, and precision/recall on a hand-written corpus of pairs (`tests/data/conflicts.jsonl`).

use alembic_memory::{Action, ListFilter, NewMemory};
use pretty_assertions::assert_eq;

use super::memory;

/// The consolidation outcome of `new` against a store that holds only `old`.
fn outcome_of(old: &str, new: &str) -> Action {
    let (mut pm, _) = memory();
    pm.add(NewMemory::fact(old)).unwrap();
    let stats = pm.consolidate(&[NewMemory::fact(new)]).unwrap();
    stats.outcomes[0].action
}

#[test]
fn an_unrelated_fact_about_the_same_module_keeps_both() {
    let (mut pm, _) = memory();
    let first = pm
        .consolidate(&[NewMemory::fact(
            "The Payment module uses the Coordinator + Repository pattern",
        )
        .with_importance(8.5)])
        .unwrap();
    let stats = pm
        .consolidate(&[NewMemory::fact(
            "Never use singletons in the Payment module",
        )])
        .unwrap();
    assert_eq!(stats.outcomes[0].action, Action::Added);
    let listed: Vec<String> = pm
        .list(&ListFilter::default())
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed.contains(&"The Payment module uses the Coordinator + Repository pattern".into())
    );
    let kept = pm
        .get(first.outcomes[0].id.as_ref().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!((kept.valid_to, kept.superseded_by), (None, None));
    assert_eq!(pm.stats().unwrap().history, 0);
}

#[test]
fn a_negated_restatement_replaces_with_history() {
    let (mut pm, _) = memory();
    let old = pm
        .add(NewMemory::fact("The API layer uses actix-web").with_importance(7.0))
        .unwrap();
    let stats = pm
        .consolidate(&[NewMemory::fact(
            "The API layer uses axum instead of actix-web",
        )])
        .unwrap();
    let outcome = &stats.outcomes[0];
    assert_eq!(outcome.action, Action::Replaced);
    assert_eq!(outcome.previous.as_deref(), Some(old.id.as_str()));
    let new_id = outcome.id.clone().unwrap();
    let history = pm.history(&new_id).unwrap();
    assert_eq!(
        history.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        vec![old.id.as_str(), new_id.as_str()]
    );
    assert_eq!(history[0].superseded_by.as_deref(), Some(new_id.as_str()));
    assert!(history[0].valid_to.is_some());
    let listed = pm.list(&ListFilter::default()).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].content,
        "The API layer uses axum instead of actix-web"
    );
    assert_eq!(listed[0].importance, 7.0, "keeps the higher importance");
}

#[derive(serde::Deserialize)]
struct Pair {
    old: String,
    new: String,
    replace: bool,
}

#[test]
fn replace_precision_and_recall_on_the_corpus() {
    let pairs: Vec<Pair> = include_str!("../data/conflicts.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let must = pairs.iter().filter(|p| p.replace).count();
    assert!(
        must >= 40 && pairs.len() - must >= 40,
        "at least 40 pairs of each kind"
    );
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    for p in &pairs {
        let replaced = outcome_of(&p.old, &p.new) == Action::Replaced;
        match (replaced, p.replace) {
            (true, true) => tp += 1,
            (true, false) => {
                fp += 1;
                println!("false REPLACE: {:?} -> {:?}", p.old, p.new);
            }
            (false, true) => {
                fn_ += 1;
                println!("missed REPLACE: {:?} -> {:?}", p.old, p.new);
            }
            (false, false) => {}
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    println!(
        "REPLACE on {} pairs: precision {precision:.3} ({tp}/{}), recall {recall:.3} ({tp}/{})",
        pairs.len(),
        tp + fp,
        tp + fn_
    );
    assert!(precision >= 0.95, "precision {precision:.3}");
    assert!(recall >= 0.8, "recall {recall:.3}");
}
