//! Shape ops against host references on every device: view, unflatten, T, pad_to,
//! shrink_to, repeat_interleave, unfold, meshgrid, sequential, rearrange (einops), interpolate
//! (every mode, align_corners, gradients), max_pool2d_with_indices and max_unpool2d; typed
//! errors for bad shapes and malformed patterns.

use crate::common;

use common::reference::{Check, data, distinct, on_devices, strides, values};
use wgrad_tensor::{DType, Interpolation, Meshgrid, Result, Tensor, TensorError};

/// `x` of `shape` with its dims permuted by `order`, on the host.
fn host_permute(x: &[f64], shape: &[usize], order: &[usize]) -> Vec<f64> {
    let st = strides(shape);
    let out_shape: Vec<usize> = order.iter().map(|&a| shape[a]).collect();
    let out_st = strides(&out_shape);
    (0..x.len())
        .map(|flat| {
            let src: usize = (0..order.len()).map(|k| (flat / out_st[k] % out_shape[k]) * st[order[k]]).sum();
            x[src]
        })
        .collect()
}

fn iota(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|v| v as f32).collect(), shape).unwrap()
}

#[test]
fn reshaping_views() {
    on_devices(|device| {
        let x = iota(&[2, 3, 4]);
        let all = |t: &Tensor| values(t);
        assert_eq!(x.view(&[6, -1]).unwrap().shape(), &[6, 4]);
        let u = x.unflatten(2, &[2, -1]).unwrap();
        assert_eq!((u.shape(), all(&u)), (&[2, 3, 2, 2][..], all(&x)), "{device}");
        assert!(matches!(x.unflatten(1, &[2, 2]), Err(TensorError::Movement { op: "unflatten", .. })));
        let t = x.T().unwrap();
        assert_eq!(
            (t.shape(), all(&t)),
            (&[3, 2, 4][..], host_permute(&all(&x), &[2, 3, 4], &[1, 0, 2])),
            "{device}"
        );
        assert!(matches!(iota(&[3]).T(), Err(TensorError::Axis { .. })));
        let p = x.pad_to(&[None, Some(4), Some(5)], -1.0).unwrap();
        assert_eq!(p.shape(), &[2, 4, 5]);
        let pv = all(&p);
        assert_eq!((pv[0], pv[4], pv[15], pv[19], pv[20]), (0.0, -1.0, -1.0, -1.0, 12.0), "{device}");
        let s = x.shrink_to(&[Some(1), None, Some(2)]).unwrap();
        assert_eq!((s.shape(), all(&s)), (&[1, 3, 2][..], vec![0., 1., 4., 5., 8., 9.]), "{device}");
        assert!(matches!(
            x.pad_to(&[Some(1), None, None], 0),
            Err(TensorError::Movement { op: "pad_to", .. })
        ));
        assert!(matches!(
            x.shrink_to(&[Some(3), None, None]),
            Err(TensorError::Movement { op: "shrink_to", .. })
        ));
        assert!(matches!(x.shrink_to(&[None, None]), Err(TensorError::Movement { .. })));
        let r = iota(&[2, 2]).repeat_interleave(3, Some(1)).unwrap();
        assert_eq!(all(&r), [0., 0., 0., 1., 1., 1., 2., 2., 2., 3., 3., 3.], "{device}");
        let r = iota(&[2, 2]).repeat_interleave(2, None).unwrap();
        assert_eq!((r.shape(), all(&r)), (&[8][..], vec![0., 0., 1., 1., 2., 2., 3., 3.]), "{device}");
        let r = iota(&[2, 2]).repeat_interleave(2, Some(0)).unwrap();
        assert_eq!(all(&r), [0., 1., 0., 1., 2., 3., 2., 3.], "{device}");
        let f = |t: &Tensor| -> Result<Tensor> { t.mul(2.0) };
        let g = |t: &Tensor| -> Result<Tensor> { t.add(1.0) };
        assert_eq!(all(&iota(&[3]).sequential(&[&f, &g]).unwrap()), [1., 3., 5.], "{device}");
    });
}

