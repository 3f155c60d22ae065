//! Time as a dependency: the retry loop sleeps and the circuit breaker reads the time through a
//! `Clock`, so tests drive them with a `ManualClock` instead of waiting.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use alembic_base::lock;
use futures::future::BoxFuture;

/// Source of time and of sleeping.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Monotonic now, for cool-downs.
    fn now(&self) -> Instant;
    /// Wall-clock now, to read `Retry-After: <http date>`.
    fn wall_now(&self) -> SystemTime;
    /// Waits for `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// The real clock (tokio timers).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall_now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A clock for tests: time moves only when told to, and every sleep returns at once after moving
/// time forward by its duration and being recorded.
#[derive(Debug, Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

#[derive(Debug)]
struct ManualInner {
    start: Instant,
    wall_start: SystemTime,
    elapsed: Mutex<Duration>,
    sleeps: Mutex<Vec<Duration>>,
}

impl ManualClock {
    /// A clock whose wall time starts at `wall_start`.
    pub fn new(wall_start: SystemTime) -> Self {
        Self {
            inner: Arc::new(ManualInner {
                start: Instant::now(),
                wall_start,
                elapsed: Mutex::new(Duration::ZERO),
                sleeps: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Moves time forward.
    pub fn advance(&self, by: Duration) {
        let mut elapsed = lock(&self.inner.elapsed);
        *elapsed += by;
    }

    /// Every sleep requested so far, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        lock(&self.inner.sleeps)
            .clone()
    }

    fn elapsed(&self) -> Duration {
        *lock(&self.inner.elapsed)
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600))
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.inner.start + self.elapsed()
    }

    fn wall_now(&self) -> SystemTime {
        self.inner.wall_start + self.elapsed()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        lock(&self.inner.sleeps)
            .push(duration);
        self.advance(duration);
        Box::pin(std::future::ready(()))
    }
}
