//! Cumulative scans (cumsum, cumprod, cummax, cummin, logcumsumexp) against f64 references,
//! forward and gradients, on every device: short axes (one masked reduce), long ones (blocked,
//! one and two levels of recursion), every axis of a matrix; dtypes, scalars, empty axes,
//! kernel counts, typed errors.

use crate::common;

use common::reference::{Check, data, distinct, on_devices, strides, values};
use wgrad_tensor::{DType, Tensor, TensorError};

/// `f` run along `axis` of `x` (shape `shape`) on the host: each line along the axis is
/// handed to `f`, which scans it in place.
fn along(x: &[f64], shape: &[usize], axis: usize, f: impl Fn(&mut [f64])) -> Vec<f64> {
    let (st, n) = (strides(shape), shape[axis]);
    let mut out = x.to_vec();
    for start in 0..x.len() {
        if (start / st[axis]) % n != 0 {
            continue;
        }
        let idx: Vec<usize> = (0..n).map(|k| start + k * st[axis]).collect();
        let mut line: Vec<f64> = idx.iter().map(|&i| x[i]).collect();
        f(&mut line);
        idx.iter().zip(line).for_each(|(&i, v)| out[i] = v);
    }
    out
}

fn running(line: &mut [f64], op: impl Fn(f64, f64) -> f64) {
    for k in 1..line.len() {
        line[k] = op(line[k - 1], line[k]);
    }
}

fn logcumsumexp(line: &mut [f64]) {
    let mut acc = f64::NEG_INFINITY;
    for v in line.iter_mut() {
        let m = acc.max(*v);
        acc = m + ((acc - m).exp() + (*v - m).exp()).ln();
        *v = acc;
    }
}

/// The shapes and axes every scan is checked on: one element, a prime, each axis of a
/// matrix, a long axis in blocks, and one long enough for two levels of blocks.
const CASES: [(&[usize], isize); 6] =
    [(&[1], 0), (&[7], 0), (&[3, 5], 0), (&[3, 5], 1), (&[2, 70], -1), (&[1100], 0)];

#[test]
fn scans_match_the_host_forward_and_backward() {
    for (shape, axis) in CASES {
        let n: usize = shape.iter().product();
        let a = if axis < 0 { (axis + shape.len() as isize) as usize } else { axis as usize };
        let name = |op: &str| format!("{op} {shape:?} axis {axis}");
        let input = |v: Vec<f32>| vec![(v, shape.to_vec())];
        let x = data(n, 1);
        let case = name("cumsum");
        Check::new(&case, input(x.clone()), shape)
            .run(|t| t[0].cumsum(axis), |h| along(&h[0], shape, a, |l| running(l, |p, v| p + v)));
        // factors near 1 so that long products stay finite
        let near_one: Vec<f32> = x.iter().map(|v| 1.0 + v / 40.0).collect();
        let case = name("cumprod");
        Check::new(&case, input(near_one), shape)
            .run(|t| t[0].cumprod(axis), |h| along(&h[0], shape, a, |l| running(l, |p, v| p * v)));
        let d = distinct(n, 3);
        let case = name("cummax");
        Check::new(&case, input(d.clone()), shape)
            .run(|t| Ok(t[0].cummax(axis)?.0), |h| along(&h[0], shape, a, |l| running(l, f64::max)));
        let case = name("cummin");
        Check::new(&case, input(d), shape)
            .run(|t| Ok(t[0].cummin(axis)?.0), |h| along(&h[0], shape, a, |l| running(l, f64::min)));
        let case = name("logcumsumexp");
        let wide: Vec<f32> = x.iter().map(|v| v * 20.0).collect(); // e^40 overflows f32 unless shifted
        Check::new(&case, input(wide), shape)
            .run(|t| t[0].logcumsumexp(axis), |h| along(&h[0], shape, a, logcumsumexp));
    }
}

/// The index of the first position where the running maximum (by `greater`) took its value.
fn first_index_of_running_max(line: &mut [f64]) {
    let (mut best, mut at) = (f64::NEG_INFINITY, 0);
    for (k, v) in line.iter_mut().enumerate() {
        if *v > best || k == 0 {
            (best, at) = (*v, k);
        }
        *v = at as f64;
    }
}

#[test]
fn cummax_and_cummin_indices_point_at_the_first_of_equal_values() {
    let x: Vec<i32> = (0..80).map(|i| (i * 37) % 23 - 11).collect();
    on_devices(|device| {
        for (shape, axis) in [(&[80usize][..], 0isize), (&[8, 10], 1), (&[8, 10], 0), (&[2, 40], -1)] {
            let a = if axis < 0 { 1 } else { axis as usize };
            let t = Tensor::from_slice(&x, shape).unwrap();
            let host: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
            let (v, i) = t.cummax(axis).unwrap();
            assert_eq!((v.dtype(), i.dtype()), (DType::I32, DType::I32), "{device}");
            assert_eq!(values(&v), along(&host, shape, a, |l| running(l, f64::max)), "{device} {shape:?}");
            assert_eq!(values(&i), along(&host, shape, a, first_index_of_running_max), "{device} {shape:?}");
            let negated: Vec<f64> = host.iter().map(|v| -v).collect();
            let (v, i) = t.cummin(axis).unwrap();
            assert_eq!(values(&v), along(&host, shape, a, |l| running(l, f64::min)), "{device}");
            assert_eq!(values(&i), along(&negated, shape, a, first_index_of_running_max), "{device}");
        }
        // the documented example: ties keep the first index
        let t = Tensor::from_slice(&[0.0f32, 1.0, -1.0, 2.0, -2.0, 3.0, 3.0], &[7]).unwrap();
        assert_eq!(t.cummax(0).unwrap().1.to_vec::<i32>().unwrap(), [0, 1, 1, 3, 3, 5, 5], "{device}");
    });
}

