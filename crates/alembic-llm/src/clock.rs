//! Time as a dependency: the retry loop sleeps and the circuit breaker reads the time through the
//! workspace's one [`alembic_base::Clock`], so tests drive them with a `ManualClock` instead of
//! waiting.

pub use alembic_base::{Clock, ManualClock, SystemClock};
