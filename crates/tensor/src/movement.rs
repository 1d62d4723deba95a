//! Movement ops: views of the same elements, never copies (a kernel reads through them).
//! Axes may be negative (counted from the end); every argument is checked against the shape.

use wgrad_dtype::{ConstValue, DType};
use wgrad_engine::{lazy, numel};

use crate::Tensor;
use crate::error::{Result, TensorError, ok};

impl Tensor {
    /// `axis` (negative: from the end) as an index below `ndim`.
    pub(crate) fn axis(&self, op: &'static str, axis: isize, ndim: usize) -> Result<usize> {
        let a = if axis < 0 { axis + ndim as isize } else { axis };
        match (0..ndim as isize).contains(&a) {
            true => Ok(a as usize),
            false => Err(TensorError::Axis { op, axis, operand: self.operand() }),
        }
    }

    fn movement_error(&self, op: &'static str, arg: impl std::fmt::Debug) -> TensorError {
        TensorError::Movement { op, arg: format!("{arg:?}"), operand: self.operand() }
    }

    /// The same elements in `shape`; one dim may be `-1` (inferred).
    pub fn reshape(&self, shape: &[isize]) -> Result<Tensor> {
        let known: usize = shape.iter().filter(|&&d| d >= 0).map(|&d| d as usize).product();
        let inferred = shape.iter().filter(|&&d| d == -1).count();
        let bad = shape.iter().any(|&d| d < -1) || inferred > 1;
        let fill = self.numel().checked_div(known).unwrap_or(0);
        let new: Vec<usize> = shape.iter().map(|&d| if d == -1 { fill } else { d as usize }).collect();
        if bad || numel(&new) != self.numel() {
            return Err(self.movement_error("reshape", shape));
        }
        Ok(self.reshape_to(&new))
    }

    /// The same elements in `shape` (same element count: callers checked).
    pub(crate) fn reshape_to(&self, shape: &[usize]) -> Tensor {
        match self.shape() == shape {
            true => self.clone(),
            false => self.with(lazy::reshape(&self.uop(), shape), shape.to_vec()),
        }
    }

    /// Axis `k` of the result is axis `order[k]` of this tensor.
    pub fn permute(&self, order: &[isize]) -> Result<Tensor> {
        let n = self.ndim();
        let axes = order.iter().map(|&a| self.axis("permute", a, n)).collect::<Result<Vec<_>>>()?;
        let mut seen = vec![false; n];
        if axes.len() != n || axes.iter().any(|&a| std::mem::replace(&mut seen[a], true)) {
            return Err(self.movement_error("permute", order));
        }
        if axes.iter().enumerate().all(|(i, &a)| i == a) {
            return Ok(self.clone());
        }
        let shape = axes.iter().map(|&a| self.shape()[a]).collect();
        Ok(self.with(lazy::permute(&self.uop(), &axes), shape))
    }

    /// Size-1 dims broadcast to `shape` (dims are added in front as needed).
    pub fn expand(&self, shape: &[usize]) -> Result<Tensor> {
        let fits = shape.len() >= self.ndim()
            && self.shape().iter().zip(&shape[shape.len() - self.ndim()..]).all(|(&s, &t)| s == t || s == 1);
        match fits {
            true => Ok(self.broadcast_to(shape)),
            false => Err(self.movement_error("expand", shape)),
        }
    }

    /// Zeros added `(before, after)` each dim.
    pub fn pad(&self, pads: &[(usize, usize)]) -> Result<Tensor> {
        if pads.len() != self.ndim() {
            return Err(self.movement_error("pad", pads));
        }
        if pads.iter().all(|&p| p == (0, 0)) {
            return Ok(self.clone());
        }
        let shape = self.shape().iter().zip(pads).map(|(s, (b, a))| s + b + a).collect();
        Ok(self.with(lazy::pad(&self.uop(), pads), shape))
    }

