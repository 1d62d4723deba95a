//! Neural-network layers as tinygrad's `nn` has them, their state by name, and state files.
//!
//! A layer holds its tensors in public fields named as in tinygrad and PyTorch (`weight`,
//! `bias`, `running_mean`, ...) and is called with `forward`. Trainable tensors require
//! grad from the start; running statistics do not. Every constructor takes a `seed`: the
//! same seed gives the same initial weights on every device.
//!
//! [`Module`] lists a layer's tensors by name: [`Module::state_dict`] and
//! [`Module::load_state_dict`] build on it. A model implements it with
//! `#[derive(Module)]`, which names each tensor by its path through the model's fields, as
//! tinygrad's `get_state_dict` does. [`state`] reads and writes such dicts: safetensors
//! files, PyTorch checkpoints and GGUF files.

mod conv;
mod embedding;
mod linear;
mod lstm;
mod norm;
pub mod state;

use std::collections::BTreeMap;

pub use indexmap::IndexMap;

use crate::Tensor;
use crate::error::{Result, TensorError};

pub use conv::{Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d};
pub use embedding::Embedding;
pub use linear::Linear;
pub use lstm::LSTMCell;
pub use norm::{BatchNorm, GroupNorm, InstanceNorm, LayerNorm, LayerNorm2d, RMSNorm};
pub use state::{get_parameters, get_state_dict, gguf_load, safe_load, safe_save, torch_load};
/// `#[derive(Module)]`: the [`Module`] of a struct or enum from its fields (see [`Module`]).
pub use wgrad_derive::Module;

/// Something with named state tensors: a layer or a model of layers.
///
/// `#[derive(Module)]` implements it from the fields, in declaration order: a field's state
/// tensors are named `field.name` (`fc.weight`), a `Tensor` field is named after the field
/// itself, `Vec`s, slices and arrays number their items (`layers.0.weight`), `IndexMap` and
/// `BTreeMap` use their keys, `Option` and `Box` are transparent, as is the single field of a
/// tuple struct or enum variant (so a `Vec` of an enum of layers is tinygrad's list of layers,
/// stateless entries included in the numbering). Fields of plain-data types (numbers,
/// `bool`, `String`, and `Vec`s, arrays, `Option`s and tuples of them) are skipped; mark any
/// other field that holds no state `#[module(skip)]`, and use `#[module(rename = "name")]`
/// for a state name that is not the field's.
///
/// ```
/// use wgrad_tensor::nn::{BatchNorm, Linear, Module};
/// use wgrad_tensor::{Tensor, Result};
///
/// #[derive(Module)]
/// enum Layer {
///     Linear(Linear),
///     Norm(BatchNorm),
///     Relu,
/// }
///
/// #[derive(Module)]
/// struct Model {
///     layers: Vec<Layer>,
///     scale: Tensor,
///     #[module(rename = "out")]
///     head: Option<Linear>,
///     eps: f64,
/// }
///
/// # fn main() -> Result<()> {
/// let model = Model {
///     layers: vec![Layer::Linear(Linear::new(4, 3, true, 0)?), Layer::Relu, Layer::Norm(BatchNorm::new(3)?)],
///     scale: Tensor::ones(&[3], wgrad_tensor::DType::F32)?,
///     head: Some(Linear::new(3, 2, false, 1)?),
///     eps: 1e-5,
/// };
/// let names: Vec<String> = model.state_dict().into_keys().collect();
/// assert_eq!(names, [
///     "layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias",
///     "layers.2.running_mean", "layers.2.running_var", "layers.2.num_batches_tracked",
///     "scale", "out.weight",
/// ]);
/// # Ok(()) }
/// ```
///
/// A field that is neither state nor plain data must be marked:
///
/// ```compile_fail,E0277
/// use wgrad_tensor::ConvOpts;
/// use wgrad_tensor::nn::{Conv2d, Module};
///
/// #[derive(Module)]
/// struct Model {
///     conv: Conv2d,
///     opts: ConvOpts, // error: ConvOpts is not a Module; needs #[module(skip)]
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` holds no named state tensors (it is not a `Module`)",
    note = "mark a field that holds no tensors `#[module(skip)]`, or derive `Module` for its type"
)]
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

/// A tensor is its own state, under the name its owner gives it.
impl Module for Tensor {
    fn named_tensors(&self) -> Vec<(String, Tensor)> {
        vec![(String::new(), self.clone())]
    }
}

/// The state of the value, if there is one.
impl<M: Module> Module for Option<M> {
    fn named_tensors(&self) -> Vec<(String, Tensor)> {
        self.iter().flat_map(M::named_tensors).collect()
    }
}

/// The state of the boxed value.
impl<M: Module + ?Sized> Module for Box<M> {
    fn named_tensors(&self) -> Vec<(String, Tensor)> {
        (**self).named_tensors()
    }
}

/// Each item's state under its index: `0.weight`, `1.weight`.
impl<M: Module> Module for [M] {
    fn named_tensors(&self) -> Vec<(String, Tensor)> {
        self.iter().enumerate().flat_map(|(i, m)| prefixed(&i.to_string(), m)).collect()
    }
}

/// Each item's state under its index.
impl<M: Module, const N: usize> Module for [M; N] {
    fn named_tensors(&self) -> Vec<(String, Tensor)> {
        self.as_slice().named_tensors()
    }
}

/// Each item's state under its index.
impl<M: Module> Module for Vec<M> {
    fn named_tensors(&self) -> Vec<(String, Tensor)> {
        self.as_slice().named_tensors()
    }
}

/// Each value's state under its key, in insertion order.
impl<M: Module> Module for IndexMap<String, M> {
    fn named_tensors(&self) -> Vec<(String, Tensor)> {
        self.iter().flat_map(|(k, m)| prefixed(k, m)).collect()
    }
}

/// Each value's state under its key, in key order.
impl<M: Module> Module for BTreeMap<String, M> {
    fn named_tensors(&self) -> Vec<(String, Tensor)> {
        self.iter().flat_map(|(k, m)| prefixed(k, m)).collect()
    }
}

/// `module`'s named tensors with `prefix.` before each name (`prefixed("l1", &self.l1)`
/// gives `l1.weight`, `l1.bias`), and a tensor's own under `prefix`: what
/// `#[derive(Module)]` calls for each field.
pub fn prefixed(prefix: &str, module: &(impl Module + ?Sized)) -> Vec<(String, Tensor)> {
    let name = |n: String| if n.is_empty() { prefix.to_string() } else { format!("{prefix}.{n}") };
    module.named_tensors().into_iter().map(|(n, t)| (name(n), t)).collect()
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
