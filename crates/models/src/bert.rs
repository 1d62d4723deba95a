//! A BERT encoder (Devlin et al.), as `transformers`' `BertModel` computes it at inference:
//! word + token type + position embeddings and a layer norm, then per layer self-attention
//! over the unpadded keys, a residual layer norm, the feed-forward block and another.
//!
//! In float16 the weights and the activations between kernels are halves, and what PyTorch's
//! half kernels compute in float32 inside is float32 here too: layer norms, the softmax, the
//! activation. Matmuls accumulate in float32 as everywhere in wgrad; the attention scores are
//! stored as halves, as PyTorch's eager float16 attention stores them.
//!
//! The embeddings are `Tensor::embedding` on the device: a one-hot reduce over the vocabulary
//! (tinygrad's formulation), which codegen collapses into one indexed load per element.
//!
//! [`BertModel::encode`] is the forward on token tensors already on the device, so a caller can
//! jit it (`TinyJit`); [`BertModel::forward`] checks and uploads a [`TokenBatch`] first.

use std::path::Path;

use wgrad_tensor::Result as TensorResult;
use wgrad_tensor::nn::LayerNorm;
use wgrad_tensor::{DType, Tensor};

use crate::checkpoint::Weights;
use crate::config::{Activation, BertConfig, existing};
use crate::error::{ModelError, Result};
use crate::tokenizer::TokenBatch;

/// A layer norm over the hidden size from the checkpoint's `name.weight` and `name.bias`,
/// kept in float32.
fn layer_norm(weights: &Weights, name: &str, config: &BertConfig) -> Result<LayerNorm> {
    let h = config.hidden_size;
    let weight = weights.take(&format!("{name}.weight"), &[h], DType::F32)?;
    let bias = weights.take(&format!("{name}.bias"), &[h], DType::F32)?;
    Ok(LayerNorm {
        normalized_shape: vec![h],
        weight: Some(weight),
        bias: Some(bias),
        eps: config.layer_norm_eps,
    })
}

/// `norm(x)` computed in float32, the result in `dtype`.
fn normalized(norm: &LayerNorm, x: &Tensor, dtype: DType) -> TensorResult<Tensor> {
    Ok(norm.forward(&x.float())?.cast(dtype))
}

/// Fewest rows of `x` for which a float32 [`Dense`] multiplies by its `(in, out)` copy. MiniLM's
/// four projections on an H100 (docs/PERFORMANCE.md), the copy's column reduce against the
/// grouped rows of `weight.T`, which read the weight once per row: 117 against 60 us at 16 rows
/// (one short sentence), 88 against 85 at 24, 83 against 106 at 32, 75 against 187 at 64; from
/// 4096 rows the register tile reads the copy 7-9% faster.
const MIN_COPY_ROWS: usize = 32;

/// A linear layer, `x @ weight.T + bias`, with the checkpoint's weight `(out, in)`. In float32
/// the layer also keeps `weight.T` as a contiguous `(in, out)` copy for inputs of
/// [`MIN_COPY_ROWS`] or more: the register tile reads a factor contiguous along its output axis
/// in whole lines and one contiguous along the reduce in 32 bytes a row, and MiniLM's four
/// projections ran 7-9% faster from the copy on an H200 (docs/PERFORMANCE.md). A half layer
/// keeps the copy only where its output is wider than its input: with the tensor-core plans,
/// MiniLM's f16 batch on an H200 ran 3.58 -> 3.38 ms of kernels with copies for QKV and FFN
/// up, and 3.46 ms with copies for all four (FFN down and the attention output read the
/// checkpoint's layout faster).
struct Dense {
    /// `(out, in)`.
    weight: Tensor,
    /// `weight.T` contiguous, `(in, out)`: float32 layers, and half layers that widen.
    columns: Option<Tensor>,
    bias: Tensor,
}

impl Dense {
    /// The layer of `weight` `(out, in)` and `bias` `(out,)`.
    fn new(weight: Tensor, bias: Tensor) -> Result<Dense> {
        let widens = weight.shape()[0] > weight.shape().get(1).copied().unwrap_or(0);
        let keeps_copy = match weight.dtype() {
            DType::F32 => true,
            DType::F16 => widens,
            _ => false,
        };
        let columns = keeps_copy.then(|| weight.t()).transpose()?.map(|t| t.contiguous());
        if let Some(columns) = &columns {
            columns.realize()?;
        }
        Ok(Dense { weight, columns, bias })
    }

