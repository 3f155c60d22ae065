//! LLM providers for Alembic's agent runtime.
//!
//! One vendor-neutral model ([`ChatRequest`], [`Message`], [`ToolSpec`], [`ToolChoice`],
//! [`ChatResponse`], [`StreamEvent`]) behind one async trait, [`LlmProvider`], with three wire
//! formats: OpenAI Chat Completions (also DeepSeek, vLLM, Ollama, llama.cpp), Anthropic Messages
//! and Google Gemini `generateContent`. [`HttpProvider`] adds what every vendor needs: retries
//! with exponential backoff and jitter that honour `Retry-After` ([`RetryPolicy`]), request and
//! stream-idle timeouts, a [`CircuitBreaker`], and cancellation through a `CancellationToken`.
//! [`ErrorStrikes`] is the loop-level "2-strike" policy for errors that survive the retries.
//!
//! Malformed tool-call arguments from the model are not errors: they come back in
//! [`ChatResponse::malformed_tool_calls`] with text to feed back to the model.
//!
//! Tool-calling shapes the TypeScript reference got wrong, and what happens here instead:
//! - OpenAI: `tool_choice` is sent only together with `tools` (the API rejects it alone).
//! - Anthropic: under `ToolChoice::None` the tools stay in the request with
//!   `{"type":"none"}`; with no tools at all, earlier tool rounds are told as text (the API
//!   refuses tool blocks without tool definitions); empty text blocks are never sent; tool
//!   results of one turn go in one user message. Anthropic calls get the same retries, breaker
//!   and cancellation as the others.
//! - Gemini: the key travels in the `x-goog-api-key` header, never in the URL;
//!   `thoughtSignature`s are echoed with their calls.
//! - Every provider honours cancellation, and cancelled calls do not count towards the breaker.
//!
//! With the `fake-server` feature, `fake::FakeServer` serves each wire format on 127.0.0.1 from
//! scripted turns, for tests here and in the agent crate.
//!
//! ```no_run
//! use alembic_llm::{ChatRequest, ConfigOverrides, LlmProvider, Message, build_provider, load_provider_config};
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = load_provider_config(&ConfigOverrides::default())?; // file + environment
//! let provider = build_provider(config)?;
//! let request = ChatRequest::new("", vec![Message::user("What does src/main.rs do?")]);
//! let reply = provider.chat(&request, &CancellationToken::new()).await?;
//! println!("{} ({} tokens)", reply.text, reply.usage.total());
//! # Ok(())
//! # }
//! ```

mod anthropic;
mod assembler;
mod breaker;
mod clock;
mod config;
mod error;
mod gemini;
mod http;
mod model;
mod openai;
mod provider;
mod retry;
mod strikes;
mod wire;

#[cfg(feature = "fake-server")]
pub mod fake;

use std::sync::Arc;

pub use breaker::{BreakerPhase, BreakerPolicy, BreakerRefusal, CircuitBreaker};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{
    ApiKey, ConfigError, ConfigOverrides, EnvSource, LlmFileSettings, ProcessEnv, ProviderConfig,
    ProviderKind, load_provider_config, read_llm_settings, resolve_provider_config,
    user_config_path,
};
pub use error::LlmError;
pub use http::HttpProvider;
pub use model::{
    ChatRequest, ChatResponse, FinishReason, MalformedToolCall, Message, StreamEvent, ToolCall,
    ToolChoice, ToolSpec, Usage, check_tool_arguments, json_answer, parse_tool_arguments,
};
pub use provider::{ChatStream, LlmProvider, collect_stream};
pub use retry::{RetryPolicy, parse_retry_after};
pub use strikes::{ErrorStrikes, StrikeVerdict};

/// Builds the provider a config describes.
pub fn build_provider(config: ProviderConfig) -> Result<Arc<dyn LlmProvider>, LlmError> {
    Ok(Arc::new(HttpProvider::new(config)?))
}
