//! Convolutions and pools against plain f64 loops on the host, forward and the gradients of
//! `out.sum()`, on every device; kernel counts; typed errors for bad shapes.

use crate::common;

use common::devices;

use wgrad_ops::Arg;
use wgrad_tensor::{ConvOpts, Tensor, TensorError, with_default_device};

/// Deterministic values in [-2, 2) for `n` elements.
fn data(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104_729) % 4000) as f32 / 1000.0 - 2.0).collect()
}

fn close(what: &str, got: &[f32], want: &[f64], atol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!((f64::from(g) - w).abs() <= atol + 1e-3 * w.abs(), "{what}[{i}]: {g} != {w}");
    }
}

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// A 2-d convolution on the host: its output and the gradients of `(out * dy).sum()` (of
/// `out.sum()` when `dy` is empty) by the input and the weight. Input `(b, c, h, w)`, weight `(o, c / g, kh, kw)`.
struct RefConv {
    out: Vec<f64>,
    shape: Vec<usize>,
    gx: Vec<f64>,
    gw: Vec<f64>,
}

fn ref_conv(
    x: &[f32],
    xs: &[usize],
    w: &[f32],
    ws: &[usize],
    dy: &[f32],
    o: &ConvOpts,
    pads: (usize, usize),
) -> RefConv {
    let (b, h, wd) = (xs[0], xs[2], xs[3]);
    let (co, cg, kh, kw) = (ws[0], ws[1], ws[2], ws[3]);
    let span = |k: usize| o.dilation * (k - 1) + 1;
    let oh = (h + 2 * pads.0 - span(kh)) / o.stride + 1;
    let ow = (wd + 2 * pads.1 - span(kw)) / o.stride + 1;
    let shape = vec![b, co, oh, ow];
    let (sx, sw, so) = (strides(xs), strides(ws), strides(&shape));
    let mut r =
        RefConv { out: vec![0.0; b * co * oh * ow], shape, gx: vec![0.0; x.len()], gw: vec![0.0; w.len()] };
    let per_group = co / o.groups;
    for (bi, oc, y, xx) in itertools(b, co, oh, ow) {
        let g = oc / per_group;
        for (ic, i, j) in (0..cg).flat_map(|ic| (0..kh).flat_map(move |i| (0..kw).map(move |j| (ic, i, j)))) {
            let yy = (y * o.stride + i * o.dilation) as isize - pads.0 as isize;
            let xq = (xx * o.stride + j * o.dilation) as isize - pads.1 as isize;
            if yy < 0 || xq < 0 || yy >= h as isize || xq >= wd as isize {
                continue;
            }
            let xi = bi * sx[0] + (g * cg + ic) * sx[1] + yy as usize * sx[2] + xq as usize * sx[3];
            let wi = oc * sw[0] + ic * sw[1] + i * sw[2] + j * sw[3];
            let oi = bi * so[0] + oc * so[1] + y * so[2] + xx;
            r.out[oi] += f64::from(x[xi]) * f64::from(w[wi]);
            let d = dy.get(oi).map_or(1.0, |&d| f64::from(d)); // none given: the sum's gradient
            r.gx[xi] += f64::from(w[wi]) * d;
            r.gw[wi] += f64::from(x[xi]) * d;
        }
    }
    r
}

/// Every `(a, b, c, d)` below the bounds, row-major.
fn itertools(a: usize, b: usize, c: usize, d: usize) -> impl Iterator<Item = (usize, usize, usize, usize)> {
    (0..a).flat_map(move |i| {
        (0..b).flat_map(move |j| (0..c).flat_map(move |k| (0..d).map(move |l| (i, j, k, l))))
    })
}