#[test]
fn unfold_and_meshgrid() {
    // windows of 2 every 3 along the last dim of (3, 3, 3), and of 3 every 1 along dim 0
    let x: Vec<f64> = (0..27).map(f64::from).collect();
    Check::new("unfold last", vec![(distinct(27, 1), vec![3, 3, 3])], &[3, 3, 1, 2])
        .run(|t| t[0].unfold(-1, 2, 3), |h| (0..18).map(|i| h[0][(i / 2) * 3 + i % 2]).collect());
    Check::new("unfold first", vec![(distinct(10, 2), vec![5, 2])], &[3, 2, 3]).run(
        |t| t[0].unfold(0, 3, 1),
        |h| (0..18).map(|i| h[0][(i / 6 + i % 3) * 2 + (i / 3) % 2]).collect(),
    );
    on_devices(|device| {
        let u = iota(&[8]).unfold(0, 2, 2).unwrap();
        assert_eq!((u.shape(), values(&u)), (&[4, 2][..], x[..8].to_vec()), "{device}");
        let a = Tensor::from_slice(&[1i32, 2, 3], &[3]).unwrap();
        let b = Tensor::from_slice(&[4i32, 5], &[2]).unwrap();
        let ij = Tensor::meshgrid(&[&a, &b], Meshgrid::Ij).unwrap();
        assert_eq!(
            (ij[0].shape(), values(&ij[0]), values(&ij[1])),
            (&[3, 2][..], vec![1., 1., 2., 2., 3., 3.], vec![4., 5., 4., 5., 4., 5.]),
            "{device}"
        );
        let xy = Tensor::meshgrid(&[&a, &b], Meshgrid::Xy).unwrap();
        assert_eq!(
            (xy[0].shape(), values(&xy[0]), values(&xy[1])),
            (&[2, 3][..], vec![1., 2., 3., 1., 2., 3.], vec![4., 4., 4., 5., 5., 5.]),
            "{device}"
        );
        let c = Tensor::from_slice(&[6i32, 7], &[2]).unwrap();
        assert_eq!(Tensor::meshgrid(&[&a, &b, &c], Meshgrid::Xy).unwrap()[2].shape(), &[2, 3, 2]);
    });
    let x = iota(&[4]);
    assert!(matches!(x.unfold(0, 5, 1), Err(TensorError::Movement { op: "unfold", .. })));
    assert!(matches!(x.unfold(0, 2, 0), Err(TensorError::Movement { op: "unfold", .. })));
    assert!(matches!(x.unfold(1, 2, 1), Err(TensorError::Axis { op: "unfold", .. })));
}

#[test]
fn rearrange_follows_einops() {
    // (pattern, sizes, input shape, split shape, order, output shape)
    type Case = (
        &'static str,
        &'static [(&'static str, usize)],
        &'static [usize],
        &'static [usize],
        &'static [usize],
        &'static [usize],
    );
    let cases: [Case; 6] = [
        ("b c (h w) -> b (c h) w", &[("h", 2)], &[2, 3, 4], &[2, 3, 2, 2], &[0, 1, 2, 3], &[2, 6, 2]),
        ("b c (h w) -> w b (h c)", &[("w", 2)], &[2, 3, 4], &[2, 3, 2, 2], &[3, 0, 2, 1], &[2, 2, 6]),
        ("... h w -> ... w h", &[], &[2, 3, 4], &[2, 3, 4], &[0, 2, 1], &[2, 4, 3]),
        ("b 1 c -> c b", &[], &[3, 1, 2], &[3, 2], &[1, 0], &[2, 3]),
        ("(a b) c -> a b c 1", &[("a", 3), ("b", 2)], &[6, 2], &[3, 2, 2], &[0, 1, 2], &[3, 2, 2, 1]),
        ("x y -> (y x)", &[], &[2, 5], &[2, 5], &[1, 0], &[10]),
    ];
    for (pattern, sizes, shape, split, order, out) in cases {
        let n: usize = shape.iter().product();
        Check::new(pattern, vec![(data(n, 3), shape.to_vec())], out)
            .run(|t| t[0].rearrange(pattern, sizes), |h| host_permute(&h[0], split, order));
    }
    let x = iota(&[2, 3, 4]);
    let bad: [(&str, &[(&str, usize)]); 13] = [
        ("a b -> a", &[]),
        ("a a c -> a a c", &[]),
        ("a b -> a b", &[]),
        ("a b c d -> a b c d", &[]),
        ("a b (c d) -> a b c d", &[]),
        ("a b (c d) -> a b c d", &[("c", 3)]),
        ("a b c -> a b c", &[("z", 2)]),
        ("a b c -> a b c", &[("b", 2)]),
        ("a b 2c -> a b 2c", &[]),
        ("a (b c -> a b c", &[]),
        ("a b c -> a b c -> a", &[]),
        ("a ... -> a", &[]),
        ("(a ...) -> a ...", &[]),
    ];
    for (pattern, sizes) in bad {
        let err = x.rearrange(pattern, sizes).unwrap_err();
        assert!(matches!(err, TensorError::Parse { op: "rearrange", .. }), "{pattern}: {err}");
    }
}

