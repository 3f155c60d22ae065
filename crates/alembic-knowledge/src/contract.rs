//! The knowledge backend contract: the same checks against every [`KnowledgeBackend`]
//! (SQLite in this crate's tests, PostgreSQL in alembic-team's). Feature `test-support`.
//!
//! [`run_all`] runs every check on a fresh, empty store from `open`; a failed check panics
//! with its name and what differed.
// Test support: a failed expectation is a panic, as in a test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::backend::KnowledgeBackend;
use crate::error::KnowledgeError;
use crate::guard::{Severity, Violation};
use crate::model::{Kind, NewEntry, Status};
use crate::store::{Filter, Usage};

/// Opens a fresh, empty store.
pub type Open<'a> = &'a dyn Fn() -> Box<dyn KnowledgeBackend>;

/// One check: runs against stores from `open`.
pub type Check = fn(Open<'_>);

/// Every check, by name.
pub const CHECKS: &[(&str, Check)] = &[
    ("create_get_history", create_get_history),
    ("duplicate_titles", duplicate_titles),
    ("lifecycle_and_versions", lifecycle_and_versions),
    ("stale_version_conflicts", stale_version_conflicts),
    ("update_and_resubmit", update_and_resubmit),
    ("list_filters_and_order", list_filters_and_order),
    ("search_ranks_and_filters", search_ranks_and_filters),
    ("usage_and_quality", usage_and_quality),
    ("edges_and_impact", edges_and_impact),
    ("proposals", proposals),
    ("guard_runs_and_overrides", guard_runs_and_overrides),
    ("stats", stats),
    ("export_import_round_trip", export_import_round_trip),
    ("remove_moved", remove_moved),
];

/// Runs every check on fresh stores from `open`.
pub fn run_all(open: Open<'_>) {
    for (name, check) in CHECKS {
        eprintln!("knowledge contract: {name}");
        check(open);
    }
}

/// A candidate with `title` and some `content`.
pub fn candidate(title: &str, content: &str) -> NewEntry {
    NewEntry {
        title: title.into(),
        description: format!("About {title}"),
        knowledge_type: "code-pattern".into(),
        category: "network".into(),
        language: "swift".into(),
        content: content.into(),
        tags: vec!["net".into()],
        sources: vec!["Sources/Net/Client.swift".into()],
        extra: json!({"whenClause": "calling the API"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ..NewEntry::default()
    }
}

fn publish(kb: &mut dyn KnowledgeBackend, title: &str, content: &str) -> String {
    let e = kb
        .create(&candidate(title, content), Status::Submitted, "agent", None)
        .unwrap();
    kb.transition(&e.id, Status::Approved, "rev", None, None)
        .unwrap();
    kb.transition(&e.id, Status::Published, "rev", None, None)
        .unwrap();
    e.id
}

fn create_get_history(open: Open<'_>) {
    let mut kb = open();
    let e = kb
        .create(
            &candidate(
                "Retry with backoff",
                "Network calls retry with exponential backoff",
            ),
            Status::Submitted,
            "agent",
            Some(0.5),
        )
        .unwrap();
    assert_eq!(e.status, Status::Submitted);
    assert_eq!((e.version, e.created_by.as_str()), (1, "agent"));
    assert_eq!(e.kind, Kind::Pattern);
    assert_eq!(e.quality, Some(0.5));
    assert_eq!(e.extra["whenClause"], "calling the API");
    assert_eq!(kb.get(&e.id).unwrap(), e);
    let h = kb.history(&e.id).unwrap();
    assert_eq!(h.len(), 1);
    assert_eq!(
        (h[0].from, h[0].to, h[0].by.as_str()),
        (None, Status::Submitted, "agent")
    );
    assert!(
        matches!(kb.get("k-missing"), Err(KnowledgeError::NotFound { id }) if id == "k-missing")
    );
    assert!(matches!(
        kb.history("k-missing"),
        Err(KnowledgeError::NotFound { .. })
    ));
}

fn duplicate_titles(open: Open<'_>) {
    let mut kb = open();
    let e = kb
        .create(
            &candidate("Retry with backoff", "x"),
            Status::Draft,
            "a",
            None,
        )
        .unwrap();
    let err = kb
        .create(
            &candidate("  retry WITH backoff ", "y"),
            Status::Draft,
            "b",
            None,
        )
        .unwrap_err();
    assert!(
        matches!(&err, KnowledgeError::DuplicateTitle { existing_id, .. } if *existing_id == e.id),
        "{err}"
    );
    assert_eq!(
        kb.live_title("Retry  with Backoff").unwrap(),
        Some((e.id.clone(), Status::Draft))
    );
    assert_eq!(kb.live_title("Something else").unwrap(), None);
}

fn lifecycle_and_versions(open: Open<'_>) {
    let mut kb = open();
    let e = kb
        .create(
            &candidate("Use the logger", "Log through Log.info"),
            Status::Submitted,
            "a",
            None,
        )
        .unwrap();
    let err = kb
        .transition(&e.id, Status::Published, "rev", None, None)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("allowed next states from submitted are approved, rejected"),
        "{err}"
    );
    let err = kb
        .transition(&e.id, Status::Rejected, "rev", Some("  "), None)
        .unwrap_err();
    assert!(
        matches!(err, KnowledgeError::ReasonRequired { .. }),
        "{err}"
    );
    let a = kb
        .transition(&e.id, Status::Approved, "rev", Some("good"), Some(1))
        .unwrap();
    assert_eq!((a.status, a.version), (Status::Approved, 2));
    let p = kb
        .transition(&e.id, Status::Published, "lead", None, Some(2))
        .unwrap();
    assert_eq!((p.status, p.version), (Status::Published, 3));
    let h = kb.history(&e.id).unwrap();
    let moves: Vec<_> = h.iter().map(|t| (t.from, t.to, t.by.as_str())).collect();
    assert_eq!(
        moves,
        vec![
            (None, Status::Submitted, "a"),
            (Some(Status::Submitted), Status::Approved, "rev"),
            (Some(Status::Approved), Status::Published, "lead"),
        ]
    );
    assert_eq!(h[1].reason.as_deref(), Some("good"));
}

fn stale_version_conflicts(open: Open<'_>) {
    let mut kb = open();
    let e = kb
        .create(
            &candidate("Use the logger", "Log through Log.info"),
            Status::Submitted,
            "a",
            None,
        )
        .unwrap();
    kb.transition(&e.id, Status::Approved, "ana", None, Some(1))
        .unwrap();
    // bo read version 1 too: his reject must not override ana's approval
    let err = kb
        .transition(&e.id, Status::Rejected, "bo", Some("no"), Some(1))
        .unwrap_err();
    assert!(
        matches!(&err, KnowledgeError::Conflict { id, expected: 1, found: 2 } if *id == e.id),
        "{err}"
    );
    assert!(err.to_string().contains(&e.id), "{err}");
    let edit = candidate("Use the logger", "Log through Log.warn");
    let err = kb.update(&e.id, &edit, None, None, Some(1)).unwrap_err();
    assert!(matches!(err, KnowledgeError::Conflict { .. }), "{err}");
    let now = kb.get(&e.id).unwrap();
    assert_eq!((now.status, now.version), (Status::Approved, 2));
    assert_eq!(now.content, "Log through Log.info");
    assert_eq!(kb.history(&e.id).unwrap().len(), 2);
}

fn update_and_resubmit(open: Open<'_>) {
    let mut kb = open();
    let e = kb
        .create(
            &candidate("Cache images", "Images are cached in memory"),
            Status::Submitted,
            "a",
            None,
        )
        .unwrap();
    kb.transition(&e.id, Status::Rejected, "rev", Some("vague"), None)
        .unwrap();
    let edit = candidate(
        "Cache images on disk",
        "Images are cached on disk by ImageStore",
    );
    let u = kb
        .update(&e.id, &edit, Some(0.8), Some("a"), Some(2))
        .unwrap();
    assert_eq!(u.title, "Cache images on disk");
    assert_eq!(u.status, Status::Submitted);
    assert_eq!(u.quality, Some(0.8));
    // the edit and the two moves (rejected -> draft -> submitted) each bump the version
    assert_eq!(u.version, 5);
    let moves: Vec<_> = kb
        .history(&e.id)
        .unwrap()
        .iter()
        .map(|t| (t.from, t.to))
        .collect();
    assert_eq!(
        moves[2..],
        [
            (Some(Status::Rejected), Status::Draft),
            (Some(Status::Draft), Status::Submitted)
        ]
    );
    let found = kb.search("ImageStore disk", &Filter::default()).unwrap();
    assert_eq!(found.len(), 1);
    assert!(kb.search("memory", &Filter::default()).unwrap().is_empty());
    let id = publish(kb.as_mut(), "Published one", "text");
    let err = kb
        .update(&id, &candidate("Published one", "new"), None, None, None)
        .unwrap_err();
    assert!(
        matches!(
            err,
            KnowledgeError::NotEditable {
                status: Status::Published,
                ..
            }
        ),
        "{err}"
    );
}

fn list_filters_and_order(open: Open<'_>) {
    let mut kb = open();
    let a = kb
        .create(&candidate("First", "one"), Status::Submitted, "a", None)
        .unwrap();
    let mut rule = candidate("Second", "two");
    rule.kind = Some(Kind::Rule);
    rule.language = "Kotlin".into();
    let b = kb.create(&rule, Status::Draft, "a", None).unwrap();
    let c = publish(kb.as_mut(), "Third", "three");
    let all: Vec<String> = kb
        .list(&Filter::default())
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(
        all,
        vec![c.clone(), b.id.clone(), a.id.clone()],
        "newest first"
    );
    let only =
        |f: Filter| -> Vec<String> { kb.list(&f).unwrap().into_iter().map(|e| e.id).collect() };
    assert_eq!(
        only(Filter {
            statuses: vec![Status::Draft, Status::Published],
            ..Filter::default()
        }),
        vec![c.clone(), b.id.clone()]
    );
    assert_eq!(
        only(Filter {
            kind: Some(Kind::Rule),
            language: Some("kotlin".into()),
            ..Filter::default()
        }),
        vec![b.id.clone()]
    );
    assert_eq!(
        only(Filter {
            limit: 1,
            ..Filter::default()
        }),
        vec![c.clone()]
    );
    let live: Vec<String> = kb
        .live_entries()
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(live, vec![a.id, b.id, c], "oldest first");
}

fn search_ranks_and_filters(open: Open<'_>) {
    let mut kb = open();
    let both = publish(
        kb.as_mut(),
        "Retry requests with backoff",
        "Every request retries with exponential backoff",
    );
    let one = publish(
        kb.as_mut(),
        "Log failed requests",
        "A failed request is logged once",
    );
    let cjk = publish(kb.as_mut(), "网络请求重试", "网络请求失败时重试三次");
    kb.create(
        &candidate("Draft about backoff", "backoff draft"),
        Status::Draft,
        "a",
        None,
    )
    .unwrap();
    let hits = kb
        .search(
            "retry backoff",
            &Filter {
                statuses: vec![Status::Published],
                ..Filter::default()
            },
        )
        .unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].entry.id, both);
    assert_eq!(hits[0].score, 1.0);
    let hits = kb.search("request backoff", &Filter::default()).unwrap();
    let ids: Vec<&str> = hits.iter().map(|h| h.entry.id.as_str()).collect();
    assert_eq!(
        ids.first(),
        Some(&both.as_str()),
        "more terms first: {ids:?}"
    );
    assert!(ids.contains(&one.as_str()), "{ids:?}");
    assert_eq!(ids.len(), 3, "the draft matches backoff: {ids:?}");
    let hits = kb.search("重试", &Filter::default()).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].entry.id, cjk);
    assert!(kb.search("  ,, ", &Filter::default()).unwrap().is_empty());
    let limited = kb
        .search(
            "request",
            &Filter {
                limit: 1,
                ..Filter::default()
            },
        )
        .unwrap();
    assert_eq!(limited.len(), 1);
}

