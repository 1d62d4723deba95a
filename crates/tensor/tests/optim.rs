//! Optimizers against reference trajectories computed in f64 on the host: a few steps of
//! linear regression with two outputs (a weight matrix and a bias, so two parameters of
//! different ranks) on every device.

mod common;

use std::sync::{Mutex, PoisonError};

use wgrad_tensor::optim::{Adam, Optimizer, Sgd, SgdOpts};
use wgrad_tensor::{Tensor, TensorError, with_default_device};

/// Inputs `(8, 3)`, targets `(8, 2)`, initial weights `(2, 3)` and bias `(2,)`.
const X: [f64; 24] = [
    0.5, -1.0, 2.0, 1.5, 0.25, -0.5, -2.0, 1.0, 0.0, 0.75, -0.25, 1.25, -1.5, 2.0, 0.5, 1.0, 1.0, -1.0, 0.0,
    -0.75, 1.75, 2.0, 0.5, -1.25,
];
const Y: [f64; 16] =
    [1.0, -0.5, 2.0, 0.25, -1.0, 1.5, 0.0, 0.75, 0.5, -1.5, 1.25, 0.0, -0.25, 1.0, 2.0, -1.0];
const W0: [f64; 6] = [0.3, -0.2, 0.1, -0.4, 0.25, 0.6];
const B0: [f64; 2] = [0.05, -0.1];
const STEPS: usize = 4;

/// Held by every test here: the kernel counter is global, so the test that counts kernels
/// must not overlap another.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The gradients of `mean((X wᵀ + b - y)²)` by `w` and by `b`.
fn grads(w: &[f64], b: &[f64]) -> Vec<Vec<f64>> {
    let n = Y.len() as f64;
    let r: Vec<f64> = (0..16)
        .map(|k| {
            let (i, o) = (k / 2, k % 2);
            (0..3).map(|j| X[i * 3 + j] * w[o * 3 + j]).sum::<f64>() + b[o] - Y[k]
        })
        .collect();
    let dw = (0..6).map(|k| (0..8).map(|i| 2.0 * X[i * 3 + k % 3] * r[i * 2 + k / 3] / n).sum()).collect();
    let db = (0..2).map(|o| (0..8).map(|i| 2.0 * r[i * 2 + o] / n).sum()).collect();
    vec![dw, db]
}

/// An optimizer's rule on the host: the parameters after one step from their gradients.
trait Reference {
    fn step(&mut self, params: &mut [Vec<f64>], grads: &[Vec<f64>]);
}

/// The first dim of each parameter: `W0`'s rows and `B0`'s length.
const ROWS: [usize; 2] = [2, 2];

fn norm(x: &[f64]) -> f64 {
    x.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `a` `(n, k)` times `b` `(k, m)`.
fn matmul(a: &[f64], b: &[f64], (n, k, m): (usize, usize, usize)) -> Vec<f64> {
    (0..n * m).map(|q| (0..k).map(|t| a[q / m * k + t] * b[t * m + q % m]).sum()).collect()
}

fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows * cols).map(|q| a[q % rows * cols + q / rows]).collect()
}

/// Newton-Schulz of the matrix `g` `(rows, cols)`, as `Tensor::newton_schulz` defines it.
fn newton_schulz(g: &[f64], rows: usize, cols: usize, steps: usize, coefficients: &[f64]) -> Vec<f64> {
    if rows > cols {
        return transpose(
            &newton_schulz(&transpose(g, rows, cols), cols, rows, steps, coefficients),
            cols,
            rows,
        );
    }
    let scale = norm(g) + 1e-7;
    let mut g: Vec<f64> = g.iter().map(|x| x / scale).collect();
    for _ in 0..steps {
        let gram = matmul(&g, &transpose(&g, rows, cols), (rows, cols, rows));
        let mut power = g.clone();
        let mut next: Vec<f64> = g.iter().map(|x| x * coefficients[0]).collect();
        for &c in &coefficients[1..] {
            power = matmul(&gram, &power, (rows, rows, cols));
            next.iter_mut().zip(&power).for_each(|(n, p)| *n += c * p);
        }
        g = next;
    }
    g
}

/// tinygrad's LARS step, written out plainly: SGD, LARS and Muon are settings of it.
struct SgdRef {
    lr: f64,
    opts: SgdOpts,
    b: Vec<Vec<f64>>,
}

