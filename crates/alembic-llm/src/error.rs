//! Errors of a provider call, with the facts the retry loop, the circuit breaker and the agent's
//! strike policy decide on.

use std::time::Duration;

/// Why a provider call failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The vendor answered with a non-success status.
    #[error("{provider} returned http {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        /// The vendor's error message (or the start of the body).
        message: String,
        /// How long the vendor asked us to wait (`Retry-After`), when it said so.
        retry_after: Option<Duration>,
    },
    /// The vendor could not be reached or the connection broke.
    #[error("could not reach {provider} at {url}: {}", root_cause(source))]
    Network {
        provider: String,
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// No answer (or no next stream chunk) within the configured time.
    #[error("{provider} did not answer within {} s", timeout.as_secs_f64())]
    Timeout { provider: String, timeout: Duration },
    /// The caller cancelled the request.
    #[error("request to {provider} was cancelled")]
    Cancelled { provider: String },
    /// Too many consecutive failures: calls are refused until the cool-down ends.
    #[error(
        "{provider} is failing ({failures} failures in a row); circuit breaker open, next attempt in {} s",
        retry_in.as_secs()
    )]
    CircuitOpen {
        provider: String,
        failures: u32,
        retry_in: Duration,
    },
    /// The vendor answered 2xx but the body is not what its API documents.
    #[error("{provider} sent a response that could not be read: {message}")]
    InvalidResponse { provider: String, message: String },
    /// The vendor reported an error inside an SSE stream.
    #[error("{provider} reported an error in the stream: {message}")]
    Stream { provider: String, message: String },
}

impl LlmError {
    /// HTTP status, when the vendor answered with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Worth trying again later: rate limits, server errors, network trouble and timeouts.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Http { status, .. } => *status == 408 || *status == 429 || *status >= 500,
            Self::Network { .. } | Self::Timeout { .. } | Self::Stream { .. } => true,
            Self::Cancelled { .. } | Self::CircuitOpen { .. } | Self::InvalidResponse { .. } => {
                false
            }
        }
    }

    /// Counts towards opening the circuit breaker. Cancellations do not (the reference counted
    /// deliberate aborts as failures, so a few stage aborts could open the breaker).
    pub fn counts_as_vendor_failure(&self) -> bool {
        self.is_transient()
    }

    /// Retrying the same request cannot help: bad key, no permission, unknown model or endpoint.
    pub fn is_fatal(&self) -> bool {
        matches!(self.status(), Some(401 | 403 | 404))
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// The innermost cause ("Connection refused (os error 111)"), which says more than reqwest's
/// own "error sending request for url (…)".
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// A vendor's error body reduced to its message: `{"error": {"message": …}}` (OpenAI, Anthropic,
/// Gemini all use this shape), else the first 300 characters of the body.
pub(crate) fn vendor_error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            let error = value.get("error")?;
            error
                .get("message")
                .and_then(|m| m.as_str())
                .or_else(|| error.as_str())
                .map(str::to_owned)
        });
    match from_json {
        Some(message) => message,
        None if body.trim().is_empty() => "empty body".to_owned(),
        None => body.chars().take(300).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn vendor_messages_are_extracted_from_json_bodies() {
        let body = r#"{"error":{"type":"rate_limit_error","message":"slow down"}}"#;
        assert_eq!(vendor_error_message(body), "slow down");
        assert_eq!(vendor_error_message(""), "empty body");
        assert_eq!(vendor_error_message("Bad Gateway"), "Bad Gateway");
    }

    #[test]
    fn classification_follows_status() {
        let http = |status| LlmError::Http {
            provider: "openai".into(),
            status,
            message: String::new(),
            retry_after: None,
        };
        assert!(http(429).is_transient());
        assert!(http(503).is_transient());
        assert!(!http(400).is_transient());
        assert!(http(401).is_fatal());
        assert!(!http(400).is_fatal());
        let cancelled = LlmError::Cancelled {
            provider: "openai".into(),
        };
        assert!(!cancelled.counts_as_vendor_failure());
    }
}
