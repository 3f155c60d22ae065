//! What only a shared server has: schema versions, teams, several clients, a server that
//! is down, concurrent edits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alembic_memory::{
    ListFilter, ManualClock, MemoryBackend, MemoryConfig, MemoryError, MemoryUpdate, NewMemory,
    RetrieveOptions, Scope,
};
use alembic_team::schema::MEMORY_MIGRATIONS;
use alembic_team::{PgClient, PgMemory, TeamConfig, TeamError};
use pretty_assertions::assert_eq;

use super::{T0, fresh_database, fresh_team, pg_memory, pg_url};

fn clock() -> ManualClock {
    ManualClock::new(T0)
}

#[test]
fn migrations_are_versioned_and_a_newer_server_schema_is_refused() {
    let url = fresh_database();
    let team = TeamConfig::new(url.clone(), "platform", "ana");
    let memory = || PgMemory::open(&team, MemoryConfig::default(), Arc::new(clock()));
    memory().unwrap();
    memory().unwrap(); // opening again applies nothing
    let admin = PgClient::connect(&team).unwrap();
    let versions: Vec<(String, i64)> = admin
        .run(|pool| async move {
            Ok(sqlx::query_as(
                "select component, version from alembic_schema_migrations order by version",
            )
            .fetch_all(&pool)
            .await?)
        })
        .unwrap();
    let known: Vec<(String, i64)> = MEMORY_MIGRATIONS
        .iter()
        .map(|s| ("team_memory".to_string(), s.version))
        .collect();
    assert_eq!(versions, known);
    assert!(known.len() >= 3, "{known:?}");
    admin
        .run(|pool| async move {
            sqlx::query(
                "insert into alembic_schema_migrations (component, version) values ('team_memory', 99)",
            )
            .execute(&pool)
            .await?;
            Ok(())
        })
        .unwrap();
    let err = memory().unwrap_err().to_string();
    assert!(
        err.contains(&format!(
            "team_memory schema version 99, newer than this build knows ({})",
            known.len()
        )),
        "{err}"
    );
    assert!(err.contains("upgrade alembic"), "{err}");
}

#[test]
fn a_team_cannot_read_or_write_another_teams_memories() {
    let c = clock();
    let mut a = pg_memory(&fresh_team("iso-a"), MemoryConfig::default(), &c);
    let mut b = pg_memory(&fresh_team("iso-b"), MemoryConfig::default(), &c);
    let secret = a
        .add(NewMemory::fact("Team A deploys with the blue pipeline").with_scope(Scope::Team))
        .unwrap();
    assert_eq!(b.get(&secret.id).unwrap(), None);
    assert!(b.list(&ListFilter::default()).unwrap().is_empty());
    assert!(b.export().unwrap().is_empty());
    assert!(b.history(&secret.id).unwrap().is_empty());
    assert!(
        b.retrieve("blue pipeline", &RetrieveOptions::default())
            .unwrap()
            .is_empty()
    );
    assert!(!b.forget(&secret.id).unwrap());
    assert!(matches!(
        b.update(
            &secret.id,
            MemoryUpdate {
                importance: Some(9.0),
                ..Default::default()
            }
        ),
        Err(MemoryError::NotFound { .. })
    ));
    assert!(matches!(
        b.restore(&secret.id),
        Err(MemoryError::NotFound { .. })
    ));
    // b's gc and consolidation see nothing of a's
    b.consolidate(&[
        NewMemory::fact("Team A deploys with the blue pipeline").with_scope(Scope::Team)
    ])
    .unwrap();
    c.advance_days(120.0);
    b.gc().unwrap();
    assert_eq!(a.get(&secret.id).unwrap().unwrap(), secret);
    assert_eq!(a.list(&ListFilter::default()).unwrap().len(), 1);
}

#[test]
fn two_checkouts_sharing_a_team_see_each_others_memories() {
    let team = fresh_team("shared");
    let (c1, c2) = (clock(), clock());
    let mut first = pg_memory(&team, MemoryConfig::default(), &c1);
    let mut second = PgMemory::open(
        &TeamConfig::new(pg_url(), team.clone(), "bo"),
        MemoryConfig::default(),
        Arc::new(c2),
    )
    .unwrap();
    let added = first
        .add(
            NewMemory::fact("Releases are cut on Tuesdays after the freeze")
                .with_scope(Scope::Team),
        )
        .unwrap();
    let hits = second
        .retrieve("when are releases cut", &RetrieveOptions::default())
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].memory.id, added.id);
    // the write is recorded with its author and the read counted for both
    let row = second.get_versioned(&added.id).unwrap().unwrap();
    assert_eq!((row.author.as_str(), row.version), ("ana", 1));
    assert_eq!(first.get(&added.id).unwrap().unwrap().access_count, 1);
    second
        .update(
            &added.id,
            MemoryUpdate {
                importance: Some(8.0),
                ..Default::default()
            },
        )
        .unwrap();
    let row = first.get_versioned(&added.id).unwrap().unwrap();
    assert_eq!(
        (row.author.as_str(), row.version, row.memory.importance),
        ("bo", 2, 8.0)
    );
}

