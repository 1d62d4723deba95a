//! Kernel-AST builders and the render-and-validate helper shared by the renderer tests.
#![allow(dead_code, reason = "each test file uses a subset")]

use wgrad_codegen::{OptMode, Program, Target, compile};
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp};
use wgrad_renderer_wgsl::{Wgsl, WgslCaps, render, validate};
use wgrad_shape::{ShapeTracker, Sint, View};

/// An adapter with f16 and int64 (lavapipe's features).
pub const FULL: WgslCaps = WgslCaps { f16: true, int64: true, max_workgroups_per_dim: 65535 };
/// An adapter without f16 or int64.
pub const BARE: WgslCaps = WgslCaps { f16: false, int64: false, max_workgroups_per_dim: 65535 };

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

/// The program of `ast` on a generic GPU under `mode`.
pub fn program(ast: &UOp, mode: OptMode) -> Program {
    compile(ast, &Target::generic_gpu(), &mode, "kernel").expect("compiles").1
}

/// Renders `program` and validates the result with naga, panicking with the source if invalid.
pub fn render_valid(program: &Program, caps: &WgslCaps) -> Wgsl {
    let wgsl = render(program, caps).unwrap_or_else(|e| panic!("render: {e}\n{program}"));
    if let Err(e) = validate(&wgsl.source, caps) {
        panic!("{e}\n{}\n{program}", wgsl.source);
    }
    wgsl
}
