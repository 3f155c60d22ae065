//! all-MiniLM-L6-v2 with candle: BERT forward pass, attention-masked mean pooling and L2
//! normalisation, exactly as sentence-transformers does for this model.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use super::{EmbedError, Embedder};

/// sentence_bert_config.json of the model: inputs longer than this are truncated.
const MAX_SEQ_LEN: usize = 256;
/// Texts per forward pass; bounds memory for large batches.
const BATCH: usize = 32;

/// Local all-MiniLM-L6-v2 (384-d).
pub struct MiniLmEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dimension: usize,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

fn require(dir: &Path, file: &'static str) -> Result<PathBuf, EmbedError> {
    let path = dir.join(file);
    if path.is_file() {
        Ok(path)
    } else {
        Err(EmbedError::ModelMissing {
            dir: dir.to_path_buf(),
            file,
        })
    }
}

impl MiniLmEmbedder {
    /// Loads `model.safetensors`, `tokenizer.json` and `config.json` from `dir`.
    pub fn load(dir: &Path) -> Result<MiniLmEmbedder, EmbedError> {
        let load = |reason: String| EmbedError::Load {
            dir: dir.to_path_buf(),
            reason,
        };
        let weights = require(dir, "model.safetensors")?;
        let tokenizer_path = require(dir, "tokenizer.json")?;
        let config_path = require(dir, "config.json")?;
        let config_text = std::fs::read_to_string(&config_path).map_err(|e| load(e.to_string()))?;
        let config: Config =
            serde_json::from_str(&config_text).map_err(|e| load(format!("config.json: {e}")))?;
        let device = Device::Cpu;
        let bytes = std::fs::read(&weights).map_err(|e| load(e.to_string()))?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &device)
            .map_err(|e| load(e.to_string()))?;
        let model = BertModel::load(vb, &config).map_err(|e| load(e.to_string()))?;
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| load(format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_SEQ_LEN,
                ..Default::default()
            }))
            .map_err(|e| load(e.to_string()))?;
        Ok(MiniLmEmbedder {
            model,
            tokenizer,
            device,
            dimension: config.hidden_size,
        })
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let err = |e: &dyn std::fmt::Display| EmbedError::Inference(e.to_string());
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| err(&e))?;
        let ids: Vec<Tensor> = encodings
            .iter()
            .map(|e| Tensor::new(e.get_ids(), &self.device))
            .collect::<Result<_, _>>()
            .map_err(|e| err(&e))?;
        let masks: Vec<Tensor> = encodings
            .iter()
            .map(|e| Tensor::new(e.get_attention_mask(), &self.device))
            .collect::<Result<_, _>>()
            .map_err(|e| err(&e))?;
        let input_ids = Tensor::stack(&ids, 0).map_err(|e| err(&e))?;
        let mask = Tensor::stack(&masks, 0).map_err(|e| err(&e))?;
        let token_types = input_ids.zeros_like().map_err(|e| err(&e))?;
        let hidden = self
            .model
            .forward(&input_ids, &token_types, Some(&mask))
            .map_err(|e| err(&e))?;
        mean_pool_normalised(&hidden, &mask).map_err(|e| err(&e))
    }
}

/// Mean of the token vectors where the attention mask is 1, then L2 normalisation.
fn mean_pool_normalised(hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Vec<Vec<f32>>> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?.clamp(1e-9, f32::MAX)?;
    let mean = summed.broadcast_div(&counts)?;
    let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f32::MAX)?;
    mean.broadcast_div(&norm)?.to_vec2::<f32>()
}

impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        "all-MiniLM-L6-v2"
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// Batches texts of similar length together (a batch is padded to its longest text, so
    /// mixing a long text with short ones multiplies the work), then restores input order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|i| texts[*i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&str> = chunk.iter().map(|i| texts[*i]).collect();
            for (i, vector) in chunk.iter().zip(self.embed_batch(&batch)?) {
                out[*i] = vector;
            }
        }
        Ok(out)
    }
}
