//! The HTTP side shared by every vendor: sending with retries, the circuit breaker, timeouts,
//! cancellation, and turning SSE bytes into `StreamEvent`s through the vendor's decoder.

use alembic_base::lock;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::breaker::CircuitBreaker;
use crate::clock::{Clock, SystemClock};
use crate::config::{ApiKey, ProviderConfig};
use crate::error::{LlmError, vendor_error_message};
use crate::model::{ChatRequest, ChatResponse, StreamEvent};
use crate::provider::{ChatStream, LlmProvider, collect_stream};
use crate::retry::{RetryPolicy, retry_after_from_headers};
use crate::wire::{DecodeError, StreamDecoder, WireFormat};

/// A provider that talks HTTP to one vendor endpoint. Build it with `HttpProvider::new` from a
/// `ProviderConfig`; clone it cheaply (the breaker and HTTP client are shared).
#[derive(Debug, Clone)]
pub struct HttpProvider {
    name: String,
    model: String,
    base_url: String,
    api_key: Option<ApiKey>,
    wire: Arc<dyn WireFormat>,
    client: reqwest::Client,
    retry: RetryPolicy,
    breaker: CircuitBreaker,
    /// At most `max_concurrency` requests in flight (shared by clones).
    slots: Arc<Semaphore>,
    /// End of the window a vendor's 429 asked every request to wait out.
    rate_limited_until: Arc<Mutex<Option<Instant>>>,
    clock: Arc<dyn Clock>,
    request_timeout: Duration,
    stream_idle_timeout: Duration,
}

/// What one successful attempt produced.
enum Reply {
    Body(String),
    Stream(reqwest::Response),
}