#[test]
fn concurrent_edits_of_one_memory_conflict_instead_of_losing_one() {
    let team = fresh_team("conflict");
    let c = clock();
    let mut ana = pg_memory(&team, MemoryConfig::default(), &c);
    let mut bo = pg_memory(&team, MemoryConfig::default(), &c);
    let m = ana
        .add(NewMemory::fact("The API gateway times out after 30 s"))
        .unwrap();
    let seen_by_ana = ana.get_versioned(&m.id).unwrap().unwrap();
    let seen_by_bo = bo.get_versioned(&m.id).unwrap().unwrap();
    let edit = |text: &str| MemoryUpdate {
        content: Some(text.into()),
        ..Default::default()
    };
    ana.update_at(
        &m.id,
        seen_by_ana.version,
        edit("The API gateway times out after 60 s"),
    )
    .unwrap();
    let err = bo
        .update_at(
            &m.id,
            seen_by_bo.version,
            edit("The API gateway times out after 45 s"),
        )
        .unwrap_err();
    assert!(
        matches!(&err, MemoryError::Conflict { id, version: 1 } if *id == m.id),
        "{err}"
    );
    assert!(err.to_string().contains(&m.id), "{err}");
    assert_eq!(
        bo.get(&m.id).unwrap().unwrap().content,
        "The API gateway times out after 60 s"
    );
}

#[test]
fn capacity_holds_under_concurrent_writers() {
    let team = fresh_team("capacity");
    let config = MemoryConfig {
        max_per_scope: 15,
        ..MemoryConfig::default()
    };
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (team, config) = (team.clone(), config.clone());
            std::thread::spawn(move || {
                let mut pm = pg_memory(&team, config, &clock());
                for i in 0..10 {
                    pm.add(NewMemory::fact(format!("writer {w} note {i}")).with_scope(Scope::Team))
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let pm = pg_memory(&team, config, &clock());
    let current = pm
        .list(&ListFilter {
            scope: Some(Scope::Team),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(current.len(), 15);
}

#[test]
fn a_server_that_is_down_fails_fast_naming_server_and_cause() {
    // a port nobody listens on: bind one, note it, close it
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
    let err = PgMemory::open(&team, MemoryConfig::default(), Arc::new(clock())).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, TeamError::Unreachable { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "team server 127.0.0.1:{port}/alembic is unreachable: "
        )),
        "{msg}"
    );
    assert!(msg.to_lowercase().contains("refused"), "{msg}");
    // local work goes on: the SQLite store does not care
    let mut local = alembic_memory::PersistentMemory::open_in_memory(
        MemoryConfig::default(),
        Arc::new(clock()),
    )
    .unwrap();
    local
        .add(NewMemory::fact("local notes still work"))
        .unwrap();
}

#[test]
fn bad_urls_and_team_names_are_refused_with_what_is_accepted() {
    let bad = TeamConfig::new("mysql://nope", "ops", "ana");
    let err = PgClient::connect(&bad).unwrap_err().to_string();
    assert_eq!(
        err,
        "the team URL is not valid: scheme \"mysql\" is not postgres or postgresql; expected postgres://user@host:port/database"
    );
    let err = PgMemory::open(
        &TeamConfig::new(pg_url(), "Bad Team", "ana"),
        MemoryConfig::default(),
        Arc::new(clock()),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("team name \"Bad Team\" is not valid"), "{err}");
}

/// A loopback TCP proxy to the test server that can be cut, as a server going down would.
struct Proxy {
    port: u16,
    open: Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    fn start() -> Proxy {
        let target = pg_url();
        let hostport = target
            .split('@')
            .nth(1)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (conns, stopped) = (Arc::clone(&open), Arc::clone(&stop));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let client = client.unwrap();
                let server = std::net::TcpStream::connect(&hostport).unwrap();
                let mut guard = conns.lock().unwrap();
                guard.push(client.try_clone().unwrap());
                guard.push(server.try_clone().unwrap());
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy { port, open, stop }
    }

    fn url(&self) -> String {
        let url = pg_url();
        let (_, path) = url.split_once('@').unwrap();
        let (_, db) = path.split_once('/').unwrap();
        format!("postgres://alembic@127.0.0.1:{}/{db}", self.port)
    }

    /// Refuses new connections and cuts the open ones.
    fn cut(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

#[test]
fn a_server_that_goes_down_later_fails_fast_naming_server_and_cause() {
    let proxy = Proxy::start();
    let team = TeamConfig::new(proxy.url(), fresh_team("later"), "ana")
        .with_connect_timeout(Duration::from_secs(2));
    let mut pm = PgMemory::open(&team, MemoryConfig::default(), Arc::new(clock())).unwrap();
    pm.add(NewMemory::fact("written while the server was up"))
        .unwrap();
    proxy.cut();
    let started = Instant::now();
    let err = pm
        .add(NewMemory::fact("written after it went down"))
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("team server 127.0.0.1:{}/", proxy.port)),
        "{msg}"
    );
    let err = pm
        .retrieve("written", &RetrieveOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("is unreachable"), "{err}");
}
