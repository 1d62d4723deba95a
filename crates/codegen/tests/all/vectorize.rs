//! The vectorizer: neighbouring lanes whose index proves them contiguous and aligned become one
//! vector load or store of the target's widths; everything else stays scalar.

use crate::common;

use common::*;
use wgrad_codegen::{Opt, OptMode, OptOps, Program, Target, compile};
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp};
use wgrad_shape::{ShapeTracker, Sint, View};

/// The width of every global load and store of `program`, loads then stores, each sorted.
fn widths(program: &Program) -> (Vec<u32>, Vec<u32>) {
    let global = |u: &&UOp| u.src()[0].op() == Ops::Index && u.src()[0].src()[0].op() == Ops::DefineGlobal;
    let of = |op: Ops| {
        let mut w: Vec<u32> = program
            .uops
            .iter()
            .filter(|u| u.op() == op)
            .filter(global)
            .map(|u| if op == Ops::Load { u.dtype() } else { u.src()[1].dtype() }.count())
            .collect();
        w.sort_unstable();
        w
    };
    (of(Ops::Load), of(Ops::Store))
}

/// The rendered index of every global access of `width` lanes.
fn vector_indices(program: &Program, width: u32) -> Vec<String> {
    let vector =
        |u: &&UOp| u.op() == Ops::Index && u.dtype().count() == width && u.src()[0].op() == Ops::DefineGlobal;
    program.uops.iter().filter(vector).map(|u| u.src()[1].render()).collect()
}

fn compiled(ast: &UOp, target: &Target, opts: &[(OptOps, usize, usize)]) -> Program {
    let opts = OptMode::Given(opts.iter().map(|&(op, axis, arg)| Opt::new(op, axis, arg)).collect());
    compile(ast, target, &opts, "k").unwrap().1
}

fn add_ast(shape: &[i64], a: wgrad_shape::ShapeTracker) -> UOp {
    store_ast(st(shape), load(1, a) + load(2, st(shape)))
}

#[test]
fn contiguous_elementwise_moves_16_bytes_per_access() {
    let program = compiled(&add_ast(&[4096], st(&[4096])), &Target::generic_gpu(), &[(OptOps::Upcast, 0, 4)]);
    assert_eq!(widths(&program), (vec![4, 4], vec![4]), "{program}");
    // the lanes are read through Geps of the vector loads, and stored as one Vectorize
    assert_eq!(program.uops.iter().filter(|u| u.op() == Ops::Gep).count(), 8, "{program}");
    // the heuristics pick that upcast for a contiguous elementwise kernel
    let (_, heuristic) =
        compile(&add_ast(&[4096], st(&[4096])), &Target::generic_gpu(), &OptMode::Heuristic, "k").unwrap();
    assert_eq!(widths(&heuristic), (vec![4, 4], vec![4]), "{heuristic}");
}

#[test]
fn wider_runs_split_into_the_widest_vectors_the_target_has() {
    let ast = add_ast(&[4096], st(&[4096]));
    let eight = compiled(&ast, &Target::generic_gpu(), &[(OptOps::Upcast, 0, 8)]);
    assert_eq!(widths(&eight), (vec![4, 4, 4, 4], vec![4, 4]));
    let pairs = Target { vector_widths: vec![1, 2], ..Target::generic_gpu() };
    assert_eq!(widths(&compiled(&ast, &pairs, &[(OptOps::Upcast, 0, 4)])), (vec![2, 2, 2, 2], vec![2, 2]));
    let scalar = Target { vector_widths: vec![1], ..Target::generic_gpu() };
    assert_eq!(widths(&compiled(&ast, &scalar, &[(OptOps::Upcast, 0, 4)])), (vec![1; 8], vec![1; 4]));
}

