//! Builders of lowered kernel graphs shared by the interpreter tests.
#![allow(dead_code, reason = "each test file uses a subset")]

use wgrad_codegen::{Program, linearize};
use wgrad_dtype::{AddrSpace, DType};
use wgrad_ops::{Arg, Ops, UOp};
use wgrad_runtime_cpu::{CpuBuffer, run};

/// The buffer argument `slot` of `size` elements of `dtype`.
pub fn global(dtype: DType, slot: i64, size: usize) -> UOp {
    UOp::new(Ops::DefineGlobal, dtype.ptr_sized(AddrSpace::Global, size), [], Arg::Int(slot))
}

/// `buf[idx]`, gated by `valid` when given.
pub fn index(buf: &UOp, idx: &UOp, valid: Option<&UOp>) -> UOp {
    let src: Vec<UOp> = [buf, idx].into_iter().chain(valid).cloned().collect();
    UOp::new(Ops::Index, buf.dtype(), src, Arg::None)
}

/// A load of `buf[idx]` (0 where `valid` is false).
pub fn load(buf: &UOp, idx: &UOp, valid: Option<&UOp>) -> UOp {
    UOp::load(buf.dtype().base(), [index(buf, idx, valid)])
}

/// A store of `value` into `buf[idx]` (skipped where `valid` is false).
pub fn store(buf: &UOp, idx: &UOp, valid: Option<&UOp>, value: &UOp) -> UOp {
    UOp::store([index(buf, idx, valid), value.clone()])
}

/// `op`-reduction of `value` over `ranges`.
pub fn reduce(op: Ops, value: &UOp, ranges: &[&UOp]) -> UOp {
    let src: Vec<UOp> = std::iter::once(value.clone()).chain(ranges.iter().map(|&r| r.clone())).collect();
    UOp::new(Ops::Reduce, value.dtype(), src, Arg::Op(op))
}

/// `0..n` as an int32 range of axis `axis`.
pub fn range(n: i64, axis: i64) -> UOp {
    UOp::range(&UOp::index_const(n), axis)
}

/// Linearizes the stores into a program.
pub fn program(stores: &[UOp]) -> Program {
    linearize(&UOp::sink(stores.to_vec()), "test").expect("linearizes")
}

/// Runs the stores on `buffers`, returning them.
pub fn run_stores(stores: &[UOp], mut buffers: Vec<CpuBuffer>) -> Vec<CpuBuffer> {
    run(&program(stores), &mut buffers, &[]).expect("runs");
    buffers
}

/// `n` f32 test values in [-2, 2).
pub fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 4000) as f32 / 1000.0 - 2.0)
        .collect()
}

/// `buf[idx]` as a pointer to vectors of `width` (elements `idx*width ..`), gated by `valid`.
pub fn vector_index(buf: &UOp, idx: &UOp, width: u32, valid: Option<&UOp>) -> UOp {
    let src: Vec<UOp> = [buf, idx].into_iter().chain(valid).cloned().collect();
    UOp::new(Ops::Index, buf.dtype().vec(width), src, Arg::None)
}
