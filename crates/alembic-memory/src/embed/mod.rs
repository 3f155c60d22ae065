//! Sentence embeddings for the semantic half of retrieval.
//!
//! Three implementations of [`Embedder`]:
//! - [`MiniLmEmbedder`] (feature `local-embeddings`, on by default): all-MiniLM-L6-v2 in
//!   pure Rust with candle, from a directory holding `model.safetensors`, `tokenizer.json`
//!   and `config.json` (`scripts/fetch-models` puts them in [`default_model_dir`]);
//! - [`OpenAiEmbedder`]: any OpenAI-compatible `/v1/embeddings` endpoint;
//! - none: no embedder at all (`Option::None`), retrieval is lexical.
//!
//! Embedders are synchronous; call them from a blocking context (the OpenAI client uses
//! `reqwest::blocking`, which must not run on an async runtime thread).

#[cfg(feature = "local-embeddings")]
mod minilm;
mod openai;

use std::path::PathBuf;
use std::sync::Arc;

#[cfg(feature = "local-embeddings")]
pub use minilm::MiniLmEmbedder;
pub use openai::OpenAiEmbedder;

/// Errors from computing embeddings.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(
        "embedding model not found in {dir}: missing {file}; run scripts/fetch-models or set ALEMBIC_MINILM_DIR"
    )]
    ModelMissing { dir: PathBuf, file: &'static str },
    #[error("cannot load embedding model from {dir}: {reason}")]
    Load { dir: PathBuf, reason: String },
    #[error("embedding failed: {0}")]
    Inference(String),
    #[error("embedding request to {url} failed: {reason}")]
    Http { url: String, reason: String },
    #[error("embedding response from {url} is not usable: {reason}")]
    BadResponse { url: String, reason: String },
    #[error("this build has no local embeddings; rebuild with the `local-embeddings` feature")]
    NotBuilt,
}

/// Turns texts into fixed-size vectors.
pub trait Embedder: Send + Sync {
    /// Identifies the model; stored with every vector so a model change never mixes spaces.
    fn model_id(&self) -> &str;
    /// Length of the vectors.
    fn dimension(&self) -> usize;
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Which embedder to build.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EmbedderConfig {
    /// Lexical retrieval only.
    #[default]
    None,
    /// all-MiniLM-L6-v2 from a directory.
    Local { dir: PathBuf },
    /// An OpenAI-compatible endpoint, e.g. `https://api.openai.com/v1`.
    OpenAi {
        base_url: String,
        api_key: Option<String>,
        model: String,
    },
}

/// Builds the configured embedder (`None` for [`EmbedderConfig::None`]).
pub fn build_embedder(config: &EmbedderConfig) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    match config {
        EmbedderConfig::None => Ok(None),
        EmbedderConfig::Local { dir } => local(dir),
        EmbedderConfig::OpenAi {
            base_url,
            api_key,
            model,
        } => Ok(Some(Arc::new(OpenAiEmbedder::new(
            base_url,
            api_key.clone(),
            model,
        )?))),
    }
}

#[cfg(feature = "local-embeddings")]
fn local(dir: &std::path::Path) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    Ok(Some(Arc::new(MiniLmEmbedder::load(dir)?)))
}

#[cfg(not(feature = "local-embeddings"))]
fn local(_dir: &std::path::Path) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    Err(EmbedError::NotBuilt)
}

/// Where `scripts/fetch-models` installs all-MiniLM-L6-v2: `$ALEMBIC_MINILM_DIR` if set, else
/// `${ALEMBIC_MODEL_CACHE:-$HOME/.cache/alembic/models}/all-MiniLM-L6-v2`.
pub fn default_model_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("ALEMBIC_MINILM_DIR") {
        return Some(PathBuf::from(dir));
    }
    let cache = match std::env::var_os("ALEMBIC_MODEL_CACHE") {
        Some(c) => PathBuf::from(c),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/alembic/models"),
    };
    Some(cache.join("all-MiniLM-L6-v2"))
}
