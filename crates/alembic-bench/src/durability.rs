//! Writer process for the multi-process durability test (`tests/suite/durability.rs`).
//!
//! Each writer opens the project database and, until its time is up, alternates two kinds
//! of writes, printing `ack <id>` on stdout after each commit:
//! - `project` memories under a cap high enough never to evict: every acknowledged one must
//!   survive any crash;
//! - `team` memories of low importance under a small cap ([`TEAM_CAP`]): eviction runs in the
//!   insert transaction all the time, and the count must never exceed the cap.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alembic_memory::{MemoryConfig, NewMemory, PersistentMemory, Scope, SystemClock};
use anyhow::Result;

/// Capacity of the `team` scope in the durability run.
pub const TEAM_CAP: usize = 40;

fn store(path: &Path, cap: usize) -> Result<PersistentMemory> {
    let config = MemoryConfig {
        max_per_scope: cap,
        ..MemoryConfig::default()
    };
    Ok(PersistentMemory::open(
        alembic_store::open(path)?,
        config,
        Arc::new(SystemClock),
    )?)
}

/// Writes until `duration` has passed; returns the number of acknowledged project writes.
pub fn run_writer(db: &Path, writer: u32, duration: Duration) -> Result<usize> {
    let mut durable = store(db, 1_000_000)?;
    let mut capped = store(db, TEAM_CAP)?;
    let start = Instant::now();
    let stdout = std::io::stdout();
    let mut n = 0usize;
    while start.elapsed() < duration {
        let project = NewMemory::fact(format!(
            "writer {writer} durable note {n} about module m{}",
            n % 17
        ));
        let m = durable.add(project)?;
        writeln!(stdout.lock(), "ack {}", m.id)?;
        stdout.lock().flush()?;
        let team = NewMemory::fact(format!("writer {writer} churn note {n}"))
            .with_scope(Scope::Team)
            .with_importance(1.0);
        capped.add(team)?;
        n += 1;
    }
    Ok(n)
}