/// `conv2d` (or `conv1d` on `h = 1`) against the host, with the gradients of the output
/// weighted by an uneven `dy`.
fn check_conv(xs: &[usize], ws: &[usize], opts: ConvOpts, one_d: bool) {
    let (xv, wv) = (data(xs.iter().product(), 1), data(ws.iter().product(), 2));
    let pads = if one_d { (0, opts.padding) } else { (opts.padding, opts.padding) };
    let r0 = ref_conv(&xv, xs, &wv, ws, &[], &opts, pads);
    let dy = data(r0.out.len(), 3);
    let r = ref_conv(&xv, xs, &wv, ws, &dy, &opts, pads);
    for device in devices() {
        with_default_device(&device, || {
            let (x, w) = if one_d {
                let x = Tensor::from_slice(&xv, &[xs[0], xs[1], xs[3]]).unwrap();
                (x, Tensor::from_slice(&wv, &[ws[0], ws[1], ws[3]]).unwrap())
            } else {
                (Tensor::from_slice(&xv, xs).unwrap(), Tensor::from_slice(&wv, ws).unwrap())
            };
            x.set_requires_grad(true).unwrap();
            w.set_requires_grad(true).unwrap();
            let y = if one_d { x.conv1d(&w, None, &opts) } else { x.conv2d(&w, None, &opts) }.unwrap();
            let mut want_shape = r.shape.clone();
            if one_d {
                want_shape.remove(2);
            }
            assert_eq!(y.shape(), want_shape.as_slice(), "{device} {opts:?}");
            close(&format!("{device} {opts:?} out"), &y.to_vec::<f32>().unwrap(), &r.out, 1e-5);
            let dy = Tensor::from_slice(&dy, y.shape()).unwrap();
            (&y * &dy).sum(&[], false).unwrap().backward().unwrap();
            close(&format!("{device} {opts:?} dx"), &x.grad().unwrap().to_vec::<f32>().unwrap(), &r.gx, 1e-4);
            close(&format!("{device} {opts:?} dw"), &w.grad().unwrap().to_vec::<f32>().unwrap(), &r.gw, 1e-4);
        });
    }
}

#[test]
fn conv2d_matches_the_host() {
    let o = |stride, padding, dilation, groups| ConvOpts { stride, padding, dilation, groups };
    check_conv(&[2, 2, 7, 6], &[3, 2, 3, 3], ConvOpts::default(), false);
    check_conv(&[1, 2, 7, 8], &[2, 2, 3, 2], o(2, 1, 1, 1), false);
    check_conv(&[1, 2, 9, 9], &[2, 2, 3, 3], o(1, 2, 2, 1), false);
    check_conv(&[2, 4, 6, 6], &[4, 2, 2, 2], o(3, 1, 2, 2), false);
    check_conv(&[1, 3, 5, 5], &[2, 3, 1, 1], o(2, 0, 1, 1), false);
}

#[test]
fn conv1d_matches_the_host() {
    check_conv(
        &[2, 3, 1, 11],
        &[4, 3, 1, 3],
        ConvOpts { stride: 2, padding: 1, dilation: 2, groups: 1 },
        true,
    );
    check_conv(
        &[1, 4, 1, 9],
        &[2, 2, 1, 4],
        ConvOpts { stride: 1, padding: 0, dilation: 1, groups: 2 },
        true,
    );
}

/// The transposed convolution on the host: each input element scatters `x * w`.
fn ref_conv_transpose(
    x: &[f32],
    xs: &[usize],
    w: &[f32],
    ws: &[usize],
    o: &ConvOpts,
    op: usize,
) -> (Vec<f64>, Vec<usize>) {
    let (b, ci, h, wd) = (xs[0], xs[1], xs[2], xs[3]);
    let (rc, kh, kw) = (ws[1], ws[2], ws[3]);
    let size = |n: usize, k: usize| (n - 1) * o.stride + o.dilation * (k - 1) + 1 + op - 2 * o.padding;
    let shape = vec![b, rc * o.groups, size(h, kh), size(wd, kw)];
    let (sx, sw, so) = (strides(xs), strides(ws), strides(&shape));
    let mut out = vec![0.0; shape.iter().product()];
    let cg = ci / o.groups;
    for (bi, c, i, j) in itertools(b, ci, h, wd) {
        let g = c / cg;
        for (oc, p, q) in (0..rc).flat_map(|oc| (0..kh).flat_map(move |p| (0..kw).map(move |q| (oc, p, q)))) {
            let y = (i * o.stride + p * o.dilation) as isize - o.padding as isize;
            let z = (j * o.stride + q * o.dilation) as isize - o.padding as isize;
            if y < 0 || z < 0 || y >= shape[2] as isize || z >= shape[3] as isize {
                continue;
            }
            let v = f64::from(x[bi * sx[0] + c * sx[1] + i * sx[2] + j])
                * f64::from(w[c * sw[0] + oc * sw[1] + p * sw[2] + q]);
            out[bi * so[0] + (g * rc + oc) * so[1] + y as usize * so[2] + z as usize] += v;
        }
    }
    (out, shape)
}

