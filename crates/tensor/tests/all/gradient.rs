//! Functional gradients (`Tensor::gradient`) and `contiguous_backward`, on every device.

use crate::common;

use common::reference::on_devices;
use wgrad_ops::Ops;
use wgrad_tensor::{DType, Tensor, TensorError};

#[test]
fn gradient_returns_gradients_without_touching_grad() {
    on_devices(|device| {
        // tinygrad's example: z = sum(y @ x), dz/dx = y^T broadcast, dz/dy = row sums of x
        let x = Tensor::eye(3, DType::F32).unwrap();
        let y = Tensor::from_slice(&[2.0f32, 0.0, -2.0], &[1, 3]).unwrap();
        let z = y.matmul(&x).unwrap().sum(&[], false).unwrap();
        let g = z.gradient(&[&x, &y], None).unwrap();
        assert_eq!(
            g[0].to_vec::<f32>().unwrap(),
            [2.0, 2.0, 2.0, 0.0, 0.0, 0.0, -2.0, -2.0, -2.0],
            "{device}"
        );
        assert_eq!(g[1].to_vec::<f32>().unwrap(), [1.0, 1.0, 1.0], "{device}");
        assert!(x.grad().is_none() && y.grad().is_none() && !x.requires_grad(), "{device}");
        // a target the value does not use gets zeros; a seed scales a non-scalar value
        let unused = Tensor::ones(&[2], DType::F32).unwrap();
        let v = y.mul(&y).unwrap();
        let seed = Tensor::from_slice(&[1.0f32, 10.0, 100.0], &[1, 3]).unwrap();
        let g = v.gradient(&[&y, &unused], Some(&seed)).unwrap();
        assert_eq!(g[0].to_vec::<f32>().unwrap(), [4.0, 0.0, -400.0], "{device}");
        assert_eq!(g[1].to_vec::<f32>().unwrap(), [0.0, 0.0], "{device}");
        // gradients of gradients: d/dy sum(d/dy sum(y^3)) = d/dy sum(3 y^2) = 6 y
        let first =
            y.mul(&y).unwrap().mul(&y).unwrap().sum(&[], false).unwrap().gradient(&[&y], None).unwrap();
        let second = first[0].sum(&[], false).unwrap().gradient(&[&y], None).unwrap();
        assert_eq!(second[0].to_vec::<f32>().unwrap(), [12.0, 0.0, -12.0], "{device}");
    });
    let y = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let err = y.gradient(&[&y], None).unwrap_err();
    assert!(matches!(err, TensorError::NotScalar { op: "gradient", .. }), "{err}");
    let err = y.gradient(&[&y], Some(&Tensor::ones(&[3], DType::F32).unwrap())).unwrap_err();
    assert!(matches!(err, TensorError::Shapes { op: "gradient", .. }), "{err}");
    let i = Tensor::from_slice(&[1i32, 2], &[2]).unwrap();
    let err = y.sum(&[], false).unwrap().gradient(&[&i], None).unwrap_err();
    assert!(matches!(err, TensorError::DType { op: "gradient", .. }), "{err}");
}

#[test]
fn contiguous_backward_realizes_the_gradient_only() {
    on_devices(|device| {
        let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
        let plain = x.exp().mul(&x).unwrap();
        let marked = x.exp().contiguous_backward().mul(&x).unwrap();
        assert_eq!(plain.to_vec::<f32>().unwrap(), marked.to_vec::<f32>().unwrap(), "{device}: same values");
        // the forward graph is the same kernels; the backward one gets one more
        assert_eq!(plain.schedule(32).unwrap().kernel_count(), marked.schedule(32).unwrap().kernel_count());
        let g_plain = plain.sum(&[], false).unwrap().gradient(&[&x], None).unwrap().remove(0);
        let g_marked = marked.sum(&[], false).unwrap().gradient(&[&x], None).unwrap().remove(0);
        // (counted before reading: reading realizes the marked gradient's inner part)
        let kernels = |g: &Tensor| g.schedule(32).unwrap().kernel_count();
        assert_eq!(kernels(&g_marked), kernels(&g_plain) + 1, "{device}");
        assert_eq!(
            g_plain.to_vec::<f32>().unwrap(),
            g_marked.to_vec::<f32>().unwrap(),
            "{device}: same gradient"
        );
    });
}

