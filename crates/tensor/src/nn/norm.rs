//! Normalization layers: `BatchNorm` (with running statistics), `LayerNorm`, `LayerNorm2d`,
//! `GroupNorm`, `InstanceNorm` and `RMSNorm`, over the normalizations of `norm.rs`.

use wgrad_dtype::DType;

use crate::error::{Result, TensorError};
use crate::mode::is_training;
use crate::nn::{Module, trainable};
use crate::{Tensor, no_grad};

/// Trainable float32 `value`s of `shape`.
fn filled(shape: &[usize], value: f32) -> Result<Tensor> {
    trainable(Tensor::full(shape, value)?)
}

/// `(ones, zeros)` of `shape`, trainable: an identity affine transform.
fn affine(shape: &[usize]) -> Result<(Option<Tensor>, Option<Tensor>)> {
    Ok((Some(filled(shape, 1.0)?), Some(filled(shape, 0.0)?)))
}

/// Batch normalization over the channels of axis 1 (`BatchNorm2d` for 4-d inputs), as
/// PyTorch and tinygrad: in training mode ([`crate::training`]) each batch is normalized
/// by its own mean and (biased) variance and the running statistics move towards them
/// (the variance unbiased) by `momentum`; otherwise the running statistics normalize.
#[derive(Clone, Debug, Module)]
pub struct BatchNorm {
    /// Per-channel scale `(channels,)`, ones; `None` for no affine transform.
    pub weight: Option<Tensor>,
    /// Per-channel shift `(channels,)`, zeros; `None` for no affine transform.
    pub bias: Option<Tensor>,
    /// Running mean `(channels,)`, zeros at first.
    pub running_mean: Tensor,
    /// Running variance `(channels,)`, ones at first.
    pub running_var: Tensor,
    /// Training batches seen, an int32 scalar (PyTorch's shape, not its int64).
    pub num_batches_tracked: Tensor,
    /// Added to the variance before the square root.
    pub eps: f64,
    /// Weight of each batch in the running statistics.
    pub momentum: f64,
    /// Whether training updates the running statistics.
    pub track_running_stats: bool,
}

impl BatchNorm {
    /// A layer over `channels` channels, `eps = 1e-5`, `momentum = 0.1`, affine, tracking
    /// running statistics.
    pub fn new(channels: usize) -> Result<BatchNorm> {
        let (weight, bias) = affine(&[channels])?;
        // running statistics are written in place: each in a buffer of its own
        let stat = |t: Tensor| t.own_buffer().map(|()| t);
        Ok(BatchNorm {
            weight,
            bias,
            running_mean: stat(Tensor::zeros(&[channels], DType::F32)?)?,
            running_var: stat(Tensor::ones(&[channels], DType::F32)?)?,
            num_batches_tracked: stat(Tensor::zeros(&[], DType::I32)?)?,
            eps: 1e-5,
            momentum: 0.1,
            track_running_stats: true,
        })
    }

    /// `x` `(batch, channels, ...)` normalized per channel (with the batch's statistics in
    /// training mode, which also updates the running ones, lazily: they are realized with
    /// the next schedule that includes them, such as an optimizer step).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.ndim() < 2 || x.shape()[1] != self.running_mean.numel() {
            let arg = format!("{} channels on axis 1", self.running_mean.numel());
            return Err(TensorError::Movement { op: "BatchNorm", arg, operand: x.operand() });
        }
        let (weight, bias) = (self.weight.as_ref(), self.bias.as_ref());
        if !is_training() {
            let invstd = self.running_var.add(self.eps)?.rsqrt();
            return x.batchnorm(weight, bias, &self.running_mean, &invstd);
        }
        let axes: Vec<isize> = (0..x.ndim() as isize).filter(|&a| a != 1).collect();
        let per_channel = x.numel() / x.shape()[1];
        if per_channel < 2 {
            let why = format!("training needs more than one value per channel, got {}", x.operand());
            return Err(TensorError::Argument { op: "BatchNorm", why });
        }
        let mean = x.mean(&axes, false)?;
        let centered = x.sub(mean.reshape(&stat_shape(x))?)?;
        let var = centered.square().mean(&axes, false)?;
        if self.track_running_stats {
            let unbiased = per_channel as f64 / (per_channel - 1) as f64;
            no_grad(|| self.track(&mean.detach(), &var.detach().mul(unbiased)?))?;
        }
        x.batchnorm(weight, bias, &mean, &var.add(self.eps)?.rsqrt())
    }

    /// Moves the running statistics towards the batch's `mean` and `var` by `momentum`.
    fn track(&self, mean: &Tensor, var: &Tensor) -> Result<()> {
        let towards = |running: &Tensor, batch: &Tensor| -> Result<Tensor> {
            running.mul(1.0 - self.momentum)?.add(batch.mul(self.momentum)?)
        };
        self.running_mean.assign(&towards(&self.running_mean, mean)?)?;
        self.running_var.assign(&towards(&self.running_var, var)?)?;
        self.num_batches_tracked.assign(&self.num_batches_tracked.add(1)?)?;
        Ok(())
    }
}