    /// `value` (cast to this tensor's dtype) added `(before, after)` each dim.
    pub fn pad_value(&self, pads: &[(usize, usize)], value: impl Into<ConstValue>) -> Result<Tensor> {
        let value = value.into().cast(self.dtype());
        let padded = self.pad(pads)?;
        if value.to_f64() == 0.0 || padded.shape() == self.shape() {
            return Ok(padded);
        }
        let inside = Tensor::constant(self.shape(), true.into(), DType::BOOL, self.device()).pad(pads)?;
        inside.where_(&padded, Tensor::constant(&[], value, self.dtype(), self.device()))
    }

    /// Positions `begin..end` of each dim.
    pub fn shrink(&self, arg: &[(usize, usize)]) -> Result<Tensor> {
        let fits =
            arg.len() == self.ndim() && arg.iter().zip(self.shape()).all(|(&(b, e), &s)| b <= e && e <= s);
        if !fits {
            return Err(self.movement_error("shrink", arg));
        }
        if arg.iter().zip(self.shape()).all(|(&(b, e), &s)| b == 0 && e == s) {
            return Ok(self.clone());
        }
        let shape = arg.iter().map(|(b, e)| e - b).collect();
        Ok(self.with(lazy::shrink(&self.uop(), arg), shape))
    }

    /// The listed dims reversed.
    pub fn flip(&self, axes: &[isize]) -> Result<Tensor> {
        let mut flags = vec![false; self.ndim()];
        for &a in axes {
            flags[self.axis("flip", a, self.ndim())?] = true;
        }
        Ok(self.with(lazy::flip(&self.uop(), &flags), self.shape().to_vec()))
    }

    /// Dims `a` and `b` swapped.
    pub fn transpose(&self, a: isize, b: isize) -> Result<Tensor> {
        let (a, b) = (self.axis("transpose", a, self.ndim())?, self.axis("transpose", b, self.ndim())?);
        let mut order: Vec<isize> = (0..self.ndim() as isize).collect();
        order.swap(a, b);
        self.permute(&order)
    }

    /// The last two dims swapped (a matrix transposed).
    pub fn t(&self) -> Result<Tensor> {
        self.transpose(-2, -1)
    }

