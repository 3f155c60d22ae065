//! Retry policy: exponential backoff with jitter, honouring the vendor's `Retry-After`.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// How often and how long to wait before retrying a transient failure (429, 5xx, network, timeout).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so at most `max_retries + 1` requests).
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each later one.
    pub base_delay: Duration,
    /// Cap on the computed (not vendor-requested) delay.
    pub max_delay: Duration,
    /// Up to this much random delay is added, so that many clients do not retry in step.
    pub jitter: Duration,
    /// A `Retry-After` longer than this is not waited for: the error goes back to the caller.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            jitter: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before retry number `attempt + 1` (attempt 0 is the first request), or `None` when
    /// no retry should be made.
    ///
    /// A vendor-sent `Retry-After` wins over the backoff (it knows its own rate window) but is not
    /// jittered further than it asked; one beyond `max_retry_after` means "give up now".
    pub fn delay_before_retry(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
    ) -> Option<Duration> {
        if attempt >= self.max_retries {
            return None;
        }
        if let Some(wait) = retry_after {
            return (wait <= self.max_retry_after).then_some(wait);
        }
        let exponential = self.base_delay.saturating_mul(2u32.saturating_pow(attempt));
        Some(exponential.min(self.max_delay) + self.random_jitter())
    }

    fn random_jitter(&self) -> Duration {
        let max_ms = alembic_base::millis(self.jitter);
        if max_ms == 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(fastrand::u64(0..=max_ms))
    }
}

/// Reads how long the vendor asked to wait: `retry-after-ms` (OpenAI) or `Retry-After` as
/// seconds or an HTTP date. A date in the past means "now".
pub fn retry_after_from_headers(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    parse_retry_after(text("retry-after")?, now)
}

/// Parses one `Retry-After` value (delta-seconds or HTTP date).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn no_jitter() -> RetryPolicy {
        RetryPolicy {
            jitter: Duration::ZERO,
            ..RetryPolicy::default()
        }
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 10,
            ..no_jitter()
        };
        let delays: Vec<u64> = (0..7)
            .map(|a| policy.delay_before_retry(a, None).unwrap().as_secs())
            .collect();
        assert_eq!(delays, vec![1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(policy.delay_before_retry(10, None), None);
    }

    #[test]
    fn jitter_stays_within_its_bound() {
        let policy = RetryPolicy::default();
        for _ in 0..200 {
            let delay = policy.delay_before_retry(1, None).unwrap();
            assert!(
                delay >= Duration::from_secs(2) && delay <= Duration::from_millis(2500),
                "{delay:?}"
            );
        }
    }

    #[test]
    fn retry_after_wins_unless_too_long() {
        let policy = no_jitter();
        assert_eq!(
            policy.delay_before_retry(0, Some(Duration::from_secs(7))),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            policy.delay_before_retry(0, Some(Duration::from_secs(600))),
            None
        );
    }

    #[test]
    fn retry_after_accepts_seconds_dates_and_milliseconds() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").unwrap();
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2026 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2026 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
        let mut headers = HeaderMap::new();
        headers.insert("retry-after-ms", "250".parse().unwrap());
        headers.insert("retry-after", "9".parse().unwrap());
        assert_eq!(
            retry_after_from_headers(&headers, now),
            Some(Duration::from_millis(250))
        );
    }
}
