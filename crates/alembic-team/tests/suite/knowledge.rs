//! The team knowledge base on a real PostgreSQL server: the backend contract shared with
//! SQLite, concurrent reviewers, isolation between teams, a server that is down.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use alembic_knowledge::contract::{CHECKS, candidate};
use alembic_knowledge::{
    Filter, KnowledgeBackend, KnowledgeError, KnowledgeService, KnowledgeStore, Status,
};
use alembic_memory::ManualClock;
use alembic_team::{PgClient, PgKnowledge, TeamConfig, knowledge_opener};
use pretty_assertions::assert_eq;

use super::{T0, fresh_team, team_config};

fn pg(team: &str) -> PgKnowledge {
    PgKnowledge::open(&team_config(team), Arc::new(ManualClock::new(T0))).unwrap()
}

#[test]
fn postgres_meets_the_knowledge_contract() {
    let open = || Box::new(pg(&fresh_team("kcontract"))) as Box<dyn KnowledgeBackend>;
    for (name, check) in CHECKS {
        eprintln!("{name}");
        check(&open);
    }
}

#[test]
fn every_team_row_records_its_author_and_version() {
    let team = fresh_team("kauthor");
    let mut ana = pg(&team);
    let e = ana
        .create(
            &candidate("Use the logger", "Log.info"),
            Status::Submitted,
            "agent",
            None,
        )
        .unwrap();
    let bo = PgKnowledge::open(
        &TeamConfig::new(super::pg_url(), team.clone(), "bo"),
        Arc::new(ManualClock::new(T0)),
    )
    .unwrap();
    let mut bo: Box<dyn KnowledgeBackend> = Box::new(bo);
    bo.transition(&e.id, Status::Approved, "cli", None, Some(1))
        .unwrap();
    let admin = PgClient::connect(&team_config(&team)).unwrap();
    let (t, id) = (team.clone(), e.id.clone());
    let rows: Vec<(String, i64)> = admin
        .run(move |pool| async move {
            Ok(sqlx::query_as(
                "select author, version from team_knowledge_entries where team = $1 and id = $2
                 union all
                 select author, version from team_knowledge_history where team = $1 and entry_id = $2",
            )
            .bind(&t)
            .bind(&id)
            .fetch_all(&pool)
            .await?)
        })
        .unwrap();
    assert_eq!(
        rows,
        vec![("bo".into(), 2), ("ana".into(), 1), ("bo".into(), 1)]
    );
}

