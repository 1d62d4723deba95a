//! `Tensor::newton_schulz` against a plain f64 reference: forward on wide, tall, square and
//! batched matrices, gradients against central differences of the reference, on every
//! device.

use crate::common;

use wgrad_tensor::{Tensor, TensorError, with_default_device};

const MUON: [f64; 3] = [3.4445, -4.775, 2.0315];

/// `a` `(n, k)` times `b` `(k, m)`.
fn matmul(a: &[f64], b: &[f64], (n, k, m): (usize, usize, usize)) -> Vec<f64> {
    (0..n * m).map(|q| (0..k).map(|t| a[q / m * k + t] * b[t * m + q % m]).sum()).collect()
}

fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows * cols).map(|q| a[q % rows * cols + q / rows]).collect()
}

/// The iteration on one `(rows, cols)` matrix, written out from its definition.
fn reference(g: &[f64], rows: usize, cols: usize, steps: usize, coefficients: &[f64]) -> Vec<f64> {
    if rows > cols {
        let t = reference(&transpose(g, rows, cols), cols, rows, steps, coefficients);
        return transpose(&t, cols, rows);
    }
    let scale = g.iter().map(|x| x * x).sum::<f64>().sqrt() + 1e-7;
    let mut g: Vec<f64> = g.iter().map(|x| x / scale).collect();
    for _ in 0..steps {
        let gram = matmul(&g, &transpose(&g, rows, cols), (rows, cols, rows));
        let (mut power, mut next) = (g.clone(), g.iter().map(|x| x * coefficients[0]).collect::<Vec<_>>());
        for &c in &coefficients[1..] {
            power = matmul(&gram, &power, (rows, rows, cols));
            next.iter_mut().zip(&power).for_each(|(n, p)| *n += c * p);
        }
        g = next;
    }
    g
}

/// The reference over a batch of `(rows, cols)` matrices stored one after another.
fn batched(x: &[f64], rows: usize, cols: usize, steps: usize, coefficients: &[f64]) -> Vec<f64> {
    x.chunks(rows * cols).flat_map(|m| reference(m, rows, cols, steps, coefficients)).collect()
}

/// Values in [-2, 2], as tinygrad's op tests draw them.
fn inputs(n: usize, seed: u64) -> Vec<f64> {
    Tensor::uniform(&[n], -2.0, 2.0, seed)
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
        .into_iter()
        .map(f64::from)
        .collect()
}

fn assert_close(what: &str, got: &[f64], want: &[f64], atol: f64, rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= atol + rtol * w.abs(), "{what}[{i}]: {g} != {w}");
    }
}

fn run(shape: &[usize], steps: usize, coefficients: &[f64], seed: u64) {
    let (rows, cols) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    for device in common::devices() {
        with_default_device(&device, || {
            let xs = inputs(shape.iter().product(), seed);
            let x = Tensor::from_vec(xs.iter().map(|&v| v as f32).collect(), shape).unwrap();
            x.set_requires_grad(true).unwrap();
            let y = x.newton_schulz(steps, coefficients, 1e-7).unwrap();
            assert_eq!(y.shape(), shape);
            let got: Vec<f64> = y.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect();
            let what = format!("newton_schulz {shape:?} on {device}");
            assert_close(&what, &got, &batched(&xs, rows, cols, steps, coefficients), 1e-5, 1e-3);
            y.sum(&[], false).unwrap().backward().unwrap();
            let grad: Vec<f64> =
                x.grad().unwrap().to_vec::<f32>().unwrap().into_iter().map(f64::from).collect();
            let h = 1e-6;
            let numeric: Vec<f64> = (0..xs.len())
                .map(|i| {
                    let at = |d: f64| {
                        let mut p = xs.clone();
                        p[i] += d;
                        batched(&p, rows, cols, steps, coefficients).iter().sum::<f64>()
                    };
                    (at(h) - at(-h)) / (2.0 * h)
                })
                .collect();
            assert_close(&format!("{what}, gradient"), &grad, &numeric, 1e-4, 1e-3);
        });
    }
}

#[test]
fn a_wide_matrix_matches_the_reference() {
    run(&[3, 5], 5, &MUON, 1);
}

#[test]
fn a_tall_matrix_is_iterated_as_its_transpose() {
    run(&[4, 2], 2, &[1.5, -0.5], 2);
}

#[test]
fn a_batch_of_square_matrices_normalizes_each_alone() {
    run(&[2, 3, 3], 3, &MUON, 3);
}

#[test]
fn the_classic_cubic_iteration_converges_to_an_orthogonal_matrix() {
    let x = Tensor::from_slice(&[2.0f32, 1.0, 0.5, 3.0], &[2, 2]).unwrap();
    let q = x.newton_schulz(30, &[1.5, -0.5], 1e-7).unwrap();
    let qqt = q.matmul(&q.t().unwrap()).unwrap().to_vec::<f32>().unwrap();
    for (got, want) in qqt.iter().zip([1.0, 0.0, 0.0, 1.0]) {
        assert!((got - want).abs() < 1e-4, "q qᵀ = {qqt:?}");
    }
}

#[test]
fn bad_arguments_are_typed_errors() {
    let v = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let err = v.newton_schulz(1, &MUON, 1e-7).unwrap_err();
    assert!(matches!(err, TensorError::Argument { op: "newton_schulz", .. }), "{err}");
    assert!(err.to_string().contains("(2,) float32"), "{err}");
    let m = Tensor::from_slice(&[1.0f32; 4], &[2, 2]).unwrap();
    let err = m.newton_schulz(1, &[], 1e-7).unwrap_err();
    assert!(err.to_string().contains("at least one coefficient"), "{err}");
}