/// `(1, channels, 1, ..)` for `x`: per-channel statistics broadcast against it.
fn stat_shape(x: &Tensor) -> Vec<isize> {
    (0..x.ndim()).map(|a| if a == 1 { -1 } else { 1 }).collect()
}

/// Layer normalization over the last dims (`normalized_shape`), then `x * weight + bias`.
#[derive(Clone, Debug, Module)]
pub struct LayerNorm {
    /// The trailing dims normalized together.
    pub normalized_shape: Vec<usize>,
    /// Scale of `normalized_shape`, ones; `None` for no affine transform.
    pub weight: Option<Tensor>,
    /// Shift of `normalized_shape`, zeros; `None` for no affine transform.
    pub bias: Option<Tensor>,
    /// Added to the variance before the square root.
    pub eps: f64,
}

impl LayerNorm {
    /// A layer normalizing the trailing dims `normalized_shape`, `eps = 1e-5`, affine.
    pub fn new(normalized_shape: &[usize]) -> Result<LayerNorm> {
        let (weight, bias) = affine(normalized_shape)?;
        Ok(LayerNorm { normalized_shape: normalized_shape.to_vec(), weight, bias, eps: 1e-5 })
    }

    /// `x` normalized over its trailing `normalized_shape` dims, scaled and shifted.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let lead = x.ndim().checked_sub(self.normalized_shape.len());
        let Some(lead) = lead.filter(|&l| x.shape()[l..] == self.normalized_shape[..]) else {
            let arg = format!("normalized shape {}", crate::error::dims(&self.normalized_shape));
            return Err(TensorError::Movement { op: "LayerNorm", arg, operand: x.operand() });
        };
        let mut flat: Vec<isize> = x.shape()[..lead].iter().map(|&d| d as isize).collect();
        flat.push(-1);
        let shape: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
        let y = x.reshape(&flat)?.layernorm(-1, self.eps)?.reshape(&shape)?;
        scale_shift(y, self.weight.as_ref(), self.bias.as_ref())
    }
}

/// Layer normalization over the channels (axis 1) of `(batch, channels, h, w)` images at
/// each position, as tinygrad's `LayerNorm2d`: a [`LayerNorm`] over the channels-last view.
/// Its state is the inner layer's (`weight`, `bias`).
#[derive(Clone, Debug, Module)]
pub struct LayerNorm2d(pub LayerNorm);

impl LayerNorm2d {
    /// A layer over `channels` channels, `eps = 1e-5`, affine.
    pub fn new(channels: usize) -> Result<LayerNorm2d> {
        LayerNorm::new(&[channels]).map(LayerNorm2d)
    }

    /// `x` `(batch, channels, h, w)` normalized over its channels at each position.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.ndim() != 4 {
            let arg = "(batch, channels, h, w)".to_string();
            return Err(TensorError::Movement { op: "LayerNorm2d", arg, operand: x.operand() });
        }
        self.0.forward(&x.permute(&[0, 2, 3, 1])?)?.permute(&[0, 3, 1, 2])
    }
}

