//! Kernel ASTs of the shapes the heuristics give plans of their own (register tiles for
//! matmuls and convolutions, grouped row and column reductions, softmax's reductions), at sizes
//! small enough for the interpreter and odd enough to reach padding and fallbacks, and targets
//! that make those plans fire on such sizes.

use wgrad_codegen::Target;
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp};
use wgrad_shape::{ShapeTracker, Sint, View};

use crate::random_ast::Case;

fn sints(xs: &[usize]) -> Vec<Sint> {
    xs.iter().map(|&x| Sint::from(x as i64)).collect()
}

fn view(shape: &[usize], strides: &[usize]) -> UOp {
    let strides: Vec<Sint> = strides.iter().map(|&s| Sint::from(s as i64)).collect();
    let v = View::new(&sints(shape), &strides, Sint::from(0), None).expect("a valid view");
    UOp::view(ShapeTracker::from_view(v))
}

fn load(slot: i64, shape: &[usize], strides: &[usize]) -> UOp {
    UOp::load(DType::F32, [UOp::define_global(DType::F32, slot), view(shape, strides)])
}

fn store(shape: &[usize], value: UOp) -> UOp {
    let st = ShapeTracker::from_shape(&sints(shape)).expect("a valid shape");
    UOp::sink([UOp::store([UOp::define_global(DType::F32, 0), UOp::view(st), value])])
}

/// `C (m, n) = A (m, k) @ B (k, n)`.
pub fn matmul(m: usize, n: usize, k: usize) -> Case {
    let a = load(1, &[m, n, k], &[k, 0, 1]);
    let b = load(2, &[m, n, k], &[0, 1, n]);
    let ast = store(&[m, n, 1], (a * b).reduce_axis(Ops::Add, &[2]));
    Case { ast, buffers: vec![(DType::F32, m * n), (DType::F32, m * k), (DType::F32, k * n)], outputs: 1 }
}

/// A valid 2-d convolution of `(b, ci, hw, hw)` by `(co, ci, kk, kk)`.
pub fn conv(b: usize, ci: usize, co: usize, hw: usize, kk: usize) -> Case {
    let o = hw - kk + 1;
    let shape = [b, co, o, o, ci, kk, kk];
    let x = load(1, &shape, &[ci * hw * hw, 0, hw, 1, hw * hw, hw, 1]);
    let w = load(2, &shape, &[0, ci * kk * kk, 0, 0, kk * kk, kk, 1]);
    let ast = store(&[b, co, o, o, 1, 1, 1], (x * w).reduce_axis(Ops::Add, &[4, 5, 6]));
    let buffers =
        vec![(DType::F32, b * co * o * o), (DType::F32, b * ci * hw * hw), (DType::F32, co * ci * kk * kk)];
    Case { ast, buffers, outputs: 1 }
}

/// The sum over `axis` of a contiguous `(rows, cols)` buffer.
pub fn sum(rows: usize, cols: usize, axis: usize) -> Case {
    let out = if axis == 1 { [rows, 1] } else { [1, cols] };
    let ast = store(&out, load(1, &[rows, cols], &[cols, 1]).reduce_axis(Ops::Add, &[axis]));
    Case { ast, buffers: vec![(DType::F32, out[0] * out[1]), (DType::F32, rows * cols)], outputs: 1 }
}

/// Softmax's second reduce: `sum(exp2(x - max))` along rows, the max broadcast.
pub fn exp_sum(rows: usize, cols: usize) -> Case {
    let x = load(1, &[rows, cols], &[cols, 1]);
    let max = load(2, &[rows, cols], &[1, 0]);
    let ast = store(&[rows, 1], (x + -max).exp2().reduce_axis(Ops::Add, &[1]));
    Case { ast, buffers: vec![(DType::F32, rows), (DType::F32, rows * cols), (DType::F32, rows)], outputs: 1 }
}

/// `x * 2 + 1` over `n` elements.
pub fn scale_shift(n: usize) -> Case {
    let x = load(1, &[n], &[1]);
    let value = x * UOp::constant(DType::F32, 2.0) + UOp::constant(DType::F32, 1.0);
    Case { ast: store(&[n], value), buffers: vec![(DType::F32, n), (DType::F32, n)], outputs: 1 }
}

/// The cases, each with a name.
pub fn tuned_cases() -> Vec<(String, Case)> {
    vec![
        ("matmul 128x96x40".into(), matmul(128, 96, 40)),
        ("matmul 64x72x24 (8x8 fits m only)".into(), matmul(64, 72, 24)),
        ("matmul 61x67x13 (primes: padded)".into(), matmul(61, 67, 13)),
        ("conv 4x3x8 12x12 k5".into(), conv(4, 3, 8, 12, 5)),
        ("conv 2x8x16 10x10 k3".into(), conv(2, 8, 16, 10, 3)),
        ("row sum 24x1024".into(), sum(24, 1024, 1)),
        ("row sum 5x400".into(), sum(5, 400, 1)),
        ("row sum 7x1021 (prime)".into(), sum(7, 1021, 1)),
        ("column sum 512x64".into(), sum(512, 64, 0)),
        ("column sum 300x96".into(), sum(300, 96, 0)),
        ("softmax exp-sum 16x512".into(), exp_sum(16, 512)),
    ]
}

/// Targets under which the plans fire at these sizes: a GPU-like target wanting 1024 threads
/// (tiles shrink, few outputs group) and one wanting 1 << 17 (everything groups, tiles stay
/// small), besides the interpreter's own kind of target.
pub fn tuned_targets(base: &Target) -> Vec<Target> {
    vec![
        Target { parallelism: 1 << 10, ..base.clone() },
        Target { parallelism: 1 << 17, ..base.clone() },
        Target { parallelism: 1 << 6, ..base.clone() },
    ]
}
