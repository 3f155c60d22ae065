//! The one trait the agent runtime talks to.

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use crate::error::LlmError;
use crate::model::{ChatRequest, ChatResponse, StreamEvent};

/// A streamed reply: text and tool-call pieces as they arrive, ending with `StreamEvent::Done`
/// (or an error). Dropping it closes the connection.
pub type ChatStream = BoxStream<'static, Result<StreamEvent, LlmError>>;

/// A chat model behind some vendor API.
///
/// Implementations retry transient failures (429/5xx/network) themselves, so an error returned
/// here is final for this call; the agent loop applies `ErrorStrikes` to it.
#[async_trait]
pub trait LlmProvider: Send + Sync + std::fmt::Debug {
    /// Short provider name for traces and errors (`openai`, `anthropic`, `gemini`, `deepseek`).
    fn name(&self) -> &str;

    /// The configured model, used when a request leaves `model` empty.
    fn model(&self) -> &str;

    /// One reply, whole. Streams internally when `request.stream` is set (useful behind proxies
    /// that cut long silent requests).
    async fn chat(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError>;

    /// One reply as a stream of events.
    async fn chat_stream(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatStream, LlmError>;
}

/// Reads a stream to its `Done` event and returns the assembled reply.
pub async fn collect_stream(mut stream: ChatStream) -> Result<ChatResponse, LlmError> {
    while let Some(event) = stream.next().await {
        if let StreamEvent::Done { response } = event? {
            return Ok(response);
        }
    }
    Err(LlmError::InvalidResponse {
        provider: "llm".into(),
        message: "stream ended without a final event".into(),
    })
}
