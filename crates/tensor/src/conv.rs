//! Convolutions as tinygrad builds them: the padded input's windows (views, see `pool.rs`)
//! broadcast against the weight and summed, one reduce kernel. The gradients are the
//! convolution's own (a custom gradient, `custom_grad.rs`), each one direct reduce kernel: by
//! the input a transposed convolution, by the weight a sum of the gradient times the windows
//! (autograd through the window views would build the gradient of every window element and
//! then sum the overlapping ones back into the input). A transposed convolution is a
//! convolution of the input spread out by the stride with the weight flipped.

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
    /// Zeros added `(before, after)` each dim, a negative count cutting elements off instead
    /// (all of them, when the cuts meet: zeros of the resulting length).
    fn pad_signed(&self, pads: &[(isize, isize)]) -> Result<Tensor> {
        let kept = |(&(b, a), &s): (&(isize, isize), &usize)| s as isize + b.min(0) + a.min(0) > 0;
        if !pads.iter().zip(self.shape()).all(kept) {
            let shape: Vec<usize> = pads
                .iter()
                .zip(self.shape())
                .map(|(&(b, a), &s)| (s as isize + b + a).max(0) as usize)
                .collect();
            return Ok(Tensor::constant(&shape, 0.into(), self.dtype(), self.device()));
        }
        let cut: Vec<(usize, usize)> = pads
            .iter()
            .zip(self.shape())
            .map(|(&(b, a), &s)| ((-b).max(0) as usize, s.saturating_sub((-a).max(0) as usize)))
            .collect();
        let grow: Vec<(usize, usize)> =
            pads.iter().map(|&(b, a)| (b.max(0) as usize, a.max(0) as usize)).collect();
        self.shrink(&cut)?.pad(&grow)
    }

    /// The spatial dims (all after the first two) spread out by `stride`: `stride - 1` zeros
    /// after each element but the last.
    fn stride_dilated(&self, stride: usize) -> Result<Tensor> {
        if stride == 1 {
            return Ok(self.clone());
        }
        let (lead, spatial) = self.shape().split_at(2);
        let mut apart = lead.to_vec();
        apart.extend(spatial.iter().flat_map(|&l| [l, 1]));
        let mut pads = vec![(0, 0); 2];
        pads.extend(spatial.iter().flat_map(|_| [(0, 0), (0, stride - 1)]));
        let mut wide = lead.to_vec();
        wide.extend(spatial.iter().map(|&l| l * stride));
        let mut cut: Vec<(usize, usize)> = lead.iter().map(|&l| (0, l)).collect();
        cut.extend(spatial.iter().map(|&l| (0, (l * stride).saturating_sub(stride - 1))));
        self.reshape_to(&apart).pad(&pads)?.reshape_to(&wide).shrink(&cut)
    }

    /// A weight `(g * a, b, k..)` as the weight of the transposed convolution: each group's
    /// two channel dims swapped and the kernel flipped, `(g * b, a, k..)`.
    fn transposed_weight(&self, groups: usize) -> Result<Tensor> {
        let (a, b, kernel) = (self.shape()[0] / groups, self.shape()[1], &self.shape()[2..]);
        let mut split = vec![groups, a, b];
        split.extend(kernel);
        let flip: Vec<isize> = (3..3 + kernel.len() as isize).collect();
        let w = self.reshape_to(&split).transpose(1, 2)?.flip(&flip)?;
        let mut shape = vec![groups * b, a];
        shape.extend(kernel);
        Ok(w.reshape_to(&shape))
    }

    /// The windows a convolution reads: the input padded by `pads` (per spatial dim), as
    /// `(batch, groups, cin / groups, out.., kernel..)`.
    fn conv_windows(
        &self,
        op: &'static str,
        kernel: &[usize],
        opts: &ConvOpts,
        pads: &[(isize, isize)],
    ) -> Result<Tensor> {
        let n = pads.len();
        let mut all_pads = vec![(0, 0); 2];
        all_pads.extend_from_slice(pads);
        let x =
            self.pad_signed(&all_pads)?.pool(op, kernel, &vec![opts.stride; n], &vec![opts.dilation; n])?;
        let (bs, c, g) = (self.shape()[0], self.shape()[1], opts.groups);
        let mut split = vec![bs, g, c / g];
        split.extend(&x.shape()[2..]);
        Ok(x.reshape_to(&split))
    }

    /// The convolution of `(batch, cin, spatial..)` by `(cout, cin / groups, kernel..)` over
    /// any number of spatial dims, with `pads` per spatial dim. Its gradient is its own (see
    /// [`conv_backward`]).
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
        let kernel = &weight.shape()[2..];
        let x = self.conv_windows(op, kernel, opts, pads)?;
        // (bs, g, cin, out.., k..) -> (bs, g, rcout, out.., cin, k..) against the weight
        let (rcout, out) = (cout / g, x.shape()[3..3 + n].to_vec());
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
        let (opts, pads) = (*opts, pads.to_vec());
        let y = y.reshape_to(&y_shape).with_gradient(&[self, weight], move |dy, inputs| {
            let (dx, dw) = conv_backward(op, dy, &inputs[0], &inputs[1], &opts, &pads)?;
            Ok(vec![Some(dx), Some(dw)])
        });
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
        let kernel = &weight.shape()[2..];
        let (w, x) = (weight.transposed_weight(g)?, self.stride_dilated(opts.stride)?);
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

