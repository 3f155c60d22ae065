use alembic_memory::{
    Action, ConsolidateStats, ListFilter, MemoryType, NewMemory, RetrieveOptions,
};
use pretty_assertions::assert_eq;

use super::memory;

fn counts(s: &ConsolidateStats) -> (usize, usize, usize, usize, usize) {
    (s.added, s.updated, s.merged, s.skipped, s.replaced)
}

#[test]
fn add_update_merge_skip() {
    let (mut pm, _) = memory();
    let stats = pm
        .consolidate(&[
            NewMemory::fact("The payment module uses the repository pattern").with_importance(4.0),
            NewMemory::fact("ok"),
            NewMemory::fact("Networking goes through URLSession with a retry policy"),
        ])
        .unwrap();
    assert_eq!(counts(&stats), (2, 0, 0, 1, 0));

    // near-identical restatement → UPDATE metadata, content unchanged
    let stats = pm
        .consolidate(&[
            NewMemory::fact("The payment module uses the repository pattern.").with_importance(7.0),
        ])
        .unwrap();
    assert_eq!(counts(&stats), (0, 1, 0, 0, 0));
    let id = stats.outcomes[0].id.clone().unwrap();
    let m = pm.get(&id).unwrap().unwrap();
    assert_eq!((m.importance, m.access_count), (7.0, 1));
    assert_eq!(m.content, "The payment module uses the repository pattern");

    // overlapping statement → MERGE into a new version; the old one becomes history
    let stats = pm
        .consolidate(&[NewMemory::fact("Networking goes through URLSession with an exponential retry policy and circuit breaker")])
        .unwrap();
    assert_eq!(counts(&stats), (0, 0, 1, 0, 0));
    let outcome = &stats.outcomes[0];
    let merged = pm.get(outcome.id.as_ref().unwrap()).unwrap().unwrap();
    assert!(merged.content.contains("circuit breaker"));
    let old = pm.get(outcome.previous.as_ref().unwrap()).unwrap().unwrap();
    assert_eq!(old.superseded_by.as_deref(), Some(merged.id.as_str()));
    assert!(old.valid_to.is_some());
    assert_eq!(pm.history(&merged.id).unwrap().len(), 2);
}

#[test]
fn merge_threshold_sits_between_update_and_add() {
    let (mut pm, _) = memory();
    pm.consolidate(&[NewMemory::fact(
        "Networking goes through URLSession with a retry policy",
    )])
    .unwrap();
    let s = pm.consolidate(&[NewMemory::fact("Networking goes through URLSession with an exponential retry policy and circuit breaker")]).unwrap();
    let sim = s.outcomes[0].similarity.unwrap();
    assert!((0.60..0.85).contains(&sim), "{sim}");
    let s = pm
        .consolidate(&[NewMemory::fact("Images are cached on disk by Kingfisher")])
        .unwrap();
    assert_eq!(s.outcomes[0].action, Action::Added);
}

#[test]
fn contradiction_replaces_without_destroying_history() {
    let (mut pm, _) = memory();
    let first = pm
        .add(NewMemory::fact("We use CocoaPods to manage dependencies").with_importance(6.0))
        .unwrap();
    let stats = pm
        .consolidate(&[NewMemory::fact(
            "We no longer use CocoaPods to manage dependencies",
        )])
        .unwrap();
    assert_eq!(counts(&stats), (0, 0, 0, 0, 1));
    let new_id = stats.outcomes[0].id.clone().unwrap();
    let new = pm.get(&new_id).unwrap().unwrap();
    assert_eq!(new.importance, 6.0, "keeps the higher importance");

    // default retrieval shows only the current statement
    let hits = pm
        .retrieve("cocoapods dependencies", &RetrieveOptions::default())
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.memory.id.clone()).collect::<Vec<_>>(),
        vec![new_id.clone()]
    );
    // history shows both, oldest first
    let history = pm.history(&new_id).unwrap();
    assert_eq!(
        history.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        vec![first.id.as_str(), new_id.as_str()]
    );
    assert_eq!(history[0].superseded_by.as_deref(), Some(new_id.as_str()));
    assert_eq!(pm.list(&ListFilter::default()).unwrap().len(), 1);
    assert_eq!(
        pm.list(&ListFilter {
            include_history: true,
            ..Default::default()
        })
        .unwrap()
        .len(),
        2
    );
}

#[test]
fn chinese_contradiction_is_detected() {
    let (mut pm, _) = memory();
    pm.add(NewMemory::fact("项目使用 CocoaPods 管理依赖"))
        .unwrap();
    let stats = pm
        .consolidate(&[NewMemory::fact("项目不再使用 CocoaPods 管理依赖")])
        .unwrap();
    assert_eq!(stats.replaced, 1);
}

#[test]
fn ordinary_action_words_do_not_trigger_replacement() {
    let (mut pm, _) = memory();
    pm.add(NewMemory::fact(
        "The cleanup job removes stale caches every night",
    ))
    .unwrap();
    pm.add(NewMemory::fact("Avoid global state in the network layer"))
        .unwrap();
    let stats = pm
        .consolidate(&[
            NewMemory::fact("The network layer keeps a session cache"),
            NewMemory::fact("The release job drops old build artifacts"),
        ])
        .unwrap();
    assert_eq!(stats.replaced, 0);
    assert_eq!(pm.stats().unwrap().history, 0);
}

#[test]
fn different_types_never_conflict_or_merge() {
    let (mut pm, _) = memory();
    pm.add(NewMemory::fact("We use tabs for indentation").with_type(MemoryType::Preference))
        .unwrap();
    let stats = pm
        .consolidate(&[NewMemory::fact("We do not use tabs for indentation")])
        .unwrap();
    assert_eq!(counts(&stats), (1, 0, 0, 0, 0));
}

#[test]
fn later_candidates_see_earlier_ones_in_the_same_batch() {
    let (mut pm, _) = memory();
    let stats = pm
        .consolidate(&[
            NewMemory::fact("Feature flags are stored in LaunchDarkly"),
            NewMemory::fact("Feature flags are stored in LaunchDarkly"),
        ])
        .unwrap();
    assert_eq!(counts(&stats), (1, 1, 0, 0, 0));
}