impl Reference for SgdRef {
    fn step(&mut self, params: &mut [Vec<f64>], grads: &[Vec<f64>]) {
        let o = &self.opts;
        self.b.resize(params.len(), vec![]);
        for (((p, g), b), rows) in params.iter_mut().zip(grads).zip(&mut self.b).zip(ROWS) {
            b.resize(p.len(), 0.0);
            let (r1, r2) = (norm(p), norm(g));
            let trust = o.trust_coefficient * r1 / (r2 + o.weight_decay * r1);
            let r = if o.trust_coefficient != 0.0 && r1 > 0.0 && r2 > 0.0 { trust } else { 1.0 };
            let mut g = g.clone();
            for k in 0..p.len() {
                if !o.decoupled_weight_decay {
                    g[k] += o.weight_decay * p[k];
                }
                if o.classic {
                    g[k] *= r * self.lr;
                }
                if o.momentum != 0.0 {
                    b[k] = o.momentum * b[k] + g[k];
                    g[k] = if o.nesterov { g[k] + o.momentum * b[k] } else { b[k] };
                }
            }
            if !o.ns_coefficients.is_empty() {
                g = newton_schulz(&g, rows, g.len() / rows, o.ns_steps, &o.ns_coefficients);
            }
            for k in 0..p.len() {
                if o.decoupled_weight_decay {
                    p[k] *= 1.0 - self.lr * o.weight_decay;
                }
                p[k] -= if o.classic { g[k] } else { g[k] * r * self.lr };
            }
        }
    }
}

struct AdamRef {
    lr: f64,
    eps: f64,
    wd: f64,
    lamb: bool,
    t: i32,
    m: Vec<Vec<f64>>,
    v: Vec<Vec<f64>>,
}

impl Reference for AdamRef {
    fn step(&mut self, params: &mut [Vec<f64>], grads: &[Vec<f64>]) {
        let (b1, b2) = (0.9f64, 0.999f64);
        self.t += 1;
        self.m.resize(params.len(), vec![]);
        self.v.resize(params.len(), vec![]);
        for (((p, g), m), v) in params.iter_mut().zip(grads).zip(&mut self.m).zip(&mut self.v) {
            m.resize(p.len(), 0.0);
            v.resize(p.len(), 0.0);
            let mut u = vec![0.0; p.len()];
            for k in 0..p.len() {
                m[k] = b1 * m[k] + (1.0 - b1) * g[k];
                v[k] = b2 * v[k] + (1.0 - b2) * g[k] * g[k];
                let (m_hat, v_hat) = (m[k] / (1.0 - b1.powi(self.t)), v[k] / (1.0 - b2.powi(self.t)));
                u[k] = m_hat / (v_hat.sqrt() + self.eps) + self.wd * p[k];
            }
            let norm = |x: &[f64]| x.iter().map(|x| x * x).sum::<f64>().sqrt();
            let (r1, r2) = (norm(p), norm(&u));
            let r = if self.lamb && r1 > 0.0 && r2 > 0.0 { r1 / r2 } else { 1.0 };
            p.iter_mut().zip(&u).for_each(|(p, u)| *p -= self.lr * r * u);
        }
    }
}

fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// Runs `make`'s optimizer and `reference` side by side for [`STEPS`] steps on every
/// device, comparing the parameters after each step.
fn check(
    name: &str,
    make: impl Fn(Vec<Tensor>) -> Box<dyn Optimizer>,
    reference: impl Fn() -> Box<dyn Reference>,
) {
    let _serial = serial();
    for device in common::devices() {
        with_default_device(&device, || {
            let x = Tensor::from_vec(f32s(&X), &[8, 3]).unwrap();
            let y = Tensor::from_vec(f32s(&Y), &[8, 2]).unwrap();
            let w = Tensor::from_vec(f32s(&W0), &[2, 3]).unwrap();
            let b = Tensor::from_vec(f32s(&B0), &[2]).unwrap();
            w.set_requires_grad(true).unwrap();
            b.set_requires_grad(true).unwrap();
            let buffers = (w.uop(), b.uop());
            let mut opt = make(vec![w.clone(), b.clone()]);
            let mut reference = reference();
            let mut want = vec![W0.to_vec(), B0.to_vec()];
            for step in 0..STEPS {
                let loss = x
                    .matmul(&w.t().unwrap())
                    .unwrap()
                    .add(&b)
                    .unwrap()
                    .sub(&y)
                    .unwrap()
                    .square()
                    .mean(&[], false)
                    .unwrap();
                loss.backward().unwrap();
                opt.step().unwrap();
                opt.zero_grad();
                let g = grads(&want[0], &want[1]);
                reference.step(&mut want, &g);
                for (t, want) in [&w, &b].into_iter().zip(&want) {
                    let got = t.to_vec::<f32>().unwrap();
                    let ok =
                        got.iter().zip(want).all(|(&g, &w)| (g as f64 - w).abs() <= 1e-5 + 1e-4 * w.abs());
                    assert!(ok, "{name} on {device}, step {step}: {got:?} != {want:?}");
                }
            }
            assert_eq!((w.uop(), b.uop()), buffers, "{name}: the parameters keep their buffers");
            let moved = want.concat().iter().zip(W0.iter().chain(&B0)).any(|(a, b)| (a - b).abs() > 1e-2);
            assert!(moved, "{name}: the steps are too small for the comparison to mean anything");
        });
    }
}

fn sgd(lr: f64, momentum: f64, weight_decay: f64, nesterov: bool) -> Box<dyn Reference> {
    let opts = SgdOpts { momentum, weight_decay, nesterov, ..SgdOpts::default() };
    Box::new(SgdRef { lr, opts, b: vec![] })
}

fn adam(lr: f64, eps: f64, wd: f64, lamb: bool) -> Box<dyn Reference> {
    Box::new(AdamRef { lr, eps, wd, lamb, t: 0, m: vec![], v: vec![] })
}

#[test]
fn sgd_follows_the_reference() {
    check("sgd", |p| Box::new(Sgd::new(p, 0.1, 0.0, 0.0, false).unwrap()), || sgd(0.1, 0.0, 0.0, false));
}

#[test]
fn sgd_with_momentum_follows_the_reference() {
    check(
        "momentum",
        |p| Box::new(Sgd::new(p, 0.05, 0.9, 0.0, false).unwrap()),
        || sgd(0.05, 0.9, 0.0, false),
    );
}

#[test]
fn sgd_with_nesterov_and_weight_decay_follows_the_reference() {
    let make = |p| Box::new(Sgd::new(p, 0.05, 0.8, 0.01, true).unwrap()) as Box<dyn Optimizer>;
    check("nesterov", make, || sgd(0.05, 0.8, 0.01, true));
}

#[test]
fn lars_follows_the_reference() {
    // a larger trust coefficient than tinygrad's 0.001, so four steps move the weights
    let opts = SgdOpts { trust_coefficient: 0.5, ..SgdOpts::lars() };
    let reference = || Box::new(SgdRef { lr: 0.5, opts: opts.clone(), b: vec![] }) as Box<dyn Reference>;
    check("lars", |p| Box::new(Sgd::with(p, 0.5, opts.clone()).unwrap()), reference);
}

#[test]
fn lars_with_tinygrads_defaults_follows_the_reference() {
    let reference = || Box::new(SgdRef { lr: 20.0, opts: SgdOpts::lars(), b: vec![] }) as Box<dyn Reference>;
    check("lars defaults", |p| Box::new(Sgd::lars(p, 20.0).unwrap()), reference);
}

#[test]
fn muon_follows_the_reference() {
    let reference = || Box::new(SgdRef { lr: 0.05, opts: SgdOpts::muon(), b: vec![] }) as Box<dyn Reference>;
    check("muon", |p| Box::new(Sgd::muon(p, 0.05).unwrap()), reference);
}

#[test]
fn muon_without_nesterov_with_the_cubic_iteration_follows_the_reference() {
    let opts = SgdOpts { nesterov: false, ns_steps: 3, ns_coefficients: vec![1.5, -0.5], ..SgdOpts::muon() };
    let reference = || Box::new(SgdRef { lr: 0.1, opts: opts.clone(), b: vec![] }) as Box<dyn Reference>;
    check("muon cubic", |p| Box::new(Sgd::with(p, 0.1, opts.clone()).unwrap()), reference);
}

#[test]
fn adam_follows_the_reference() {
    check("adam", |p| Box::new(Adam::new(p, 0.05).unwrap()), || adam(0.05, 1e-8, 0.0, false));
}

