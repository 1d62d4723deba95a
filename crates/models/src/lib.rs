//! Pretrained models on wgrad, loaded from Hugging Face checkpoint directories: a BERT
//! encoder and sentence-transformers' pooling, so all-MiniLM-L6-v2 (and BERT-shaped
//! sentence-transformers models like it) embed text as in PyTorch.
//!
//! ```no_run
//! use wgrad_models::{SentenceEmbedder, cosine_similarity, default_model_dir};
//! use wgrad_tensor::DType;
//! # fn main() -> Result<(), wgrad_models::ModelError> {
//! let dir = default_model_dir().expect("a home directory"); // cargo xtask setup --models
//! let model = SentenceEmbedder::load(&dir, DType::F32)?;
//! let v = model.embed_all(&["Paris is the capital of France.", "The capital of France is Paris."], 32)?;
//! assert!(cosine_similarity(&v[0], &v[1]) > 0.9);
//! # Ok(()) }
//! ```
//!
//! A checkpoint directory is read strictly: a missing file, a missing or mis-shaped weight and
//! an unknown config field are each a [`ModelError`] naming it.

mod bert;
mod checkpoint;
mod config;
mod error;
mod jit;
mod sentence;
mod tokenizer;

pub use bert::BertModel;
pub use checkpoint::Weights;
pub use config::{Activation, BertConfig, Pooling, SentenceConfig};
pub use error::{ModelError, Result};
pub use jit::JitEmbedder;
pub use sentence::{MINILM, SentenceEmbedder, cosine_similarity, default_model_dir, l2_normalize, pool};
pub use tokenizer::{TokenBatch, Tokenizer};
