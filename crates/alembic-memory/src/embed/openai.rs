//! Client for OpenAI-compatible `POST {base}/embeddings` endpoints (OpenAI, vLLM, Ollama,
//! llama.cpp, LM Studio …).

use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{EmbedError, Embedder};

/// Embeddings from an OpenAI-compatible HTTP endpoint.
pub struct OpenAiEmbedder {
    client: reqwest::blocking::Client,
    url: String,
    api_key: Option<String>,
    model: String,
    model_id: String,
    dimension: OnceLock<usize>,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("url", &self.url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: &'a [&'a str],
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// `base_url` is the API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`.
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        model: &str,
    ) -> Result<OpenAiEmbedder, EmbedError> {
        let url = format!("{}/embeddings", base_url.trim_end_matches('/'));
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| EmbedError::Http {
                url: url.clone(),
                reason: e.to_string(),
            })?;
        Ok(OpenAiEmbedder {
            client,
            url,
            api_key,
            model: model.to_string(),
            model_id: format!("openai:{model}"),
            dimension: OnceLock::new(),
        })
    }

    fn post(&self, texts: &[&str]) -> Result<Response, EmbedError> {
        let http = |e: reqwest::Error| EmbedError::Http {
            url: self.url.clone(),
            reason: e.to_string(),
        };
        let mut req = self.client.post(&self.url).json(&Request {
            model: &self.model,
            input: texts,
        });
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().map_err(http)?;
        let status = resp.status();
        if !status.is_success() {
            let body: String = resp.text().unwrap_or_default().chars().take(300).collect();
            return Err(EmbedError::Http {
                url: self.url.clone(),
                reason: format!("status {status}: {body}"),
            });
        }
        resp.json::<Response>()
            .map_err(|e| EmbedError::BadResponse {
                url: self.url.clone(),
                reason: e.to_string(),
            })
    }
}

impl Embedder for OpenAiEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// 0 until the first successful call reveals the size.
    fn dimension(&self) -> usize {
        self.dimension.get().copied().unwrap_or(0)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut data = self.post(texts)?.data;
        let bad = |reason: String| EmbedError::BadResponse {
            url: self.url.clone(),
            reason,
        };
        if data.len() != texts.len() {
            return Err(bad(format!(
                "{} vectors for {} inputs",
                data.len(),
                texts.len()
            )));
        }
        data.sort_by_key(|d| d.index);
        let dim = data[0].embedding.len();
        if dim == 0 || data.iter().any(|d| d.embedding.len() != dim) {
            return Err(bad("vectors are empty or of different lengths".into()));
        }
        let _ = self.dimension.set(dim);
        Ok(data.into_iter().map(|d| d.embedding).collect())
    }
}