/// PyTorch's interpolation of one line of `input` values to `out` values.
fn resample(line: &[f64], out: usize, mode: Interpolation, align: bool) -> Vec<f64> {
    let n = line.len();
    let scale = n as f64 / out as f64;
    (0..out)
        .map(|i| match mode {
            Interpolation::Nearest => line[((i as f64 * scale).floor() as usize).min(n - 1)],
            Interpolation::NearestExact => line[(((i as f64 + 0.5) * scale).floor() as usize).min(n - 1)],
            _ => {
                let src = match (align, out) {
                    (true, 1) => 0.0,
                    (true, _) => i as f64 * (n - 1) as f64 / (out - 1) as f64,
                    (false, _) => ((i as f64 + 0.5) * scale - 0.5).max(0.0),
                };
                let (lo, frac) = (src.floor() as usize, src - src.floor());
                let hi = (lo + 1).min(n - 1);
                line[lo.min(n - 1)] * (1.0 - frac) + line[hi] * frac
            }
        })
        .collect()
}

/// `x` of `shape` resampled along its last `size.len()` dims, one dim at a time.
fn host_interpolate(
    x: &[f64],
    shape: &[usize],
    size: &[usize],
    mode: Interpolation,
    align: bool,
) -> Vec<f64> {
    let (mut x, mut shape) = (x.to_vec(), shape.to_vec());
    for (k, &out) in size.iter().enumerate().rev() {
        let axis = shape.len() - size.len() + k;
        let n = shape.len();
        // move the axis last, resample every line, move it back
        let mut order: Vec<usize> = (0..n).filter(|&d| d != axis).collect();
        order.push(axis);
        let moved = host_permute(&x, &shape, &order);
        let lines: Vec<f64> = moved.chunks(shape[axis]).flat_map(|l| resample(l, out, mode, align)).collect();
        let mut moved_shape: Vec<usize> = order.iter().map(|&d| shape[d]).collect();
        moved_shape[n - 1] = out;
        let mut back = vec![0; n];
        order.iter().enumerate().for_each(|(i, &d)| back[d] = i);
        x = host_permute(&lines, &moved_shape, &back);
        shape[axis] = out;
    }
    x
}