fn usage_and_quality(open: Open<'_>) {
    let mut kb = open();
    let id = publish(kb.as_mut(), "Use the logger", "Log through Log.info");
    let before = kb.get(&id).unwrap();
    kb.record_usage(&id, Usage::View).unwrap();
    kb.record_usage(&id, Usage::View).unwrap();
    let e = kb.record_usage(&id, Usage::Adoption).unwrap();
    assert_eq!((e.views, e.adoptions, e.applications), (2, 1, 0));
    assert_eq!(e.version, before.version, "usage is not an edit");
    kb.set_quality(&id, 0.75).unwrap();
    assert_eq!(kb.get(&id).unwrap().quality, Some(0.75));
    assert!(matches!(
        kb.record_usage("k-none", Usage::View),
        Err(KnowledgeError::NotFound { .. })
    ));
    assert!(matches!(
        kb.set_quality("k-none", 0.1),
        Err(KnowledgeError::NotFound { .. })
    ));
}

fn edges_and_impact(open: Open<'_>) {
    let mut kb = open();
    let base = publish(kb.as_mut(), "Base client", "HTTP client");
    let retry = publish(kb.as_mut(), "Retry layer", "retries");
    let auth = publish(kb.as_mut(), "Auth layer", "tokens");
    let (edge, new) = kb.add_edge(&retry, &base, "requires", 1.0, "ana").unwrap();
    assert!(new);
    assert_eq!(
        (edge.created_by.as_str(), edge.relation.as_str()),
        ("ana", "requires")
    );
    let (_, new) = kb.add_edge(&retry, &base, "Requires", 0.5, "ana").unwrap();
    assert!(!new, "same edge re-weighted");
    kb.add_edge(&auth, &retry, "depends-on", 1.0, "ana")
        .unwrap();
    kb.add_edge(&auth, &base, "related", 1.0, "ana").unwrap();
    assert!(matches!(
        kb.add_edge(&base, &base, "related", 1.0, "x"),
        Err(KnowledgeError::SelfEdge { .. })
    ));
    assert!(matches!(
        kb.add_edge(&base, &retry, "likes", 1.0, "x"),
        Err(KnowledgeError::UnknownValue { .. })
    ));
    assert!(matches!(
        kb.add_edge(&base, "k-none", "related", 1.0, "x"),
        Err(KnowledgeError::NotFound { .. })
    ));
    let n = kb.neighbours(&base, None).unwrap();
    assert!(n.outgoing.is_empty());
    let incoming: Vec<(&str, &str, f64)> = n
        .incoming
        .iter()
        .map(|x| (x.other_id.as_str(), x.edge.relation.as_str(), x.edge.weight))
        .collect();
    assert_eq!(
        incoming,
        vec![
            (auth.as_str(), "related", 1.0),
            (retry.as_str(), "requires", 0.5)
        ]
    );
    assert_eq!(n.incoming[1].other_title, "Retry layer");
    assert_eq!(n.incoming[1].other_status, Status::Published);
    let only = kb.neighbours(&base, Some("requires")).unwrap();
    assert_eq!(only.incoming.len(), 1);
    let impact = kb.impact(&base, 3).unwrap();
    let reached: Vec<(&str, usize)> = impact
        .impacted
        .iter()
        .map(|i| (i.id.as_str(), i.depth))
        .collect();
    assert_eq!(reached, vec![(retry.as_str(), 1), (auth.as_str(), 2)]);
    assert_eq!(impact.impacted[1].path, vec![base, retry, auth]);
}

