//! Limits of the HTTP server (`[mcp.http]`): request body size, per-caller request rate,
//! concurrent sessions (in all and per caller), open connections (in all and per IP), idle
//! sessions and connections, and slow clients.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alembic_base::{Clock, SystemClock, lock};
use alembic_runtime::mcp_config::McpHttpSection;

/// The limits one HTTP server enforces.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpLimits {
    /// Largest request body; past it the answer is 413.
    pub max_body_bytes: usize,
    /// Steady requests per minute per caller, and the burst above it; past them, 429.
    pub rate_per_minute: u32,
    pub rate_burst: u32,
    /// Concurrent sessions; a new one past it gets 503.
    pub max_sessions: usize,
    /// Concurrent sessions of one caller (token, OAuth subject, or client IP without
    /// authentication); a new one past it gets 429.
    pub max_sessions_per_caller: usize,
    /// Open connections, in all and per client IP, before authentication.
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    /// Time a connection has for its TLS handshake and each request's headers, counted from
    /// when the server starts waiting (a new or kept-alive connection).
    pub header_timeout: Duration,
    /// Browser origins served; any other `Origin` gets 403.
    pub allowed_origins: Vec<String>,
    /// A session without a request for this long is closed.
    pub idle_timeout: Duration,
    /// Time a client has to send a request body.
    pub read_timeout: Duration,
}

impl HttpLimits {
    pub fn from_config(c: &McpHttpSection) -> Self {
        HttpLimits {
            max_body_bytes: usize::try_from(c.max_body_bytes).unwrap_or(usize::MAX),
            rate_per_minute: c.rate_per_minute,
            rate_burst: c.rate_burst,
            max_sessions: usize::try_from(c.max_sessions).unwrap_or(usize::MAX),
            max_sessions_per_caller: usize::try_from(c.max_sessions_per_caller)
                .unwrap_or(usize::MAX),
            max_connections: usize::try_from(c.max_connections).unwrap_or(usize::MAX),
            max_connections_per_ip: usize::try_from(c.max_connections_per_ip).unwrap_or(usize::MAX),
            header_timeout: Duration::from_secs(c.header_timeout_secs),
            allowed_origins: c.allowed_origins.clone(),
            idle_timeout: Duration::from_secs(c.idle_timeout_secs),
            read_timeout: Duration::from_secs(c.read_timeout_secs),
        }
    }
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self::from_config(&McpHttpSection::default())
    }
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A token bucket per caller: `burst` requests at once, refilled at `per_minute`.
pub struct RateLimiter {
    buckets: Mutex<HashMap<String, Bucket>>,
    per_sec: f64,
    burst: f64,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("per_sec", &self.per_sec)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

impl RateLimiter {
    pub fn new(per_minute: u32, burst: u32) -> Self {
        Self::with_clock(per_minute, burst, Arc::new(SystemClock))
    }

    pub fn with_clock(per_minute: u32, burst: u32, clock: Arc<dyn Clock>) -> Self {
        RateLimiter {
            buckets: Mutex::new(HashMap::new()),
            per_sec: f64::from(per_minute.max(1)) / 60.0,
            burst: f64::from(burst.max(1)),
            clock,
        }
    }

    /// Takes one request from `caller`'s bucket, or says how long until one is available.
    pub fn check(&self, caller: &str) -> Result<(), Duration> {
        let now = self.clock.instant();
        let mut buckets = lock(&self.buckets);
        let bucket = buckets.entry(caller.to_string()).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.per_sec).min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - bucket.tokens) / self.per_sec,
            ))
        }
    }
}

/// `Retry-After` in whole seconds, rounded up (never 0: "retry now" would be wrong).
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alembic_base::ManualClock;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_bucket_allows_the_burst_then_refills_at_the_rate() {
        let clock = ManualClock::new(0);
        let limiter = RateLimiter::with_clock(60, 3, Arc::new(clock.clone()));
        for _ in 0..3 {
            assert_eq!(limiter.check("alice"), Ok(()));
        }
        let wait = limiter.check("alice").unwrap_err();
        assert_eq!(retry_after_secs(wait), 1);
        // Another caller has its own bucket.
        assert_eq!(limiter.check("bob"), Ok(()));
        clock.advance(Duration::from_millis(1500));
        assert_eq!(limiter.check("alice"), Ok(()));
        assert!(limiter.check("alice").is_err());
        clock.advance(Duration::from_secs(600));
        for _ in 0..3 {
            assert_eq!(limiter.check("alice"), Ok(()));
        }
        assert!(limiter.check("alice").is_err());
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_secs(Duration::from_millis(10)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_secs(Duration::from_millis(2001)), 3);
    }
}