/// The gradients of a convolution (input `x`, weight `w`, `pads` per spatial dim) from the
/// gradient `dy` of its output, each one reduce kernel:
/// - by the input, the transposed convolution: `dy` spread out by the stride, padded so every
///   window that read an input element covers it, convolved with the flipped weight whose
///   channel dims are swapped (stride 1, the same dilation and groups); padding the forward
///   added is cut off again;
/// - by the weight, the sum over the batch and the output positions of `dy` times the
///   windows the forward read.
fn conv_backward(
    op: &'static str,
    dy: &Tensor,
    x: &Tensor,
    w: &Tensor,
    opts: &ConvOpts,
    pads: &[(isize, isize)],
) -> Result<(Tensor, Tensor)> {
    let (n, g, kernel) = (pads.len(), opts.groups, &w.shape()[2..]);
    let (bs, cout, cin) = (x.shape()[0], w.shape()[0], w.shape()[1]);
    let dx_pads: Vec<(isize, isize)> = (0..n)
        .map(|i| {
            let reach = (opts.dilation * (kernel[i] - 1)) as isize;
            let padded = x.shape()[2 + i] as isize + pads[i].0 + pads[i].1;
            let covered = ((dy.shape()[2 + i] - 1) * opts.stride) as isize + reach + 1;
            (reach - pads[i].0, reach + padded - covered - pads[i].1)
        })
        .collect();
    let flipped = w.transposed_weight(g)?;
    let dx = dy.stride_dilated(opts.stride)?.conv(
        op,
        &flipped,
        None,
        &ConvOpts { stride: 1, padding: 0, ..*opts },
        &dx_pads,
    )?;
    // (bs, g, 1, cin, out.., k..) * (bs, g, rcout, 1, out.., 1..) summed over bs and out..
    let windows = x.conv_windows(op, kernel, opts, pads)?;
    let mut wide = windows.shape().to_vec();
    wide.insert(2, 1);
    let mut dy_shape = vec![bs, g, cout / g, 1];
    dy_shape.extend(&dy.shape()[2..]);
    dy_shape.extend(vec![1; n]);
    let mut reduced: Vec<isize> = vec![0];
    reduced.extend((0..n).map(|i| (4 + i) as isize));
    let dw = windows.reshape_to(&wide).mul(dy.reshape_to(&dy_shape))?.sum(&reduced, false)?;
    let mut w_shape = vec![cout, cin];
    w_shape.extend(kernel);
    Ok((dx, dw.reshape_to(&w_shape)))
}
