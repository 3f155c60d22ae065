//! The smallest shared primitives: the poison-tolerant lock (and, next, the clock).
//!
//! - [`lock`]: locks a mutex and ignores poisoning (see its doc for why); [`read`] and
//!   [`write`] do the same for an `RwLock`.
//!
//! ```
//! use std::sync::Mutex;
//! use alembic_base::lock;
//! let counter = Mutex::new(0);
//! *lock(&counter) += 1;
//! assert_eq!(*lock(&counter), 1);
//! ```

mod lock;

pub use lock::{lock, read, write};
