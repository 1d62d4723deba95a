//! Text to token ids through Hugging Face's `tokenizers` library and the checkpoint's
//! `tokenizer.json`, set up as sentence-transformers calls it: truncated to the model's
//! `max_seq_length` (longest first), padded to the longest text of the batch.

use std::path::{Path, PathBuf};

use tokenizers::{PaddingParams, PaddingStrategy, TruncationParams, TruncationStrategy};
use wgrad_tensor::{DType, Element, Tensor};

use crate::error::{ModelError, Result};

/// Token ids of a batch of texts, padded to one length: row-major `(batch, seq_len)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBatch {
    /// Token ids, pad id after each text's end.
    pub ids: Vec<u32>,
    /// Segment ids (0 for single texts).
    pub type_ids: Vec<u32>,
    /// 1 for real tokens, 0 for padding.
    pub mask: Vec<u32>,
    /// Number of texts.
    pub batch: usize,
    /// Tokens per text after padding.
    pub seq_len: usize,
}

impl TokenBatch {
    /// The ids of text `i`, without its padding.
    pub fn ids_of(&self, i: usize) -> &[u32] {
        let row = &self.ids[i * self.seq_len..(i + 1) * self.seq_len];
        let len = self.mask[i * self.seq_len..(i + 1) * self.seq_len].iter().filter(|&&m| m != 0).count();
        &row[..len]
    }

    /// The batch on the default device: token ids and token types as `(batch, seq)` int32, the
    /// mask as `(batch, seq)` bool.
    pub fn tensors(&self) -> wgrad_tensor::Result<(Tensor, Tensor, Tensor)> {
        let shape = [self.batch, self.seq_len];
        // a u32's little-endian bytes are those of `x as i32`: on a little-endian host the ids'
        // own memory, uploaded without a copy
        let ints = |v: &[u32]| Tensor::from_bytes(&<u32 as Element>::to_le_bytes(v), DType::I32, &shape);
        let mask: Vec<bool> = self.mask.iter().map(|&m| m != 0).collect();
        Ok((ints(&self.ids)?, ints(&self.type_ids)?, Tensor::from_slice(&mask, &shape)?))
    }
}

/// A `tokenizer.json` loaded by the `tokenizers` library, truncating and padding batches.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
    lowercase: bool,
}

impl Tokenizer {
    /// Loads `path`; texts are truncated to `max_length` tokens (special tokens included) and
    /// lowercased first if `lowercase` (sentence-transformers' `do_lower_case`, which acts
    /// before the tokenizer's own normalizer).
    pub fn from_file(path: &Path, max_length: usize, lowercase: bool) -> Result<Tokenizer> {
        let error =
            |e: tokenizers::Error| ModelError::Tokenizer { path: path.to_path_buf(), message: e.to_string() };
        if !path.is_file() {
            return Err(ModelError::MissingFile { path: path.to_path_buf() });
        }
        let mut inner = tokenizers::Tokenizer::from_file(path).map_err(error)?;
        let truncation =
            TruncationParams { max_length, strategy: TruncationStrategy::LongestFirst, ..Default::default() };
        inner.with_truncation(Some(truncation)).map_err(error)?;
        let padding = PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..inner.get_padding().cloned().unwrap_or_default()
        };
        inner.with_padding(Some(padding));
        Ok(Tokenizer { inner, path: path.to_path_buf(), lowercase })
    }

    /// The ids of `texts`, each with its special tokens (`[CLS] .. [SEP]`), padded to the
    /// longest.
    pub fn encode_batch(&self, texts: &[&str]) -> Result<TokenBatch> {
        let error =
            |e: tokenizers::Error| ModelError::Tokenizer { path: self.path.clone(), message: e.to_string() };
        let texts: Vec<String> =
            texts.iter().map(|t| if self.lowercase { t.to_lowercase() } else { t.to_string() }).collect();
        let encodings = self.inner.encode_batch(texts, true).map_err(error)?;
        let seq_len = encodings.first().map_or(0, |e| e.len());
        let mut batch =
            TokenBatch { ids: vec![], type_ids: vec![], mask: vec![], batch: encodings.len(), seq_len };
        for e in &encodings {
            batch.ids.extend_from_slice(e.get_ids());
            batch.type_ids.extend_from_slice(e.get_type_ids());
            batch.mask.extend_from_slice(e.get_attention_mask());
        }
        Ok(batch)
    }

    /// The tokenizer library's own tokenizer, for anything this wrapper does not expose.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }
}
