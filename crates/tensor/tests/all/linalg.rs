//! Linear algebra against f64 references on every device: dot, diag and diagonal, QR
//! (Householder, forward and gradients), SVD (singular values and their gradients; U and Vh
//! by reconstruction and orthogonality), batched and odd shapes; typed errors.

use crate::common;

use common::reference::{Check, FORWARD, assert_close, data, noise, on_devices, values};
use wgrad_tensor::{Tensor, TensorError};

/// Row-major `m x n` matrices of f64.
fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    (0..m).flat_map(|i| (0..n).map(move |j| (0..k).map(|t| a[i * k + t] * b[t * n + j]).sum())).collect()
}

/// The Householder QR of an `m x n` matrix with tinygrad's signs: `(Q, R)`.
fn householder(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut r = a.to_vec();
    let mut q: Vec<f64> = (0..m * m).map(|i| f64::from(u8::from(i / m == i % m))).collect();
    for i in 0..m.min(n) {
        let x: Vec<f64> = (0..m).map(|row| if row >= i { r[row * n + i] } else { 0.0 }).collect();
        let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm == 0.0 {
            continue;
        }
        let sign = if x[i] != 0.0 { x[i].signum() } else { 1.0 };
        let u0 = x[i] + sign * norm;
        let v: Vec<f64> = x.iter().enumerate().map(|(row, &e)| if row == i { 1.0 } else { e / u0 }).collect();
        let tau = sign * u0 / norm;
        let vr = matmul(&v, &r, 1, m, n);
        for row in 0..m {
            for col in 0..n {
                r[row * n + col] -= tau * v[row] * vr[col];
            }
        }
        let qv = matmul(&q, &v, m, m, 1);
        for row in 0..m {
            for col in 0..m {
                q[row * m + col] -= tau * qv[row] * v[col];
            }
        }
    }
    (q, r)
}

/// The singular values of an `m x n` matrix, descending, by one-sided Jacobi to convergence.
fn singular_values(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let (m, n, a) = if m >= n {
        (m, n, a.to_vec())
    } else {
        (n, m, (0..m * n).map(|i| a[(i % m) * n + i / m]).collect())
    };
    let mut u = a;
    for _ in 0..60 {
        for p in 0..n {
            for q in p + 1..n {
                let col = |k: usize, u: &[f64]| (0..m).map(|r| u[r * n + k]).collect::<Vec<_>>();
                let (x, y) = (col(p, &u), col(q, &u));
                let gamma: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
                if gamma.abs() < 1e-300 {
                    continue;
                }
                let (alpha, beta): (f64, f64) =
                    (x.iter().map(|v| v * v).sum(), y.iter().map(|v| v * v).sum());
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for r in 0..m {
                    u[r * n + p] = c * x[r] - s * y[r];
                    u[r * n + q] = s * x[r] + c * y[r];
                }
            }
        }
    }
    let mut s: Vec<f64> = (0..n).map(|k| (0..m).map(|r| u[r * n + k].powi(2)).sum::<f64>().sqrt()).collect();
    s.sort_by(|a, b| b.partial_cmp(a).unwrap());
    s
}

/// `x` with each of its `batch` matrices of `size` elements replaced by `f` of it.
fn per_matrix(x: &[f64], size: usize, f: impl Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    x.chunks(size).flat_map(f).collect()
}

/// `1, 2, 3, ..` shaped like `shape`: weights that tell entries apart in a gradient.
fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((1..=n).map(|v| v as f32 / n as f32).collect(), shape).unwrap()
}

#[test]
fn dot_diag_and_diagonal() {
    on_devices(|device| {
        let v = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
        assert_eq!(v.dot(&v).unwrap().item::<f32>().unwrap(), 14.0, "{device}");
    });
    Check::new("diag", vec![(data(4, 1), vec![4])], &[4, 4]).run(
        |t| t[0].diag()?.mul(ramp(&[4, 4])),
        |h| (0..16).map(|i| if i / 4 == i % 4 { h[0][i / 4] * (i + 1) as f64 / 16.0 } else { 0.0 }).collect(),
    );
    // (2, 3, 4): dims 1 and 2 at several offsets, and dims 0 and 2
    let shape = [2usize, 3, 4];
    let at = |i: usize, j: usize, k: usize| i * 12 + j * 4 + k;
    for offset in [-2isize, -1, 0, 1, 3, 4] {
        let (r0, c0) = if offset >= 0 { (0, offset as usize) } else { ((-offset) as usize, 0) };
        let d = 3usize.saturating_sub(r0).min(4usize.saturating_sub(c0));
        let name = format!("diagonal offset {offset}");
        Check::new(&name, vec![(data(24, 2), shape.to_vec())], &[2, d]).run(
            |t| t[0].diagonal(offset, 1, 2),
            |h| {
                (0..2)
                    .flat_map(|i| (0..d).map(move |k| (i, k)))
                    .map(|(i, k)| h[0][at(i, r0 + k, c0 + k)])
                    .collect()
            },
        );
    }
    Check::new("diagonal dims 2, 0", vec![(data(24, 3), shape.to_vec())], &[3, 2]).run(
        |t| t[0].diagonal(0, 2, 0),
        |h| (0..3).flat_map(|j| (0..2).map(move |k| (j, k))).map(|(j, k)| h[0][at(k, j, k)]).collect(),
    );
    let m = Tensor::from_slice(&data(6, 1), &[2, 3]).unwrap();
    assert!(matches!(m.diag(), Err(TensorError::Movement { op: "diag", .. })));
    assert!(matches!(m.diagonal(0, 1, -1), Err(TensorError::Movement { op: "diagonal", .. })));
    assert!(matches!(m.diagonal(0, 0, 2), Err(TensorError::Axis { op: "diagonal", .. })));
}