    /// The checkpoint's `name.weight` `(out, in)` and `name.bias`.
    fn load(
        weights: &Weights,
        name: &str,
        out_features: usize,
        in_features: usize,
        dtype: DType,
    ) -> Result<Dense> {
        let (weight, bias) = weights.linear(name, out_features, in_features, dtype)?;
        Dense::new(weight, bias)
    }

    /// `weight.T` for `x`: the `(in, out)` copy where `x` has enough rows for it.
    fn weight_t(&self, x: &Tensor) -> TensorResult<Tensor> {
        let rows: usize = x.shape().iter().rev().skip(1).product();
        match &self.columns {
            Some(columns) if rows >= MIN_COPY_ROWS => Ok(columns.clone()),
            _ => self.weight.t(),
        }
    }

    /// `x @ weight.T + bias` over the last axis of `x`.
    fn forward(&self, x: &Tensor) -> TensorResult<Tensor> {
        x.linear(&self.weight_t(x)?, Some(&self.bias))
    }

    /// The same in float32, never rounded to a half type (for an activation that follows).
    fn forward_f32(&self, x: &Tensor) -> TensorResult<Tensor> {
        x.matmul_dtype(&self.weight_t(x)?, DType::F32)?.add(self.bias.float())
    }
}

/// One encoder layer.
struct BertLayer {
    /// Query, key and value projections as one `(3 hidden, hidden)` layer.
    qkv: Dense,
    attention_output: Dense,
    attention_norm: LayerNorm,
    intermediate: Dense,
    output: Dense,
    output_norm: LayerNorm,
}

impl BertLayer {
    fn load(weights: &Weights, i: usize, config: &BertConfig, dtype: DType) -> Result<BertLayer> {
        let (h, f) = (config.hidden_size, config.intermediate_size);
        let p = format!("encoder.layer.{i}");
        let parts = ["query", "key", "value"]
            .map(|name| weights.linear(&format!("{p}.attention.self.{name}"), h, h, dtype))
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
        let cat = |pick: fn(&(Tensor, Tensor)) -> &Tensor| -> Result<Tensor> {
            let t = Tensor::cat(&parts.iter().map(pick).collect::<Vec<_>>(), 0)?.contiguous();
            t.realize()?;
            Ok(t)
        };
        Ok(BertLayer {
            qkv: Dense::new(cat(|(w, _)| w)?, cat(|(_, b)| b)?)?,
            attention_output: Dense::load(weights, &format!("{p}.attention.output.dense"), h, h, dtype)?,
            attention_norm: layer_norm(weights, &format!("{p}.attention.output.LayerNorm"), config)?,
            intermediate: Dense::load(weights, &format!("{p}.intermediate.dense"), f, h, dtype)?,
            output: Dense::load(weights, &format!("{p}.output.dense"), h, f, dtype)?,
            output_norm: layer_norm(weights, &format!("{p}.output.LayerNorm"), config)?,
        })
    }

    /// The layer on `x` `(batch, seq, hidden)`, attending only where `keys` `(batch, 1, 1, seq)`
    /// is true.
    fn forward(&self, x: &Tensor, keys: &Tensor, config: &BertConfig) -> TensorResult<Tensor> {
        let (b, s, dtype) = (x.shape()[0] as isize, x.shape()[1] as isize, x.dtype());
        let (heads, h) = (config.num_attention_heads as isize, config.hidden_size as isize);
        let qkv = self.qkv.forward(x)?.split(&[h as usize; 3], -1)?;
        let heads_first =
            |t: &Tensor| -> TensorResult<Tensor> { t.reshape(&[b, s, heads, h / heads])?.transpose(1, 2) };
        let (q, k, v) = (heads_first(&qkv[0])?, heads_first(&qkv[1])?, heads_first(&qkv[2])?);
        // half layers store their scores as halves, as PyTorch's eager float16 BERT does: the
        // softmax (float32 inside) reads two bytes a score instead of four (float32 layers:
        // float32 scores)
        let context = q.scaled_dot_product_attention_scores_in(&k, &v, Some(keys), false, dtype)?;
        // contiguous: the projection's tensor-core tile wants its rows whole, not 12 strided
        // heads; the attention stores its sums in this order already, so it copies nothing
        let context = context.transpose(1, 2)?.reshape(&[b, s, h])?.contiguous();
        let attended = self.attention_output.forward(&context)?.float().add(x.float())?;
        let x = normalized(&self.attention_norm, &attended, dtype)?;
        // the activation is the first matmul's epilogue (H200, f16: 162 -> 198 us a tile, the
        // kernel of its own it replaces took 44 us); fused into the one after, it ran once per
        // load. Its input stays float32: rounding it to a half in registers costs the tile a
        // software rounding per element where the device's f16 conversion is only exact in
        // stores (an H100's)
        let inner = self.intermediate.forward_f32(&x)?;
        let inner = match config.hidden_act {
            Activation::Gelu => inner.gelu_erf(),
            Activation::GeluTanh => inner.gelu(),
            Activation::Relu => inner.relu(),
        };
        let out = self.output.forward(&inner.cast(dtype).contiguous())?.float().add(x.float())?;
        normalized(&self.output_norm, &out, dtype)
    }
}

