//! Cumulative scans along an axis: sums, products, maxima and minima (with their indices),
//! and log-sum-exp, in O(n) work.
//!
//! A scan of at most [`BLOCK`] elements is one reduce: every output combines the elements
//! up to it, the others masked to the op's identity (O(n * BLOCK) work). A longer axis is cut
//! into blocks of [`BLOCK`]: each block is scanned that way, the blocks' totals are scanned
//! recursively, and each block is combined with the total of the blocks before it. So a
//! scan of n elements is `log_BLOCK n` levels of a few kernels each, O(n * BLOCK) work in all.

use wgrad_dtype::{ConstValue, DType, sum_acc_dtype};
use wgrad_ops::Ops;

use crate::Tensor;
use crate::error::{Result, ok};

/// The length of a block that one masked reduce scans.
const BLOCK: usize = 32;

/// What a scan computes.
#[derive(Clone, Copy)]
enum Scan {
    /// A reduce op (`Add`, `Mul`, `Max`): running sums, products, maxima.
    Reduce(Ops),
    /// `log(sum(e^x))`, computed around the running maximum.
    LogSumExp,
}

impl Scan {
    /// The value that leaves the scan unchanged, in `dtype`.
    fn identity(self, dtype: DType) -> ConstValue {
        match self {
            Scan::Reduce(Ops::Add) => ConstValue::Int(0).cast(dtype),
            Scan::Reduce(Ops::Mul) => ConstValue::Int(1).cast(dtype),
            _ => dtype.min_value(),
        }
    }

    /// `a` combined with `b` (broadcast).
    fn combine(self, a: &Tensor, b: &Tensor) -> Tensor {
        ok(match self {
            Scan::Reduce(Ops::Add) => a.add(b),
            Scan::Reduce(Ops::Mul) => a.mul(b),
            Scan::Reduce(_) => a.maximum(b),
            Scan::LogSumExp => a.logaddexp(b),
        })
    }
}

impl Tensor {
    /// The scan of this tensor along its last dim.
    fn scan_last(&self, scan: Scan) -> Tensor {
        let n = self.shape()[self.ndim() - 1];
        if n <= BLOCK {
            return self.scan_block(scan);
        }
        let identity = scan.identity(self.dtype());
        let (blocks, lead) = (n.div_ceil(BLOCK), &self.shape()[..self.ndim() - 1]);
        let mut pads = vec![(0, 0); self.ndim()];
        pads[self.ndim() - 1] = (0, blocks * BLOCK - n);
        let split = [lead, &[blocks, BLOCK]].concat();
        let local = ok(self.pad_value(&pads, identity)).reshape_to(&split).scan_block(scan);
        // the total of every block, scanned, shifted one block later
        let mut last: Vec<(usize, usize)> = split.iter().map(|&d| (0, d)).collect();
        last[self.ndim()] = (BLOCK - 1, BLOCK);
        let totals = ok(local.shrink(&last)).reshape_to(&[lead, &[blocks]].concat()).scan_last(scan);
        let mut before: Vec<(usize, usize)> = totals.shape().iter().map(|&d| (0, d)).collect();
        before[self.ndim() - 1] = (0, blocks - 1);
        pads[self.ndim() - 1] = (1, 0);
        let before = ok(ok(totals.shrink(&before)).pad_value(&pads, identity))
            .reshape_to(&[lead, &[blocks, 1]].concat());
        let all = scan.combine(&local, &before).reshape_to(&[lead, &[blocks * BLOCK]].concat());
        let mut keep: Vec<(usize, usize)> = self.shape().iter().map(|&d| (0, d)).collect();
        keep[self.ndim() - 1] = (0, n);
        ok(all.shrink(&keep))
    }