/// Two reviewers, two clients, one candidate, at the same instant: each acts on the version
/// they read. Exactly one wins; the other gets a conflict naming the entry; the row is the
/// winner's, with one history row per accepted move.
#[test]
fn two_reviewers_at_once_one_wins_the_other_gets_a_conflict() {
    let team = fresh_team("kconflict");
    for round in 0..5 {
        let mut setup = pg(&team);
        let title = format!("Retry with backoff {round}");
        let e = setup
            .create(
                &candidate(&title, "retries"),
                Status::Submitted,
                "agent",
                None,
            )
            .unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let moves = [
            ("ana", Status::Approved, None),
            ("bo", Status::Rejected, Some("too vague")),
        ];
        let handles: Vec<_> = moves
            .into_iter()
            .map(|(who, to, reason)| {
                let (team, id, barrier) = (team.clone(), e.id.clone(), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let mut kb = pg(&team);
                    let seen = kb.get(&id).unwrap();
                    barrier.wait();
                    (
                        who,
                        to,
                        kb.transition(&id, to, who, reason, Some(seen.version)),
                    )
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let winners: Vec<_> = results.iter().filter(|r| r.2.is_ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let loser = results.iter().find(|r| r.2.is_err()).unwrap();
        let err = loser.2.as_ref().unwrap_err();
        assert!(
            matches!(err, KnowledgeError::Conflict { id, expected: 1, found: 2 } if *id == e.id),
            "round {round}: {err}"
        );
        assert!(err.to_string().contains(&e.id), "{err}");
        let now = setup.get(&e.id).unwrap();
        assert_eq!((now.status, now.version), (winners[0].1, 2));
        let history = setup.history(&e.id).unwrap();
        assert_eq!(history.len(), 2);
        assert_eq!(history[1].by, winners[0].0);
    }
}

#[test]
fn two_editors_at_once_never_lose_an_update() {
    let team = fresh_team("kedit");
    let mut setup = pg(&team);
    let e = setup
        .create(
            &candidate("Cache images", "in memory"),
            Status::Submitted,
            "agent",
            None,
        )
        .unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = ["on disk", "in a CDN"]
        .into_iter()
        .map(|text| {
            let (team, id, barrier) = (team.clone(), e.id.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let mut kb = pg(&team);
                let seen = kb.get(&id).unwrap();
                let edit = candidate("Cache images", text);
                barrier.wait();
                (text, kb.update(&id, &edit, None, None, Some(seen.version)))
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let won: Vec<_> = results.iter().filter(|r| r.1.is_ok()).collect();
    assert_eq!(won.len(), 1, "{results:?}");
    assert!(
        results
            .iter()
            .any(|r| matches!(&r.1, Err(KnowledgeError::Conflict { id, .. }) if *id == e.id))
    );
    let now = setup.get(&e.id).unwrap();
    assert_eq!((now.content.as_str(), now.version), (won[0].0, 2));
}

#[test]
fn a_team_cannot_read_or_write_another_teams_knowledge() {
    let mut a = pg(&fresh_team("kiso-a"));
    let mut b = pg(&fresh_team("kiso-b"));
    let secret = a
        .create(
            &candidate("Blue pipeline deploys", "deploy with the blue pipeline"),
            Status::Submitted,
            "ana",
            None,
        )
        .unwrap();
    let other = a
        .create(&candidate("Other", "x"), Status::Submitted, "ana", None)
        .unwrap();
    a.record_guard_run("a.swift", "swift", &[], "ana").unwrap();
    a.set_guard_overrides(Some("disabled = []\n"), "ana")
        .unwrap();
    let not_found =
        |r: Result<_, KnowledgeError>| matches!(r, Err(KnowledgeError::NotFound { .. }));
    assert!(not_found(b.get(&secret.id).map(|_| ())));
    assert!(not_found(b.history(&secret.id).map(|_| ())));
    assert!(not_found(
        b.transition(&secret.id, Status::Approved, "bo", None, None)
            .map(|_| ())
    ));
    assert!(not_found(
        b.update(&secret.id, &candidate("Stolen", "x"), None, None, None)
            .map(|_| ())
    ));
    assert!(not_found(
        b.record_usage(&secret.id, alembic_knowledge::Usage::View)
            .map(|_| ())
    ));
    assert!(not_found(
        b.add_edge(&secret.id, &other.id, "related", 1.0, "bo")
            .map(|_| ())
    ));
    assert!(not_found(b.neighbours(&secret.id, None).map(|_| ())));
    assert!(b.list(&Filter::default()).unwrap().is_empty());
    assert!(
        b.search("blue pipeline", &Filter::default())
            .unwrap()
            .is_empty()
    );
    assert_eq!(b.live_title("Blue pipeline deploys").unwrap(), None);
    assert_eq!(b.stats().unwrap().total, 0);
    assert!(b.guard_runs(None, 10).unwrap().is_empty());
    assert_eq!(b.guard_overrides().unwrap(), None);
    assert_eq!(
        b.export().unwrap(),
        alembic_knowledge::KnowledgeExport::default()
    );
    // B may hold the same ids (an import of A's data); A's rows stay A's
    let report = b.import(&a.export().unwrap()).unwrap();
    assert_eq!(report.imported, 2);
    b.transition(&secret.id, Status::Rejected, "bo", Some("not ours"), None)
        .unwrap();
    assert_eq!(a.get(&secret.id).unwrap().status, Status::Submitted);
    assert_eq!(a.history(&secret.id).unwrap().len(), 1);
}

#[test]
fn a_knowledge_server_that_is_down_fails_fast_naming_server_and_cause() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let team = TeamConfig::new(
        format!("postgres://alembic@127.0.0.1:{port}/alembic"),
        "ops",
        "ana",
    )
    .with_connect_timeout(Duration::from_secs(3));
    let started = Instant::now();
    let err = PgKnowledge::open(&team, Arc::new(ManualClock::new(T0))).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "team server 127.0.0.1:{port}/alembic is unreachable: "
        )),
        "{msg}"
    );
    // the service opens the team store on first use: knowledge calls fail naming the server,
    // and the project's local store is still there for push/pull
    let dir = tempfile::tempdir().unwrap();
    let (label, open) = knowledge_opener(team, Arc::new(ManualClock::new(T0)));
    let service =
        KnowledgeService::from_store(dir.path(), KnowledgeStore::open_in_memory().unwrap())
            .with_team(label, open);
    let started = Instant::now();
    let err = service.with(|kb| kb.list(&Filter::default())).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.to_string()
            .contains(&format!("127.0.0.1:{port}/alembic is unreachable")),
        "{err}"
    );
    let local = service
        .with_local(|kb| kb.create(&candidate("Local", "x"), Status::Draft, "ana", None))
        .unwrap();
    assert_eq!(local.title, "Local");
}

#[test]
fn the_knowledge_schema_is_versioned_on_the_server() {
    let url = super::fresh_database();
    let team = TeamConfig::new(url, "platform", "ana");
    let open = || PgKnowledge::open(&team, Arc::new(ManualClock::new(T0)));
    open().unwrap();
    open().unwrap();
    let admin = PgClient::connect(&team).unwrap();
    let versions: Vec<(String, i64)> = admin
        .run(|pool| async move {
            Ok(sqlx::query_as(
                "select component, version from alembic_schema_migrations order by component",
            )
            .fetch_all(&pool)
            .await?)
        })
        .unwrap();
    assert_eq!(
        versions,
        [
            ("team_knowledge".to_string(), 1),
            ("team_knowledge".to_string(), 2)
        ]
    );
    admin
        .run(|pool| async move {
            sqlx::query(
                "insert into alembic_schema_migrations (component, version) values ('team_knowledge', 7)",
            )
            .execute(&pool)
            .await?;
            Ok(())
        })
        .unwrap();
    let err = open().unwrap_err().to_string();
    assert!(
        err.contains("team_knowledge schema version 7, newer than this build knows (2)"),
        "{err}"
    );
}