#[test]
fn conv_transpose2d_matches_the_host() {
    let cases = [
        ([1, 2, 3, 4], [2, 3, 3, 3], ConvOpts { stride: 2, padding: 1, dilation: 1, groups: 1 }, 1),
        ([2, 4, 3, 3], [4, 1, 2, 3], ConvOpts { stride: 1, padding: 0, dilation: 2, groups: 2 }, 0),
        ([1, 2, 4, 3], [2, 2, 3, 2], ConvOpts { stride: 3, padding: 2, dilation: 1, groups: 1 }, 2),
    ];
    for (xs, ws, opts, op) in cases {
        let (xv, wv) = (data(xs.iter().product(), 3), data(ws.iter().product(), 4));
        let (want, shape) = ref_conv_transpose(&xv, &xs, &wv, &ws, &opts, op);
        for device in devices() {
            with_default_device(&device, || {
                let x = Tensor::from_slice(&xv, &xs).unwrap();
                let w = Tensor::from_slice(&wv, &ws).unwrap();
                let y = x.conv_transpose2d(&w, None, &opts, op).unwrap();
                assert_eq!(y.shape(), shape.as_slice(), "{device} {opts:?}");
                close(&format!("{device} {opts:?}"), &y.to_vec::<f32>().unwrap(), &want, 1e-5);
            });
        }
    }
}

/// A 2-d pool on the host over `(n, h, w)` planes: max (padding never wins) or mean
/// (padding counts as zeros).
fn ref_pool(x: &[f32], s: &[usize], k: usize, stride: usize, pad: usize, max: bool) -> Vec<f64> {
    let (n, h, w) = (s[0], s[1], s[2]);
    let (oh, ow) = ((h + 2 * pad - k) / stride + 1, (w + 2 * pad - k) / stride + 1);
    let mut out = vec![];
    for (p, i, j, _) in itertools(n, oh, ow, 1) {
        let window = (0..k).flat_map(|a| (0..k).map(move |b| (a, b))).map(|(a, b)| {
            let (y, z) = ((i * stride + a) as isize - pad as isize, (j * stride + b) as isize - pad as isize);
            let inside = y >= 0 && z >= 0 && y < h as isize && z < w as isize;
            inside.then(|| f64::from(x[p * h * w + y as usize * w + z as usize]))
        });
        out.push(match max {
            true => window.flatten().fold(f64::NEG_INFINITY, f64::max),
            false => window.map(|v| v.unwrap_or(0.0)).sum::<f64>() / (k * k) as f64,
        });
    }
    out
}

#[test]
fn pools_match_the_host() {
    let cases = [(2, None, 0), (3, Some(2), 1), (3, Some(1), 0), (2, Some(3), 1)];
    let xs = [2, 3, 7, 8];
    let xv = data(xs.iter().product(), 5);
    for device in devices() {
        with_default_device(&device, || {
            let x = Tensor::from_slice(&xv, &xs).unwrap();
            for (k, s, p) in cases {
                let stride = s.unwrap_or(k);
                for max in [true, false] {
                    let y = if max { x.max_pool2d(k, s, p) } else { x.avg_pool2d(k, s, p) }.unwrap();
                    let want = ref_pool(&xv, &[6, 7, 8], k, stride, p, max);
                    close(
                        &format!("{device} k{k} s{stride} p{p} max {max}"),
                        &y.to_vec::<f32>().unwrap(),
                        &want,
                        1e-6,
                    );
                }
            }
            // integers pool too (padding is the dtype's minimum)
            let xi = Tensor::from_vec((0..16).map(|v| -v).collect::<Vec<i32>>(), &[1, 1, 4, 4]).unwrap();
            let y = xi.max_pool2d(3, Some(2), 1).unwrap();
            assert_eq!(y.to_vec::<i32>().unwrap(), vec![0, -1, -4, -5], "{device}");
        });
    }
}

#[test]
fn conv_forward_is_one_kernel() {
    for device in devices() {
        with_default_device(&device, || {
            let x = Tensor::from_slice(&data(2 * 28 * 28, 6), &[2, 1, 28, 28]).unwrap();
            let w = Tensor::from_slice(&data(4 * 25, 7), &[4, 1, 5, 5]).unwrap();
            let y = x.conv2d(&w, None, &ConvOpts::default()).unwrap();
            assert_eq!(y.schedule(32).unwrap().kernel_count(), 1, "{device} conv2d");
            let p = y.max_pool2d(2, None, 0).unwrap();
            assert_eq!(p.schedule(32).unwrap().kernel_count(), 2, "{device} conv2d + max_pool2d");
        });
    }
}

