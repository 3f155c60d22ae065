//! `team_knowledge_push` moves the checkout's knowledge base to the team store (no stale
//! local copy, nothing lost or duplicated by a rerun or a crash between its two steps), `pull`
//! brings it back; bootstrap's publication revises its unreviewed team candidates at the
//! version read, and a reviewer's move in between is a conflict, never overwritten. Against
//! the tests' PostgreSQL server (`ALEMBIC_TEST_PG_URL`).

use alembic_runtime::ProjectRuntime;
use alembic_runtime::bootstrap::checkpoint::{BOOTSTRAP_SOURCE, revises_team_candidate};
use alembic_runtime::knowledge::{Entry, Filter, KnowledgeBackend, NewEntry, Status};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::team_knowledge::{checkout, fresh_team, ok, pg_url};

fn entry(title: &str, content: &str) -> NewEntry {
    NewEntry {
        title: title.into(),
        description: format!("About {title}"),
        knowledge_type: "code-pattern".into(),
        category: "general".into(),
        content: content.into(),
        pattern: "retry(3) { send() }".into(),
        ..NewEntry::default()
    }
}

fn ids(kb: &mut dyn KnowledgeBackend) -> Vec<String> {
    let mut ids: Vec<String> = kb
        .list(&Filter::default())
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    ids.sort();
    ids
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread")]
async fn push_moves_local_knowledge_and_neither_a_rerun_nor_a_crash_between_its_steps_duplicates() {
    let team = fresh_team("rt-move");
    let dir = checkout(&pg_url(), &team, "ana");
    let rt = ProjectRuntime::open(dir.path()).unwrap();
    let kb = &rt.services().knowledge;
    let create = |title: &str| -> Entry {
        kb.with_local(|l| l.create(&entry(title, "retries"), Status::Submitted, "ana", None))
            .unwrap()
    };
    let plain = create("Retry requests with backoff");
    let crashed = create("Log failed requests once");
    let edited = create("Time out slow requests");
    let taken = create("Cache responses per user");
    kb.with_local(|l| l.add_edge(&plain.id, &crashed.id, "requires", 1.0, "ana"))
        .unwrap();
    kb.with_local(|l| l.set_guard_overrides(Some("disabled = []\n"), "ana"))
        .unwrap();
    // a push that stopped after its import: the team holds `crashed` and `edited`, this
    // checkout still has them, and `edited` was changed here afterwards
    let mut first = kb.with_local(|l| l.export()).unwrap();
    let imported = [crashed.id.clone(), edited.id.clone()];
    first.entries.retain(|e| imported.contains(&e.id));
    first.history.retain(|h| imported.contains(&h.entry_id));
    first.edges.clear();
    first.guard_runs.clear();
    first.guard_overrides = None;
    kb.with_team_store(|t| t.import(&first)).unwrap().unwrap();
    let later = entry("Time out slow requests", "after 30 s");
    kb.with_local(|l| l.update(&edited.id, &later, None, None, Some(edited.version)))
        .unwrap();
    // a different team entry already has `taken`'s title
    let theirs = kb
        .with(|t| {
            t.create(
                &entry("Cache responses per user", "x"),
                Status::Draft,
                "bo",
                None,
            )
        })
        .unwrap();

    let pushed = ok(&rt, "team_knowledge_push", json!({})).await;
    assert_eq!(pushed["entries"], json!(1), "{pushed}");
    assert_eq!(pushed["alreadyThere"], json!(2), "{pushed}");
    assert_eq!(pushed["removedHere"], json!(2), "{pushed}");
    assert_eq!(pushed["edges"], json!(1), "{pushed}");
    assert_eq!(
        pushed["newerHere"],
        json!([{"id": edited.id, "versionHere": 2, "versionOnTeam": 1}])
    );
    assert_eq!(
        pushed["titleTaken"],
        json!([{"id": taken.id, "kept": theirs.id}])
    );
    assert_eq!(pushed["guardOverridesKeptHere"], json!(false));
    // what the team took left this checkout; what it did not take is still here
    assert_eq!(
        kb.with_local(|l| Ok(ids(l))).unwrap(),
        sorted(vec![edited.id.clone(), taken.id.clone()])
    );
    assert_eq!(kb.with_local(|l| l.guard_overrides()).unwrap(), None);
    assert_eq!(
        kb.with(|t| t.guard_overrides()).unwrap().as_deref(),
        Some("disabled = []\n")
    );
    let on_team = kb.with(|t| Ok(ids(t))).unwrap();
    assert_eq!(
        on_team,
        sorted(vec![
            plain.id.clone(),
            crashed.id.clone(),
            edited.id.clone(),
            theirs.id.clone()
        ])
    );
    assert_eq!(kb.with(|t| t.history(&plain.id)).unwrap().len(), 1);
    assert_eq!(kb.with(|t| t.history(&crashed.id)).unwrap().len(), 1);
    let edges = kb.with(|t| t.neighbours(&plain.id, None)).unwrap();
    assert_eq!(edges.outgoing.len(), 1);
    assert_eq!(
        kb.with(|t| t.get(&edited.id)).unwrap().content,
        "retries",
        "the team's copy is not overwritten by a local edit"
    );

    let again = ok(&rt, "team_knowledge_push", json!({})).await;
    assert_eq!(
        (
            &again["entries"],
            &again["alreadyThere"],
            &again["removedHere"]
        ),
        (&json!(0), &json!(1), &json!(0)),
        "{again}"
    );
    assert_eq!(kb.with(|t| Ok(ids(t))).unwrap(), on_team);

    // pull brings the team's entries back (leaving the team), once; the team keeps them
    let pulled = ok(&rt, "team_knowledge_pull", json!({})).await;
    assert_eq!(
        (&pulled["entries"], &pulled["alreadyThere"]),
        (&json!(2), &json!(1)),
        "{pulled}"
    );
    assert_eq!(
        pulled["titleTaken"],
        json!([{"id": theirs.id, "kept": taken.id}])
    );
    let pulled = ok(&rt, "team_knowledge_pull", json!({})).await;
    assert_eq!(
        (&pulled["entries"], &pulled["alreadyThere"]),
        (&json!(0), &json!(3)),
        "{pulled}"
    );
    assert_eq!(kb.with(|t| Ok(ids(t))).unwrap(), on_team);
}

/// A bootstrap candidate as the run writes it locally.
fn bootstrap_candidate(rt: &ProjectRuntime, content: &str) -> Entry {
    let mut new = entry("Store is a shared singleton", content);
    new.extra.insert(
        "evidence".into(),
        json!([{"file": "src/store.rs", "line": 4}]),
    );
    rt.services()
        .knowledge
        .with_local(|l| l.create(&new, Status::Submitted, BOOTSTRAP_SOURCE, None))
        .unwrap()
}

fn publish(
    rt: &ProjectRuntime,
    revise: alembic_runtime::knowledge::tools::Revise<'_>,
) -> alembic_runtime::knowledge::tools::MoveReport {
    let keep = |e: &Entry| e.created_by == BOOTSTRAP_SOURCE;
    rt.services()
        .knowledge
        .move_local(keep, false, Some(revise))
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revised_bootstrap_candidate_revises_the_team_one_unless_a_reviewer_moved_it() {
    let team = fresh_team("rt-revise");
    let (a, b) = (
        checkout(&pg_url(), &team, "ana"),
        checkout(&pg_url(), &team, "bo"),
    );
    let (a, b) = (
        ProjectRuntime::open(a.path()).unwrap(),
        ProjectRuntime::open(b.path()).unwrap(),
    );
    let on_team = |rt: &ProjectRuntime, id: &str| -> Entry {
        rt.services().knowledge.with(|t| t.get(id)).unwrap()
    };
    let first = bootstrap_candidate(&a, "one shared Store");
    let report = publish(&a, &revises_team_candidate);
    assert_eq!(report.import.imported, 1);
    // a second run found more evidence: a new local candidate with the same title (the first
    // one left this checkout), revising the team's at the version read
    bootstrap_candidate(&a, "one shared Store, also used by the tests");
    let report = publish(&a, &revises_team_candidate);
    assert_eq!(report.revised, vec![first.id.clone()], "{report:?}");
    assert_eq!((report.import.imported, report.removed_here), (0, 1));
    let revised = on_team(&b, &first.id);
    assert_eq!(revised.content, "one shared Store, also used by the tests");
    assert_eq!((revised.version, revised.status), (2, Status::Submitted));
    // the same evidence again changes nothing
    bootstrap_candidate(&a, "one shared Store, also used by the tests");
    let report = publish(&a, &revises_team_candidate);
    assert_eq!((report.revised.len(), report.left_as_they_were), (0, 1));
    assert_eq!(on_team(&b, &first.id).version, 2);

    // a reviewer approves it in b between a's read and a's write: a conflict, reported, and
    // the local candidate stays for the next run
    bootstrap_candidate(&a, "one shared Store, guarded by a lock");
    let approve_meanwhile = |here: &Entry, there: &Entry| {
        b.services()
            .knowledge
            .with(|t| t.transition(&there.id, Status::Approved, "bo", None, None))
            .unwrap();
        revises_team_candidate(here, there)
    };
    let report = publish(&a, &approve_meanwhile);
    assert_eq!(report.conflicts.len(), 1, "{report:?}");
    assert!(report.conflicts[0].contains(&first.id), "{report:?}");
    assert_eq!((report.revised.len(), report.removed_here), (0, 0));
    let kept = on_team(&b, &first.id);
    assert_eq!(kept.content, "one shared Store, also used by the tests");
    assert_eq!(kept.status, Status::Approved);
    // the next run never overwrites the reviewed entry, and the local candidate goes
    let report = publish(&a, &revises_team_candidate);
    assert_eq!(
        (
            report.revised.len(),
            report.left_as_they_were,
            report.removed_here
        ),
        (0, 1, 1),
        "{report:?}"
    );
    assert_eq!(on_team(&b, &first.id), kept);
    assert!(
        a.services()
            .knowledge
            .with_local(|l| Ok(ids(l)))
            .unwrap()
            .is_empty()
    );
    let all = b.services().knowledge.with(|t| Ok(ids(t))).unwrap();
    assert_eq!(
        all,
        vec![first.id.clone()],
        "one entry on the team, never two"
    );
}
