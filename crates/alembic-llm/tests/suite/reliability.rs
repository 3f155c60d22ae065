//! Retries with backoff and Retry-After, the circuit breaker, timeouts and cancellation, driven by
//! a ManualClock so nothing waits for real.

use std::sync::Arc;
use std::time::Duration;

use alembic_llm::fake::{FAKE_API_KEY, FakeReply, FakeServer, FakeTurn};
use alembic_llm::{
    BreakerPhase, BreakerPolicy, ChatRequest, Clock, HttpProvider, LlmError, LlmProvider,
    ManualClock, Message, ProviderKind, RetryPolicy,
};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use super::support::VENDORS;

fn request() -> ChatRequest {
    ChatRequest::new("", vec![Message::user("hi")])
}

async fn chat(provider: &HttpProvider) -> Result<String, LlmError> {
    provider
        .chat(&request(), &CancellationToken::new())
        .await
        .map(|r| r.text)
}

fn secs(values: &[u64]) -> Vec<Duration> {
    values.iter().map(|s| Duration::from_secs(*s)).collect()
}

#[tokio::test]
async fn rate_limit_then_success_waits_as_told_for_every_vendor() {
    for kind in VENDORS {
        let server = FakeServer::start(kind).await.unwrap();
        server.push(FakeReply::rate_limited("7"));
        server.push(FakeTurn::text("after the wait"));
        let clock = ManualClock::default();
        let text = chat(&server.provider_with_clock(&clock).unwrap())
            .await
            .unwrap();
        assert_eq!(text, "after the wait");
        assert_eq!(clock.sleeps(), secs(&[7]), "{kind}");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_honoured() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    // ManualClock::default() starts at 2026-01-01 00:00:00 UTC.
    server.push(FakeReply::rate_limited("Thu, 01 Jan 2026 00:00:12 GMT"));
    server.push(FakeTurn::text("ok"));
    let clock = ManualClock::default();
    chat(&server.provider_with_clock(&clock).unwrap())
        .await
        .unwrap();
    assert_eq!(clock.sleeps(), secs(&[12]));
}

#[tokio::test]
async fn server_errors_are_retried_with_exponential_backoff() {
    let server = FakeServer::start(ProviderKind::Anthropic).await.unwrap();
    server.push(FakeReply::error(503, "unavailable"));
    server.push(FakeReply::error(529, "overloaded"));
    server.push(FakeReply::error(500, "boom"));
    server.push(FakeTurn::text("finally"));
    let clock = ManualClock::default();
    assert_eq!(
        chat(&server.provider_with_clock(&clock).unwrap())
            .await
            .unwrap(),
        "finally"
    );
    assert_eq!(clock.sleeps(), secs(&[1, 2, 4]));
}

#[tokio::test]
async fn retries_end_with_the_last_error() {
    let server = FakeServer::start(ProviderKind::Gemini).await.unwrap();
    for _ in 0..4 {
        server.push(FakeReply::error(502, "bad gateway"));
    }
    let error = chat(&server.provider().unwrap()).await.unwrap_err();
    assert_eq!(error.to_string(), "gemini returned http 502: bad gateway");
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn a_retry_after_beyond_the_limit_is_returned_instead_of_waited_for() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.push(FakeReply::rate_limited("3600"));
    let clock = ManualClock::default();
    let error = chat(&server.provider_with_clock(&clock).unwrap())
        .await
        .unwrap_err();
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3600)));
    assert_eq!(clock.sleeps(), Vec::<Duration>::new());
}

#[tokio::test]
async fn client_errors_are_not_retried_and_never_show_the_key() {
    for (status, fatal) in [(400, false), (401, true), (404, true)] {
        let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
        server.push(FakeReply::error(status, "Incorrect API key provided"));
        let provider = server.provider().unwrap();
        let error = chat(&provider).await.unwrap_err();
        assert_eq!(server.requests().len(), 1, "{status}");
        assert_eq!(error.is_fatal(), fatal, "{status}");
        assert!(!error.to_string().contains(FAKE_API_KEY));
        assert!(!format!("{error:?}").contains(FAKE_API_KEY));
        assert!(!format!("{provider:?}").contains(FAKE_API_KEY));
    }
}

fn breaker_provider(server: &FakeServer, clock: &ManualClock) -> HttpProvider {
    let mut config = server.provider_config();
    config.retry = RetryPolicy::none();
    config.breaker = BreakerPolicy {
        failure_threshold: 3,
        cool_down: Duration::from_secs(30),
        max_cool_down: Duration::from_secs(300),
    };
    HttpProvider::with_clock(config, Arc::new(clock.clone())).unwrap()
}

#[tokio::test]
async fn the_circuit_breaker_opens_refuses_then_half_opens() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    let clock = ManualClock::default();
    let provider = breaker_provider(&server, &clock);
    for _ in 0..3 {
        server.push(FakeReply::error(500, "down"));
        chat(&provider).await.unwrap_err();
    }
    assert_eq!(provider.breaker().phase(), BreakerPhase::Open);
    let refused = chat(&provider).await.unwrap_err();
    assert_eq!(
        refused.to_string(),
        "openai is failing (3 failures in a row); circuit breaker open, next attempt in 30 s"
    );
    assert_eq!(
        server.requests().len(),
        3,
        "an open breaker must not reach the vendor"
    );

    clock.advance(Duration::from_secs(30));
    assert_eq!(provider.breaker().phase(), BreakerPhase::HalfOpen);
    server.push(FakeReply::error(500, "still down"));
    chat(&provider).await.unwrap_err();
    let LlmError::CircuitOpen { retry_in, .. } = chat(&provider).await.unwrap_err() else {
        panic!("expected open")
    };
    assert_eq!(
        retry_in,
        Duration::from_secs(60),
        "a failed trial doubles the cool-down"
    );

    clock.advance(retry_in);
    server.push(FakeTurn::text("back"));
    assert_eq!(chat(&provider).await.unwrap(), "back");
    assert_eq!(provider.breaker().phase(), BreakerPhase::Closed);
}

