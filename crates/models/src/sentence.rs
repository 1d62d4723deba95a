//! Sentence embeddings as sentence-transformers computes them: tokenize, run the encoder,
//! pool the token states over the real tokens, L2-normalize.

use std::path::{Path, PathBuf};

use wgrad_tensor::Result as TensorResult;
use wgrad_tensor::{DType, Tensor};

use crate::bert::BertModel;
use crate::config::{Pooling, SentenceConfig, existing};
use crate::error::{ModelError, Result};
use crate::tokenizer::{TokenBatch, Tokenizer};

/// The name of the model `cargo xtask setup --models` fetches.
pub const MINILM: &str = "all-MiniLM-L6-v2";

/// Where `cargo xtask setup --models` puts all-MiniLM-L6-v2: `wgrad/models/all-MiniLM-L6-v2`
/// in the user's cache directory (`$XDG_CACHE_HOME`, else `~/.cache`). `None` without a home.
pub fn default_model_dir() -> Option<PathBuf> {
    let cache = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".cache"),
    };
    Some(cache.join("wgrad").join("models").join(MINILM))
}

/// `hidden` `(batch, seq, dim)` pooled over the tokens where `mask` `(batch, seq)` (bool) is
/// true, by each mode of `pooling` in sentence-transformers' order (cls, max, mean,
/// mean_sqrt_len), concatenated: `(batch, dim * modes)` in float32.
pub fn pool(hidden: &Tensor, mask: &Tensor, pooling: Pooling) -> TensorResult<Tensor> {
    let hidden = hidden.float();
    let keep = mask.unsqueeze(-1)?;
    let count = || mask.float().sum(&[1], true)?.maximum(1e-9);
    let sum = || keep.where_(&hidden, 0.0)?.sum(&[1], false);
    let mut parts = vec![];
    if pooling.cls {
        parts.push(hidden.shrink(&[(0, hidden.shape()[0]), (0, 1), (0, hidden.shape()[2])])?.squeeze(1)?);
    }
    if pooling.max {
        parts.push(keep.where_(&hidden, -1e9)?.max(&[1], false)?);
    }
    if pooling.mean {
        parts.push(sum()?.div(count()?)?);
    }
    if pooling.mean_sqrt_len {
        parts.push(sum()?.div(count()?.sqrt())?);
    }
    Tensor::cat(&parts.iter().collect::<Vec<_>>(), -1)
}

/// Each row of `x` `(batch, dim)` divided by its L2 norm (at least 1e-12, as PyTorch's
/// `normalize`).
pub fn l2_normalize(x: &Tensor) -> TensorResult<Tensor> {
    x.div(x.square().sum(&[-1], true)?.sqrt().maximum(1e-12)?)
}

/// The cosine of the angle between `a` and `b` (0 when either is zero).
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f32 {
    let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| f64::from(*p) * f64::from(*q)).sum::<f64>();
    let norms = (dot(a, a) * dot(b, b)).sqrt();
    if norms == 0.0 { 0.0 } else { (dot(a, b) / norms) as f32 }
}

/// A sentence-transformers model: tokenizer, BERT encoder, pooling, normalization.
pub struct SentenceEmbedder {
    /// The pipeline's settings, from the model directory.
    pub config: SentenceConfig,
    tokenizer: Tokenizer,
    bert: BertModel,
}

impl SentenceEmbedder {
    /// Loads the sentence-transformers model directory `dir` (`modules.json`, its module
    /// configs, `config.json`, `model.safetensors`, `tokenizer.json`) with the encoder in
    /// `dtype` (float32 or float16) on the default device.
    pub fn load(dir: &Path, dtype: DType) -> Result<SentenceEmbedder> {
        let config = SentenceConfig::from_dir(dir)?;
        let tokenizer = Tokenizer::from_file(
            &existing(dir, "tokenizer.json")?,
            config.max_seq_length,
            config.do_lower_case,
        )?;
        let bert = BertModel::load(dir, dtype)?;
        if config.word_embedding_dimension != bert.config.hidden_size {
            let why = format!(
                "the pooling config's word_embedding_dimension {} is not the encoder's hidden_size {}",
                config.word_embedding_dimension, bert.config.hidden_size
            );
            return Err(ModelError::Input(why));
        }
        Ok(SentenceEmbedder { config, tokenizer, bert })
    }

    /// The tokenizer, set up as the model uses it.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The encoder.
    pub fn bert(&self) -> &BertModel {
        &self.bert
    }

    /// The embeddings of already tokenized texts: `(batch, dim)` in the model's dtype.
    pub fn embed_tokens(&self, batch: &TokenBatch) -> Result<Tensor> {
        self.bert.check(batch)?;
        let (ids, types, mask) = batch.tensors()?;
        Ok(self.encode(&ids, &types, &mask)?)
    }

    /// The embeddings of token tensors on the device (see [`BertModel::encode`]: ids and types
    /// `(batch, seq)` int32, the mask `(batch, seq)` bool), unchecked: `(batch, dim)` in the
    /// model's dtype. What [`crate::JitEmbedder`] captures.
    pub fn encode(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> TensorResult<Tensor> {
        let hidden = self.bert.encode(ids, types, mask)?;
        let pooled = pool(&hidden, mask, self.config.pooling)?;
        let out = if self.config.normalize { l2_normalize(&pooled)? } else { pooled };
        Ok(out.cast(self.bert.dtype()))
    }

    /// The embeddings of `texts` as one batch padded to the longest: `(texts, dim)` in the
    /// model's dtype, lazy until read.
    pub fn embed(&self, texts: &[&str]) -> Result<Tensor> {
        self.embed_tokens(&self.tokenizer.encode_batch(texts)?)
    }

    /// The embeddings of `texts` in float32 on the host, in their order, computed in batches
    /// of up to `batch_size` texts of similar length (sorted longest first, as
    /// sentence-transformers' `encode` does, so little of each batch is padding).
    pub fn embed_all(&self, texts: &[&str], batch_size: usize) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(texts[i].chars().count()));
        let mut out = vec![vec![]; texts.len()];
        for chunk in order.chunks(batch_size.max(1)) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            let vectors = self.embed(&batch)?.cast(DType::F32);
            let dim = vectors.shape()[1];
            let flat = vectors.to_vec::<f32>()?;
            for (&i, v) in chunk.iter().zip(flat.chunks(dim)) {
                out[i] = v.to_vec();
            }
        }
        Ok(out)
    }
}