/// A BERT encoder loaded from a Hugging Face checkpoint directory (`config.json`,
/// `model.safetensors`).
pub struct BertModel {
    /// The encoder's shape.
    pub config: BertConfig,
    dtype: DType,
    words: Tensor,
    token_types: Tensor,
    positions: Tensor,
    embeddings_norm: LayerNorm,
    layers: Vec<BertLayer>,
}

impl BertModel {
    /// Loads the encoder of `dir` with its weights in `dtype` (float32 or float16) on the
    /// default device.
    pub fn load(dir: &Path, dtype: DType) -> Result<BertModel> {
        if !matches!(dtype, DType::F32 | DType::F16) {
            return Err(ModelError::Input(format!("BERT runs in float32 or float16, not {}", dtype.name())));
        }
        let config = BertConfig::from_file(&existing(dir, "config.json")?)?;
        let weights = Weights::load(dir)?;
        BertModel::from_weights(config, &weights, dtype)
    }

    /// The encoder of `config` with the weights named as `transformers` names them.
    pub fn from_weights(config: BertConfig, weights: &Weights, dtype: DType) -> Result<BertModel> {
        let h = config.hidden_size;
        let words = weights.take("embeddings.word_embeddings.weight", &[config.vocab_size, h], dtype)?;
        let token_types =
            weights.take("embeddings.token_type_embeddings.weight", &[config.type_vocab_size, h], dtype)?;
        let positions = weights.take(
            "embeddings.position_embeddings.weight",
            &[config.max_position_embeddings, h],
            dtype,
        )?;
        let embeddings_norm = layer_norm(weights, "embeddings.LayerNorm", &config)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| BertLayer::load(weights, i, &config, dtype))
            .collect::<Result<Vec<_>>>()?;
        Ok(BertModel { config, dtype, words, token_types, positions, embeddings_norm, layers })
    }

    /// The dtype of the weights and hidden states.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Checks that `batch` fits the model: ids in the vocabularies, not longer than the
    /// position table, not empty.
    pub fn check(&self, batch: &TokenBatch) -> Result<()> {
        let c = &self.config;
        if batch.batch == 0 || batch.seq_len == 0 {
            return Err(ModelError::Input("an empty batch".into()));
        }
        if batch.seq_len > c.max_position_embeddings {
            let why = format!(
                "{} tokens, more than the {} positions the model has",
                batch.seq_len, c.max_position_embeddings
            );
            return Err(ModelError::Input(why));
        }
        let n = batch.batch * batch.seq_len;
        if batch.ids.len() != n || batch.type_ids.len() != n || batch.mask.len() != n {
            return Err(ModelError::Input(format!(
                "a batch of {} x {} with lists of other lengths",
                batch.batch, batch.seq_len
            )));
        }
        if let Some(&id) = batch.ids.iter().find(|&&id| id as usize >= c.vocab_size) {
            return Err(ModelError::Input(format!(
                "token id {id} outside the vocabulary of {}",
                c.vocab_size
            )));
        }
        if let Some(&id) = batch.type_ids.iter().find(|&&id| id as usize >= c.type_vocab_size) {
            return Err(ModelError::Input(format!(
                "token type {id} outside the {} types",
                c.type_vocab_size
            )));
        }
        Ok(())
    }

    /// The word + token type + position embeddings of the token ids `ids` and token types
    /// `types` (both `(batch, seq)` int32), layer-normed: `(batch, seq, hidden)` in the model's
    /// dtype.
    fn embed(&self, ids: &Tensor, types: &Tensor) -> TensorResult<Tensor> {
        let (s, h) = (ids.shape()[1], self.config.hidden_size);
        let words = ids.embedding(&self.words)?.float();
        let types = types.embedding(&self.token_types)?.float();
        let positions = self.positions.shrink(&[(0, s), (0, h)])?.float();
        normalized(&self.embeddings_norm, &words.add(&types)?.add(&positions)?, self.dtype)
    }

    /// The last hidden states for the token ids `ids`, token types `types` (both `(batch, seq)`
    /// int32) and attention mask `mask` (`(batch, seq)` bool, true on real tokens), all on the
    /// device: `(batch, seq, hidden)` in the model's dtype. Nothing is checked or read back (see
    /// [`BertModel::forward`]): ids outside the vocabulary embed as zero rows, and a `seq` longer
    /// than the position table is a shape error.
    pub fn encode(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> TensorResult<Tensor> {
        let (b, s) = (ids.shape()[0] as isize, ids.shape()[1] as isize);
        let keys = mask.reshape(&[b, 1, 1, s])?;
        let mut x = self.embed(ids, types)?;
        for layer in &self.layers {
            x = layer.forward(&x, &keys, &self.config)?;
        }
        Ok(x)
    }

    /// The last hidden states of `batch`: `(batch, seq, hidden)` in the model's dtype (padding
    /// positions hold values too; pool with the mask).
    pub fn forward(&self, batch: &TokenBatch) -> Result<Tensor> {
        self.check(batch)?;
        let (ids, types, mask) = batch.tensors()?;
        Ok(self.encode(&ids, &types, &mask)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows of `x @ weight.T + bias` through `weight.T` itself.
    fn reference(x: &Tensor, weight: &Tensor, bias: &Tensor) -> Vec<f32> {
        x.linear(&weight.t().unwrap(), Some(bias)).unwrap().to_vec::<f32>().unwrap()
    }

    #[test]
    fn a_float32_layer_multiplies_large_inputs_by_its_column_copy_with_the_same_result() {
        let (weight, bias) = (Tensor::randn(&[6, 8], 1).unwrap(), Tensor::randn(&[6], 2).unwrap());
        let dense = Dense::new(weight.clone(), bias.clone()).unwrap();
        let columns = dense.columns.clone().expect("a float32 layer keeps the copy");
        for rows in [16, MIN_COPY_ROWS] {
            let x = Tensor::randn(&[rows, 8], 3).unwrap();
            let uses_copy = dense.weight_t(&x).unwrap().uop() == columns.uop();
            assert_eq!(uses_copy, rows >= MIN_COPY_ROWS, "{rows} rows");
            let (got, want) =
                (dense.forward(&x).unwrap().to_vec::<f32>().unwrap(), reference(&x, &weight, &bias));
            let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(worst <= 1e-5, "{rows} rows: off by {worst}");
        }
    }

    #[test]
    fn a_half_layer_keeps_a_copy_only_where_it_widens() {
        let half = |shape: &[usize], seed| Tensor::randn(shape, seed).unwrap().cast(DType::F16);
        let narrowing = Dense::new(half(&[6, 8], 1), half(&[6], 2)).unwrap();
        assert!(narrowing.columns.is_none());
        let square = Dense::new(half(&[8, 8], 1), half(&[8], 2)).unwrap();
        assert!(square.columns.is_none());
        let (weight, bias) = (half(&[12, 8], 1), half(&[12], 2));
        let widening = Dense::new(weight.clone(), bias.clone()).unwrap();
        let columns = widening.columns.clone().expect("a widening half layer keeps the copy");
        let x = half(&[MIN_COPY_ROWS, 8], 3);
        assert!(widening.weight_t(&x).unwrap().uop() == columns.uop());
        let got = widening.forward(&x).unwrap().float().to_vec::<f32>().unwrap();
        let want = x.linear(&weight.t().unwrap(), Some(&bias)).unwrap().float().to_vec::<f32>().unwrap();
        // the same sums, rounded once to half (a ulp is 1/256 near 4)
        let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(worst <= 1e-2, "off by {worst}");
    }
}