#[test]
fn unroll_of_a_row_reduce_reads_vectors_in_the_loop() {
    // row sum, each thread reading runs of 8 neighbours: two 16-byte loads per step
    let program = compiled(
        &sum_ast(&[64, 1024], &[1]),
        &Target::generic_gpu(),
        &[(OptOps::Unroll, 0, 8), (OptOps::Group, 0, 16)],
    );
    assert_eq!(widths(&program).0, vec![4, 4], "{program}");
    // rows of 6 floats: each row starts at a multiple of 2, not of 4: three 8-byte loads
    let six = compiled(&sum_ast(&[64, 6], &[1]), &Target::generic_gpu(), &[(OptOps::Unroll, 0, 0)]);
    assert_eq!(widths(&six).0, vec![2, 2, 2], "{six}");
}

#[test]
fn an_unaligned_view_folds_only_its_aligned_lanes() {
    // a[1:4097]: a thread's lanes sit at 4k+1, 4k+2, 4k+3, 4k+4; only (4k+2, 4k+3) is an aligned pair
    let shifted = strided(&[4096], &[1], 1);
    let program = compiled(&add_ast(&[4096], shifted), &Target::generic_gpu(), &[(OptOps::Upcast, 0, 4)]);
    assert_eq!(widths(&program), (vec![1, 1, 2, 4], vec![4]), "{program}");
    let index = vector_indices(&program, 2);
    assert_eq!(index, ["((gidx0*2)+1)"], "elements 4k+2, 4k+3 are the pair 2k+1");
}

#[test]
fn padded_lanes_fold_only_where_they_share_a_gate() {
    // pad(a, (1, 3)) along the upcast axis: lane 0 reads a[4k-1] when k > 0, lanes 1 and 2 read
    // a[4k], a[4k+1] when k < 15, lane 3 has a gate of its own
    let padded_a = padded(st(&[60]), &[(1, 3)]);
    let program = compiled(&add_ast(&[64], padded_a), &Target::generic_gpu(), &[(OptOps::Upcast, 0, 4)]);
    assert_eq!(widths(&program), (vec![1, 1, 2, 4], vec![4]), "{program}");
    let pair = program.uops.iter().find(|u| u.op() == Ops::Load && u.dtype().count() == 2).unwrap();
    assert_eq!(pair.src()[0].src()[2].render(), "(gidx0<15)", "{program}");
}

#[test]
fn strided_lanes_stay_scalar() {
    // a transposed input: lanes along its rows are contiguous in memory, the output's are 7 apart
    let transposed = store_ast(st(&[8, 7]), load(1, strided(&[8, 7], &[1, 8], 0)) * 2.0f32);
    let program = compiled(&transposed, &Target::generic_gpu(), &[(OptOps::Upcast, 0, 4)]);
    assert_eq!(widths(&program), (vec![4], vec![1; 4]), "{program}");
    // lanes along a column of a row-major matrix are a row apart
    let cols = store_ast(st(&[7, 8]), load(1, strided(&[7, 8], &[1, 7], 0)) * 2.0f32);
    let program = compiled(&cols, &Target::generic_gpu(), &[(OptOps::Upcast, 0, 7)]);
    assert_eq!(widths(&program), (vec![1; 7], vec![1; 7]), "{program}");
}

#[test]
fn odd_row_lengths_fold_what_divides() {
    // rows of 9, an upcast of 3 along them: row starts are 9r, so nothing provably aligns
    let per_row = |n: i64| load(2, strided(&[5, n], &[1, 0], 0));
    let threes = store_ast(st(&[5, 9]), load(1, st(&[5, 9])) * per_row(9));
    let program = compiled(&threes, &Target::generic_gpu(), &[(OptOps::Upcast, 1, 3)]);
    assert_eq!(widths(&program), (vec![1; 4], vec![1; 3]), "the per-row value too: {program}");
    // rows of 10, an upcast of 2 along them: every pair starts at an even element
    let pairs = store_ast(st(&[5, 10]), load(1, st(&[5, 10])) * per_row(10));
    let program = compiled(&pairs, &Target::generic_gpu(), &[(OptOps::Upcast, 1, 2)]);
    assert_eq!(widths(&program), (vec![1, 2], vec![2]), "{program}");
}

