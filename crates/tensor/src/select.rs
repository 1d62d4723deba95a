//! Picking elements by index without gathers in the IR, as tinygrad does: an index becomes a
//! one-hot mask (indices compared with an `arange`), and the picked values are the masked
//! sum over the indexed dim. Also the triangles, `argmin`, and splitting along a dim.

use wgrad_dtype::DType;

use crate::error::{Result, TensorError};
use crate::{Tensor, with_default_device};

/// The most rows an embedding table may have for `Tensor::embedding` to pick them by selects
/// instead of a one-hot sum. MiniLM's token types on an H200: their own 11 us kernel a forward,
/// and the 25 MB buffer the layer norm after them read, gone (f32 batch 10.55 / 10.55 -> 10.53 /
/// 10.51 ms of kernels, 61 -> 60 kernels).
const SELECTED_ROWS: usize = 4;

impl Tensor {
    /// `0, 1, .., n - 1` in `dtype` on this tensor's device.
    pub(crate) fn arange_here(&self, n: usize, dtype: DType) -> Result<Tensor> {
        with_default_device(self.device(), || Tensor::arange_with(0.0, n as f64, 1.0, dtype))
    }

    /// `self == arange(classes)` along a new last dim: the one-hot mask of int indices.
    pub(crate) fn one_hot_mask(&self, op: &'static str, classes: usize) -> Result<Tensor> {
        if !self.dtype().is_int() {
            return Err(TensorError::DType { op, lhs: self.operand(), rhs: self.operand() });
        }
        self.unsqueeze(-1)?.eq(&self.arange_here(classes, self.dtype())?)
    }

    /// The int indices as one-hot rows of `classes` (a new last dim): 1 at the index, 0
    /// elsewhere, int32.
    pub fn one_hot(&self, classes: usize) -> Result<Tensor> {
        self.one_hot_mask("one_hot", classes)?.where_(1, 0)
    }

    /// `out[.., i, ..] = self[.., index[.., i, ..], ..]` along `axis`: `index` has this
    /// tensor's dims, each no larger (except along `axis`).
    pub fn gather(&self, axis: isize, index: &Tensor) -> Result<Tensor> {
        let a = self.axis("gather", axis, self.ndim())?;
        let fits = index.ndim() == self.ndim()
            && index.shape().iter().zip(self.shape()).enumerate().all(|(d, (&i, &s))| d == a || i <= s);
        if !fits {
            let why = format!("index dims must be at most the input's except along axis {a}");
            return Err(TensorError::Shapes { op: "gather", lhs: self.operand(), rhs: index.operand(), why });
        }
        // x: the input cut to the index's shape, its `axis` moved to a new last dim
        let cut: Vec<(usize, usize)> = index
            .shape()
            .iter()
            .zip(self.shape())
            .enumerate()
            .map(|(d, (&i, &s))| (0, if d == a { s } else { i }))
            .collect();
        let x = self.shrink(&cut)?.unsqueeze(-1)?.transpose(-1, a as isize)?;
        let mask = index.to(self.device()).one_hot_mask("gather", self.shape()[a])?;
        mask.where_(&x, self.zeros_like_scalar())?.sum(&[-1], false).map(|s| s.cast(self.dtype()))
    }

    /// A zero of this tensor's dtype, shape `()`.
    fn zeros_like_scalar(&self) -> Tensor {
        Tensor::constant(&[], 0.into(), self.dtype(), self.device())
    }

    /// The rows of `weight` `(vocab, dim)` picked by this tensor's int indices: shape
    /// `(indices.., dim)`; an index outside the table picks a row of zeros. A table of at most
    /// 4 rows (`SELECTED_ROWS`) is picked by a select per row, with no reduce, so it fuses into
    /// its reader (BERT's token types: two rows).
    pub fn embedding(&self, weight: &Tensor) -> Result<Tensor> {
        if weight.ndim() != 2 {
            let why = "weight is not (vocab, dim)".to_string();
            return Err(TensorError::Shapes {
                op: "embedding",
                lhs: self.operand(),
                rhs: weight.operand(),
                why,
            });
        }
        let (vocab, dim) = (weight.shape()[0], weight.shape()[1]);
        if vocab > SELECTED_ROWS || vocab == 0 {
            let mask = self.to(weight.device()).one_hot_mask("embedding", vocab)?.unsqueeze(-1)?;
            return mask
                .where_(weight, weight.zeros_like_scalar())?
                .sum(&[-2], false)
                .map(|s| s.cast(weight.dtype()));
        }
        if !self.dtype().is_int() {
            return Err(TensorError::DType { op: "embedding", lhs: self.operand(), rhs: weight.operand() });
        }
        let ids = self.to(weight.device()).unsqueeze(-1)?;
        (0..vocab).rev().try_fold(weight.zeros_like_scalar(), |rest, row| {
            let picked = weight.shrink(&[(row, row + 1), (0, dim)])?.reshape(&[dim as isize])?;
            ids.eq(row as i64)?.where_(&picked, &rest)
        })
    }

    /// Where column minus row (of the last two dims) is at least `diagonal`: the mask of
    /// the upper triangle.
    fn upper(&self, op: &'static str, diagonal: isize) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(TensorError::Axis { op, axis: -2, operand: self.operand() });
        }
        let (r, c) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        let on = |n: usize| self.arange_here(n, DType::I32);
        on(c)?.sub(&on(r)?.unsqueeze(1)?)?.ge(diagonal as i64)
    }

    /// The upper triangle of the last two dims (from diagonal `diagonal` up); zeros below.
    pub fn triu(&self, diagonal: isize) -> Result<Tensor> {
        self.upper("triu", diagonal)?.where_(self, self.zeros_like_scalar())
    }

    /// The lower triangle of the last two dims (up to diagonal `diagonal`); zeros above.
    pub fn tril(&self, diagonal: isize) -> Result<Tensor> {
        self.upper("tril", diagonal + 1)?.where_(self.zeros_like_scalar(), self)
    }

    /// The index of the first minimum along `axis`, as int32 (the argmax of the values
    /// in reverse order).
    pub fn argmin(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        self.inverse().argmax(axis, keepdim)
    }

    /// Consecutive pieces along `axis` of the given `sizes` (summing to the dim): views.
    pub fn split(&self, sizes: &[usize], axis: isize) -> Result<Vec<Tensor>> {
        let a = self.axis("split", axis, self.ndim())?;
        if sizes.iter().sum::<usize>() != self.shape()[a] {
            return Err(TensorError::Movement {
                op: "split",
                arg: format!("{sizes:?}"),
                operand: self.operand(),
            });
        }
        let mut at = 0;
        sizes
            .iter()
            .map(|&n| {
                let mut arg: Vec<(usize, usize)> = self.shape().iter().map(|&d| (0, d)).collect();
                arg[a] = (at, at + n);
                at += n;
                self.shrink(&arg)
            })
            .collect()
    }

    /// At most `n` pieces along `axis`, each `ceil(dim / n)` long but the last.
    pub fn chunk(&self, n: usize, axis: isize) -> Result<Vec<Tensor>> {
        let a = self.axis("chunk", axis, self.ndim())?;
        let d = self.shape()[a];
        if n == 0 {
            return Err(TensorError::Movement {
                op: "chunk",
                arg: format!("{n} chunks"),
                operand: self.operand(),
            });
        }
        let size = d.div_ceil(n).max(1);
        let sizes: Vec<usize> = (0..d).step_by(size).map(|s| size.min(d - s)).collect();
        self.split(&sizes, axis)
    }
}
