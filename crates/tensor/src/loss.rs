//! Losses as tinygrad writes them, each the mean over the batch: cross entropies (integer
//! labels or probability targets, with label smoothing), binary cross entropies, the mean
//! squared error, and the negative log likelihood (with a [`Reduction`] of its choosing).

use crate::Tensor;
use crate::error::{Result, TensorError};

/// How a loss combines its per-item values (PyTorch's and tinygrad's `reduction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// Every item's loss, unreduced.
    None,
    /// Their sum.
    Sum,
    /// Their (weighted) mean.
    Mean,
}

impl Tensor {
    /// The mean over the other axes of `-sum(target * log_softmax(self))` along the class
    /// `axis`, the target smoothed towards the uniform distribution by `smoothing`.
    fn soft_crossentropy(
        &self,
        op: &'static str,
        axis: isize,
        target: &Tensor,
        smoothing: f64,
    ) -> Result<Tensor> {
        if !(0.0..=1.0).contains(&smoothing) {
            return Err(TensorError::Argument {
                op,
                why: format!("label_smoothing = {smoothing} must be in [0, 1]"),
            });
        }
        let classes = self.shape()[self.axis(op, axis, self.ndim())?];
        let target = target.mul(1.0 - smoothing)?.add(smoothing / classes as f64)?;
        Ok(self.log_softmax(axis)?.mul(&target)?.sum(&[axis], false)?.mean(&[], false)?.neg())
    }

    /// Cross entropy of the logits `self` (classes on the last axis) against the integer
    /// class `labels` (shaped as `self` without its last axis), averaged over the labels,
    /// with `label_smoothing` of the one-hot targets.
    pub fn sparse_categorical_crossentropy(&self, labels: &Tensor, label_smoothing: f64) -> Result<Tensor> {
        let op = "sparse_categorical_crossentropy";
        let batch = &self.shape()[..self.ndim().saturating_sub(1)];
        if self.ndim() == 0 || labels.shape() != batch {
            let why = "the labels' shape must be the logits' without the class axis".to_string();
            return Err(TensorError::Shapes { op, lhs: self.operand(), rhs: labels.operand(), why });
        }
        let one_hot = labels.one_hot_mask(op, self.shape()[self.ndim() - 1])?.cast(self.as_float().dtype());
        self.soft_crossentropy(op, -1, &one_hot, label_smoothing)
    }

    /// Cross entropy of the logits `self` (classes on axis 1) against the class
    /// probabilities `target_probs`, averaged over the other axes, with `label_smoothing`.
    pub fn cross_entropy(&self, target_probs: &Tensor, label_smoothing: f64) -> Result<Tensor> {
        self.soft_crossentropy("cross_entropy", 1, target_probs, label_smoothing)
    }

    /// The mean binary cross entropy of the probabilities `self` against `target`, each log
    /// clamped at -100 as PyTorch does (so a probability of 0 or 1 costs 100, not infinity).
    pub fn binary_crossentropy(&self, target: &Tensor) -> Result<Tensor> {
        let log_p = self.log().maximum(-100.0)?;
        let log_not_p = self.rsub(1.0)?.log().maximum(-100.0)?;
        let per_item = target.mul(log_p)?.add(target.rsub(1.0)?.mul(log_not_p)?)?;
        Ok(per_item.mean(&[], false)?.neg())
    }

    /// The mean binary cross entropy of `sigmoid(self)` against `target`, from the logits
    /// directly: `max(x, 0) - x * target + log(1 + e^-|x|)`.
    pub fn binary_crossentropy_logits(&self, target: &Tensor) -> Result<Tensor> {
        self.relu().sub(self.mul(target)?)?.add(self.abs().neg().softplus())?.mean(&[], false)
    }

    /// The mean squared error against `target`.
    pub fn mse(&self, target: &Tensor) -> Result<Tensor> {
        self.sub(target)?.square().mean(&[], false)
    }

    /// The negative log likelihood of the log-probabilities `self` (classes on axis 1:
    /// `(N, C)` or `(N, C, d..)`) at the int class `labels` (`(N)` or `(N, d..)`): each item
    /// `-self[n, label] * weight[label]`, items whose label is `ignore_index` left out; the
    /// mean divides by the summed weights of the items kept.
    pub fn nll_loss(
        &self,
        labels: &Tensor,
        weight: Option<&Tensor>,
        ignore_index: Option<i64>,
        reduction: Reduction,
    ) -> Result<Tensor> {
        let op = "nll_loss";
        let bad = |why: &str, rhs: &Tensor| TensorError::Shapes {
            op,
            lhs: self.operand(),
            rhs: rhs.operand(),
            why: why.to_string(),
        };
        let mut items = self.shape().to_vec();
        if self.ndim() < 2 || labels.shape() != [&items[..1], &items[2..]].concat() {
            return Err(bad("the labels' shape must be the input's without the class axis 1", labels));
        }
        if !labels.dtype().is_int() {
            return Err(TensorError::DType { op, lhs: self.operand(), rhs: labels.operand() });
        }
        let classes = items.remove(1);
        let weight = match weight {
            Some(w) if w.shape() != [classes] => {
                return Err(bad("the weight must have one value per class", w));
            }
            Some(w) => w.gather(0, &labels.flatten(0)?)?.reshape_to(labels.shape()),
            None => Tensor::constant(labels.shape(), 1.into(), self.as_float().dtype(), self.device()),
        };
        let weight = match ignore_index {
            Some(i) => weight.mul(labels.ne(i)?)?,
            None => weight,
        };
        let picked = self.gather(1, &labels.unsqueeze(1)?)?.squeeze(1)?;
        let nll = picked.neg().mul(&weight)?;
        match reduction {
            Reduction::None => Ok(nll),
            Reduction::Sum => nll.sum(&[], false),
            Reduction::Mean => nll.sum(&[], false)?.div(weight.sum(&[], false)?),
        }
    }
}