#[test]
fn element_types_without_plain_arrays_stay_scalar_but_bytes_load_whole_words() {
    let ast = |dt: DType| store_ast(st(&[256]), load_dt(dt, 1, st(&[256])) + load_dt(dt, 2, st(&[256])));
    let up4 = [(OptOps::Upcast, 0, 4)];
    let generic = Target::generic_gpu();
    assert_eq!(widths(&compiled(&ast(DType::I32), &generic, &up4)), (vec![4, 4], vec![4]));
    assert_eq!(widths(&compiled(&ast(DType::F16), &generic, &up4)), (vec![4, 4], vec![4]));
    let no_f16 = Target { has_f16: false, ..generic.clone() };
    assert_eq!(widths(&compiled(&ast(DType::F16), &no_f16, &up4)), (vec![1; 8], vec![1; 4]));
    for packed in [DType::U16, DType::BF16] {
        assert_eq!(widths(&compiled(&ast(packed), &generic, &up4)), (vec![1; 8], vec![1; 4]), "{packed}");
    }
    // four bytes are one u32 word of the packed array: loaded once; stores stay lane by lane
    for bytes in [DType::I8, DType::U8, DType::BOOL] {
        assert_eq!(widths(&compiled(&ast(bytes), &generic, &up4)), (vec![4, 4], vec![1; 4]), "{bytes}");
    }
    let pairs = [(OptOps::Upcast, 0, 2)];
    assert_eq!(widths(&compiled(&ast(DType::U8), &generic, &pairs)), (vec![1; 4], vec![1; 2]), "half a word");
}

#[test]
fn a_register_tile_loads_and_stores_vectors() {
    // 4x4 tile, k unrolled by 4: A rows read 4 neighbours along k, B and C 4 along n
    let opts =
        [(OptOps::Upcast, 0, 4), (OptOps::Upcast, 1, 4), (OptOps::Unroll, 0, 4), (OptOps::Local, 1, 4)];
    let program = compiled(&matmul_ast(64, 64, 64), &Target::generic_gpu(), &opts);
    assert_eq!(widths(&program), (vec![4; 8], vec![4; 4]), "{program}");
}

#[test]
fn the_heuristics_plans_move_16_bytes() {
    let heuristic = |ast: &UOp| compile(ast, &big_gpu(), &OptMode::Heuristic, "k").unwrap().1;
    // row sum: two 16-byte loads a step, one scalar per row out
    assert_eq!(widths(&heuristic(&sum_ast(&[4096, 8192], &[1]))), (vec![4, 4], vec![1]));
    // column sum: one 16-byte load a row (16 rows a step) and one 16-byte store of the four sums
    assert_eq!(widths(&heuristic(&sum_ast(&[4096, 8192], &[0]))), (vec![4; 16], vec![4]));
    // softmax: max and exp-sum read rows as vectors (the max broadcast along the row is one
    // scalar), the normalize reads and writes rows as vectors
    let (rows, cols) = (4096, 8192);
    let x = || load(1, st(&[rows, cols]));
    let per_row = |slot| load(slot, strided(&[rows, cols], &[1, 0], 0));
    let exp_sum = store_ast(st(&[rows, 1]), (x() + -per_row(2)).exp2().reduce_axis(Ops::Add, &[1]));
    assert_eq!(widths(&heuristic(&exp_sum)), (vec![1, 4, 4], vec![1]));
    let normalize = store_ast(st(&[rows, cols]), x() * per_row(3));
    assert_eq!(widths(&heuristic(&normalize)), (vec![1, 4], vec![4]));
    // x*2+1
    let scale = store_ast(st(&[1 << 25]), load(1, st(&[1 << 25])) * 2.0f32 + 1.0f32);
    assert_eq!(widths(&heuristic(&scale)), (vec![4], vec![4]));
    // GEMM 8x8 tile, k unrolled by 8, staged: A's and B's blocks copied as 16-byte vectors
    // (before the loop and in it), C stored as 16
    let (loads, stores) = widths(&heuristic(&matmul_ast(4096, 4096, 4096)));
    assert!(!loads.is_empty() && loads.iter().all(|&w| w == 4), "{loads:?}");
    assert_eq!(stores, vec![4; 16]);
    // MNIST's first convolution (28x28 images, 5x5 kernels, 32 channels, batch 512): the conv
    // tile's positions along a row are neighbours, so its outputs are 16-byte stores
    let shape = [512, 32, 24, 24, 1, 5, 5];
    let image = load(1, strided(&shape, &[784, 0, 28, 1, 784, 28, 1], 0));
    let weight = load(2, strided(&shape, &[0, 25, 0, 0, 25, 5, 1], 0));
    let out = strided(&[512, 32, 24, 24, 1, 1, 1], &[18432, 576, 24, 1, 0, 0, 0], 0);
    let (_, stores) = widths(&heuristic(&store_ast(out, (image * weight).reduce_axis(Ops::Add, &[4, 5, 6]))));
    assert!(!stores.is_empty() && stores.iter().all(|&w| w == 4), "{stores:?}");
}

