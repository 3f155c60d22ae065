//! The smallest shared primitives: the clock and the poison-tolerant lock.
//!
//! - [`Clock`]: where every crate reads the time and sleeps, so time-dependent rules (TTLs,
//!   recency, retries, cool-downs, timestamps) are tested by moving a [`ManualClock`] instead of
//!   waiting. [`SystemClock`] is the real one.
//! - [`lock`]: locks a mutex and ignores poisoning (see its doc for why).
//!
//! ```
//! use std::sync::Mutex;
//! use std::time::Duration;
//! use alembic_base::{Clock, ManualClock, lock};
//! let clock = ManualClock::new(1_000);
//! clock.advance(Duration::from_secs(2));
//! assert_eq!(clock.now_ms(), 3_000);
//! let counter = Mutex::new(0);
//! *lock(&counter) += 1;
//! assert_eq!(*lock(&counter), 1);
//! ```

mod clock;
mod lock;

pub use clock::{Clock, DAY_MS, ManualClock, Sleep, SystemClock, millis, unix_ms};
pub use lock::{lock, read, write};