    /// Dims `start..` merged into one.
    pub fn flatten(&self, start: isize) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Ok(self.reshape_to(&[1]));
        }
        let s = self.axis("flatten", start, self.ndim())?;
        let mut shape = self.shape()[..s].to_vec();
        shape.push(numel(&self.shape()[s..]));
        Ok(self.reshape_to(&shape))
    }

    /// Dim `axis`, which must have size 1, removed.
    pub fn squeeze(&self, axis: isize) -> Result<Tensor> {
        let a = self.axis("squeeze", axis, self.ndim())?;
        if self.shape()[a] != 1 {
            return Err(self.movement_error("squeeze", axis));
        }
        let mut shape = self.shape().to_vec();
        shape.remove(a);
        Ok(self.reshape_to(&shape))
    }

    /// A size-1 dim inserted at `axis` (`-1`: last).
    pub fn unsqueeze(&self, axis: isize) -> Result<Tensor> {
        let a = self.axis("unsqueeze", axis, self.ndim() + 1)?;
        let mut shape = self.shape().to_vec();
        shape.insert(a, 1);
        Ok(self.reshape_to(&shape))
    }

    /// The tensors joined along `axis` (other dims equal): each padded to the full length
    /// and summed, so one kernel reads them all.
    pub fn cat(tensors: &[&Tensor], axis: isize) -> Result<Tensor> {
        let first = tensors.first().ok_or(TensorError::NoTensors("cat"))?;
        let a = first.axis("cat", axis, first.ndim())?;
        let total: usize = tensors.iter().map(|t| t.shape().get(a).copied().unwrap_or(0)).sum();
        let mut out: Option<Tensor> = None;
        let mut at = 0;
        for t in tensors {
            let same = t.ndim() == first.ndim()
                && t.shape().iter().zip(first.shape()).enumerate().all(|(i, (x, y))| i == a || x == y);
            if !same {
                return Err(TensorError::Broadcast { op: "cat", lhs: first.operand(), rhs: t.operand() });
            }
            let mut pads = vec![(0, 0); t.ndim()];
            pads[a] = (at, total - at - t.shape()[a]);
            at += t.shape()[a];
            let padded = t.pad(&pads)?;
            out = Some(match out {
                None => padded,
                Some(acc) => acc.add(&padded)?,
            });
        }
        Ok(out.unwrap_or_else(|| (*first).clone()))
    }

    /// The tensors (all one shape) stacked along a new dim `axis`.
    pub fn stack(tensors: &[&Tensor], axis: isize) -> Result<Tensor> {
        if let [first, rest @ ..] = tensors
            && let Some(other) = rest.iter().find(|t| t.shape() != first.shape())
        {
            return Err(TensorError::Broadcast { op: "stack", lhs: first.operand(), rhs: other.operand() });
        }
        let unsqueezed = tensors.iter().map(|t| t.unsqueeze(axis)).collect::<Result<Vec<_>>>()?;
        Tensor::cat(&unsqueezed.iter().collect::<Vec<_>>(), axis)
    }

    /// The tensor tiled `repeats[k]` times along dim `k` (dims are added in front as needed).
    pub fn repeat(&self, repeats: &[usize]) -> Result<Tensor> {
        if repeats.len() < self.ndim() {
            return Err(self.movement_error("repeat", repeats));
        }
        let mut base = vec![1; repeats.len() - self.ndim()];
        base.extend_from_slice(self.shape());
        let interleaved: Vec<usize> = base.iter().flat_map(|&b| [1, b]).collect();
        let expanded: Vec<usize> = repeats.iter().zip(&base).flat_map(|(&r, &b)| [r, b]).collect();
        let fin: Vec<usize> = repeats.iter().zip(&base).map(|(r, b)| r * b).collect();
        Ok(ok(self.reshape_to(&interleaved).expand(&expanded)).reshape_to(&fin))
    }

    /// The elements shifted `shift` places along `axis`, wrapping around.
    pub fn roll(&self, shift: isize, axis: isize) -> Result<Tensor> {
        let a = self.axis("roll", axis, self.ndim())?;
        let n = self.shape()[a];
        if n == 0 {
            return Ok(self.clone());
        }
        let s = shift.rem_euclid(n as isize) as usize;
        if s == 0 {
            return Ok(self.clone());
        }
        let part = |b: usize, e: usize| {
            let mut arg: Vec<(usize, usize)> = self.shape().iter().map(|&d| (0, d)).collect();
            arg[a] = (b, e);
            self.shrink(&arg)
        };
        Tensor::cat(&[&part(n - s, n)?, &part(0, n - s)?], a as isize)
    }

    /// The same elements in `shape` (tinygrad's and PyTorch's `view`: [`Tensor::reshape`]).
    pub fn view(&self, shape: &[isize]) -> Result<Tensor> {
        self.reshape(shape)
    }

    /// Dim `dim` split into `sizes` (one of them may be `-1`, inferred).
    pub fn unflatten(&self, dim: isize, sizes: &[isize]) -> Result<Tensor> {
        let d = self.axis("unflatten", dim, self.ndim())?;
        let signed = |dims: &[usize]| dims.iter().map(|&s| s as isize).collect::<Vec<_>>();
        let shape = [signed(&self.shape()[..d]), sizes.to_vec(), signed(&self.shape()[d + 1..])].concat();
        self.reshape(&shape).map_err(|_| self.movement_error("unflatten", sizes))
    }

    /// Dims 0 and 1 swapped (tinygrad's `T`: the transpose of a matrix; [`Tensor::t`] swaps
    /// the last two dims instead, PyTorch's `.T` reverses all of them).
    #[allow(non_snake_case)]
    pub fn T(&self) -> Result<Tensor> {
        self.transpose(1, 0)
    }

    /// Zeros (or `value`, cast to this dtype) added after the elements so that each dim has
    /// its size in `shape` (`None` keeps a dim as it is); no dim may shrink.
    pub fn pad_to(&self, shape: &[Option<usize>], value: impl Into<ConstValue>) -> Result<Tensor> {
        let pads = self.to_shape("pad_to", shape, |s, t| t >= s)?;
        self.pad_value(&pads.iter().map(|&(s, t)| (0, t - s)).collect::<Vec<_>>(), value)
    }

    /// The first elements of each dim, as many as `shape` says (`None` keeps a dim whole);
    /// no dim may grow.
    pub fn shrink_to(&self, shape: &[Option<usize>]) -> Result<Tensor> {
        let sizes = self.to_shape("shrink_to", shape, |s, t| t <= s)?;
        self.shrink(&sizes.iter().map(|&(_, t)| (0, t)).collect::<Vec<_>>())
    }

    /// Each dim's `(size, target)` for `pad_to`/`shrink_to`, checked by `fits`.
    fn to_shape(
        &self,
        op: &'static str,
        shape: &[Option<usize>],
        fits: impl Fn(usize, usize) -> bool,
    ) -> Result<Vec<(usize, usize)>> {
        let sizes: Vec<(usize, usize)> =
            self.shape().iter().zip(shape).map(|(&s, t)| (s, t.unwrap_or(s))).collect();
        match shape.len() == self.ndim() && sizes.iter().all(|&(s, t)| fits(s, t)) {
            true => Ok(sizes),
            false => Err(self.movement_error(op, shape)),
        }
    }

    /// Each element repeated `repeats` times in place along `dim` (`None`: of the
    /// flattened tensor): `[1, 2]` becomes `[1, 1, 2, 2]`.
    pub fn repeat_interleave(&self, repeats: usize, dim: Option<isize>) -> Result<Tensor> {
        let (x, d) = match dim {
            None => (self.flatten(0)?, 0),
            Some(d) => (self.clone(), self.axis("repeat_interleave", d, self.ndim())?),
        };
        let shape = x.shape();
        let lifted = [&shape[..=d], &[1], &shape[d + 1..]].concat();
        let spread = [&shape[..=d], &[repeats], &shape[d + 1..]].concat();
        let merged = [&shape[..d], &[shape[d] * repeats], &shape[d + 1..]].concat();
        Ok(x.reshape_to(&lifted).expand(&spread)?.reshape_to(&merged))
    }

    /// The windows of `size` elements every `step` along `dim`: that dim becomes the
    /// number of windows, `(len - size) / step + 1`, and a new last dim holds each window
    /// (PyTorch's and tinygrad's `unfold`). Views only.
    pub fn unfold(&self, dim: isize, size: usize, step: usize) -> Result<Tensor> {
        let d = self.axis("unfold", dim, self.ndim())?;
        let last = self.ndim() as isize - 1;
        let windows = self.transpose(d as isize, last)?.pool("unfold", &[size], &[step], &[1])?;
        // (.., windows at the end's place, size): the windows back to `dim`
        windows.transpose(d as isize, last)
    }

    /// The tensors (each flattened) as coordinate grids of their lengths: with
    /// [`Meshgrid::Ij`] the `k`-th varies along dim `k`; with [`Meshgrid::Xy`] the first two
    /// are swapped (numpy's Cartesian indexing).
    pub fn meshgrid(tensors: &[&Tensor], indexing: Meshgrid) -> Result<Vec<Tensor>> {
        let n = tensors.len();
        let mut lengths: Vec<usize> = tensors.iter().map(|t| t.numel()).collect();
        let along = |k: usize| match (indexing, k) {
            (Meshgrid::Xy, 0 | 1) if n > 1 => 1 - k,
            _ => k,
        };
        if n > 1 && indexing == Meshgrid::Xy {
            lengths.swap(0, 1);
        }
        tensors
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let mut shape = vec![1; n];
                shape[along(k)] = t.numel();
                t.reshape_to(&shape).expand(&lengths)
            })
            .collect()
    }

    /// `fs` applied in order, each to the result of the one before (tinygrad's
    /// `sequential`).
    pub fn sequential(&self, fs: &[&Step]) -> Result<Tensor> {
        fs.iter().try_fold(self.clone(), |x, f| f(&x))
    }
}

/// One step of [`Tensor::sequential`].
type Step = dyn Fn(&Tensor) -> Result<Tensor>;

/// How [`Tensor::meshgrid`] lays out its grids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meshgrid {
    /// Matrix indexing: grid `k` varies along dim `k`.
    Ij,
    /// Cartesian indexing: the first two grids vary along dims 1 and 0.
    Xy,
}