fn proposals(open: Open<'_>) {
    let mut kb = open();
    let id = publish(kb.as_mut(), "Use the logger", "Log through Log.info");
    let cand = kb
        .create(&candidate("Draft", "x"), Status::Draft, "a", None)
        .unwrap();
    assert!(matches!(
        kb.propose(&cand.id, "enhance", "more", &json!({}), 0.5, "a"),
        Err(KnowledgeError::InvalidTransition { .. })
    ));
    assert!(matches!(
        kb.propose(&id, "rewrite", "more", &json!({}), 0.5, "a"),
        Err(KnowledgeError::UnknownValue { .. })
    ));
    let p = kb
        .propose(
            &id,
            "deprecate",
            "replaced by os_log",
            &json!({"uses": 0}),
            1.7,
            "agent",
        )
        .unwrap();
    assert_eq!((p.status.as_str(), p.confidence), ("open", 1.0));
    assert_eq!(p.evidence, json!({"uses": 0}));
    let err = kb
        .propose(&id, "deprecate", "again", &json!({}), 0.5, "agent")
        .unwrap_err();
    assert!(
        matches!(&err, KnowledgeError::DuplicateProposal { proposal_id, .. } if *proposal_id == p.id),
        "{err}"
    );
    kb.propose(&id, "enhance", "add levels", &json!({}), 0.5, "agent")
        .unwrap();
    assert_eq!(kb.skip_evolution(&cand.id, "n/a", "rev").unwrap(), 0);
    let closed = kb.confirm_deprecation(&id, "os_log now", "lead").unwrap();
    assert_eq!(closed, 2);
    assert_eq!(kb.get(&id).unwrap().status, Status::Deprecated);
    let all = kb.proposals_for(&id).unwrap();
    assert_eq!(all.len(), 2);
    assert!(
        all.iter()
            .all(|p| p.status == "executed" && p.resolved_by.as_deref() == Some("lead"))
    );
    assert_eq!(all[0].id, p.id, "oldest first");
}

