//! Wires the memory crate's embedder into `semantic_search_code`.
//!
//! `alembic-code` ranks code chunks through its own small [`CodeEmbedder`] trait so that it
//! does not depend on the memory crate; [`MemoryCodeEmbedder`] adapts any
//! [`alembic_memory::Embedder`] to it. The project config chooses the embedder in its
//! `[memory]` section (`embedder = "none" | "local" | "openai"`); without a choice, code
//! search stays lexical. The embedder is built on the first semantic search, not when the
//! runtime opens, so commands that never search do not load a model.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use alembic_code::{CodeEmbedder, CodeService};
use alembic_memory::{EmbedError, Embedder, EmbedderConfig};

use crate::RuntimeError;
use crate::config::ProjectConfig;

/// A memory-crate [`Embedder`] seen as a [`CodeEmbedder`].
pub struct MemoryCodeEmbedder {
    inner: Arc<dyn Embedder>,
}

impl MemoryCodeEmbedder {
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        MemoryCodeEmbedder { inner }
    }
}

impl CodeEmbedder for MemoryCodeEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.inner.embed(texts).map_err(|e| e.to_string())
    }
}

/// An embedder built from its config on first use; a build failure is reported by every
/// `embed` call (and code search falls back to lexical).
struct LazyEmbedder {
    config: EmbedderConfig,
    label: String,
    built: OnceLock<Result<Arc<dyn Embedder>, String>>,
}

impl LazyEmbedder {
    fn get(&self) -> Result<&Arc<dyn Embedder>, String> {
        self.built
            .get_or_init(|| match alembic_memory::build_embedder(&self.config) {
                Ok(Some(e)) => Ok(e),
                Ok(None) => Err("no embedder configured".to_string()),
                Err(e) => Err(e.to_string()),
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl CodeEmbedder for LazyEmbedder {
    fn model_id(&self) -> &str {
        &self.label
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.get()?
            .embed(texts)
            .map_err(|e: EmbedError| e.to_string())
    }
}

/// The embedder the `[memory]` section of the project config chooses, if any (see
/// [`crate::memory_config`], the one parser of that section): `embedder = "local"`,
/// `"openai"`, or `"none"` / no key for lexical search.
pub fn configured_embedder(
    config: &ProjectConfig,
) -> Result<Option<Arc<dyn CodeEmbedder>>, RuntimeError> {
    let settings = crate::memory_config::memory_settings(config)?;
    Ok(code_embedder_for(settings.embedder))
}

/// A code embedder built from `config` on its first use, named `label` until then.
pub fn lazy_embedder(config: EmbedderConfig, label: String) -> Arc<dyn CodeEmbedder> {
    Arc::new(LazyEmbedder {
        config,
        label,
        built: OnceLock::new(),
    })
}

/// The code embedder for an embedder choice already read from the config (for example
/// by `memory_config`), so code search and memory share one `[memory]` parser.
pub fn code_embedder_for(config: Option<EmbedderConfig>) -> Option<Arc<dyn CodeEmbedder>> {
    let label = match config.as_ref()? {
        EmbedderConfig::None => return None,
        EmbedderConfig::Local { .. } => "all-MiniLM-L6-v2".to_string(),
        EmbedderConfig::OpenAi { model, .. } => model.clone(),
    };
    config.map(|c| lazy_embedder(c, label))
}

/// The code-intelligence service of `root`, ranking semantic search with `embedder` when
/// given (hybrid) and lexically otherwise, parsing files up to `max_file_bytes`.
pub fn code_service(
    root: &Path,
    embedder: Option<Arc<dyn CodeEmbedder>>,
    index: &crate::config::IndexSection,
) -> Result<CodeService, RuntimeError> {
    let service = CodeService::new(root)
        .map_err(|e| RuntimeError::Setup(e.to_string()))?
        .with_max_file_bytes(index.max_file_bytes())
        .with_max_query_files(index.max_query_files());
    Ok(match embedder {
        Some(e) => service.with_embedder(e),
        None => service,
    })
}
