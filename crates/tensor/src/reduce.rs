//! Reductions over axes (an empty axis list means every axis), and what tinygrad builds
//! from them: product, mean, variance, softmax, logsumexp, argmax. (Cumulative scans are in
//! `scan.rs`.)

use wgrad_dtype::{DType, sum_acc_dtype};
use wgrad_engine::lazy;
use wgrad_ops::Ops;

use crate::Tensor;
use crate::error::{Result, TensorError};

impl Tensor {
    /// The reduced axes (all when `axes` is empty), sorted; an axis named twice (also as
    /// `1` and `-1` of two dims) is an error, as in PyTorch.
    fn reduce_axes(&self, op: &'static str, axes: &[isize]) -> Result<Vec<usize>> {
        if axes.is_empty() {
            return Ok((0..self.ndim()).collect());
        }
        let mut out: Vec<usize> = Vec::with_capacity(axes.len());
        for &axis in axes {
            let a = self.axis(op, axis, self.ndim())?;
            if out.contains(&a) {
                return Err(TensorError::RepeatedAxis { op, axis, operand: self.operand() });
            }
            out.push(a);
        }
        out.sort_unstable();
        Ok(out)
    }

    /// `op` over `axes`, keeping them as size 1 if `keepdim`.
    pub(crate) fn reduce(
        &self,
        op: Ops,
        name: &'static str,
        axes: &[isize],
        keepdim: bool,
    ) -> Result<Tensor> {
        let axes = self.reduce_axes(name, axes)?;
        let kept: Vec<usize> =
            self.shape().iter().enumerate().map(|(i, &s)| if axes.contains(&i) { 1 } else { s }).collect();
        let reduced = match axes.iter().all(|&a| self.shape()[a] == 1) {
            true => self.reshape_to(&kept),
            false => self.with(lazy::reduce(&self.uop(), op, &axes), kept.clone()),
        };
        let dropped: Vec<usize> =
            kept.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &s)| s).collect();
        Ok(if keepdim { reduced } else { reduced.reshape_to(&dropped) })
    }

    /// The number of elements each output of a reduction over `axes` combines.
    fn reduced_count(&self, axes: &[isize]) -> Result<usize> {
        Ok(self.reduce_axes("count", axes)?.iter().map(|&a| self.shape()[a]).product())
    }

    /// The sum over `axes`; integers and bools sum as int32 or wider, halves in float32 and
    /// back.
    pub fn sum(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        let acc = sum_acc_dtype(self.dtype());
        let out = self.cast(acc).reduce(Ops::Add, "sum", axes, keepdim)?;
        Ok(if matches!(self.dtype(), DType::F16 | DType::BF16) { out.cast(self.dtype()) } else { out })
    }

    /// The product over `axes`, in this tensor's dtype (as tinygrad; PyTorch widens integers
    /// to int64). Its gradient is right with zeros among the factors.
    pub fn prod(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(Ops::Mul, "prod", axes, keepdim)
    }

    /// The maximum over `axes`.
    pub fn max(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(Ops::Max, "max", axes, keepdim)
    }

    /// The minimum over `axes`: the maximum of the values in reverse order (`-x` for floats,
    /// `!x` for integers and bools, which cannot overflow as `-i32::MIN` would), as tinygrad.
    pub fn min(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        Ok(self.inverse().reduce(Ops::Max, "min", axes, keepdim)?.inverse())
    }

    /// The mean over `axes` (in float32 for integer inputs); NaN over an empty axis.
    pub fn mean(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        let n = self.reduced_count(axes)?;
        self.as_float().sum(axes, keepdim)?.div(n as f64)
    }

    /// The variance over `axes`, dividing by `count - correction`.
    pub fn var(&self, axes: &[isize], keepdim: bool, correction: usize) -> Result<Tensor> {
        let centered = self.sub(&self.mean(axes, true)?)?;
        let n = self.reduced_count(axes)?.saturating_sub(correction);
        centered.square().sum(axes, keepdim)?.div(n as f64)
    }

    /// The standard deviation over `axes`.
    pub fn std(&self, axes: &[isize], keepdim: bool, correction: usize) -> Result<Tensor> {
        Ok(self.var(axes, keepdim, correction)?.sqrt())
    }

    /// The variance and the mean over `axes` (see [`Tensor::var`]).
    pub fn var_mean(&self, axes: &[isize], keepdim: bool, correction: usize) -> Result<(Tensor, Tensor)> {
        Ok((self.var(axes, keepdim, correction)?, self.mean(axes, keepdim)?))
    }

    /// The standard deviation and the mean over `axes` (see [`Tensor::std`]).
    pub fn std_mean(&self, axes: &[isize], keepdim: bool, correction: usize) -> Result<(Tensor, Tensor)> {
        Ok((self.std(axes, keepdim, correction)?, self.mean(axes, keepdim)?))
    }

    /// `log(sum(e^(x - m))) + m` along `axis` (kept), `m` the detached max: the gradient is
    /// the softmax's, and one kernel computes it (the max is a reduce nested in the sum's,
    /// over the same row), so a softmax reads its input twice, not three times; where the
    /// device reduces short rows in place (wgpu, rows of up to 1024), the softmax's own kernel
    /// computes it and reads its input once.
    fn logsumexp_kept(&self, axis: isize) -> Result<Tensor> {
        let m = self.max(&[axis], true)?.detach();
        self.sub(&m)?.exp().sum(&[axis], true)?.log().add(&m)
    }

    /// `e^x / sum(e^x)` along `axis`, computed as `e / sum(e)` with `e = e^(x - m)`, `m` the
    /// detached max (as tinygrad): one exponential an element, and where the device reduces
    /// short rows in place, one kernel that reads its input once.
    pub fn softmax(&self, axis: isize) -> Result<Tensor> {
        let x = self.as_float();
        let e = x.sub(x.max(&[axis], true)?.detach())?.exp();
        e.div(&e.sum(&[axis], true)?)
    }

    /// `softmax(-x)` along `axis`.
    pub fn softmin(&self, axis: isize) -> Result<Tensor> {
        self.as_float().neg().softmax(axis)
    }

    /// `log(softmax(x))` along `axis`: `x - logsumexp(x)`.
    pub fn log_softmax(&self, axis: isize) -> Result<Tensor> {
        let x = self.as_float();
        x.sub(x.logsumexp_kept(axis)?)
    }

    /// `log(sum(e^x))` over `axis`, computed stably.
    pub fn logsumexp(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        let lse = self.as_float().logsumexp_kept(axis)?;
        if keepdim { Ok(lse) } else { lse.squeeze(axis) }
    }

    /// Whether any element over `axes` is true (non-zero).
    pub fn any(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        self.cast(DType::BOOL).max(axes, keepdim)
    }

    /// Whether every element over `axes` is true (non-zero).
    pub fn all(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        Ok(self.logical_not().any(axes, keepdim)?.logical_not())
    }

    /// The index of the first maximum along `axis`, as int32; a NaN counts as the maximum
    /// (as in PyTorch), and an empty axis is an error.
    pub fn argmax(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        let a = self.axis("argmax", axis, self.ndim())?;
        let n = self.shape()[a];
        if n == 0 {
            return Err(TensorError::EmptyAxis { op: "argmax", axis, operand: self.operand() });
        }
        // max propagates NaN: where it is NaN, the NaNs are the maxima
        let is_max = match self.dtype().is_float() {
            true => self.eq(&self.max(&[axis], true)?)?.bitwise_or(self.isnan())?,
            false => self.eq(&self.max(&[axis], true)?)?,
        };
        let mut shape = vec![1; self.ndim()];
        shape[a] = n;
        // n, n-1, .., 1 along the axis: the first maximum has the largest value
        let countdown = Tensor::arange_with(n as f64, 0.0, -1.0, DType::I32)?.reshape_to(&shape);
        let picked = is_max.cast(DType::I32).mul(&countdown)?.max(&[axis], keepdim)?;
        picked.rsub(n as i64)
    }
}

impl Tensor {
    /// `(x - mean) / sqrt(var + eps)` over the last `axis` (tinygrad's `layernorm`).
    pub fn layernorm(&self, axis: isize, eps: f64) -> Result<Tensor> {
        let y = self.sub(&self.mean(&[axis], true)?)?;
        y.mul(y.square().mean(&[axis], true)?.add(eps)?.rsqrt())
    }
}
