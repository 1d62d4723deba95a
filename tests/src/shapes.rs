//! Kernel ASTs of the shapes the heuristics give plans of their own (register tiles for
//! matmuls and convolutions forward and backward, grouped row and column reductions, softmax's reductions), at sizes
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

/// `x @ W.T` (nn::Linear's form): `x` is `(m, k)` and `W` is `(n, k)`, both row-major, so the
/// second factor is contiguous along the reduce (its tile is staged in workgroup memory).
pub fn matmul_transposed(m: usize, n: usize, k: usize) -> Case {
    let a = load(1, &[m, n, k], &[k, 0, 1]);
    let w = load(2, &[m, n, k], &[0, k, 1]);
    let ast = store(&[m, n, 1], (a * w).reduce_axis(Ops::Add, &[2]));
    Case { ast, buffers: vec![(DType::F32, m * n), (DType::F32, m * k), (DType::F32, n * k)], outputs: 1 }
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

/// A view of `shape` with signed `strides`, `offset` and an optional `mask`.
fn signed_view(shape: &[usize], strides: &[i64], offset: i64, mask: Option<&[(usize, usize)]>) -> View {
    let strides: Vec<Sint> = strides.iter().map(|&s| Sint::from(s)).collect();
    let mask: Option<Vec<(Sint, Sint)>> =
        mask.map(|m| m.iter().map(|&(b, e)| (Sint::from(b as i64), Sint::from(e as i64))).collect());
    View::new(&sints(shape), &strides, Sint::from(offset), mask.as_deref()).expect("a valid view")
}

fn load_st(slot: i64, st: ShapeTracker) -> UOp {
    UOp::load(DType::F32, [UOp::define_global(DType::F32, slot), UOp::view(st)])
}

/// The input gradient of a valid `kk x kk` convolution of `(b, ci, hw, hw)` by `(co, ci, kk,
/// kk)` as a direct convolution: the output gradient `(b, co, o, o)` padded by `kk - 1` (a
/// masked view under the windows) times the flipped weight, summed over `(co, ky, kx)`. With
/// `relu`, the image side is the output gradient times a second buffer read through the same
/// windows (a fused activation gradient).
pub fn conv_input_grad(b: usize, ci: usize, co: usize, hw: usize, kk: usize, relu: bool) -> Case {
    let (o, p) = (hw - kk + 1, kk - 1);
    let hp = o + 2 * p;
    let padded = signed_view(
        &[b, co, hp, hp],
        &[(co * o * o) as i64, (o * o) as i64, o as i64, 1],
        -((p * o + p) as i64),
        Some(&[(0, b), (0, co), (p, p + o), (p, p + o)]),
    );
    let shape = [b, ci, hw, hw, co, kk, kk];
    let windows = |hp: usize| {
        let strides = [co * hp * hp, 0, hp, 1, hp * hp, hp, 1].map(|s| s as i64);
        signed_view(&shape, &strides, 0, None)
    };
    let image_st = || ShapeTracker::from_views(vec![padded.clone(), windows(hp)]).expect("two views");
    // the weight (co, ci, ky, kx) flipped along ky and kx
    let w_strides = [0, (kk * kk) as i64, 0, 0, (ci * kk * kk) as i64, -(kk as i64), -1];
    let w = load_st(2, ShapeTracker::from_view(signed_view(&shape, &w_strides, (kk * kk - 1) as i64, None)));
    let image = match relu {
        true => load_st(1, image_st()) * load_st(3, image_st()),
        false => load_st(1, image_st()),
    };
    let ast = store(&[b, ci, hw, hw, 1, 1, 1], (image * w).reduce_axis(Ops::Add, &[4, 5, 6]));
    let mut buffers =
        vec![(DType::F32, b * ci * hw * hw), (DType::F32, b * co * o * o), (DType::F32, co * ci * kk * kk)];
    if relu {
        buffers.push((DType::F32, b * co * o * o));
    }
    Case { ast, buffers, outputs: 1 }
}

/// The weight gradient of a valid `kk x kk` convolution of `(b, ci, hw, hw)` by `(co, ci, kk,
/// kk)`: the windows of the input times the output gradient, summed over `(b, oy, ox)`.
pub fn conv_weight_grad(b: usize, ci: usize, co: usize, hw: usize, kk: usize) -> Case {
    let o = hw - kk + 1;
    let shape = [co, ci, kk, kk, b, o, o];
    let x = load(1, &shape, &[0, hw * hw, hw, 1, ci * hw * hw, hw, 1]);
    let dy = load(2, &shape, &[o * o, 0, 0, 0, co * o * o, o, 1]);
    let ast = store(&[co, ci, kk, kk, 1, 1, 1], (x * dy).reduce_axis(Ops::Add, &[4, 5, 6]));
    let buffers =
        vec![(DType::F32, co * ci * kk * kk), (DType::F32, b * ci * hw * hw), (DType::F32, b * co * o * o)];
    Case { ast, buffers, outputs: 1 }
}

/// The `op` (`Add`, `Max`) reduction over `axis` of a contiguous `(rows, cols)` buffer.
pub fn reduce(rows: usize, cols: usize, axis: usize, op: Ops) -> Case {
    let out = if axis == 1 { [rows, 1] } else { [1, cols] };
    let ast = store(&out, load(1, &[rows, cols], &[cols, 1]).reduce_axis(op, &[axis]));
    Case { ast, buffers: vec![(DType::F32, out[0] * out[1]), (DType::F32, rows * cols)], outputs: 1 }
}

/// The sum over `axis` of a contiguous `(rows, cols)` buffer.
pub fn sum(rows: usize, cols: usize, axis: usize) -> Case {
    reduce(rows, cols, axis, Ops::Add)
}

/// Softmax's last kernel: `exp2(x - max) * recip(sum)` along rows, max and sum broadcast.
pub fn normalize(rows: usize, cols: usize) -> Case {
    let x = load(1, &[rows, cols], &[cols, 1]);
    let (max, sum) = (load(2, &[rows, cols], &[1, 0]), load(3, &[rows, cols], &[1, 0]));
    let ast = store(&[rows, cols], (x + -max).exp2() * sum.recip());
    let buffers =
        vec![(DType::F32, rows * cols), (DType::F32, rows * cols), (DType::F32, rows), (DType::F32, rows)];
    Case { ast, buffers, outputs: 1 }
}

/// A layer norm's statistics in one kernel: the row mean (slot 0) and the mean of the squared
/// deviations from it (slot 1), the first reduce nested in the second.
pub fn mean_and_variance(rows: usize, cols: usize) -> Case {
    let x = load(2, &[rows, cols], &[cols, 1]);
    let sum = x.reduce_axis(Ops::Add, &[1]);
    let mean = &sum * &sum.const_like(1.0 / cols as f64);
    let centered = &x - &mean;
    let var = (&centered * &centered).reduce_axis(Ops::Add, &[1]);
    let var = &var * &var.const_like(1.0 / cols as f64);
    let row = |slot: i64, value: UOp| {
        let st = ShapeTracker::from_shape(&sints(&[rows, 1])).expect("a valid shape");
        UOp::store([UOp::define_global(DType::F32, slot), UOp::view(st), value])
    };
    let ast = UOp::sink([row(0, mean), row(1, var)]);
    Case { ast, buffers: vec![(DType::F32, rows), (DType::F32, rows), (DType::F32, rows * cols)], outputs: 2 }
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
        ("x @ W.T 128x96x40 (staged)".into(), matmul_transposed(128, 96, 40)),
        ("x @ W.T 256x64x24 (staged)".into(), matmul_transposed(256, 64, 24)),
        ("x @ W.T 61x67x13 (primes: padded, unstaged)".into(), matmul_transposed(61, 67, 13)),
        ("conv 4x3x8 12x12 k5".into(), conv(4, 3, 8, 12, 5)),
        ("conv 2x8x16 10x10 k3".into(), conv(2, 8, 16, 10, 3)),
        ("conv input gradient 2x3x8 11x11 k5".into(), conv_input_grad(2, 3, 8, 11, 5, false)),
        ("conv input gradient 3x5x4 7x7 k3, fused relu".into(), conv_input_grad(3, 5, 4, 7, 3, true)),
        ("conv weight gradient 3x4x8 12x12 k5".into(), conv_weight_grad(3, 4, 8, 12, 5)),
        ("conv weight gradient 2x3x5 9x9 k2".into(), conv_weight_grad(2, 3, 5, 9, 2)),
        (
            "conv weight gradient 4x1x32 12x12 k5 (tiled and grouped)".into(),
            conv_weight_grad(4, 1, 32, 12, 5),
        ),
        ("row sum 24x1024".into(), sum(24, 1024, 1)),
        ("row sum 5x400".into(), sum(5, 400, 1)),
        ("row sum 7x1021 (prime)".into(), sum(7, 1021, 1)),
        ("column sum 512x64".into(), sum(512, 64, 0)),
        ("column sum 300x96".into(), sum(300, 96, 0)),
        ("column sum 128x384 (short, few outputs)".into(), sum(128, 384, 0)),
        ("row sum 65536x64 (many short rows)".into(), sum(65536, 64, 1)),
        ("row sum 8192x256 (rows in one pass)".into(), sum(8192, 256, 1)),
        ("softmax exp-sum 65536x64 (many short rows)".into(), exp_sum(65536, 64)),
        ("softmax max 16x512".into(), reduce(16, 512, 1, Ops::Max)),
        ("softmax exp-sum 16x512".into(), exp_sum(16, 512)),
        ("softmax normalize 16x512".into(), normalize(16, 512)),
        ("softmax normalize 6x100".into(), normalize(6, 100)),
        ("x*2+1 4096".into(), scale_shift(4096)),
        ("x*2+1 4099 (prime)".into(), scale_shift(4099)),
    ]
}

/// Cases of nested reduces at sizes where the plans fire, too large for the AST evaluator (it
/// recomputes the inner reduce for every element of the outer one): checked against the
/// plain kernel (no opts) instead.
pub fn nested_tuned_cases() -> Vec<(String, Case)> {
    vec![
        ("mean and variance 8192x256 (nested, rows in one pass)".into(), mean_and_variance(8192, 256)),
        ("mean and variance 24x1024 (nested, grouped)".into(), mean_and_variance(24, 1024)),
    ]
}

/// Targets under which the plans fire at these sizes: a GPU-like target wanting 1024 threads
/// (tiles shrink, few outputs group) and one wanting 1 << 17 (everything groups, tiles stay
/// small), that one again with subgroup ops switched (grouped partials combined in subgroups
/// or not), besides the interpreter's own kind of target.
pub fn tuned_targets(base: &Target) -> Vec<Target> {
    vec![
        Target { parallelism: 1 << 10, ..base.clone() },
        Target { parallelism: 1 << 17, ..base.clone() },
        Target { parallelism: 1 << 17, subgroup_ops: !base.subgroup_ops, ..base.clone() },
        Target { parallelism: 1 << 6, ..base.clone() },
    ]
}