#[tokio::test]
async fn bad_requests_do_not_open_the_breaker() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    let clock = ManualClock::default();
    let provider = breaker_provider(&server, &clock);
    for _ in 0..5 {
        server.push(FakeReply::error(400, "invalid messages"));
        chat(&provider).await.unwrap_err();
    }
    assert_eq!(provider.breaker().phase(), BreakerPhase::Closed);
}

#[tokio::test]
async fn cancellation_stops_a_hanging_request_and_does_not_count_as_a_failure() {
    let server = FakeServer::start(ProviderKind::Anthropic).await.unwrap();
    let clock = ManualClock::default();
    let provider = breaker_provider(&server, &clock);
    for _ in 0..5 {
        server.push(FakeReply::Hang);
        let cancel = CancellationToken::new();
        let trigger = async {
            while server.requests().is_empty() || server.remaining_replies() > 0 {
                tokio::task::yield_now().await;
            }
            cancel.cancel();
        };
        let request = request();
        let (result, ()) = tokio::join!(provider.chat(&request, &cancel), trigger);
        assert_eq!(
            result.unwrap_err().to_string(),
            "request to anthropic was cancelled"
        );
    }
    assert_eq!(provider.breaker().phase(), BreakerPhase::Closed);
}

/// A clock whose sleeps never end and cancel the call instead, as a user pressing Ctrl-C while a
/// retry waits would.
#[derive(Debug)]
struct CancelWhileSleeping(CancellationToken);

impl Clock for CancelWhileSleeping {
    fn instant(&self) -> std::time::Instant {
        std::time::Instant::now()
    }

    fn system_time(&self) -> std::time::SystemTime {
        std::time::SystemTime::now()
    }

    fn sleep(&self, _duration: Duration) -> alembic_base::Sleep {
        self.0.cancel();
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn cancellation_also_interrupts_the_wait_between_retries() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.push(FakeReply::error(503, "busy"));
    let cancel = CancellationToken::new();
    let clock = Arc::new(CancelWhileSleeping(cancel.clone()));
    let provider = HttpProvider::with_clock(server.provider_config(), clock).unwrap();
    let error = provider.chat(&request(), &cancel).await.unwrap_err();
    assert!(matches!(error, LlmError::Cancelled { .. }), "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_vendor_that_never_answers_times_out() {
    let server = FakeServer::start(ProviderKind::Gemini).await.unwrap();
    server.push(FakeReply::Hang);
    let mut config = server.provider_config();
    config.retry = RetryPolicy::none();
    config.request_timeout = Duration::from_secs(45);
    let provider = HttpProvider::with_clock(config, Arc::new(ManualClock::default())).unwrap();
    let error = chat(&provider).await.unwrap_err();
    assert_eq!(error.to_string(), "gemini did not answer within 45 s");
    assert!(error.is_transient());
}

#[tokio::test]
async fn a_rate_limit_window_holds_back_the_next_request_too() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.push(FakeReply::rate_limited("20"));
    server.push(FakeTurn::text("waited"));
    let clock = ManualClock::default();
    let mut config = server.provider_config();
    config.retry = RetryPolicy::none();
    let provider = HttpProvider::with_clock(config, Arc::new(clock.clone())).unwrap();
    let refused = chat(&provider).await.unwrap_err();
    assert_eq!(refused.status(), Some(429));
    clock.advance(Duration::from_secs(5));
    assert_eq!(chat(&provider).await.unwrap(), "waited");
    assert_eq!(
        clock.sleeps(),
        secs(&[15]),
        "the second call waits out the rest of the window"
    );
}

#[tokio::test]
async fn requests_beyond_max_concurrency_wait_for_a_slot() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.push(FakeReply::Hang);
    server.push(FakeTurn::text("third"));
    let mut config = server.provider_config();
    config.max_concurrency = 1;
    let provider = HttpProvider::new(config).unwrap();
    let (first_cancel, second_cancel) = (CancellationToken::new(), CancellationToken::new());
    let request = request();
    let first = provider.chat(&request, &first_cancel);
    let second = provider.chat(&request, &second_cancel);
    let driver = async {
        while server.requests().is_empty() {
            tokio::task::yield_now().await;
        }
        // The first request holds the only slot: the second cannot reach the server.
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        second_cancel.cancel();
        first_cancel.cancel();
    };
    let (first, second, ()) = tokio::join!(first, second, driver);
    assert!(matches!(first, Err(LlmError::Cancelled { .. })));
    assert!(matches!(second, Err(LlmError::Cancelled { .. })));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        chat(&provider).await.unwrap(),
        "third",
        "cancelled calls give their slot back"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_transient_network_error_naming_the_cause() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let base_url = format!("http://{address}/v1");
    let mut config =
        alembic_llm::ProviderConfig::new(ProviderKind::OpenAi, "m", base_url.clone(), None);
    config.retry = RetryPolicy::none();
    let provider = HttpProvider::new(config).unwrap();
    let error = chat(&provider).await.unwrap_err();
    assert!(matches!(error, LlmError::Network { .. }), "{error}");
    assert!(error.is_transient());
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "could not reach openai at {base_url}/chat/completions: "
        )),
        "{text}"
    );
    assert!(
        !text.contains("error sending request"),
        "the root cause replaces reqwest's wrapper: {text}"
    );
}
