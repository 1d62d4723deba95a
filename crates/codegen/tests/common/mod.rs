//! Builders of small kernel ASTs for the codegen tests.
#![allow(dead_code)] // each test file uses its own subset

use wgrad_codegen::{Kernel, Opt, OptOps, Target};
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Ops, UOp};
use wgrad_shape::{ShapeTracker, Sint, View};

/// Integer dims as `Sint`s.
pub fn sints(xs: &[i64]) -> Vec<Sint> {
    xs.iter().map(|&x| Sint::int(x)).collect()
}

/// A contiguous tracker of `shape`.
pub fn st(shape: &[i64]) -> ShapeTracker {
    ShapeTracker::from_shape(&sints(shape)).unwrap()
}

/// A one-view tracker with explicit strides and offset.
pub fn strided(shape: &[i64], strides: &[i64], offset: i64) -> ShapeTracker {
    ShapeTracker::from_view(View::new(&sints(shape), &sints(strides), Sint::int(offset), None).unwrap())
}

/// `st` padded by `(before, after)` per dim.
pub fn padded(st: ShapeTracker, pads: &[(i64, i64)]) -> ShapeTracker {
    let arg: Vec<(Sint, Sint)> = pads.iter().map(|&(b, e)| (Sint::int(b), Sint::int(e))).collect();
    st.pad(&arg).unwrap()
}

/// A load of `dtype` from buffer `slot` through `st`.
pub fn load_dt(dtype: DType, slot: i64, st: ShapeTracker) -> UOp {
    UOp::load(dtype, [UOp::define_global(dtype, slot), UOp::view(st)])
}

/// An f32 load from buffer `slot` through `st`.
pub fn load(slot: i64, st: ShapeTracker) -> UOp {
    load_dt(DType::F32, slot, st)
}

/// A constant valid only where `st` is (0 elsewhere).
pub fn masked_const(v: impl Into<ConstValue>, dtype: DType, st: ShapeTracker) -> UOp {
    let c = UOp::constant(dtype, v);
    c.with_src([UOp::view(st)])
}

/// The kernel AST storing `value` into buffer 0 through `st`.
pub fn store_ast(st: ShapeTracker, value: UOp) -> UOp {
    let dtype = value.dtype();
    UOp::sink([UOp::store([UOp::define_global(dtype, 0), UOp::view(st), value])])
}

/// `C = A @ B` with A (m, k) in buffer 1 and B (k, n) in buffer 2: full shape (m, n, k).
pub fn matmul_ast(m: i64, n: i64, k: i64) -> UOp {
    let a = load(1, strided(&[m, n, k], &[k, 0, 1], 0));
    let b = load(2, strided(&[m, n, k], &[0, 1, n], 0));
    store_ast(st(&[m, n, 1]), (a * b).reduce_axis(Ops::Add, &[2]))
}

/// `y = W @ x` with W (n, k) in buffer 1 and x (k) in buffer 2: full shape (n, k).
pub fn matvec_ast(n: i64, k: i64) -> UOp {
    let w = load(1, st(&[n, k]));
    let x = load(2, strided(&[n, k], &[0, 1], 0));
    store_ast(st(&[n, 1]), (w * x).reduce_axis(Ops::Add, &[1]))
}

/// The sum over `axes` of a contiguous buffer of `shape`.
pub fn sum_ast(shape: &[i64], axes: &[usize]) -> UOp {
    let out: Vec<i64> =
        shape.iter().enumerate().map(|(i, &s)| if axes.contains(&i) { 1 } else { s }).collect();
    store_ast(st(&out), load(1, st(shape)).reduce_axis(Ops::Add, axes))
}

/// A target like an H200 through wgpu: 1024 invocations per workgroup, 48 KiB of workgroup
/// memory, 4-wide vectors.
pub fn big_gpu() -> Target {
    Target {
        max_local_size: vec![1024, 1024, 64],
        max_local_invocations: 1024,
        shared_max: 49152,
        ..Target::generic_gpu()
    }
}

/// The kernel of `ast` on a generic GPU.
pub fn kernel(ast: &UOp) -> Kernel {
    Kernel::new(ast, Target::generic_gpu()).unwrap()
}

/// The full shape as integers.
pub fn full(k: &Kernel) -> Vec<i64> {
    k.full_shape().iter().map(|s| s.as_int().unwrap()).collect()
}

/// The output shape as integers.
pub fn output(k: &Kernel) -> Vec<i64> {
    k.output_shape().iter().map(|s| s.as_int().unwrap()).collect()
}

/// The last view's strides of tracker `i` as integers.
pub fn strides(k: &Kernel, i: usize) -> Vec<i64> {
    k.sts()[i].views().last().unwrap().strides().iter().map(|s| s.as_int().unwrap()).collect()
}

/// Shorthand for `Opt::new`.
pub fn opt(op: OptOps, axis: usize, arg: usize) -> Opt {
    Opt::new(op, axis, arg)
}
