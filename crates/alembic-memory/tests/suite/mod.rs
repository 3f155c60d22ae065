mod conflicts;
mod consolidation;
mod embeddings;
mod retrieval;
mod store;

use std::sync::Arc;

use alembic_memory::{ManualClock, MemoryConfig, PersistentMemory};

/// 2026-01-01T00:00:00Z
pub const T0: i64 = 1_767_225_600_000;

pub fn memory_with(config: MemoryConfig) -> (PersistentMemory, ManualClock) {
    let clock = ManualClock::new(T0);
    let pm = PersistentMemory::open_in_memory(config, Arc::new(clock.clone())).unwrap();
    (pm, clock)
}

pub fn memory() -> (PersistentMemory, ManualClock) {
    memory_with(MemoryConfig::default())
}