/// The input gradient `dx` of `(conv2d(x, w) * dy).sum()`, and `w`.
fn input_gradient(xv: &[f32], wv: &[f32], dyv: &[f32]) -> (Tensor, Tensor) {
    let x = Tensor::from_slice(xv, &[4, 3, 9, 9]).unwrap();
    let w = Tensor::from_slice(wv, &[5, 3, 3, 3]).unwrap();
    x.set_requires_grad(true).unwrap();
    w.set_requires_grad(true).unwrap();
    let y = x.conv2d(&w, None, &ConvOpts::default()).unwrap();
    let dy = Tensor::from_slice(dyv, y.shape()).unwrap();
    (&y * &dy).sum(&[], false).unwrap().backward().unwrap();
    (x.grad().unwrap(), w)
}

/// `sum(dx^2)`: quadratic in `w`, so a central difference gives its gradient exactly (up to
/// rounding).
fn energy(dx: &Tensor) -> Tensor {
    (dx * dx).sum(&[], false).unwrap()
}

#[test]
fn conv_gradients_are_direct_convolutions() {
    let (xv, wv, dyv) = (data(4 * 3 * 9 * 9, 1), data(5 * 3 * 3 * 3, 2), data(4 * 5 * 7 * 7, 3));
    for device in devices() {
        with_default_device(&device, || {
            let (gx, w) = input_gradient(&xv, &wv, &dyv);
            // the input gradient is one convolution of the output gradient into a tensor of the
            // input's size (no window-sized tensor summed back), the weight gradient one reduce
            let schedule = gx.schedule(32).unwrap();
            assert_eq!(schedule.kernel_count(), 1, "{device}");
            let out = schedule.items[0].bufs[0].arg().clone();
            assert!(matches!(out, Arg::Buffer { size, .. } if size == gx.numel()), "{device}: {out:?}");
            assert_eq!(w.grad().unwrap().schedule(32).unwrap().kernel_count(), 1, "{device}");
            // the gradient of the gradient (through the same custom backward) against central
            // differences
            w.zero_grad();
            energy(&gx).backward().unwrap();
            let got = w.grad().unwrap().to_vec::<f32>().unwrap();
            for i in [0, 13, 80] {
                let (mut up, mut down) = (wv.clone(), wv.clone());
                up[i] += 0.5;
                down[i] -= 0.5;
                let at = |wv: &[f32]| energy(&input_gradient(&xv, wv, &dyv).0).item::<f32>().unwrap();
                let diff = at(&up) - at(&down);
                assert!(
                    (got[i] - diff).abs() <= 1e-3 * diff.abs() + 1e-2,
                    "{device} w[{i}]: {} != {diff}",
                    got[i]
                );
            }
        });
    }
}

#[test]
fn bad_convolutions_are_typed_errors() {
    let x = Tensor::from_slice(&data(2 * 4 * 5 * 5, 1), &[2, 4, 5, 5]).unwrap();
    let w = Tensor::from_slice(&data(6 * 3 * 3 * 3, 2), &[6, 3, 3, 3]).unwrap();
    let err = x.conv2d(&w, None, &ConvOpts::default()).unwrap_err();
    assert!(matches!(err, TensorError::Shapes { op: "conv2d", .. }), "{err}");
    let w2 = Tensor::from_slice(&data(6 * 2 * 3 * 3, 2), &[6, 2, 3, 3]).unwrap();
    let opts = ConvOpts { groups: 3, ..ConvOpts::default() };
    assert!(matches!(x.conv2d(&w2, None, &opts), Err(TensorError::Shapes { .. })));
    let big = Tensor::from_slice(&data(6 * 4 * 7 * 7, 2), &[6, 4, 7, 7]).unwrap();
    assert!(matches!(x.conv2d(&big, None, &ConvOpts::default()), Err(TensorError::Movement { .. })));
    let bias = Tensor::from_slice(&data(5, 3), &[5]).unwrap();
    let ok_w = Tensor::from_slice(&data(6 * 4 * 3 * 3, 2), &[6, 4, 3, 3]).unwrap();
    assert!(matches!(x.conv2d(&ok_w, Some(&bias), &ConvOpts::default()), Err(TensorError::Shapes { .. })));
    let zero_stride = ConvOpts { stride: 0, ..ConvOpts::default() };
    assert!(x.conv2d(&ok_w, None, &zero_stride).is_err());
    assert!(x.conv1d(&ok_w, None, &ConvOpts::default()).is_err());
    assert!(x.max_pool2d(6, None, 0).is_err());
    let v = Tensor::from_slice(&data(5, 1), &[5]).unwrap();
    assert!(v.avg_pool2d(2, None, 0).is_err());
}