impl HttpProvider {
    /// A provider using the real clock.
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// A provider whose retry sleeps and breaker cool-downs use `clock` (tests pass a `ManualClock`).
    pub fn with_clock(config: ProviderConfig, clock: Arc<dyn Clock>) -> Result<Self, LlmError> {
        let name = config.kind.name().to_owned();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("alembic/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|source| LlmError::Network {
                provider: name.clone(),
                url: config.base_url.clone(),
                source,
            })?;
        Ok(Self {
            wire: config.kind.wire_format(),
            breaker: CircuitBreaker::new(config.breaker.clone(), clock.clone()),
            name,
            model: config.model,
            base_url: config.base_url,
            api_key: config.api_key,
            client,
            retry: config.retry,
            clock,
            request_timeout: config.request_timeout,
            stream_idle_timeout: config.stream_idle_timeout,
            slots: Arc::new(Semaphore::new(config.max_concurrency.max(1))),
            rate_limited_until: Arc::new(Mutex::new(None)),
        })
    }

    /// The breaker, to show its state (`alembic ask` prints it on failure).
    pub fn breaker(&self) -> &CircuitBreaker {
        &self.breaker
    }

    /// The exact JSON body this provider would send (for debugging and golden tests).
    pub fn request_body(&self, request: &ChatRequest, stream: bool) -> Value {
        self.wire.encode(request, self.model_for(request), stream)
    }

    fn model_for<'a>(&'a self, request: &'a ChatRequest) -> &'a str {
        if request.model.is_empty() {
            &self.model
        } else {
            &request.model
        }
    }

    /// Sends one request, retrying transient failures. Returns the reply with the concurrency
    /// slot it holds (a stream keeps its slot until it is dropped).
    async fn send_with_retries(
        &self,
        request: &ChatRequest,
        stream: bool,
        cancel: &CancellationToken,
    ) -> Result<(Reply, OwnedSemaphorePermit), LlmError> {
        let model = self.model_for(request);
        let url = self.wire.endpoint(&self.base_url, model, stream);
        let body = self.wire.encode(request, model, stream);
        let permit = self.acquire_slot(cancel).await?;
        let mut attempt = 0;
        loop {
            self.wait_out_rate_limit(cancel).await?;
            self.check_breaker()?;
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => Err(self.cancelled()),
                outcome = self.attempt_once(&url, &body, stream) => outcome,
            };
            let error = match outcome {
                Ok(reply) => {
                    self.breaker.record_success();
                    return Ok((reply, permit));
                }
                Err(error) => error,
            };
            self.record_failure(&error);
            let Some(delay) = self.retry_delay(attempt, &error) else {
                return Err(error);
            };
            tracing::warn!(provider = %self.name, attempt, error = %error, delay_ms = delay.as_millis() as u64, "retrying llm request");
            self.sleep_unless_cancelled(delay, cancel).await?;
            attempt += 1;
        }
    }

    /// Waits for one of the provider's `max_concurrency` request slots.
    async fn acquire_slot(
        &self,
        cancel: &CancellationToken,
    ) -> Result<OwnedSemaphorePermit, LlmError> {
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(self.cancelled()),
            permit = self.slots.clone().acquire_owned() => permit.map_err(|_closed| self.cancelled()),
        }
    }

    /// After a 429 with `Retry-After`, every request of this provider waits out the window,
    /// not just the one that was refused.
    async fn wait_out_rate_limit(&self, cancel: &CancellationToken) -> Result<(), LlmError> {
        let until = *lock(&self.rate_limited_until);
        let now = self.clock.instant();
        match until {
            Some(until) if until > now => self.sleep_unless_cancelled(until - now, cancel).await,
            _ => Ok(()),
        }
    }

    fn check_breaker(&self) -> Result<(), LlmError> {
        self.breaker
            .try_acquire()
            .map_err(|refusal| LlmError::CircuitOpen {
                provider: self.name.clone(),
                failures: refusal.failures,
                retry_in: refusal.retry_in,
            })
    }

    fn retry_delay(&self, attempt: u32, error: &LlmError) -> Option<Duration> {
        if !error.is_transient() {
            return None;
        }
        let delay = self.retry.delay_before_retry(attempt, error.retry_after());
        if let (Some(429), Some(wait)) = (error.status(), error.retry_after())
            && wait <= self.retry.max_retry_after
        {
            *lock(&self.rate_limited_until) = Some(self.clock.instant() + wait);
        }
        delay
    }

    async fn sleep_unless_cancelled(
        &self,
        delay: Duration,
        cancel: &CancellationToken,
    ) -> Result<(), LlmError> {
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(self.cancelled()),
            () = self.clock.sleep(delay) => Ok(()),
        }
    }

    fn record_failure(&self, error: &LlmError) {
        if error.counts_as_vendor_failure() {
            self.breaker.record_failure();
        } else {
            self.breaker.record_neutral();
        }
    }

    async fn attempt_once(&self, url: &str, body: &Value, stream: bool) -> Result<Reply, LlmError> {
        let mut builder = self
            .client
            .post(url)
            .headers(self.wire.headers(self.api_key.as_ref().map(ApiKey::expose)))
            .json(body);
        if !stream {
            // Covers the whole exchange, body included.
            builder = builder.timeout(self.request_timeout);
        }
        tracing::debug!(provider = %self.name, url, stream, "llm request");
        let response = match tokio::time::timeout(self.request_timeout, builder.send()).await {
            Ok(sent) => sent.map_err(|source| self.transport_error(url, source))?,
            Err(_elapsed) => return Err(self.timeout(self.request_timeout)),
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after =
                retry_after_from_headers(response.headers(), self.clock.system_time());
            // Streamed requests carry no reqwest timeout, so bound the error body here.
            let text = tokio::time::timeout(self.request_timeout, response.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            return Err(LlmError::Http {
                provider: self.name.clone(),
                status: status.as_u16(),
                message: vendor_error_message(&text),
                retry_after,
            });
        }
        if stream {
            return Ok(Reply::Stream(response));
        }
        response
            .text()
            .await
            .map(Reply::Body)
            .map_err(|source| self.transport_error(url, source))
    }

    fn transport_error(&self, url: &str, source: reqwest::Error) -> LlmError {
        if source.is_timeout() {
            self.timeout(self.request_timeout)
        } else {
            LlmError::Network {
                provider: self.name.clone(),
                url: url.to_owned(),
                source,
            }
        }
    }

    fn timeout(&self, timeout: Duration) -> LlmError {
        LlmError::Timeout {
            provider: self.name.clone(),
            timeout,
        }
    }

    fn cancelled(&self) -> LlmError {
        LlmError::Cancelled {
            provider: self.name.clone(),
        }
    }

    fn decode_body(&self, text: &str) -> Result<ChatResponse, LlmError> {
        let json: Value = serde_json::from_str(text).map_err(|err| LlmError::InvalidResponse {
            provider: self.name.clone(),
            message: format!("body is not JSON ({err}): {text:.200}"),
        })?;
        self.wire
            .decode(&json)
            .map_err(|err| decode_error(&self.name, err))
    }
}