#[test]
fn qr_matches_householder_forward_and_backward() {
    for shape in [vec![4usize, 3], vec![3, 5], vec![2, 3, 3], vec![1, 1]] {
        let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        let batch: usize = shape[..shape.len() - 2].iter().product();
        let q_shape = [&shape[..shape.len() - 2], &[m, m]].concat();
        let x = (noise(batch * m * n, 4), shape.clone());
        let name = format!("qr Q {shape:?}");
        Check::new(&name, vec![x.clone()], &q_shape).run(
            |t| t[0].qr()?.0.mul(ramp(&q_shape)),
            |h| {
                let w = values(&ramp(&q_shape));
                per_matrix(&h[0], m * n, |a| householder(a, m, n).0)
                    .iter()
                    .zip(w)
                    .map(|(q, w)| q * w)
                    .collect()
            },
        );
        let name = format!("qr R {shape:?}");
        Check::new(&name, vec![x.clone()], &shape).run(
            |t| t[0].qr()?.1.mul(ramp(&shape)),
            |h| {
                let w = values(&ramp(&shape));
                per_matrix(&h[0], m * n, |a| householder(a, m, n).1)
                    .iter()
                    .zip(w)
                    .map(|(r, w)| r * w)
                    .collect()
            },
        );
    }
}

#[test]
fn svd_singular_values_and_vectors() {
    for shape in [vec![4usize, 3], vec![3, 4], vec![2, 3, 3], vec![5, 1], vec![1, 2]] {
        let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        let lead = &shape[..shape.len() - 2];
        let batch: usize = lead.iter().product();
        let k = m.min(n);
        let s_shape = [lead, &[k]].concat();
        let name = format!("svd S {shape:?}");
        // d S / d A is U diag(w) Vh: the gradient checks the singular vectors too
        Check::new(&name, vec![(noise(batch * m * n, 6), shape.clone())], &s_shape).run(
            |t| t[0].svd(false)?.1.mul(ramp(&s_shape)),
            |h| {
                let w = values(&ramp(&s_shape));
                per_matrix(&h[0], m * n, |a| singular_values(a, m, n))
                    .iter()
                    .zip(w)
                    .map(|(s, w)| s * w)
                    .collect()
            },
        );
        on_devices(|device| {
            let a = Tensor::from_slice(&noise(batch * m * n, 6), &shape).unwrap();
            for full in [false, true] {
                let (u, s, vh) = a.svd(full).unwrap();
                let cols = if full { m } else { k };
                assert_eq!(u.shape(), &[lead, &[m, cols]].concat()[..], "{device}");
                let rows = if full { n } else { k };
                assert_eq!(vh.shape(), &[lead, &[rows, n]].concat()[..], "{device}");
                let keep = |r: usize, c: usize| {
                    [lead.iter().map(|&d| (0, d)).collect::<Vec<_>>(), vec![(0, r), (0, c)]].concat()
                };
                let (us, vk) = (u.shrink(&keep(m, k)).unwrap(), vh.shrink(&keep(k, n)).unwrap());
                let back = us.mul(s.unsqueeze(-2).unwrap()).unwrap().matmul(&vk).unwrap();
                assert_close(
                    &format!("{device} {shape:?} U S Vh"),
                    &values(&back),
                    &values(&a),
                    (1e-5, 1e-4),
                );
                let eye = |t: &Tensor| t.t().unwrap().matmul(t).unwrap();
                let ident = |d: usize| {
                    values(
                        &Tensor::eye(d, wgrad_tensor::DType::F32)
                            .unwrap()
                            .expand(&[lead, &[d, d]].concat())
                            .unwrap(),
                    )
                };
                assert_close(
                    &format!("{device} {shape:?} U^T U"),
                    &values(&eye(&u)),
                    &ident(cols),
                    (1e-5, FORWARD.1),
                );
                assert_close(
                    &format!("{device} {shape:?} Vh Vh^T"),
                    &values(&eye(&vh.t().unwrap())),
                    &ident(rows),
                    (1e-5, FORWARD.1),
                );
            }
        });
    }
    let v = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    assert!(matches!(v.svd(true), Err(TensorError::Movement { op: "svd", .. })));
    assert!(matches!(v.qr(), Err(TensorError::Movement { op: "qr", .. })));
}