/// `y * weight + bias`, each only if present.
fn scale_shift(y: Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>) -> Result<Tensor> {
    let y = match weight {
        Some(w) => y.mul(w)?,
        None => y,
    };
    match bias {
        Some(b) => y.add(b),
        None => Ok(y),
    }
}

/// Group normalization: the channels of axis 1 split into `groups`, each group normalized
/// over its channels and the spatial dims, then scaled and shifted per channel.
#[derive(Clone, Debug, Module)]
pub struct GroupNorm {
    /// Number of channel groups.
    pub groups: usize,
    /// Per-channel scale `(channels,)`, ones; `None` for no affine transform.
    pub weight: Option<Tensor>,
    /// Per-channel shift `(channels,)`, zeros; `None` for no affine transform.
    pub bias: Option<Tensor>,
    /// Added to the variance before the square root.
    pub eps: f64,
}

impl GroupNorm {
    /// A layer over `channels` channels in `groups` groups (which must divide them),
    /// `eps = 1e-5`, affine.
    pub fn new(groups: usize, channels: usize) -> Result<GroupNorm> {
        if groups == 0 || !channels.is_multiple_of(groups) {
            let why = format!("groups = {groups} must divide channels = {channels}");
            return Err(TensorError::Argument { op: "GroupNorm", why });
        }
        let (weight, bias) = affine(&[channels])?;
        Ok(GroupNorm { groups, weight, bias, eps: 1e-5 })
    }

    /// `x` `(batch, channels, ...)` normalized per group, scaled and shifted per channel.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.groupnorm(self.groups, self.weight.as_ref(), self.bias.as_ref(), self.eps)
    }
}

/// Instance normalization: each channel of each sample normalized over its positions, then
/// scaled and shifted per channel (group normalization with a group per channel). Affine
/// by default, as tinygrad has it (PyTorch's `InstanceNorm2d` is not affine by default and
/// can track running statistics; this layer never does).
#[derive(Clone, Debug, Module)]
pub struct InstanceNorm {
    /// Number of channels (axis 1).
    pub num_features: usize,
    /// Per-channel scale `(channels,)`, ones; `None` for no affine transform.
    pub weight: Option<Tensor>,
    /// Per-channel shift `(channels,)`, zeros; `None` for no affine transform.
    pub bias: Option<Tensor>,
    /// Added to the variance before the square root.
    pub eps: f64,
}

impl InstanceNorm {
    /// A layer over `num_features` channels, `eps = 1e-5`, affine.
    pub fn new(num_features: usize) -> Result<InstanceNorm> {
        let (weight, bias) = affine(&[num_features])?;
        Ok(InstanceNorm { num_features, weight, bias, eps: 1e-5 })
    }

    /// `x` `(batch, channels, ...)` normalized per sample and channel, scaled and shifted.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.ndim() < 2 || x.shape()[1] != self.num_features {
            let arg = format!("{} channels on axis 1", self.num_features);
            return Err(TensorError::Movement { op: "InstanceNorm", arg, operand: x.operand() });
        }
        x.groupnorm(self.num_features, self.weight.as_ref(), self.bias.as_ref(), self.eps)
    }
}

/// Root-mean-square normalization over the last axis, then `x * weight`.
#[derive(Clone, Debug, Module)]
pub struct RMSNorm {
    /// Scale `(dim,)`, ones; `None` for no scale.
    pub weight: Option<Tensor>,
    /// Added to the mean square before the square root.
    pub eps: f64,
}

impl RMSNorm {
    /// A layer over a last axis of `dim`, `eps = 1e-6`, with a scale.
    pub fn new(dim: usize) -> Result<RMSNorm> {
        Ok(RMSNorm { weight: Some(filled(&[dim], 1.0)?), eps: 1e-6 })
    }

    /// `x` divided by the root mean square of its last axis, scaled.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        scale_shift(x.rmsnorm(-1, self.eps)?, self.weight.as_ref(), None)
    }
}