fn decode_error(provider: &str, error: DecodeError) -> LlmError {
    match error {
        DecodeError::Invalid(message) => LlmError::InvalidResponse {
            provider: provider.to_owned(),
            message,
        },
        DecodeError::Vendor(message) => LlmError::Stream {
            provider: provider.to_owned(),
            message,
        },
    }
}

#[async_trait]
impl LlmProvider for HttpProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        if request.stream {
            let stream = self.chat_stream(request, cancel).await?;
            return collect_stream(stream).await;
        }
        match self.send_with_retries(request, false, cancel).await?.0 {
            Reply::Body(text) => self.decode_body(&text),
            Reply::Stream(_) => Err(LlmError::InvalidResponse {
                provider: self.name.clone(),
                message: "expected a JSON body, got a stream".into(),
            }),
        }
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatStream, LlmError> {
        let (Reply::Stream(response), permit) =
            self.send_with_retries(request, true, cancel).await?
        else {
            return Err(LlmError::InvalidResponse {
                provider: self.name.clone(),
                message: "expected a stream, got a JSON body".into(),
            });
        };
        let state = SseState {
            provider: self.name.clone(),
            url: response.url().to_string(),
            events: response.bytes_stream().eventsource().boxed(),
            decoder: self.wire.stream_decoder(),
            pending: VecDeque::new(),
            finished: false,
            cancel: cancel.clone(),
            idle_timeout: self.stream_idle_timeout,
            _slot: permit,
        };
        Ok(futures::stream::unfold(state, SseState::next_item).boxed())
    }
}

type RawEvents =
    BoxStream<'static, Result<eventsource_stream::Event, EventStreamError<reqwest::Error>>>;

/// State of one streamed reply: raw SSE events in, decoded `StreamEvent`s out.
struct SseState {
    provider: String,
    url: String,
    events: RawEvents,
    decoder: Box<dyn StreamDecoder>,
    pending: VecDeque<StreamEvent>,
    finished: bool,
    cancel: CancellationToken,
    idle_timeout: Duration,
    /// Held until the stream is dropped, so a stream counts against `max_concurrency`.
    _slot: OwnedSemaphorePermit,
}

impl SseState {
    async fn next_item(mut self) -> Option<(Result<StreamEvent, LlmError>, Self)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                if matches!(event, StreamEvent::Done { .. }) {
                    self.finished = true;
                    self.pending.clear();
                }
                return Some((Ok(event), self));
            }
            if self.finished {
                return None;
            }
            if let Err(error) = self.pull().await {
                self.finished = true;
                return Some((Err(error), self));
            }
        }
    }

    /// Reads the next raw event into `pending` (or notes the end of the stream).
    async fn pull(&mut self) -> Result<(), LlmError> {
        let next = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(LlmError::Cancelled { provider: self.provider.clone() }),
            next = tokio::time::timeout(self.idle_timeout, self.events.next()) => next,
        };
        let decoded = match next {
            Err(_elapsed) => {
                return Err(LlmError::Timeout {
                    provider: self.provider.clone(),
                    timeout: self.idle_timeout,
                });
            }
            Ok(None) => {
                self.finished = true;
                self.decoder.on_end()
            }
            Ok(Some(Ok(event))) => self.decoder.on_event(&event.event, &event.data),
            Ok(Some(Err(error))) => return Err(self.stream_error(error)),
        };
        let events = decoded.map_err(|err| decode_error(&self.provider, err))?;
        // After the end of the byte stream, `pending` may still hold the final events.
        self.finished &= events.is_empty();
        self.pending.extend(events);
        Ok(())
    }

    fn stream_error(&self, error: EventStreamError<reqwest::Error>) -> LlmError {
        let provider = self.provider.clone();
        match error {
            EventStreamError::Transport(source) if source.is_timeout() => LlmError::Timeout {
                provider,
                timeout: self.idle_timeout,
            },
            EventStreamError::Transport(source) => LlmError::Network {
                provider,
                url: self.url.clone(),
                source,
            },
            other => LlmError::InvalidResponse {
                provider,
                message: format!("broken event stream: {other}"),
            },
        }
    }
}