#[test]
fn interpolate_matches_pytorch_semantics() {
    let cases: [(&[usize], &[usize], Interpolation, bool); 9] = [
        (&[2, 5], &[3], Interpolation::Linear, false),
        (&[2, 5], &[9], Interpolation::Linear, true),
        (&[1, 2, 3, 4], &[5, 2], Interpolation::Bilinear, false),
        (&[1, 2, 3, 4], &[1, 7], Interpolation::Bilinear, true),
        (&[2, 3, 2, 3], &[4, 3, 1], Interpolation::Trilinear, false),
        (&[2, 7], &[3], Interpolation::Nearest, false),
        (&[3, 4], &[5, 9], Interpolation::Nearest, false),
        (&[2, 7], &[4], Interpolation::NearestExact, false),
        (&[3, 4], &[2, 6], Interpolation::NearestExact, false),
    ];
    for (shape, size, mode, align) in cases {
        let n: usize = shape.iter().product();
        let out: Vec<usize> = [&shape[..shape.len() - size.len()], size].concat();
        let name = format!("interpolate {shape:?} -> {size:?} {mode:?} align {align}");
        Check::new(&name, vec![(data(n, 7), shape.to_vec())], &out).run(
            |t| t[0].interpolate(size, mode, align),
            |h| host_interpolate(&h[0], shape, size, mode, align),
        );
    }
    on_devices(|device| {
        let i = Tensor::from_slice(&[0i32, 10, 20], &[3]).unwrap();
        let up = i.interpolate(&[5], Interpolation::Linear, true).unwrap();
        assert_eq!(
            (up.dtype(), up.to_vec::<i32>().unwrap()),
            (DType::I32, vec![0, 5, 10, 15, 20]),
            "{device}"
        );
    });
    let x = iota(&[2, 3, 4]);
    for (size, mode, align) in [
        (&[2, 2, 2, 2][..], Interpolation::Linear, false),
        (&[2][..], Interpolation::Bilinear, false),
        (&[2, 2][..], Interpolation::Trilinear, false),
        (&[2][..], Interpolation::Nearest, true),
        (&[0][..], Interpolation::Linear, false),
        (&[][..], Interpolation::Linear, false),
    ] {
        let err = x.interpolate(size, mode, align).unwrap_err();
        assert!(matches!(err, TensorError::Argument { op: "interpolate", .. }), "{size:?} {mode:?}: {err}");
    }
}

#[test]
fn max_pool_indices_and_unpool() {
    on_devices(|device| {
        // ties: the first maximum of a window wins
        let x = Tensor::from_slice(
            &[1.0f32, 5.0, 2.0, 5.0, 0.0, 3.0, 9.0, 9.0, 4.0, 1.0, 2.0, 8.0, 7.0, 7.0, 6.0, 0.0],
            &[1, 1, 4, 4],
        )
        .unwrap();
        let (v, i) = x.max_pool2d_with_indices(2, None, 0).unwrap();
        assert_eq!(values(&v), [5.0, 9.0, 7.0, 8.0], "{device}");
        assert_eq!((i.dtype(), values(&i)), (DType::I32, vec![1.0, 6.0, 12.0, 11.0]), "{device}");
        let back = v.max_unpool2d(&i, 2, None, 0, None).unwrap();
        let want = [0., 5., 0., 0., 0., 0., 9., 0., 0., 0., 0., 8., 7., 0., 0., 0.];
        assert_eq!((back.shape(), values(&back)), (&[1, 1, 4, 4][..], want.to_vec()), "{device}");
        // stride 1 with padding, an explicit output size, and a batch
        let y = iota(&[2, 3, 3]);
        let (v, i) = y.max_pool2d_with_indices(2, Some(1), 1).unwrap();
        assert_eq!(v.shape(), &[2, 4, 4]);
        assert_eq!(values(&i)[..4], [0.0, 1.0, 2.0, 2.0], "{device}");
        let back = v.max_unpool2d(&i, 2, Some(1), 1, Some((3, 3))).unwrap();
        assert_eq!(back.shape(), &[2, 3, 3]);
        let err = v.max_unpool2d(&i.float(), 2, Some(1), 1, None).unwrap_err();
        assert!(matches!(err, TensorError::DType { op: "max_unpool2d", .. }), "{err}");
        let err = v.max_unpool2d(&i.reshape(&[2, 16]).unwrap(), 2, Some(1), 1, None).unwrap_err();
        assert!(matches!(err, TensorError::Shapes { op: "max_unpool2d", .. }), "{err}");
    });
    // gradients flow to the values through the unpooling
    Check::new("max_unpool2d", vec![(distinct(4, 1), vec![1, 2, 2])], &[1, 4, 4]).run(
        |t| {
            let i = Tensor::from_slice(&[5i32, 3, 8, 15], &[1, 2, 2])?;
            t[0].max_unpool2d(&i, 2, None, 0, None)?.mul(iota(&[1, 4, 4]))
        },
        |h| {
            (0..16)
                .map(|p| [5, 3, 8, 15].iter().position(|&q| q == p).map_or(0.0, |k| h[0][k] * p as f64))
                .collect()
        },
    );
}
