//! The store on its own: lifecycle and history, atomic refusals, search, edges, proposals.

use alembic_knowledge::{Filter, KnowledgeBackend, KnowledgeStore, NewEntry, Status, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{entry, store};

fn submitted(kb: &mut KnowledgeStore, title: &str) -> String {
    kb.create(
        &entry(title, "some content about it"),
        Status::Submitted,
        "agent",
        None,
    )
    .unwrap()
    .id
}

fn published(kb: &mut KnowledgeStore, title: &str) -> String {
    let id = submitted(kb, title);
    kb.transition(&id, Status::Approved, "alice", Some("looks right"), None)
        .unwrap();
    kb.transition(&id, Status::Published, "alice", None, None)
        .unwrap();
    id
}

#[test]
fn every_transition_is_a_history_row_with_who_why_and_when() {
    let mut kb = store();
    let id = published(&mut kb, "Retry with backoff");
    kb.transition(
        &id,
        Status::Deprecated,
        "bob",
        Some("client rewritten"),
        None,
    )
    .unwrap();
    let h = kb.history(&id).unwrap();
    let moves: Vec<_> = h
        .iter()
        .map(|t| {
            (
                t.from.map(|s| s.as_str()),
                t.to.as_str(),
                t.by.as_str(),
                t.reason.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        moves,
        vec![
            (None, "submitted", "agent", None),
            (Some("submitted"), "approved", "alice", Some("looks right")),
            (Some("approved"), "published", "alice", None),
            (
                Some("published"),
                "deprecated",
                "bob",
                Some("client rewritten")
            ),
        ]
    );
    assert!(
        h.windows(2).all(|w| w[0].at < w[1].at),
        "timestamps increase"
    );
    assert_eq!(kb.get(&id).unwrap().status, Status::Deprecated);
}

#[test]
fn invalid_transition_names_state_and_allowed_moves_and_changes_nothing() {
    let mut kb = store();
    let id = submitted(&mut kb, "Use the shared logger");
    let before = kb.get(&id).unwrap();
    let err = kb
        .transition(&id, Status::Published, "alice", None, None)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot move entry '{id}' from submitted to published: allowed next states from submitted are approved, rejected"
        )
    );
    assert_eq!(kb.get(&id).unwrap(), before);
    assert_eq!(kb.history(&id).unwrap().len(), 1);

    let deprecated = published(&mut kb, "Old pattern");
    kb.transition(&deprecated, Status::Deprecated, "a", Some("gone"), None)
        .unwrap();
    let err = kb
        .transition(&deprecated, Status::Draft, "a", None, None)
        .unwrap_err();
    assert!(err.to_string().ends_with("are none (it is final)"), "{err}");
}

#[test]
fn rejecting_needs_a_reason_and_a_missing_one_applies_nothing() {
    let mut kb = store();
    let id = submitted(&mut kb, "Cache images");
    let err = kb
        .transition(&id, Status::Rejected, "alice", Some("  "), None)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("a reason is required to move entry '{id}' to rejected")
    );
    assert_eq!(kb.get(&id).unwrap().status, Status::Submitted);
    assert_eq!(kb.history(&id).unwrap().len(), 1);
}

#[test]
fn duplicate_titles_are_refused_until_the_old_entry_is_deprecated() {
    let mut kb = store();
    let id = published(&mut kb, "Retry With Backoff");
    let err = kb
        .create(
            &entry("  retry   with backoff ", "x"),
            Status::Submitted,
            "a",
            None,
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("already exists ({id}, published)")),
        "{err}"
    );
    kb.transition(&id, Status::Deprecated, "a", Some("replaced"), None)
        .unwrap();
    assert!(
        kb.create(
            &entry("Retry with backoff", "x"),
            Status::Submitted,
            "a",
            None
        )
        .is_ok()
    );
}

#[test]
fn search_applies_filters_before_the_limit_and_ranks_by_relevance() {
    let mut kb = store();
    for (i, lang) in ["swift", "swift", "swift", "go", "go"].iter().enumerate() {
        let mut e = entry(
            &format!("Network retry {i}"),
            "retry failed network requests",
        );
        e.language = lang.to_string();
        kb.create(&e, Status::Submitted, "a", None).unwrap();
    }
    let filter = Filter {
        language: Some("Go".into()),
        limit: 2,
        ..Filter::default()
    };
    let hits = kb.search("retry", &filter).unwrap();
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().all(|h| h.entry.language == "go"));

    let only_published = Filter {
        statuses: vec![Status::Published],
        ..Filter::default()
    };
    assert!(kb.search("retry", &only_published).unwrap().is_empty());
    assert!(kb.search("  ", &Filter::default()).unwrap().is_empty());
}

