//! Time source. Every time-dependent rule (recency, TTL, archiving, forgetting) reads the
//! workspace's one clock ([`alembic_base::Clock`]), so tests move time forward instead of
//! sleeping.

pub use alembic_base::{Clock, DAY_MS, ManualClock, SystemClock};