#[test]
fn adamw_follows_the_reference() {
    check("adamw", |p| Box::new(Adam::adamw(p, 0.05, 0.1).unwrap()), || adam(0.05, 1e-8, 0.1, false));
}

#[test]
fn lamb_follows_the_reference() {
    check("lamb", |p| Box::new(Adam::lamb(p, 0.05, 0.01).unwrap()), || adam(0.05, 1e-6, 0.01, true));
}

#[test]
fn an_adam_step_is_one_schedule_of_a_kernel_per_state_tensor() {
    let _serial = serial();
    let w = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    w.set_requires_grad(true).unwrap();
    let mut opt = Adam::new(vec![w.clone()], 0.1).unwrap();
    w.square().sum(&[], false).unwrap().backward().unwrap();
    let before = wgrad_engine::counters().kernels;
    opt.step().unwrap();
    let kernels = wgrad_engine::counters().kernels - before;
    // b1^t, b2^t, m, v and the parameter; the gradient fuses into the last three
    assert!(kernels <= 5, "one Adam step of one parameter ran {kernels} kernels");
}

#[test]
fn set_lr_changes_the_step_and_compiles_nothing_new() {
    let _serial = serial();
    let w = Tensor::from_slice(&[1.0f32], &[1]).unwrap();
    w.set_requires_grad(true).unwrap();
    let mut opt = Sgd::new(vec![w.clone()], 0.1, 0.0, 0.0, false).unwrap();
    let mut compiled = vec![];
    for lr in [0.5, 0.25, 0.125, 0.0625] {
        opt.set_lr(lr).unwrap();
        w.sum(&[], false).unwrap().backward().unwrap();
        opt.step().unwrap();
        opt.zero_grad();
        compiled.push(wgrad_engine::cached_kernels());
    }
    // each step subtracts its learning rate (the gradient is 1)
    assert_eq!(w.to_vec::<f32>().unwrap(), [0.0625]);
    // a new learning rate is data, not a kernel of its own
    assert!(compiled.windows(2).all(|w| w[0] == w[1]), "kernels compiled per step: {compiled:?}");
}

#[test]
fn misuse_is_a_typed_error() {
    let _serial = serial();
    let w = Tensor::from_slice(&[1.0f32], &[1]).unwrap();
    assert!(matches!(Sgd::new(vec![w.clone()], 0.1, 0.0, 0.0, false), Err(TensorError::NoTensors(_))));
    w.set_requires_grad(true).unwrap();
    let mut opt = Adam::new(vec![w.clone(), w.clone()], 0.1).unwrap();
    assert_eq!(opt.group().params.len(), 1, "duplicates are dropped");
    let err = opt.step().unwrap_err().to_string();
    assert!(err.contains("no gradient") && err.contains("(1,) float32"), "{err}");
    let bad_lr = Sgd::new(vec![w.clone()], -0.1, 0.0, 0.0, false).unwrap_err();
    assert!(matches!(bad_lr, TensorError::Argument { op: "optimizer", .. }), "{bad_lr}");
    let bad_momentum = Sgd::new(vec![w.clone()], 0.1, -0.5, 0.0, false).unwrap_err();
    assert!(bad_momentum.to_string().contains("momentum must be at least 0"), "{bad_momentum}");
    let scalar = Tensor::from_slice(&[1.0f32], &[]).unwrap();
    scalar.set_requires_grad(true).unwrap();
    let err = Sgd::muon(vec![w.clone(), scalar], 0.1).unwrap_err().to_string();
    assert!(err.contains("parameter 1 is () float32"), "{err}");
}

#[test]
fn optimizer_state_lives_on_the_parameters_device() {
    let _serial = serial();
    for device in common::devices() {
        let w = with_default_device(&device, || Tensor::from_slice(&[2.0f32], &[1]).unwrap());
        w.set_requires_grad(true).unwrap();
        let mut opt = Adam::new(vec![w.clone()], 0.5).unwrap();
        assert_eq!(opt.group().lr.device(), &device);
        w.sum(&[], false).unwrap().backward().unwrap();
        opt.step().unwrap();
        let got = w.item::<f32>().unwrap();
        assert!((got - 1.5).abs() < 1e-4, "{device}: {got}");
    }
}
