//! Kernels whose upcast lanes fold into vector loads and stores, or must not: element types
//! with plain arrays (f32, f16, i32, u32) and packed ones (i8, u16, bf16), views that are
//! aligned, shifted by one, padded, flipped or transposed, lengths that are multiples of 4,
//! only of 2, or prime; each with the opts that make the lanes.

use wgrad_codegen::{Opt, OptOps, Program};
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp};
use wgrad_shape::{ShapeTracker, Sint, View};

use crate::random_ast::Case;

fn sints(xs: &[i64]) -> Vec<Sint> {
    xs.iter().map(|&x| Sint::from(x)).collect()
}

fn contiguous(shape: &[i64]) -> ShapeTracker {
    ShapeTracker::from_shape(&sints(shape)).expect("a valid shape")
}

fn load(dtype: DType, slot: i64, st: ShapeTracker) -> UOp {
    UOp::load(dtype, [UOp::define_global(dtype, slot), UOp::view(st)])
}

fn store(shape: &[i64], value: UOp) -> UOp {
    UOp::sink([UOp::store([UOp::define_global(value.dtype(), 0), UOp::view(contiguous(shape)), value])])
}

/// How the first input of an elementwise case is seen: through `n` of `len` elements.
#[derive(Clone, Copy, Debug)]
enum Input {
    Plain,
    /// `a[1..n+1]`: every lane one element past alignment.
    Shifted,
    /// `pad(a[..n-4], (2, 2))`.
    Padded,
    /// `a[n-1..=0]`.
    Flipped,
}

impl Input {
    /// The tracker over `n` elements and the buffer's length.
    fn view(self, n: i64) -> (ShapeTracker, usize) {
        let expect = "movement ops within bounds";
        match self {
            Input::Plain => (contiguous(&[n]), n as usize),
            Input::Shifted => {
                let shrink = [(Sint::from(1), Sint::from(n + 1))];
                (contiguous(&[n + 1]).shrink(&shrink).expect(expect), n as usize + 1)
            }
            Input::Padded => {
                let pad = [(Sint::from(2), Sint::from(2))];
                (contiguous(&[n - 4]).pad(&pad).expect(expect), n as usize - 4)
            }
            Input::Flipped => (contiguous(&[n]).flip(&[true]).expect(expect), n as usize),
        }
    }
}

/// `out = a * b + a` over `n` elements of `dtype`, `a` seen through `input`.
fn elementwise(dtype: DType, n: i64, input: Input) -> Case {
    let (view, len) = input.view(n);
    let (a, b) = (load(dtype, 1, view), load(dtype, 2, contiguous(&[n])));
    let ast = store(&[n], &(&a * &b) + &a);
    Case { ast, buffers: vec![(dtype, n as usize), (dtype, len), (dtype, n as usize)], outputs: 1 }
}

/// The sum of every row of a contiguous `(rows, cols)` buffer of `dtype`.
fn row_sum(dtype: DType, rows: i64, cols: i64) -> Case {
    let ast = store(&[rows, 1], load(dtype, 1, contiguous(&[rows, cols])).reduce_axis(Ops::Add, &[1]));
    Case { ast, buffers: vec![(dtype, rows as usize), (dtype, (rows * cols) as usize)], outputs: 1 }
}

/// `out (rows, cols) = a^T * 2` for a row-major `a (cols, rows)`.
fn transpose(rows: i64, cols: i64) -> Case {
    let view = View::new(&sints(&[rows, cols]), &sints(&[1, rows]), Sint::from(0), None).expect("a view");
    let a = load(DType::F32, 1, ShapeTracker::from_view(view));
    let ast = store(&[rows, cols], &a * &UOp::constant(DType::F32, 2.0));
    let n = (rows * cols) as usize;
    Case { ast, buffers: vec![(DType::F32, n), (DType::F32, n)], outputs: 1 }
}

fn o(op: OptOps, axis: usize, arg: usize) -> Opt {
    Opt::new(op, axis, arg)
}

/// The cases, each with a name and its opts.
pub fn vector_cases() -> Vec<(String, Case, Vec<Opt>)> {
    let mut cases = vec![];
    let dtypes =
        [DType::F32, DType::F16, DType::I32, DType::U32, DType::I8, DType::U8, DType::U16, DType::BF16];
    for dtype in dtypes {
        for n in [64i64, 52, 30, 13] {
            for input in [Input::Plain, Input::Shifted, Input::Padded, Input::Flipped] {
                // by 4 (with a workgroup where it divides), by 2, or a prime length upcast whole
                let opts = match n {
                    n if n % 8 == 0 => vec![o(OptOps::Upcast, 0, 4), o(OptOps::Local, 0, 2)],
                    n if n % 4 == 0 => vec![o(OptOps::Upcast, 0, 4)],
                    n if n % 2 == 0 => vec![o(OptOps::Upcast, 0, 2)],
                    _ => vec![o(OptOps::Upcast, 0, 0)],
                };
                let name = format!("{dtype} x{n} {input:?} {opts:?}");
                cases.push((name, elementwise(dtype, n, input), opts));
            }
        }
        for (rows, cols, unroll) in [(6, 64, 8), (3, 40, 4), (5, 12, 2)] {
            let opts = vec![o(OptOps::Unroll, 0, unroll), o(OptOps::Group, 0, 2)];
            cases.push((format!("{dtype} row sum {rows}x{cols} {opts:?}"), row_sum(dtype, rows, cols), opts));
        }
    }
    let tile = vec![
        o(OptOps::Upcast, 0, 4),
        o(OptOps::Upcast, 1, 4),
        o(OptOps::Unroll, 0, 4),
        o(OptOps::Local, 1, 2),
        o(OptOps::Local, 0, 2),
    ];
    cases.push(("gemm 16x16x8 tile".into(), crate::shapes::matmul(16, 16, 8), tile.clone()));
    cases.push(("gemm 24x16x12 tile".into(), crate::shapes::matmul(24, 16, 12), tile));
    let both = vec![o(OptOps::Upcast, 0, 4), o(OptOps::Upcast, 1, 4)];
    cases.push(("transpose 8x12".into(), transpose(8, 12), both));
    cases
}

/// The number of loads and stores of `program` that move more than one element.
pub fn vector_accesses(program: &Program) -> usize {
    let wide = |u: &&UOp| u.src().first().is_some_and(|p| p.op() == Ops::Index && p.dtype().count() > 1);
    program.uops.iter().filter(|u| matches!(u.op(), Ops::Load | Ops::Store)).filter(wide).count()
}
