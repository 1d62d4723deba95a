//! Convolutions as tinygrad builds them: the padded input's windows (views, see `pool.rs`)
//! broadcast against the weight and summed, one reduce kernel; gradients come from autograd
//! of those views. A transposed convolution is a convolution of the input spread out by the
//! stride with the weight flipped.

use crate::Tensor;
use crate::error::{Result, TensorError};

/// Stride, padding (each side), dilation and groups of a convolution, the same along every
/// spatial dim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvOpts {
    /// Step between windows.
    pub stride: usize,
    /// Zeros added before and after each spatial dim.
    pub padding: usize,
    /// Step between the taps of one window.
    pub dilation: usize,
    /// Channel groups: input and output channels split into this many independent parts.
    pub groups: usize,
}

impl Default for ConvOpts {
    fn default() -> ConvOpts {
        ConvOpts { stride: 1, padding: 0, dilation: 1, groups: 1 }
    }
}

impl Tensor {
    /// Zeros added `(before, after)` each dim, a negative count cutting elements off instead.
    fn pad_signed(&self, pads: &[(isize, isize)]) -> Result<Tensor> {
        let cut: Vec<(usize, usize)> = pads
            .iter()
            .zip(self.shape())
            .map(|(&(b, a), &s)| ((-b).max(0) as usize, s.saturating_sub((-a).max(0) as usize)))
            .collect();
        let grow: Vec<(usize, usize)> =
            pads.iter().map(|&(b, a)| (b.max(0) as usize, a.max(0) as usize)).collect();
        self.shrink(&cut)?.pad(&grow)
    }

    /// The convolution of `(batch, cin, spatial..)` by `(cout, cin / groups, kernel..)` over
    /// any number of spatial dims, with `pads` per spatial dim.
    fn conv(
        &self,
        op: &'static str,
        weight: &Tensor,
        bias: Option<&Tensor>,
        opts: &ConvOpts,
        pads: &[(isize, isize)],
    ) -> Result<Tensor> {
        let bad = |why: String| TensorError::Shapes { op, lhs: self.operand(), rhs: weight.operand(), why };
        let n = pads.len();
        if self.ndim() != n + 2 || weight.ndim() != n + 2 {
            return Err(bad(format!("want {} dims (batch, channels, {n} spatial) for both", n + 2)));
        }
        let (bs, cin, cout, g) = (self.shape()[0], weight.shape()[1], weight.shape()[0], opts.groups);
        if g == 0 || self.shape()[1] != g * cin || !cout.is_multiple_of(g) {
            return Err(bad(format!("{g} groups of {cin} input channels")));
        }
        if let Some(b) = bias.filter(|b| b.shape() != [cout]) {
            return Err(TensorError::Shapes {
                op,
                lhs: weight.operand(),
                rhs: b.operand(),
                why: "bias is not (cout,)".into(),
            });
        }
        let mut all_pads = vec![(0, 0); 2];
        all_pads.extend_from_slice(pads);
        let kernel = &weight.shape()[2..];
        let x =
            self.pad_signed(&all_pads)?.pool(op, kernel, &vec![opts.stride; n], &vec![opts.dilation; n])?;
        // (bs, g, cin, 1, out.., k..) -> (bs, g, rcout, out.., cin, k..) against the weight
        let (rcout, out) = (cout / g, x.shape()[2..2 + n].to_vec());
        let mut split = vec![bs, g, cin, 1];
        split.extend(&out);
        split.extend(kernel);
        let mut wide = split.clone();
        wide[3] = rcout;
        let mut order: Vec<isize> = vec![0, 1, 3];
        order.extend((0..n).map(|i| (4 + i) as isize));
        order.push(2);
        order.extend((0..n).map(|i| (4 + n + i) as isize));
        let x = x.reshape_to(&split).expand(&wide)?.permute(&order)?;
        let mut w_shape = vec![1, g, rcout];
        w_shape.extend(vec![1; n]);
        w_shape.push(cin);
        w_shape.extend(kernel);
        let reduced: Vec<isize> = (0..=n as isize).map(|i| -1 - i).collect();
        let y = x.mul(weight.reshape_to(&w_shape))?.sum(&reduced, false)?;
        let mut y_shape = vec![bs, cout];
        y_shape.extend(&out);
        let y = y.reshape_to(&y_shape);
        match bias {
            Some(b) => {
                let mut b_shape = vec![1, cout];
                b_shape.extend(vec![1; n]);
                y.add(b.reshape_to(&b_shape))
            }
            None => Ok(y),
        }
    }