    /// The scan of a short last dim as one masked reduce: output `i` combines inputs `0..=i`.
    fn scan_block(&self, scan: Scan) -> Tensor {
        let n = self.shape()[self.ndim() - 1];
        let device = self.device();
        let on = |k: usize| ok(crate::with_default_device(device, || Tensor::arange(k)));
        // mask[i, j]: whether input j is up to output i
        let mask = ok(ok(on(n).unsqueeze(-1)).ge(on(n)));
        let rows = ok(self.unsqueeze(-2)); // (.., 1, n): row i sees every input j
        let axis = [-1isize];
        match scan {
            Scan::Reduce(op) => {
                let identity = Tensor::constant(&[], scan.identity(self.dtype()), self.dtype(), device);
                ok(ok(mask.where_(&rows, &identity)).reduce(op, "scan", &axis, false))
            }
            Scan::LogSumExp => {
                let top = self.scan_block(Scan::Reduce(Ops::Max)).detach();
                let shifted = ok(rows.sub(ok(top.unsqueeze(-1))));
                let summed = ok(ok(mask.where_(&shifted, f64::NEG_INFINITY)).exp().sum(&axis, false));
                ok(summed.log().add(&top))
            }
        }
    }

    /// `scan` along `axis`: the axis moved last, scanned, moved back. A scalar is its own
    /// scan (its axis may be named 0 or -1).
    fn scan(&self, op: &'static str, axis: isize, scan: Scan) -> Result<Tensor> {
        if self.ndim() == 0 {
            self.axis(op, axis, 1)?;
            return Ok(self.clone());
        }
        let a = self.axis(op, axis, self.ndim())? as isize;
        if self.shape()[a as usize] == 0 {
            return Ok(self.clone());
        }
        ok(self.transpose(a, -1)).scan_last(scan).transpose(a, -1)
    }

    /// Running sums along `axis` (integers and bools sum as int32 or wider, halves in
    /// float32 and back, as [`Tensor::sum`]): a blocked scan, O(n) work.
    pub fn cumsum(&self, axis: isize) -> Result<Tensor> {
        let out = self.cast(sum_acc_dtype(self.dtype())).scan("cumsum", axis, Scan::Reduce(Ops::Add))?;
        Ok(if matches!(self.dtype(), DType::F16 | DType::BF16) { out.cast(self.dtype()) } else { out })
    }

    /// Running products along `axis`, in this tensor's dtype (as [`Tensor::prod`]).
    pub fn cumprod(&self, axis: isize) -> Result<Tensor> {
        self.scan("cumprod", axis, Scan::Reduce(Ops::Mul))
    }

    /// Running maxima along `axis`, and the index (int32) of each: tinygrad's, the first
    /// position where the running maximum took its value (PyTorch gives the last of equal
    /// values). Ties share the gradient.
    pub fn cummax(&self, axis: isize) -> Result<(Tensor, Tensor)> {
        let values = self.scan("cummax", axis, Scan::Reduce(Ops::Max))?;
        if self.ndim() == 0 {
            return Ok((values, Tensor::constant(&[], 0.into(), DType::I32, self.device())));
        }
        let a = self.axis("cummax", axis, self.ndim())?;
        let n = self.shape()[a];
        // where the running maximum changes (and at 0), the position; the last such position
        let mut pads = vec![(0, 0); self.ndim()];
        pads[a] = (1, 0);
        let mut cut: Vec<(usize, usize)> = self.shape().iter().map(|&d| (0, d)).collect();
        cut[a] = (0, n.saturating_sub(1));
        let previous = values.shrink(&cut)?.pad(&pads)?;
        let mut along = vec![1; self.ndim()];
        along[a] = n;
        let position = crate::with_default_device(self.device(), || Tensor::arange(n))?.reshape_to(&along);
        let starts = values.ne(&previous)?.bitwise_or(position.eq(0)?)?;
        let index = starts.where_(&position, 0)?.scan("cummax", axis, Scan::Reduce(Ops::Max))?;
        Ok((values, index))
    }

    /// Running minima along `axis`, and the index (int32) of each (as [`Tensor::cummax`]:
    /// the first position where the running minimum took its value).
    pub fn cummin(&self, axis: isize) -> Result<(Tensor, Tensor)> {
        let (values, index) = self.inverse().cummax(axis)?;
        Ok((values.inverse(), index))
    }

    /// `log(cumsum(e^x))` along `axis`, computed stably (each block around its running
    /// maximum, blocks joined with `logaddexp`).
    pub fn logcumsumexp(&self, axis: isize) -> Result<Tensor> {
        self.as_float().scan("logcumsumexp", axis, Scan::LogSumExp)
    }
}
