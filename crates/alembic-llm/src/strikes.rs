//! The agent loop's "2-strike" error policy, kept beside the errors it classifies.
//!
//! The reference loop (ref-memory §9.3) reacts to a failed LLM call, after the provider's own
//! retries are spent, like this: a cancelled call or an open circuit breaker ends the run; the
//! first failure pauses (2 s) and tries the same round again; a second failure in a row clears
//! the history back to the original prompt and ends the run with an apology. Any success resets
//! the count. Here one rule is added: errors that retrying cannot fix (401/403/404: bad key,
//! no access, unknown model) end the run at once instead of spending the second strike.

use std::time::Duration;

use crate::error::LlmError;

/// What the loop should do after a failed LLM call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrikeVerdict {
    /// First strike: wait this long, then run the same round again.
    RetryRound { pause: Duration },
    /// Second strike: drop the history back to the original prompt and end the run.
    ResetToPromptAndStop,
    /// End the run now (cancelled, breaker open, or an error retrying cannot fix).
    Stop,
}

/// Counts consecutive failed LLM calls for one loop.
#[derive(Debug, Clone)]
pub struct ErrorStrikes {
    consecutive: u32,
    limit: u32,
    pause: Duration,
}

impl Default for ErrorStrikes {
    fn default() -> Self {
        Self {
            consecutive: 0,
            limit: 2,
            pause: Duration::from_secs(2),
        }
    }
}

impl ErrorStrikes {
    /// A policy with `limit` strikes (at least 1) and a `pause` between them.
    pub fn new(limit: u32, pause: Duration) -> Self {
        Self {
            consecutive: 0,
            limit: limit.max(1),
            pause,
        }
    }

    /// Failed calls in a row so far.
    pub fn consecutive(&self) -> u32 {
        self.consecutive
    }

    /// A call succeeded: the strikes start over.
    pub fn record_success(&mut self) {
        self.consecutive = 0;
    }

    /// A call failed: decide what the loop does next.
    pub fn record_error(&mut self, error: &LlmError) -> StrikeVerdict {
        if matches!(
            error,
            LlmError::Cancelled { .. } | LlmError::CircuitOpen { .. }
        ) || error.is_fatal()
        {
            return StrikeVerdict::Stop;
        }
        self.consecutive += 1;
        if self.consecutive >= self.limit {
            StrikeVerdict::ResetToPromptAndStop
        } else {
            StrikeVerdict::RetryRound { pause: self.pause }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn server_error() -> LlmError {
        LlmError::Http {
            provider: "p".into(),
            status: 500,
            message: String::new(),
            retry_after: None,
        }
    }

    #[test]
    fn second_consecutive_error_resets_and_stops() {
        let mut strikes = ErrorStrikes::default();
        assert_eq!(
            strikes.record_error(&server_error()),
            StrikeVerdict::RetryRound {
                pause: Duration::from_secs(2)
            }
        );
        assert_eq!(
            strikes.record_error(&server_error()),
            StrikeVerdict::ResetToPromptAndStop
        );
    }

    #[test]
    fn success_between_errors_starts_over() {
        let mut strikes = ErrorStrikes::default();
        strikes.record_error(&server_error());
        strikes.record_success();
        assert_eq!(strikes.consecutive(), 0);
        assert!(matches!(
            strikes.record_error(&server_error()),
            StrikeVerdict::RetryRound { .. }
        ));
    }

    #[test]
    fn cancellation_open_breaker_and_bad_key_stop_at_once() {
        let mut strikes = ErrorStrikes::default();
        let cancelled = LlmError::Cancelled {
            provider: "p".into(),
        };
        let open = LlmError::CircuitOpen {
            provider: "p".into(),
            failures: 5,
            retry_in: Duration::from_secs(3),
        };
        let unauthorised = LlmError::Http {
            provider: "p".into(),
            status: 401,
            message: String::new(),
            retry_after: None,
        };
        for error in [cancelled, open, unauthorised] {
            assert_eq!(strikes.record_error(&error), StrikeVerdict::Stop);
        }
        assert_eq!(strikes.consecutive(), 0);
    }
}