#[test]
fn chinese_text_is_searchable() {
    let mut kb = store();
    let id = submitted(&mut kb, "网络请求重试策略");
    let hits = kb.search("重试", &Filter::default()).unwrap();
    assert_eq!(hits.first().map(|h| h.entry.id.clone()), Some(id));
    assert_eq!(hits[0].score, 1.0);
}

#[test]
fn published_recipes_cannot_be_edited_and_rejected_ones_return_to_review() {
    let mut kb = store();
    let id = published(&mut kb, "Published");
    let err = kb
        .update(&id, &entry("Published", "new"), None, Some("a"), None)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("is published; only draft, submitted or rejected"),
        "{err}"
    );

    let c = submitted(&mut kb, "Candidate");
    kb.transition(&c, Status::Rejected, "alice", Some("no sources"), None)
        .unwrap();
    let revised = kb
        .update(
            &c,
            &entry("Candidate v2", "with sources"),
            None,
            Some("agent"),
            None,
        )
        .unwrap();
    assert_eq!(
        (revised.title.as_str(), revised.status),
        ("Candidate v2", Status::Submitted)
    );
    let tail: Vec<_> = kb
        .history(&c)
        .unwrap()
        .iter()
        .skip(2)
        .map(|t| t.to)
        .collect();
    assert_eq!(tail, vec![Status::Draft, Status::Submitted]);
    assert_eq!(
        kb.search("sources", &Filter::default()).unwrap().len(),
        1,
        "FTS follows updates"
    );
}

#[test]
fn edges_refuse_unknown_ids_self_edges_and_unknown_relations() {
    let mut kb = store();
    let a = submitted(&mut kb, "A");
    let b = submitted(&mut kb, "B");
    assert!(
        kb.add_edge(&a, "k-missing", "requires", 1.0, "x")
            .unwrap_err()
            .to_string()
            .contains("'k-missing' not found")
    );
    assert!(
        kb.add_edge(&a, &a, "requires", 1.0, "x")
            .unwrap_err()
            .to_string()
            .contains("to itself")
    );
    assert!(
        kb.add_edge(&a, &b, "likes", 1.0, "x")
            .unwrap_err()
            .to_string()
            .contains("unknown relation 'likes'")
    );
    assert!(
        kb.add_edge(&a, &b, "depends-on", 1.0, "x").unwrap().1,
        "new edge"
    );
    let (edge, new) = kb.add_edge(&a, &b, "depends_on", 2.0, "x").unwrap();
    assert!(!new);
    assert_eq!(edge.weight, 2.0);
    let n = kb.neighbours(&b, None).unwrap();
    assert_eq!((n.outgoing.len(), n.incoming.len()), (0, 1));
    assert_eq!(n.incoming[0].other_title, "A");
    assert_eq!(kb.stats().unwrap().edges, 1);
}

#[test]
fn usage_counters_count() {
    let mut kb = store();
    let id = published(&mut kb, "Used");
    kb.record_usage(&id, Usage::Adoption).unwrap();
    kb.record_usage(&id, Usage::Adoption).unwrap();
    let e = kb.record_usage(&id, Usage::Application).unwrap();
    assert_eq!((e.adoptions, e.applications, e.views), (2, 1, 0));
    assert!("adopted".parse::<Usage>().is_err());
}

#[test]
fn confirming_a_deprecation_closes_proposals_atomically() {
    let mut kb = store();
    let id = published(&mut kb, "Recipe");
    let p = kb
        .propose(
            &id,
            "correction",
            "path moved",
            &json!({"sourceStatus": "moved"}),
            1.7,
            "agent",
        )
        .unwrap();
    assert_eq!(p.confidence, 1.0, "clamped");
    let dup = kb
        .propose(&id, "correction", "again", &json!({}), 0.5, "agent")
        .unwrap_err();
    assert!(dup.to_string().contains(&p.id));
    kb.confirm_deprecation(&id, "code deleted", "alice")
        .unwrap();
    let proposals = kb.proposals_for(&id).unwrap();
    assert_eq!(proposals[0].status, "executed");
    // A second confirmation is refused and leaves everything as it was.
    let err = kb.confirm_deprecation(&id, "again", "alice").unwrap_err();
    assert!(err.to_string().contains("from deprecated"), "{err}");
    assert_eq!(kb.history(&id).unwrap().len(), 4);
}

#[test]
fn the_project_database_keeps_entries_across_opens() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let mut kb = KnowledgeStore::open_project(dir.path()).unwrap();
        kb.create(
            &NewEntry {
                title: "Kept".into(),
                content: "c".into(),
                ..NewEntry::default()
            },
            Status::Draft,
            "a",
            None,
        )
        .unwrap()
        .id
    };
    let kb = KnowledgeStore::open_project(dir.path()).unwrap();
    assert_eq!(kb.get(&id).unwrap().title, "Kept");
    assert!(dir.path().join(".alembic/alembic.db").exists());
}
