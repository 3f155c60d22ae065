//! Time as a dependency.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::lock;

/// Milliseconds in one day.
pub const DAY_MS: i64 = 86_400_000;

/// What [`Clock::sleep`] returns.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A source of time and of waiting.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Wall-clock now: timestamps, TTLs, HTTP dates.
    fn system_time(&self) -> SystemTime;
    /// Monotonic now: durations and cool-downs.
    fn instant(&self) -> Instant;
    /// Waits for `duration` (on tokio's timer for the system clock).
    fn sleep(&self, duration: Duration) -> Sleep;
    /// Wall-clock now in milliseconds since the Unix epoch, as stored in the databases.
    fn now_ms(&self) -> i64 {
        unix_ms(self.system_time())
    }
}

/// `duration` in whole milliseconds, saturating (durations in reports and logs).
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `time` in milliseconds since the Unix epoch: negative before it, saturating at the ends.
pub fn unix_ms(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn system_time(&self) -> SystemTime {
        SystemTime::now()
    }

    fn instant(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A clock for tests: time moves only when told to, and every sleep returns at once after
/// moving time forward by its duration and being recorded. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

#[derive(Debug)]
struct ManualInner {
    /// The instant that stands for `start_ns`.
    origin: Instant,
    start_ns: i64,
    /// Wall-clock now in nanoseconds since the Unix epoch.
    now_ns: AtomicI64,
    sleeps: Mutex<Vec<Duration>>,
}

const NS_PER_MS: i64 = 1_000_000;

fn nanos(duration: Duration) -> i64 {
    i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX)
}

impl ManualClock {
    /// A clock that reads `now_ms` milliseconds since the Unix epoch.
    pub fn new(now_ms: i64) -> Self {
        let start_ns = now_ms.saturating_mul(NS_PER_MS);
        ManualClock {
            inner: Arc::new(ManualInner {
                origin: Instant::now(),
                start_ns,
                now_ns: AtomicI64::new(start_ns),
                sleeps: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A clock that reads `time`.
    pub fn at(time: SystemTime) -> Self {
        Self::new(unix_ms(time))
    }

    /// Sets the wall-clock time (it may move backwards; the monotonic time never does).
    pub fn set(&self, now_ms: i64) {
        let ns = now_ms.saturating_mul(NS_PER_MS);
        self.inner.now_ns.store(ns, Ordering::SeqCst);
    }

    /// Moves time forward.
    pub fn advance(&self, by: Duration) {
        self.inner.now_ns.fetch_add(nanos(by), Ordering::SeqCst);
    }

    /// Moves time forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: i64) {
        let ns = ms.saturating_mul(NS_PER_MS);
        self.inner.now_ns.fetch_add(ns, Ordering::SeqCst);
    }

    /// Moves time forward by `days` (fractions allowed, rounded down to a millisecond).
    pub fn advance_days(&self, days: f64) {
        self.advance_ms((days * DAY_MS as f64) as i64);
    }

    /// Every sleep requested so far, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        lock(&self.inner.sleeps).clone()
    }

    fn now_ns(&self) -> i64 {
        self.inner.now_ns.load(Ordering::SeqCst)
    }
}

/// 2026-01-01 00:00:00 UTC.
impl Default for ManualClock {
    fn default() -> Self {
        Self::new(1_767_225_600_000)
    }
}

impl Clock for ManualClock {
    fn system_time(&self) -> SystemTime {
        let ns = self.now_ns();
        let magnitude = Duration::from_nanos(ns.unsigned_abs());
        if ns >= 0 {
            UNIX_EPOCH + magnitude
        } else {
            UNIX_EPOCH - magnitude
        }
    }

    fn instant(&self) -> Instant {
        let elapsed = self.now_ns().saturating_sub(self.inner.start_ns).max(0);
        self.inner.origin + Duration::from_nanos(elapsed.unsigned_abs())
    }

    fn now_ms(&self) -> i64 {
        self.now_ns().div_euclid(NS_PER_MS)
    }

    fn sleep(&self, duration: Duration) -> Sleep {
        lock(&self.inner.sleeps).push(duration);
        self.advance(duration);
        Box::pin(std::future::ready(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        let shared = clock.clone();
        let (wall, mono) = (clock.system_time(), clock.instant());
        clock.advance(Duration::from_millis(1_500));
        shared.advance_ms(500);
        assert_eq!(clock.now_ms(), 3_000);
        assert_eq!(
            clock.system_time().duration_since(wall).unwrap(),
            Duration::from_secs(2)
        );
        assert_eq!(clock.instant() - mono, Duration::from_secs(2));
        clock.advance_days(0.5);
        assert_eq!(shared.now_ms(), 3_000 + DAY_MS / 2);
        clock.set(10);
        assert_eq!((clock.now_ms(), clock.instant()), (10, mono));
    }

    #[test]
    fn manual_sleeps_are_recorded_and_move_time() {
        let clock = ManualClock::default();
        let start = clock.instant();
        drop(clock.sleep(Duration::from_secs(7)));
        drop(clock.sleep(Duration::from_millis(5)));
        assert_eq!(
            clock.sleeps(),
            [Duration::from_secs(7), Duration::from_millis(5)]
        );
        assert_eq!(clock.instant() - start, Duration::from_millis(7_005));
        assert_eq!(
            clock.system_time(),
            UNIX_EPOCH + Duration::from_millis(1_767_225_607_005)
        );
    }

    #[test]
    fn unix_ms_handles_times_before_the_epoch() {
        assert_eq!(unix_ms(UNIX_EPOCH + Duration::from_millis(42)), 42);
        assert_eq!(unix_ms(UNIX_EPOCH - Duration::from_millis(42)), -42);
        assert_eq!(
            ManualClock::new(-5).system_time(),
            UNIX_EPOCH - Duration::from_millis(5)
        );
        assert!(SystemClock.now_ms() > 1_700_000_000_000);
    }
}