fn violation(rule: &str, line: u32) -> Violation {
    Violation {
        rule_id: rule.into(),
        message: format!("{rule} broken"),
        severity: Severity::Warning,
        line,
        snippet: "print(x)".into(),
        fix_suggestion: None,
    }
}

fn guard_runs_and_overrides(open: Open<'_>) {
    let mut kb = open();
    kb.record_guard_run(
        "a.swift",
        "swift",
        &[violation("no-print", 3), violation("no-print", 1)],
        "ana",
    )
    .unwrap();
    kb.record_guard_run("b.swift", "swift", &[], "bo").unwrap();
    let runs = kb.guard_runs(None, 10).unwrap();
    let targets: Vec<&str> = runs.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(targets, vec!["b.swift", "a.swift"], "newest first");
    assert_eq!(runs[1].violations.len(), 2);
    assert_eq!(runs[1].violations[0].line, 1, "by line");
    assert_eq!(runs[1].checked_by, "ana");
    assert_eq!(kb.guard_runs(Some("a.swift"), 10).unwrap().len(), 1);
    let stats = kb.guard_stats().unwrap();
    assert_eq!(
        (stats.runs, stats.violations, stats.files_with_violations),
        (2, 2, 1)
    );
    assert_eq!(stats.by_rule.get("no-print"), Some(&2));

    assert_eq!(kb.guard_overrides().unwrap(), None);
    let text = "disabled = [\"swift-force-unwrap\"]\n";
    kb.set_guard_overrides(Some(text), "lead").unwrap();
    assert_eq!(kb.guard_overrides().unwrap().as_deref(), Some(text));
    let bad = kb.set_guard_overrides(Some("[[rule]]\nid = 1"), "lead");
    assert!(
        matches!(bad, Err(KnowledgeError::RuleFile { .. })),
        "{bad:?}"
    );
    assert_eq!(kb.guard_overrides().unwrap().as_deref(), Some(text), "kept");
    kb.set_guard_overrides(None, "lead").unwrap();
    assert_eq!(kb.guard_overrides().unwrap(), None);
}

