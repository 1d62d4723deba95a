//! Pooling as views: the sliding windows over the last dims are movement ops of the input
//! (tiling, reshapes and shrinks, no copies), so a pool or a convolution over them is one
//! reduce kernel and its gradient comes from the gradients of those views.

use wgrad_dtype::ConstValue;

use crate::Tensor;
use crate::error::{Result, TensorError, ok};

/// Windows along one dim: input length, kernel, stride, dilation.
#[derive(Clone, Copy)]
struct Dim {
    len: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
}

impl Dim {
    /// The span of one window.
    fn span(self) -> usize {
        self.dilation * (self.kernel - 1) + 1
    }

    /// The number of windows.
    fn out(self) -> usize {
        (self.len - self.span()) / self.stride + 1
    }
}

impl Tensor {
    /// The windows of `kernel` (with `stride` and `dilation`) over the last `kernel.len()`
    /// dims, shaped `(..., out_1, .., out_n, k_1, .., k_n)`: views of this tensor.
    pub(crate) fn pool(
        &self,
        op: &'static str,
        kernel: &[usize],
        stride: &[usize],
        dilation: &[usize],
    ) -> Result<Tensor> {
        let n = kernel.len();
        let lead = self.ndim().checked_sub(n).ok_or_else(|| self.pool_error(op, kernel))?;
        let dims: Vec<Dim> = (0..n)
            .map(|i| Dim {
                len: self.shape()[lead + i],
                kernel: kernel[i],
                stride: stride[i],
                dilation: dilation[i],
            })
            .collect();
        if dims.iter().any(|d| d.kernel == 0 || d.stride == 0 || d.dilation == 0 || d.span() > d.len) {
            return Err(self.pool_error(op, kernel));
        }
        let fast = dims.iter().all(|d| d.kernel <= d.stride && d.dilation == 1);
        let windows = if fast { self.pool_strided(lead, &dims) } else { self.pool_tiled(lead, &dims) };
        // (..., k_1, o_1, .., k_n, o_n) or (..., o_1, k_1, ..): outputs first, kernel last
        let (o_at, k_at) = if fast { (0, 1) } else { (1, 0) };
        let mut order: Vec<isize> = (0..lead as isize).collect();
        order.extend((0..n).map(|i| (lead + 2 * i + o_at) as isize));
        order.extend((0..n).map(|i| (lead + 2 * i + k_at) as isize));
        windows.permute(&order)
    }

    fn pool_error(&self, op: &'static str, kernel: &[usize]) -> TensorError {
        TensorError::Movement { op, arg: format!("window {kernel:?}"), operand: self.operand() }
    }

    /// Windows no wider than their stride, undilated: each dim cut (or zero-padded) to
    /// `out * stride`, split into `(out, stride)` and cut to `(out, kernel)`.
    fn pool_strided(&self, lead: usize, dims: &[Dim]) -> Tensor {
        let keep: Vec<(usize, usize)> = self.shape()[..lead].iter().map(|&s| (0, s)).collect();
        let pads: Vec<(usize, usize)> = keep
            .iter()
            .map(|_| (0, 0))
            .chain(dims.iter().map(|d| (0, (d.out() * d.stride).saturating_sub(d.len))))
            .collect();
        let cut: Vec<(usize, usize)> =
            keep.iter().copied().chain(dims.iter().map(|d| (0, d.out() * d.stride))).collect();
        let x = ok(ok(self.pad(&pads)).shrink(&cut));
        let split: Vec<usize> = self.shape()[..lead]
            .iter()
            .copied()
            .chain(dims.iter().flat_map(|d| [d.out(), d.stride]))
            .collect();
        let window: Vec<(usize, usize)> =
            keep.iter().copied().chain(dims.iter().flat_map(|d| [(0, d.out()), (0, d.kernel)])).collect();
        ok(x.reshape_to(&split).shrink(&window))
    }

    /// Any windows: each dim tiled into rows of `len * f + dilation` elements, so row `j`
    /// starts at element `j * dilation` of the input (the tiling repeats with period `len`);
    /// `kernel` rows, each cut to `out * stride` and split by the stride. `f` is the least
    /// multiple that makes a row hold `out * stride` elements.
    fn pool_tiled(&self, lead: usize, dims: &[Dim]) -> Tensor {
        let row = |d: &Dim| {
            d.len * (d.out() * d.stride).saturating_sub(d.dilation).div_ceil(d.len).max(1) + d.dilation
        };
        let outer = &self.shape()[..lead];
        let keep: Vec<(usize, usize)> = outer.iter().map(|&s| (0, s)).collect();
        let mut repeats = vec![1; lead];
        repeats.extend(dims.iter().map(|d| (d.kernel * row(d)).div_ceil(d.len)));
        let tiled = ok(self.repeat(&repeats));
        let cut: Vec<(usize, usize)> =
            keep.iter().copied().chain(dims.iter().map(|d| (0, d.kernel * row(d)))).collect();
        let rows: Vec<usize> =
            outer.iter().copied().chain(dims.iter().flat_map(|d| [d.kernel, row(d)])).collect();
        let x = ok(tiled.shrink(&cut)).reshape_to(&rows);
        let strided: Vec<(usize, usize)> = keep
            .iter()
            .copied()
            .chain(dims.iter().flat_map(|d| [(0, d.kernel), (0, d.out() * d.stride)]))
            .collect();
        let split: Vec<usize> =
            outer.iter().copied().chain(dims.iter().flat_map(|d| [d.kernel, d.out(), d.stride])).collect();
        let x = ok(x.shrink(&strided)).reshape_to(&split);
        let first: Vec<(usize, usize)> = keep
            .iter()
            .copied()
            .chain(dims.iter().flat_map(|d| [(0, d.kernel), (0, d.out()), (0, 1)]))
            .collect();
        let pairs: Vec<usize> =
            outer.iter().copied().chain(dims.iter().flat_map(|d| [d.kernel, d.out()])).collect();
        ok(x.shrink(&first)).reshape_to(&pairs)
    }

    /// Windows of `kernel` x `kernel` over the last two dims, padded by `padding` on each side
    /// with `fill`, stride `stride` (`None`: the kernel).
    pub(crate) fn pool2d(
        &self,
        op: &'static str,
        kernel: usize,
        stride: Option<usize>,
        padding: usize,
        fill: ConstValue,
    ) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(self.pool_error(op, &[kernel, kernel]));
        }
        let mut pads = vec![(0, 0); self.ndim() - 2];
        pads.extend([(padding, padding); 2]);
        let padded = self.pad_value(&pads, fill)?;
        let s = stride.unwrap_or(kernel);
        padded.pool(op, &[kernel; 2], &[s; 2], &[1; 2])
    }

    /// The maximum of each `kernel` x `kernel` window over the last two dims (stride `None`:
    /// the kernel); `padding` on each side never wins (it is the dtype's minimum).
    pub fn max_pool2d(&self, kernel: usize, stride: Option<usize>, padding: usize) -> Result<Tensor> {
        self.pool2d("max_pool2d", kernel, stride, padding, self.dtype().min_value())?.max(&[-2, -1], false)
    }

    /// The mean of each `kernel` x `kernel` window over the last two dims (stride `None`: the
    /// kernel); `padding` zeros count (PyTorch's `count_include_pad=True`, tinygrad's default).
    pub fn avg_pool2d(&self, kernel: usize, stride: Option<usize>, padding: usize) -> Result<Tensor> {
        self.pool2d("avg_pool2d", kernel, stride, padding, ConstValue::Int(0))?.mean(&[-2, -1], false)
    }
}
