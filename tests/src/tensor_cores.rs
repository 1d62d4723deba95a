//! Half-precision matmul kernels for the TC OptOp: f16 factors in either layout (rows or
//! columns contiguous), the product in f16 then summed in f32 (what `Tensor::matmul` builds)
//! or each factor cast to f32 first, stored as f32 or cast back to f16, with or without a
//! batch axis; and a target that offers 16x16x16 f16 -> f32 cooperative matrices.

use wgrad_codegen::{Target, TensorCoreShape};
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp};
use wgrad_shape::{ShapeTracker, Sint, View};

use crate::random_ast::Case;

/// How a half matmul case is built.
#[derive(Clone, Copy, Debug)]
pub struct HalfMatmul {
    /// Batch, rows, columns and reduce length.
    pub b: usize,
    /// Rows of the output.
    pub m: usize,
    /// Columns of the output.
    pub n: usize,
    /// The reduce length.
    pub k: usize,
    /// A stored as (k, m) instead of (m, k).
    pub a_t: bool,
    /// B stored as (n, k) instead of (k, n).
    pub b_t: bool,
    /// Each factor cast to f32 before the product (else the product is f16, then cast).
    pub cast_first: bool,
    /// The output is f16 (the f32 sum cast back), else f32.
    pub half_out: bool,
}

fn view(shape: &[usize], strides: &[usize]) -> UOp {
    let s = |xs: &[usize]| xs.iter().map(|&x| Sint::from(x as i64)).collect::<Vec<_>>();
    let v = View::new(&s(shape), &s(strides), Sint::from(0), None).expect("a valid view");
    UOp::view(ShapeTracker::from_view(v))
}

impl HalfMatmul {
    /// The kernel AST `C (b, m, n) = sum_k A (b, m, k) * B (b, k, n)` and its buffers.
    pub fn case(self) -> Case {
        let HalfMatmul { b, m, n, k, a_t, b_t, cast_first, half_out } = self;
        let shape = [b, m, n, k];
        let a_strides = if a_t { [m * k, 1, 0, m] } else { [m * k, k, 0, 1] };
        let b_strides = if b_t { [n * k, 0, 1, n] } else { [n * k, 0, k, 1] };
        let h = DType::F16;
        let a = UOp::load(h, [UOp::define_global(h, 1), view(&shape, &a_strides)]);
        let bl = UOp::load(h, [UOp::define_global(h, 2), view(&shape, &b_strides)]);
        let product = match cast_first {
            true => &a.cast(DType::F32) * &bl.cast(DType::F32),
            false => (&a * &bl).cast(DType::F32),
        };
        let mut out = product.reduce_axis(Ops::Add, &[3]);
        let out_dtype = if half_out { h } else { DType::F32 };
        if half_out {
            out = out.cast(h);
        }
        let st = view(&[b, m, n, 1], &[m * n, n, 1, 0]);
        let ast = UOp::sink([UOp::store([UOp::define_global(out_dtype, 0), st, out])]);
        let buffers = vec![(out_dtype, b * m * n), (h, b * m * k), (h, b * k * n)];
        Case { ast, buffers, outputs: 1 }
    }
}

/// The half matmul cases: every layout and form at small sizes, a batch, a longer reduce.
pub fn half_matmuls() -> Vec<HalfMatmul> {
    let base =
        HalfMatmul { b: 1, m: 32, n: 32, k: 32, a_t: false, b_t: false, cast_first: false, half_out: false };
    let mut out = vec![];
    for (a_t, b_t) in [(false, false), (true, false), (false, true), (true, true)] {
        for (cast_first, half_out) in [(false, false), (false, true), (true, false)] {
            out.push(HalfMatmul { a_t, b_t, cast_first, half_out, ..base });
        }
    }
    out.push(HalfMatmul { b: 2, m: 16, n: 48, k: 64, half_out: true, ..base });
    out
}

/// A GPU target with 16x16x16 f16 -> f32 cooperative matrices and subgroups of 32 (what the
/// H200 reports), with 32 KiB of workgroup memory.
pub fn tensor_core_target() -> Target {
    Target {
        name: "tc".into(),
        shared_max: 32768,
        tensor_cores: vec![TensorCoreShape {
            dims: (16, 16, 16),
            dtype_in: DType::F16,
            dtype_out: DType::F32,
        }],
        ..Target::generic_gpu()
    }
}