fn stats(open: Open<'_>) {
    let mut kb = open();
    let a = publish(kb.as_mut(), "One", "one");
    let b = publish(kb.as_mut(), "Two", "two");
    kb.create(&candidate("Three", "three"), Status::Submitted, "a", None)
        .unwrap();
    kb.add_edge(&a, &b, "related", 1.0, "a").unwrap();
    kb.propose(&a, "enhance", "x", &json!({}), 0.5, "a")
        .unwrap();
    kb.record_guard_run("x.swift", "swift", &[], "a").unwrap();
    let s = kb.stats().unwrap();
    assert_eq!((s.total, s.candidates, s.recipes), (3, 1, 2));
    assert_eq!(s.by_status.get("published"), Some(&2));
    assert_eq!(s.by_language.get("swift"), Some(&3));
    assert_eq!((s.edges, s.open_proposals, s.guard_runs), (1, 1, 1));
}

fn export_import_round_trip(open: Open<'_>) {
    let mut from = open();
    let a = publish(from.as_mut(), "Retry with backoff", "retries with backoff");
    let b = publish(from.as_mut(), "Base client", "client");
    from.create(&candidate("Pending", "waits"), Status::Submitted, "a", None)
        .unwrap();
    from.add_edge(&a, &b, "requires", 1.0, "ana").unwrap();
    from.propose(&a, "enhance", "x", &json!({"k": 1}), 0.5, "a")
        .unwrap();
    from.record_usage(&a, Usage::View).unwrap();
    from.record_guard_run("x.swift", "swift", &[violation("r", 2)], "a")
        .unwrap();
    from.set_guard_overrides(Some("disabled = []\n"), "lead")
        .unwrap();
    let data = from.export().unwrap();
    assert_eq!(data.entries.len(), 3);

    let mut to = open();
    let clash = to
        .create(
            &candidate("Base client", "another"),
            Status::Draft,
            "bo",
            None,
        )
        .unwrap();
    let report = to.import(&data).unwrap();
    assert_eq!((report.imported, report.already_present), (2, 0));
    assert_eq!(report.title_taken, vec![(b.clone(), clash.id.clone())]);
    assert_eq!(
        to.get(&a).unwrap(),
        from.get(&a).unwrap(),
        "same id, fields, counters, version"
    );
    assert_eq!(to.history(&a).unwrap(), from.history(&a).unwrap());
    assert_eq!(
        to.proposals_for(&a).unwrap(),
        from.proposals_for(&a).unwrap()
    );
    assert_eq!(report.edges, 0, "its other end was not imported");
    // runs are numbered per store; everything else comes across
    let unnumbered = |kb: &dyn KnowledgeBackend| -> Vec<_> {
        let mut runs = kb.guard_runs(None, 5).unwrap();
        runs.iter_mut().for_each(|r| r.run = 0);
        runs
    };
    assert_eq!(unnumbered(to.as_ref()), unnumbered(from.as_ref()));
    assert_eq!(
        to.guard_overrides().unwrap().as_deref(),
        Some("disabled = []\n")
    );
    assert_eq!(to.search("backoff", &Filter::default()).unwrap().len(), 1);

    let again = to.import(&data).unwrap();
    assert_eq!((again.imported, again.already_present), (0, 2));
    assert_eq!((again.proposals, again.guard_runs, again.edges), (0, 0, 0));
    assert_eq!(to.history(&a).unwrap().len(), 3, "no duplicated history");

    let mut empty = open();
    let all = empty.import(&data).unwrap();
    assert_eq!(
        (all.imported, all.edges, all.proposals, all.guard_runs),
        (3, 1, 1, 1)
    );
    assert_eq!(empty.export().unwrap().entries, data.entries);
}

