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

/// `Tensor::arange(n)` along `axis` of `shape` as the Tensor front end builds it: the bits of
/// the constant pattern `[0, 1]` broadcast in blocks of `2^b`, each times `2^b` (no reduce).
pub fn arange_ast(n: i64, shape: &[i64], axis: usize) -> UOp {
    let bits = (n as u64).next_power_of_two().trailing_zeros() as i64;
    let size = 1i64 << bits;
    let mut line = vec![1; shape.len()];
    line[axis] = n;
    (0..bits).fold(UOp::constant(DType::I32, 0), |acc, b| {
        let bit = st(&[1])
            .pad(&[(Sint::int(1), Sint::int(0))])
            .and_then(|s| s.reshape(&sints(&[1, 2, 1])))
            .and_then(|s| s.expand(&sints(&[size >> (b + 1), 2, 1 << b])))
            .and_then(|s| s.reshape(&sints(&[size])))
            .and_then(|s| s.shrink(&[(Sint::int(0), Sint::int(n))]))
            .and_then(|s| s.reshape(&sints(&line)))
            .and_then(|s| s.expand(&sints(shape)))
            .unwrap();
        acc + masked_const(1, DType::I32, bit) * UOp::constant(DType::I32, 1i64 << b)
    })
}

/// `out (tokens, dim) = table (vocab, dim)[ids (tokens)]` as `Tensor::embedding` builds it: the
/// ids (int32, buffer 1) compared with an arange, the matching row of the f32 table (buffer 2)
/// kept, summed over the vocabulary. Full shape `(tokens, vocab, dim)`.
pub fn embedding_ast(tokens: i64, vocab: i64, dim: i64) -> UOp {
    let full = [tokens, vocab, dim];
    let ids = load_dt(DType::I32, 1, strided(&full, &[1, 0, 0], 0));
    let table = load(2, strided(&full, &[0, dim, 1], 0));
    let hit = ids.cmp_ne(arange_ast(vocab, &full, 1)).logical_not();
    let picked = hit.where_(&table, &UOp::constant(DType::F32, 0.0));
    store_ast(st(&[tokens, 1, dim]), picked.reduce_axis(Ops::Add, &[1]))
}
