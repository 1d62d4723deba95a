//! Sorting as a bitonic network of tensor ops (tinygrad's `sort`): values and their
//! indices travel together through `log2(n) (log2(n) + 1) / 2` compare-exchange steps, each
//! one fused kernel per tensor, so it stays on the device and its gradient flows back
//! through the selections. Stable: equal values keep their order, and NaN sorts as the
//! largest value (as PyTorch does).

use wgrad_dtype::DType;

use crate::error::{Result, TensorError, ok};
use crate::{Tensor, with_default_device};

/// A line of values being sorted, with the original index of each (int32).
struct Keyed {
    values: Tensor,
    index: Tensor,
}

impl Keyed {
    /// Whether `self` (value, index) goes before `other`, elementwise: not padding before
    /// padding (an index of `n` or more), then by value (NaN largest), then by index.
    fn first(&self, other: &Keyed, n: usize, descending: bool) -> Tensor {
        let less = |a: &Tensor, b: &Tensor| -> Tensor {
            let (a, b) = if descending { (b, a) } else { (a, b) };
            let lt = ok(a.lt(b));
            match a.dtype().is_float() {
                true => ok(lt.bitwise_or(ok(a.isnan().logical_not().bitwise_and(b.isnan())))),
                false => lt,
            }
        };
        let (a, b) = (&self.values, &other.values);
        let by_value =
            ok(less(a, b)
                .bitwise_or(ok(less(b, a).logical_not().bitwise_and(ok(self.index.lt(&other.index))))));
        let (real_a, real_b) = (ok(self.index.lt(n as i64)), ok(other.index.lt(n as i64)));
        let same_kind = ok(real_a.eq(&real_b));
        ok(ok(real_a.bitwise_and(real_b.logical_not())).bitwise_or(ok(same_kind.bitwise_and(by_value))))
    }

    /// The pair in order: the one that goes first in `top`, the other in `bottom`.
    fn exchange(top: &Keyed, bottom: &Keyed, n: usize, descending: bool) -> (Keyed, Keyed) {
        let keep = top.first(bottom, n, descending);
        let pick = |a: &Tensor, b: &Tensor| ok(keep.where_(a, b));
        let first =
            Keyed { values: pick(&top.values, &bottom.values), index: pick(&top.index, &bottom.index) };
        let second =
            Keyed { values: pick(&bottom.values, &top.values), index: pick(&bottom.index, &top.index) };
        (first, second)
    }

    /// Both tensors through `f`.
    fn map(&self, f: impl Fn(&Tensor) -> Tensor) -> Keyed {
        Keyed { values: f(&self.values), index: f(&self.index) }
    }
}

/// One compare-exchange step over the last dim (of `len`, a power of two): the elements in
/// groups of `2 * half`, the first half of each compared with the second half, mirrored when
/// `mirror` (position `p` with `2 * half - 1 - p`), else in order (`p` with `p + half`).
fn step(x: &Keyed, half: usize, mirror: bool, n: usize, descending: bool) -> Keyed {
    let shape = x.values.shape().to_vec();
    let (lead, len) = (&shape[..shape.len() - 1], shape[shape.len() - 1]);
    let grouped = [lead, &[len / (2 * half), 2, half]].concat();
    let part = |t: &Tensor, k: usize| {
        let mut cut: Vec<(usize, usize)> = grouped.iter().map(|&d| (0, d)).collect();
        cut[lead.len() + 1] = (k, k + 1);
        let p = ok(t.reshape_to(&grouped).shrink(&cut));
        if mirror && k == 1 { ok(p.flip(&[-1])) } else { p }
    };
    let top = x.map(|t| part(t, 0));
    let bottom = x.map(|t| part(t, 1));
    let (first, second) = Keyed::exchange(&top, &bottom, n, descending);
    let second = if mirror { second.map(|t| ok(t.flip(&[-1]))) } else { second };
    // each step realized, forward and backward: every step reads the one before twice
    let join = |a: &Tensor, b: &Tensor| {
        ok(Tensor::cat(&[a, b], lead.len() as isize + 1))
            .reshape_to(&shape)
            .contiguous()
            .contiguous_backward()
    };
    Keyed { values: join(&first.values, &second.values), index: join(&first.index, &second.index) }
}

impl Tensor {
    /// The values sorted along `axis` (ascending, or descending), and the int32 index each
    /// came from. Stable: equal values keep their order; NaN sorts as the largest value.
    /// Gradients flow to the values' original places.
    pub fn sort(&self, axis: isize, descending: bool) -> Result<(Tensor, Tensor)> {
        let a = self.axis("sort", axis, self.ndim().max(1))?;
        if self.ndim() == 0 || self.shape()[a] <= 1 {
            return Ok((self.clone(), Tensor::constant(self.shape(), 0.into(), DType::I32, self.device())));
        }
        let n = self.shape()[a];
        let len = n.next_power_of_two();
        let moved = self.transpose(a as isize, -1)?;
        let mut pads = vec![(0, 0); self.ndim()];
        pads[self.ndim() - 1] = (0, len - n);
        let values = moved.pad(&pads)?;
        let index = with_default_device(self.device(), || Tensor::arange(len))?.broadcast_to(values.shape());
        let mut x = Keyed { values, index };
        // stage s merges sorted runs of 2^(s-1) into runs of 2^s
        let stages = len.trailing_zeros() as usize;
        for s in 1..=stages {
            x = step(&x, 1 << (s - 1), true, n, descending);
            for t in (0..s - 1).rev() {
                x = step(&x, 1 << t, false, n, descending);
            }
        }
        let mut cut: Vec<(usize, usize)> = x.values.shape().iter().map(|&d| (0, d)).collect();
        cut[self.ndim() - 1] = (0, n);
        let back = |t: &Tensor| t.shrink(&cut)?.transpose(a as isize, -1);
        Ok((back(&x.values)?, back(&x.index)?))
    }

    /// The int32 indices that sort this tensor along `axis` ([`Tensor::sort`]'s second half).
    pub fn argsort(&self, axis: isize, descending: bool) -> Result<Tensor> {
        Ok(self.sort(axis, descending)?.1)
    }

    /// The `k` largest (or, unless `largest`, smallest) values along `axis`, in order, and
    /// their int32 indices; among equal values the first comes first. (tinygrad supports
    /// only the sorted result, so there is no `sorted` flag.)
    pub fn topk(&self, k: usize, axis: isize, largest: bool) -> Result<(Tensor, Tensor)> {
        let a = self.axis("topk", axis, self.ndim().max(1))?;
        let n = self.shape().get(a).copied().unwrap_or(1);
        if k > n {
            let why =
                format!("k = {k} is more than the {n} elements along axis {axis} of {}", self.operand());
            return Err(TensorError::Argument { op: "topk", why });
        }
        let (values, index) = self.sort(axis, largest)?;
        if self.ndim() == 0 {
            return Ok((values, index));
        }
        let mut cut: Vec<(usize, usize)> = self.shape().iter().map(|&d| (0, d)).collect();
        cut[a] = (0, k);
        Ok((values.shrink(&cut)?, index.shrink(&cut)?))
    }
}