fn remove_moved(open: Open<'_>) {
    let mut kb = open();
    let a = publish(kb.as_mut(), "Retry with backoff", "retries with backoff");
    let b = publish(kb.as_mut(), "Base client", "client");
    kb.add_edge(&a, &b, "requires", 1.0, "ana").unwrap();
    kb.propose(&a, "enhance", "x", &json!({"k": 1}), 0.5, "a")
        .unwrap();
    let kept_run = kb
        .record_guard_run("x.swift", "swift", &[violation("r", 2)], "a")
        .unwrap();
    let moved_run = kb
        .record_guard_run("y.swift", "swift", &[violation("r", 3)], "a")
        .unwrap();
    kb.set_guard_overrides(Some("disabled = []\n"), "lead")
        .unwrap();
    let moved = crate::backend::Moved {
        entries: vec![a.clone(), "k-not-here".into()],
        guard_runs: vec![moved_run],
        guard_overrides: true,
    };
    assert_eq!(
        kb.remove_moved(&moved).unwrap(),
        1,
        "unknown ids are skipped"
    );
    assert!(matches!(kb.get(&a), Err(KnowledgeError::NotFound { .. })));
    let left = kb.export().unwrap();
    assert!(
        left.history.iter().all(|h| h.entry_id != a),
        "history goes with it"
    );
    assert!(left.proposals.is_empty());
    assert!(kb.neighbours(&b, None).unwrap().incoming.is_empty());
    assert!(kb.search("backoff", &Filter::default()).unwrap().is_empty());
    let runs: Vec<i64> = kb
        .guard_runs(None, 5)
        .unwrap()
        .iter()
        .map(|r| r.run)
        .collect();
    assert_eq!(runs, vec![kept_run]);
    assert_eq!(kb.guard_overrides().unwrap(), None);
    assert_eq!(
        kb.get(&b).unwrap().status,
        Status::Published,
        "the rest stays"
    );
    assert_eq!(kb.remove_moved(&moved).unwrap(), 0, "idempotent");
    assert!(
        kb.live_title("Retry with backoff").unwrap().is_none(),
        "title free again"
    );
}