/// A view of `shape` with explicit strides, offset and mask.
fn view(shape: &[i64], strides: &[i64], offset: i64, mask: Option<&[(i64, i64)]>) -> View {
    let mask: Option<Vec<(Sint, Sint)>> =
        mask.map(|m| m.iter().map(|&(a, b)| (Sint::int(a), Sint::int(b))).collect());
    View::new(&sints(shape), &sints(strides), Sint::int(offset), mask.as_deref()).unwrap()
}

#[test]
fn a_tile_whose_masked_lanes_reduce_zeros_still_orders_its_loops() {
    // the input gradient of a grouped, strided, dilated conv (x (2,4,6,6), w (4,2,2,2), stride
    // 3, padding 1, dilation 2, 2 groups) as the scheduler writes it: some lanes of the tile
    // are masked to zero everywhere, so their sums are sums of zeros
    let outer = view(
        &[1, 2, 1, 4, 3, 8, 3, 8],
        &[0, 144, 0, 36, 0, 6, 0, 1],
        -7,
        Some(&[(0, 1), (0, 2), (0, 1), (0, 4), (0, 3), (1, 5), (0, 3), (1, 5)]),
    );
    let windows = view(&[2, 2, 2, 6, 6, 2, 2, 2], &[2304, 1152, 0, 24, 1, 576, 240, 10], 0, None);
    let inner = |strides: &[i64]| {
        let mask: &[(i64, i64)] = &[(0, 2), (0, 4), (0, 2), (0, 1), (0, 2), (0, 1)];
        let first = view(&[2, 4, 2, 3, 2, 3], strides, 0, Some(mask));
        ShapeTracker::from_views(vec![first, outer.clone(), windows.clone()]).unwrap()
    };
    let dy = load(1, inner(&[16, 4, 2, 0, 1, 0])) * masked_const(1.0f32, DType::F32, inner(&[0; 6]));
    let w = load(2, strided(&[2, 2, 2, 6, 6, 2, 2, 2], &[0, 16, 4, 0, 0, 8, -2, -1], 3));
    let out = strided(&[2, 2, 2, 6, 6, 1, 1, 1], &[144, 72, 36, 6, 1, 0, 0, 0], 0);
    let ast = store_ast(out, (dy * w).reduce_axis(Ops::Add, &[5, 6, 7]));
    for target in [Target::tiny(), Target::generic_gpu(), Target::no_locals(), big_gpu()] {
        let compiled = compile(&ast, &target, &OptMode::Heuristic, "k");
        assert!(compiled.is_ok(), "{}: {:?}", target.name, compiled.err());
    }
}