#[test]
fn sigmoid_and_tanh_gradients_stay_finite_far_from_zero() {
    // through 1 / (1 + e^-x) alone e^-x overflowed and the gradient was inf * 0 = NaN
    let xs = [-100.0f64, -20.0, -10.5, -5.25, -0.5, 0.0, 0.5, 5.25, 10.5, 20.0, 100.0];
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    on_devices(|device| {
        for dtype in [DType::F32, DType::F16] {
            let values: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
            let x = Tensor::from_slice(&values, &[xs.len()]).unwrap().cast(dtype);
            let s = x.sigmoid().sum(&[], false).unwrap().gradient(&[&x], None).unwrap();
            let t = x.tanh().sum(&[], false).unwrap().gradient(&[&x], None).unwrap();
            let f32s = |g: &Tensor| g.cast(DType::F32).to_vec::<f32>().unwrap();
            let (s, t) = (f32s(&s[0]), f32s(&t[0]));
            let atol = if dtype == DType::F16 { 2e-3 } else { 1e-6 };
            for (i, &v) in xs.iter().enumerate() {
                let (ds, dt) = (sigmoid(v) * (1.0 - sigmoid(v)), 1.0 - v.tanh().powi(2));
                assert!(
                    (f64::from(s[i]) - ds).abs() <= atol,
                    "{device} {dtype} sigmoid'({v}) = {}, want {ds}",
                    s[i]
                );
                assert!(
                    (f64::from(t[i]) - dt).abs() <= atol,
                    "{device} {dtype} tanh'({v}) = {}, want {dt}",
                    t[i]
                );
            }
        }
    });
}

/// Fuzz seed 343295 (H200): a min over `x / (|x| + 1) / (|x| + 1)` whose gradient was 0 at its
/// unique minimum. The gradient found the minimum by comparing the input, recomputed in its own
/// kernels, with the forward's stored min, and the driver rounded the recomputed divisions
/// differently. The input is now computed once, into a buffer that every comparison reads (here
/// the sines of the loaded input).
#[test]
fn a_max_gradient_compares_its_input_computed_once() {
    on_devices(|device| {
        let values = [0.5f32, -1.0, 2.0, 3.0, -0.25, 1.0];
        let x = Tensor::from_slice(&values, &[2, 3]).unwrap();
        let g = x
            .sin()
            .min(&[1], false)
            .unwrap()
            .sum(&[], false)
            .unwrap()
            .gradient(&[&x], None)
            .unwrap()
            .remove(0);
        let schedule = g.schedule(32).unwrap();
        let computing_sines = schedule
            .kernels()
            .iter()
            .filter(|k| k.toposort().iter().any(|u| u.op() == Ops::Sin && u.src()[0].op() == Ops::Load))
            .count();
        // (the chain rule's cosine is a sine of `x + pi / 2`, not of the load)
        assert_eq!(computing_sines, 1, "{device}: sin(x) computed in one kernel");
        // each row's minimum: sin(-1), then sin(-0.25); the gradient there is the cosine
        let got = g.to_vec::<f32>().unwrap();
        let expect = [0.0, 1f32.cos(), 0.0, 0.0, 0.25f32.cos(), 0.0];
        for (a, b) in got.iter().zip(expect) {
            assert!((a - b).abs() < 1e-6, "{device}: {got:?} against {expect:?}");
        }
    });
}

/// A cast to a boolean or an integer passes no gradient (its steps have no slope, and PyTorch's
/// `x.bool()` leaves the graph); a cast between floats passes it cast back.
#[test]
fn casts_to_booleans_and_integers_pass_no_gradient() {
    on_devices(|device| {
        let x = Tensor::from_slice(&[0.5f32, -2.0, 3.0], &[3]).unwrap();
        for dtype in [DType::BOOL, DType::I32, DType::U8] {
            let y = x.cast(dtype).cast(DType::F32).mul(&x).unwrap().sum(&[], false).unwrap();
            let g = y.gradient(&[&x], None).unwrap().remove(0);
            // only the product's own factor: d(c * x)/dx = c with c = cast(x), taken as constant
            let c = x.cast(dtype).cast(DType::F32).to_vec::<f32>().unwrap();
            assert_eq!(g.to_vec::<f32>().unwrap(), c, "{device}: {dtype:?}");
        }
        let y = x.cast(DType::F16).cast(DType::F32).sum(&[], false).unwrap();
        assert_eq!(y.gradient(&[&x], None).unwrap()[0].to_vec::<f32>().unwrap(), [1.0; 3], "{device}");
    });
}
