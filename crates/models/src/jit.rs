//! Sentence embeddings through a `TinyJit`: batches of one shape replay the kernels of a captured
//! forward with the new token tensors swapped in, skipping graph building, scheduling and codegen.

use wgrad_tensor::Result as TensorResult;
use wgrad_tensor::{Tensor, TinyJit};

use crate::error::Result;
use crate::sentence::SentenceEmbedder;
use crate::tokenizer::TokenBatch;

/// The jitted forward: token ids, token types and mask in, the embeddings out.
type Forward<'a> = Box<dyn FnMut(&[Tensor]) -> TensorResult<Vec<Tensor>> + 'a>;

/// [`SentenceEmbedder::embed_tokens`] jitted for batches of one `(batch, seq)` shape: the first
/// call runs the model, the second captures its kernels, later ones replay them (`JIT=0` runs
/// the model every call). A batch of another shape is a `JitError::InputMismatch`; each shape
/// needs an embedder of its own. The returned embeddings live in the capture's memory, which the
/// next call overwrites: read them (or copy them) before calling again.
pub struct JitEmbedder<'a> {
    model: &'a SentenceEmbedder,
    jit: TinyJit<Forward<'a>>,
}

impl<'a> JitEmbedder<'a> {
    /// A jitted forward of `model`.
    pub fn new(model: &'a SentenceEmbedder) -> JitEmbedder<'a> {
        let forward: Forward<'a> = Box::new(move |x: &[Tensor]| Ok(vec![model.encode(&x[0], &x[1], &x[2])?]));
        JitEmbedder { model, jit: TinyJit::new(forward) }
    }

    /// The embeddings of already tokenized texts (checked as [`SentenceEmbedder::embed_tokens`]
    /// checks them): `(batch, dim)` in the model's dtype.
    pub fn embed_tokens(&mut self, batch: &TokenBatch) -> Result<Tensor> {
        self.model.bert().check(batch)?;
        let (ids, types, mask) = batch.tensors()?;
        let mut out = self.jit.call(&[&ids, &types, &mask])?;
        Ok(out.remove(0))
    }

    /// The embeddings of `texts` as one batch padded to the longest (which must give the
    /// shape of the first call's batch).
    pub fn embed(&mut self, texts: &[&str]) -> Result<Tensor> {
        let batch = self.model.tokenizer().encode_batch(texts)?;
        self.embed_tokens(&batch)
    }

    /// Kernels a replay launches (the kernels of one forward), once captured.
    pub fn kernels_per_forward(&self) -> Option<usize> {
        self.jit.captured_kernels()
    }
}