#[test]
fn scan_dtypes_scalars_and_empty_axes() {
    on_devices(|device| {
        let b = Tensor::from_slice(&[true, false, true, true], &[4]).unwrap();
        let s = b.cumsum(0).unwrap();
        assert_eq!(s.dtype(), DType::I32, "{device}: bools sum as int32");
        assert_eq!(s.to_vec::<i32>().unwrap(), [1, 1, 2, 3], "{device}");
        let i = Tensor::from_slice(&[3i32, -2, 4, 0, 5], &[5]).unwrap();
        assert_eq!(i.cumprod(0).unwrap().to_vec::<i32>().unwrap(), [3, -6, -24, 0, 0], "{device}");
        let h = Tensor::from_slice(&[0.5f32; 40], &[40]).unwrap().half();
        assert_eq!(h.cumsum(0).unwrap().dtype(), DType::F16, "{device}");
        assert_eq!(h.cumsum(0).unwrap().float().to_vec::<f32>().unwrap()[39], 20.0, "{device}");
        let scalar = Tensor::scalar(2.5f32).unwrap();
        assert_eq!(scalar.cumsum(0).unwrap().item::<f32>().unwrap(), 2.5, "{device}");
        assert_eq!(scalar.cummax(-1).unwrap().1.item::<i32>().unwrap(), 0, "{device}");
        let empty = Tensor::zeros(&[3, 0], DType::F32).unwrap();
        assert_eq!(empty.cumprod(1).unwrap().shape(), &[3, 0], "{device}");
        assert_eq!(empty.logcumsumexp(1).unwrap().shape(), &[3, 0], "{device}");
        // -inf stays the identity of logcumsumexp
        let t = Tensor::from_slice(&[0.0f32, f32::NEG_INFINITY, 0.0], &[3]).unwrap();
        let got = t.logcumsumexp(0).unwrap().to_vec::<f32>().unwrap();
        assert!(got[0] == 0.0 && got[1] == 0.0 && (got[2] - 2f32.ln()).abs() < 1e-6, "{device}: {got:?}");
    });
}

#[test]
fn cumprod_gradients_are_right_at_zeros() {
    on_devices(|device| {
        let x = Tensor::from_slice(&[2.0f32, 0.0, 3.0, 0.0, 5.0], &[5]).unwrap();
        let g = x.cumprod(0).unwrap().sum(&[], false).unwrap().gradient(&[&x], None).unwrap();
        // d/dx0 = 1 + x1 + x1 x2 + ... = 1; d/dx1 = x0 + x0 x2 = 8 (x3 = 0 kills the rest)
        assert_eq!(g[0].to_vec::<f32>().unwrap(), [1.0, 8.0, 0.0, 0.0, 0.0], "{device}");
        let p = x.prod(&[], false).unwrap();
        let g = p.gradient(&[&x], None).unwrap();
        assert_eq!(g[0].to_vec::<f32>().unwrap(), [0.0; 5], "{device}: two zeros");
        let y = Tensor::from_slice(&[2.0f32, 0.0, 3.0], &[3]).unwrap();
        let g = y.prod(&[], false).unwrap().gradient(&[&y], None).unwrap();
        assert_eq!(g[0].to_vec::<f32>().unwrap(), [0.0, 6.0, 0.0], "{device}: one zero");
    });
}

#[test]
fn a_million_element_cumsum_is_a_few_kernels() {
    let x = Tensor::ones(&[1 << 20], DType::F32).unwrap().contiguous();
    x.realize().unwrap();
    let kernels = x.cumsum(0).unwrap().schedule(32).unwrap().kernel_count();
    assert!(kernels <= 10, "{kernels} kernels");
    on_devices(|device| {
        let n = 40_000;
        let x = Tensor::ones(&[n], DType::I32).unwrap();
        let got = x.cumsum(0).unwrap().to_vec::<i32>().unwrap();
        assert!(got.iter().enumerate().all(|(i, &v)| v == i as i32 + 1), "{device}");
    });
}

#[test]
fn scans_name_a_bad_axis() {
    let x = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    for err in
        [x.cumsum(1), x.cumprod(-2), x.cummax(2).map(|p| p.0), x.cummin(5).map(|p| p.0), x.logcumsumexp(3)]
    {
        let err = err.unwrap_err();
        assert!(matches!(err, TensorError::Axis { .. }), "{err}");
    }
    assert!(
        x.cumsum(1).unwrap_err().to_string().starts_with("cumsum: axis 1 is out of range for (2,) float32")
    );
}
