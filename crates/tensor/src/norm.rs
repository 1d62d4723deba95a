//! Normalisations as tinygrad writes them: batch norm from given statistics (channels on
//! axis 1), group norm, RMS norm. Layer norm is a reduction (`reduce.rs`).

use crate::Tensor;
use crate::error::{Result, TensorError};

impl Tensor {
    /// `param`, one value per channel (axis 1) of this tensor, shaped `(1, C, 1, ..)` to
    /// broadcast against it.
    fn per_channel(&self, op: &'static str, param: &Tensor) -> Result<Tensor> {
        let channels = self.axis(op, 1, self.ndim()).map(|a| self.shape()[a])?;
        if param.shape() != [channels] {
            let why = format!("the per-channel parameter must have shape ({channels},)");
            return Err(TensorError::Shapes { op, lhs: self.operand(), rhs: param.operand(), why });
        }
        let mut shape = vec![1; self.ndim()];
        shape[1] = channels;
        Ok(param.reshape_to(&shape))
    }

    /// `x * weight + bias`, both per channel of this tensor and both optional.
    fn scale_shift(
        &self,
        op: &'static str,
        x: Tensor,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
    ) -> Result<Tensor> {
        let x = match weight {
            Some(w) => x.mul(self.per_channel(op, w)?)?,
            None => x,
        };
        match bias {
            Some(b) => x.add(self.per_channel(op, b)?),
            None => Ok(x),
        }
    }

    /// `(x - mean) * invstd * weight + bias`, each per channel (axis 1): batch norm with
    /// the statistics given (the batch's in training, running ones in evaluation).
    pub fn batchnorm(
        &self,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        mean: &Tensor,
        invstd: &Tensor,
    ) -> Result<Tensor> {
        let op = "batchnorm";
        let x = self.sub(self.per_channel(op, mean)?)?.mul(self.per_channel(op, invstd)?)?;
        self.scale_shift(op, x, weight, bias)
    }

    /// Each sample's channels (axis 1) split into `groups` groups, each normalised to zero
    /// mean and unit variance over its channels and positions, then scaled by `weight` and
    /// shifted by `bias` per channel.
    pub fn groupnorm(
        &self,
        groups: usize,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        let op = "groupnorm";
        let channels = self.axis(op, 1, self.ndim()).map(|a| self.shape()[a])?;
        if groups == 0 || !channels.is_multiple_of(groups) {
            let why = format!("{groups} groups do not divide the {channels} channels of {}", self.operand());
            return Err(TensorError::Argument { op, why });
        }
        let grouped =
            self.reshape_to(&[self.shape()[0], groups, self.numel() / (self.shape()[0] * groups).max(1)]);
        self.scale_shift(op, grouped.layernorm(-1, eps)?.reshape_to(self.shape()), weight, bias)
    }

    /// `x / sqrt(mean(x²) + eps)` over `axis`.
    pub fn rmsnorm(&self, axis: isize, eps: f64) -> Result<Tensor> {
        self.mul(self.square().mean(&[axis], true)?.add(eps)?.rsqrt())
    }

    /// `x` divided by its `p`-norm over `axis` (at least `eps`): PyTorch's
    /// `F.normalize`. `p = 0` counts the non-zero elements.
    pub fn normalize(&self, p: f64, axis: isize, eps: f64) -> Result<Tensor> {
        let norm = match p {
            0.0 => self.ne(0)?.sum(&[axis], true)?,
            1.0 => self.abs().sum(&[axis], true)?,
            // without `pow`, whose gradient at 0 is NaN
            2.0 => self.square().sum(&[axis], true)?.sqrt(),
            _ => self.abs().pow(p)?.sum(&[axis], true)?.pow(1.0 / p)?,
        };
        self.div(norm.maximum(eps)?)
    }
}
