//! Time source of the TTL registry: the workspace's one clock ([`alembic_base::Clock`]),
//! injectable so tests control expiry.

pub use alembic_base::{Clock, ManualClock, SystemClock};
