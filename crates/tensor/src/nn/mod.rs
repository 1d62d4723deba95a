//! Neural-network layers as tinygrad's `nn` has them, their state by name, and safetensors
//! files.
//!
//! A layer holds its tensors in public fields named as in tinygrad and PyTorch (`weight`,
//! `bias`, `running_mean`, ...) and is called with `forward`. Trainable tensors require
//! grad from the start; running statistics do not. Every constructor takes a `seed`: the
//! same seed gives the same initial weights on every device.
//!
//! [`Module`] lists a layer's tensors by name: [`Module::state_dict`] and
//! [`Module::load_state_dict`] build on it, and a model of several layers implements it by
//! chaining its layers' [`Module::named_tensors`] through [`prefixed`]. [`safe_save`] and
//! [`safe_load`] write and read such dicts as safetensors files.

mod conv;
mod embedding;
mod linear;
mod norm;
mod safetensors;

pub use indexmap::IndexMap;

use crate::Tensor;
use crate::error::{Result, TensorError};

pub use conv::{Conv1d, Conv2d, ConvTranspose2d};
pub use embedding::Embedding;
pub use linear::Linear;
pub use norm::{BatchNorm, GroupNorm, LayerNorm, RMSNorm};
pub use safetensors::{safe_load, safe_save};

/// Something with named state tensors: a layer or a model of layers.
pub trait Module {
    /// Every state tensor under its state-dict name, in a fixed order: the trainable ones
    /// (which require grad) and buffers such as running statistics (which do not).
    fn named_tensors(&self) -> Vec<(String, Tensor)>;

    /// Every state tensor, as tinygrad's `get_parameters`: give them all to an optimizer,
    /// which updates those that require grad and realizes the others with each step.
    fn parameters(&self) -> Vec<Tensor> {
        self.named_tensors().into_iter().map(|(_, t)| t).collect()
    }

    /// The state tensors by name (sharing the layer's tensors, not copies).
    fn state_dict(&self) -> IndexMap<String, Tensor> {
        self.named_tensors().into_iter().collect()
    }

    /// Writes the tensor of the same name in `state` into each state tensor (moved to its
    /// device and cast to its dtype), in place, so optimizers holding the tensors see the
    /// new values; all of them are realized together. Names `state` has and the model
    /// does not are ignored; a missing name or a different shape is an error, and then
    /// nothing is written.
    fn load_state_dict(&mut self, state: &IndexMap<String, Tensor>) -> Result<()> {
        let mut writes = vec![];
        for (key, target) in self.named_tensors() {
            let value = state.get(&key).ok_or_else(|| TensorError::MissingState { key: key.clone() })?;
            if value.shape() != target.shape() {
                let (expected, given) = (target.shape().to_vec(), value.shape().to_vec());
                return Err(TensorError::StateShape { key, expected, given });
            }
            let value = value.to(target.device()).cast(target.dtype());
            writes.push((target, value));
        }
        for (target, value) in &writes {
            target.assign(value)?;
        }
        Tensor::realize_all(&writes.iter().map(|(t, _)| t).collect::<Vec<_>>())
    }
}

/// `module`'s named tensors with `prefix.` before each name, for a model's
/// [`Module::named_tensors`]: `prefixed("l1", &self.l1)` gives `l1.weight`, `l1.bias`.
pub fn prefixed(prefix: &str, module: &impl Module) -> Vec<(String, Tensor)> {
    module.named_tensors().into_iter().map(|(name, t)| (format!("{prefix}.{name}"), t)).collect()
}

/// The seed of random stream `stream` of a layer built with `seed` (SplitMix64 of both):
/// a layer's weight and bias, and layers built with neighbouring seeds, draw unrelated
/// numbers.
fn subseed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `weight` then `bias` (if any), by name: the state of most layers.
fn weight_and_bias(weight: &Tensor, bias: Option<&Tensor>) -> Vec<(String, Tensor)> {
    let bias = bias.map(|b| ("bias".to_string(), b.clone()));
    std::iter::once(("weight".to_string(), weight.clone())).chain(bias).collect()
}

/// A trainable tensor: `t` in a buffer of its own, requiring grad.
fn trainable(t: Tensor) -> Result<Tensor> {
    t.set_requires_grad(true)?;
    Ok(t)
}

/// The uniform bias tinygrad gives Linear and Conv layers: `U(-1/sqrt(fan_in), 1/sqrt(fan_in))`
/// of `size` values, from `seed`'s second stream.
fn uniform_bias(size: usize, fan_in: usize, seed: u64) -> Result<Tensor> {
    let bound = 1.0 / (fan_in as f64).sqrt();
    trainable(Tensor::uniform(&[size], -bound, bound, subseed(seed, 1))?)
}

/// Kaiming-uniform weights with `a = sqrt(5)`, as tinygrad's Linear and Conv layers, from
/// `seed`'s first stream.
fn kaiming_weight(shape: &[usize], seed: u64) -> Result<Tensor> {
    trainable(Tensor::kaiming_uniform(shape, 5f64.sqrt(), subseed(seed, 0))?)
}
