//! Circuit breaker: after N consecutive vendor failures, refuse calls for a cool-down instead of
//! hammering a vendor that is down; then let one trial call through (half-open).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::clock::Clock;

/// When the breaker opens and for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerPolicy {
    /// Consecutive vendor failures (429, 5xx, network, timeout) that open the breaker.
    pub failure_threshold: u32,
    /// First cool-down; doubled each time a half-open trial fails.
    pub cool_down: Duration,
    /// Cap on the doubled cool-down.
    pub max_cool_down: Duration,
}

impl Default for BreakerPolicy {
    fn default() -> Self {
        Self {
            failure_threshold: 5,
            cool_down: Duration::from_secs(30),
            max_cool_down: Duration::from_secs(300),
        }
    }
}

/// The breaker's observable state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerPhase {
    /// Calls go through.
    Closed,
    /// Calls are refused until the cool-down ends.
    Open,
    /// The cool-down ended: one trial call may go through.
    HalfOpen,
}

/// A refusal: how long until the next call may try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerRefusal {
    pub failures: u32,
    pub retry_in: Duration,
}

/// Shared by every request of one provider (clone it freely).
#[derive(Debug, Clone)]
pub struct CircuitBreaker {
    policy: BreakerPolicy,
    clock: Arc<dyn Clock>,
    state: Arc<Mutex<BreakerState>>,
}

#[derive(Debug, Default)]
struct BreakerState {
    consecutive_failures: u32,
    open_until: Option<Instant>,
    current_cool_down: Option<Duration>,
    trial_in_flight: bool,
}

impl CircuitBreaker {
    pub fn new(policy: BreakerPolicy, clock: Arc<dyn Clock>) -> Self {
        Self {
            policy,
            clock,
            state: Arc::new(Mutex::new(BreakerState::default())),
        }
    }

    pub fn phase(&self) -> BreakerPhase {
        let state = self.lock();
        match state.open_until {
            None => BreakerPhase::Closed,
            Some(until) if self.clock.instant() < until => BreakerPhase::Open,
            Some(_) => BreakerPhase::HalfOpen,
        }
    }

    /// Asks to make one call. In half-open only one trial is let through at a time.
    pub fn try_acquire(&self) -> Result<(), BreakerRefusal> {
        let mut state = self.lock();
        let Some(until) = state.open_until else {
            return Ok(());
        };
        let now = self.clock.instant();
        if now < until {
            return Err(BreakerRefusal {
                failures: state.consecutive_failures,
                retry_in: until - now,
            });
        }
        if state.trial_in_flight {
            return Err(BreakerRefusal {
                failures: state.consecutive_failures,
                retry_in: Duration::ZERO,
            });
        }
        state.trial_in_flight = true;
        Ok(())
    }

    /// The vendor answered: close the breaker and forget the failures.
    pub fn record_success(&self) {
        *self.lock() = BreakerState::default();
    }

    /// The vendor failed. Opens the breaker at the threshold, or re-opens it (with a doubled
    /// cool-down) when a half-open trial fails.
    pub fn record_failure(&self) {
        let mut state = self.lock();
        state.consecutive_failures = state.consecutive_failures.saturating_add(1);
        let trial_failed = state.trial_in_flight;
        state.trial_in_flight = false;
        if !trial_failed && state.consecutive_failures < self.policy.failure_threshold {
            return;
        }
        let cool_down = match state.current_cool_down {
            Some(previous) if trial_failed => (previous * 2).min(self.policy.max_cool_down),
            _ => self.policy.cool_down,
        };
        state.current_cool_down = Some(cool_down);
        state.open_until = Some(self.clock.instant() + cool_down);
    }

    /// The call ended without saying anything about the vendor (cancelled, a 400): release a
    /// half-open trial slot without changing the counts.
    pub fn record_neutral(&self) {
        self.lock().trial_in_flight = false;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BreakerState> {
        alembic_base::lock(&self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use pretty_assertions::assert_eq;

    fn breaker(clock: &ManualClock) -> CircuitBreaker {
        let policy = BreakerPolicy {
            failure_threshold: 3,
            cool_down: Duration::from_secs(10),
            max_cool_down: Duration::from_secs(25),
        };
        CircuitBreaker::new(policy, Arc::new(clock.clone()))
    }

    #[test]
    fn opens_after_threshold_then_half_opens_after_cool_down() {
        let clock = ManualClock::default();
        let breaker = breaker(&clock);
        for _ in 0..2 {
            breaker.record_failure();
        }
        assert_eq!(breaker.phase(), BreakerPhase::Closed);
        breaker.record_failure();
        assert_eq!(breaker.phase(), BreakerPhase::Open);
        assert_eq!(
            breaker.try_acquire(),
            Err(BreakerRefusal {
                failures: 3,
                retry_in: Duration::from_secs(10)
            })
        );
        clock.advance(Duration::from_secs(10));
        assert_eq!(breaker.phase(), BreakerPhase::HalfOpen);
        assert_eq!(breaker.try_acquire(), Ok(()));
        // a second caller must wait for the trial
        assert!(breaker.try_acquire().is_err());
        breaker.record_success();
        assert_eq!(breaker.phase(), BreakerPhase::Closed);
        assert_eq!(breaker.try_acquire(), Ok(()));
    }

    #[test]
    fn failed_trial_doubles_the_cool_down_up_to_the_cap() {
        let clock = ManualClock::default();
        let breaker = breaker(&clock);
        for _ in 0..3 {
            breaker.record_failure();
        }
        let mut cool_downs = Vec::new();
        for _ in 0..3 {
            let refusal = breaker.try_acquire().unwrap_err();
            cool_downs.push(refusal.retry_in.as_secs());
            clock.advance(refusal.retry_in);
            breaker.try_acquire().unwrap();
            breaker.record_failure();
        }
        assert_eq!(cool_downs, vec![10, 20, 25]);
    }

    #[test]
    fn neutral_outcome_frees_the_trial_slot() {
        let clock = ManualClock::default();
        let breaker = breaker(&clock);
        for _ in 0..3 {
            breaker.record_failure();
        }
        clock.advance(Duration::from_secs(10));
        breaker.try_acquire().unwrap();
        breaker.record_neutral();
        assert_eq!(breaker.try_acquire(), Ok(()));
    }
}
