//! `Embedding`: a lookup table of vectors by integer index.

use crate::Tensor;
use crate::error::Result;
use crate::nn::{Module, subseed, trainable};

/// A table of `vocab_size` vectors of `embed_size`, looked up by index.
#[derive(Clone, Debug, Module)]
pub struct Embedding {
    /// `(vocab_size, embed_size)`, glorot-uniform.
    pub weight: Tensor,
}

impl Embedding {
    /// A table of `vocab_size` vectors of `embed_size`, initialized from `seed`.
    pub fn new(vocab_size: usize, embed_size: usize, seed: u64) -> Result<Embedding> {
        let weight = trainable(Tensor::glorot_uniform(&[vocab_size, embed_size], subseed(seed, 0))?)?;
        Ok(Embedding { weight })
    }

    /// The vectors of the integer indices `idx`: shape `idx.shape + (embed_size,)`.
    pub fn forward(&self, idx: &Tensor) -> Result<Tensor> {
        idx.embedding(&self.weight)
    }
}
