//! Four real writer processes share one project database for a while; one is SIGKILLed
//! halfway. Afterwards the database passes `PRAGMA integrity_check`, every write a process
//! acknowledged (printed after its commit) is present, and the capped scope holds its cap.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex, mpsc};

use alembic_bench::durability::TEAM_CAP;
use alembic_memory::{ListFilter, MemoryConfig, PersistentMemory, Scope};
use assert_cmd::cargo::CommandCargoExt;

/// Each writer's run time; the issue asks for 10 s. `ALEMBIC_DURABILITY_MS` shortens it.
fn duration_ms() -> u64 {
    std::env::var("ALEMBIC_DURABILITY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

fn spawn_writer(db: &std::path::Path, writer: u32, ms: u64) -> Child {
    std::process::Command::cargo_bin("alembic-bench")
        .unwrap()
        .args(["durability-writer", "--db"])
        .arg(db)
        .args([
            "--writer",
            &writer.to_string(),
            "--duration-ms",
            &ms.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Acknowledged writes of writer 0 after which it is killed: well inside its run.
const KILL_AFTER_ACKS: usize = 40;

/// Collects `ack <id>` lines of a child in the background; signals `mid` once the child
/// has acknowledged [`KILL_AFTER_ACKS`] writes.
fn collect_acks(
    child: &mut Child,
    acks: Arc<Mutex<Vec<String>>>,
    mid: Option<mpsc::Sender<()>>,
) -> std::thread::JoinHandle<()> {
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut own = 0;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(id) = line.strip_prefix("ack ") {
                acks.lock().unwrap().push(id.to_string());
                own += 1;
                if own == KILL_AFTER_ACKS
                    && let Some(tx) = &mid
                {
                    let _ = tx.send(());
                }
            }
        }
    })
}

#[test]
fn concurrent_writers_survive_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("alembic.db");
    // create the schema once so the writers race on data, not on migrations
    drop(
        PersistentMemory::open(
            alembic_store::open(&db).unwrap(),
            MemoryConfig::default(),
            Arc::new(alembic_memory::SystemClock),
        )
        .unwrap(),
    );
    let ms = duration_ms();
    let acks = Arc::new(Mutex::new(Vec::new()));
    let mut children: Vec<Child> = (0..4).map(|w| spawn_writer(&db, w, ms)).collect();
    let (mid_tx, mid_rx) = mpsc::channel();
    let readers: Vec<_> = children
        .iter_mut()
        .enumerate()
        .map(|(i, c)| collect_acks(c, acks.clone(), (i == 0).then(|| mid_tx.clone())))
        .collect();
    drop(mid_tx);

    // kill writer 0 while it is writing, not by the clock
    mid_rx
        .recv()
        .expect("writer 0 ended before acknowledging enough writes to be killed midway");
    children[0].kill().unwrap(); // SIGKILL on Unix
    let killed = children[0].wait().unwrap();
    assert!(!killed.success());
    for child in children.iter_mut().skip(1) {
        assert!(child.wait().unwrap().success());
    }
    readers.into_iter().for_each(|r| r.join().unwrap());

    let pm = PersistentMemory::open(
        alembic_store::open(&db).unwrap(),
        MemoryConfig::default(),
        Arc::new(alembic_memory::SystemClock),
    )
    .unwrap();
    let integrity: String = pm
        .connection()
        .query_row("pragma integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    // the FTS index agrees with its content table
    pm.connection()
        .execute("insert into semantic_memories_fts(semantic_memories_fts, rank) values('integrity-check', 1)", [])
        .unwrap();

    let acked = acks.lock().unwrap().clone();
    assert!(acked.len() > 20, "only {} acknowledged writes", acked.len());
    let stored: HashSet<String> = pm
        .list(&ListFilter {
            scope: Some(Scope::Project),
            include_archived: true,
            include_history: true,
            limit: None,
        })
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    let missing: Vec<&String> = acked.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged writes lost: {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    let team = pm
        .list(&ListFilter {
            scope: Some(Scope::Team),
            ..Default::default()
        })
        .unwrap();
    assert!(
        team.len() <= TEAM_CAP,
        "team scope holds {} > cap {TEAM_CAP}",
        team.len()
    );
    assert!(
        team.len() == TEAM_CAP,
        "eviction never ran: only {} team memories",
        team.len()
    );
    println!(
        "durability: {} acknowledged writes, all present; team scope at cap {}",
        acked.len(),
        team.len()
    );
}