    /// 2-d convolution of `(batch, cin, h, w)` by `(cout, cin / groups, kh, kw)`, plus
    /// `bias` `(cout,)`.
    pub fn conv2d(&self, weight: &Tensor, bias: Option<&Tensor>, opts: &ConvOpts) -> Result<Tensor> {
        let p = opts.padding as isize;
        self.conv("conv2d", weight, bias, opts, &[(p, p); 2])
    }

    /// 1-d convolution of `(batch, cin, len)` by `(cout, cin / groups, k)`, plus `bias`
    /// `(cout,)`.
    pub fn conv1d(&self, weight: &Tensor, bias: Option<&Tensor>, opts: &ConvOpts) -> Result<Tensor> {
        let p = opts.padding as isize;
        self.conv("conv1d", weight, bias, opts, &[(p, p)])
    }

    /// The transposed 2-d convolution (the gradient of `conv2d` by its input) of
    /// `(batch, cin, h, w)` by `(cin, cout / groups, kh, kw)`, plus `bias` `(cout,)`;
    /// `output_padding` extra rows and columns at the end of the output.
    pub fn conv_transpose2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        opts: &ConvOpts,
        output_padding: usize,
    ) -> Result<Tensor> {
        self.conv_transpose("conv_transpose2d", 2, weight, bias, opts, output_padding)
    }

    /// The transposed 1-d convolution (the gradient of `conv1d` by its input) of
    /// `(batch, cin, len)` by `(cin, cout / groups, k)`, plus `bias` `(cout,)`;
    /// `output_padding` extra positions at the end of the output.
    pub fn conv_transpose1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        opts: &ConvOpts,
        output_padding: usize,
    ) -> Result<Tensor> {
        self.conv_transpose("conv_transpose1d", 1, weight, bias, opts, output_padding)
    }

    /// The transposed convolution over `n` spatial dims: the input spread out by the
    /// stride, convolved with the weight flipped and its channel dims swapped.
    fn conv_transpose(
        &self,
        op: &'static str,
        n: usize,
        weight: &Tensor,
        bias: Option<&Tensor>,
        opts: &ConvOpts,
        output_padding: usize,
    ) -> Result<Tensor> {
        let bad = |why: String| TensorError::Shapes { op, lhs: self.operand(), rhs: weight.operand(), why };
        let g = opts.groups;
        if self.ndim() != n + 2
            || weight.ndim() != n + 2
            || weight.shape()[2..].contains(&0)
            || g == 0
            || !weight.shape()[0].is_multiple_of(g)
            || opts.stride == 0
        {
            let dims = if n == 1 { "len" } else { "h, w" };
            return Err(bad(format!("want (batch, cin, {dims}) and (cin, cout / {g}, k..), stride >= 1")));
        }
        if self.shape()[1] != weight.shape()[0] {
            return Err(bad("input channels differ".into()));
        }
        // (cin, rcout, k..) -> (g, rcout, cin / g, k..) flipped -> (cout, cin / g, k..)
        let (cin, rcout, kernel) = (weight.shape()[0], weight.shape()[1], &weight.shape()[2..]);
        let mut grouped = vec![g, cin / g, rcout];
        grouped.extend(kernel);
        let spatial: Vec<isize> = (3..3 + n as isize).collect();
        let w = weight.reshape_to(&grouped).transpose(1, 2)?.flip(&spatial)?;
        let mut w_shape = vec![g * rcout, cin / g];
        w_shape.extend(kernel);
        let w = w.reshape_to(&w_shape);
        // the input spread out by the stride: s - 1 zeros after each element, none at the end
        let (s, dims) = (opts.stride, &self.shape()[2..]);
        let mut split = self.shape()[..2].to_vec();
        dims.iter().for_each(|&d| split.extend([d, 1]));
        let mut pads = vec![(0, 0); 2];
        dims.iter().for_each(|_| pads.extend([(0, 0), (0, s - 1)]));
        let mut spread = self.shape()[..2].to_vec();
        spread.extend(dims.iter().map(|&d| d * s));
        let mut kept: Vec<(usize, usize)> = spread[..2].iter().map(|&d| (0, d)).collect();
        kept.extend(dims.iter().map(|&d| (0, (d * s).saturating_sub(s - 1))));
        let x = self.reshape_to(&split).pad(&pads)?.reshape_to(&spread).shrink(&kept)?;
        let pads: Vec<(isize, isize)> = kernel
            .iter()
            .map(|&k| {
                let full = ((k - 1) * opts.dilation) as isize - opts.padding as isize;
                (full, full + output_padding as isize)
            })
            .collect();
        x.conv(op, &w, bias, &ConvOpts { stride: 1, ..*opts }, &pads)
    }
}
