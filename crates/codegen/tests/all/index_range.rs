//! Kernel indices are `int32` (WGSL's and the interpreter's index type): a kernel whose index
//! arithmetic could pass `i32::MAX` is refused with `LowerError::IndexOverflow` before it is
//! lowered, and everything up to the limit compiles. The shapes are huge but nothing runs.

use crate::common;

use common::{load, st, store_ast, strided, sum_ast};
use wgrad_codegen::{CodegenError, LowerError, OptMode, Target, compile};
use wgrad_ops::{Ops, UOp};

const MAX: i64 = i32::MAX as i64;

/// wgpu's target (launches of up to `i32::MAX` per dimension: the runtime splits them into
/// dispatches) and a CPU-like one.
fn targets() -> [Target; 2] {
    let wgpu = Target { max_global_size: vec![MAX as usize; 3], ..Target::generic_gpu() };
    [wgpu, Target::no_locals()]
}

/// The refusal `ast` gets under every opt mode and target, its message naming int32 and the index
/// reached, with `what` and `reach` as given without opts (opts reshape the axes the refusal names
/// and the index it reaches: a sum grouped by 131 threads is refused for its last element).
fn refused(ast: &UOp, what: &str, reach: i128) {
    for target in targets() {
        for mode in [OptMode::Heuristic, OptMode::NoOpt] {
            let err = compile(ast, &target, &mode, "k").map(|_| ()).unwrap_err();
            let CodegenError::Lower(LowerError::IndexOverflow { what: w, reach: r }) = &err else {
                panic!("expected IndexOverflow, got {err:?}");
            };
            let message = err.to_string();
            assert!(message.contains("int32") && message.contains(&r.to_string()), "{message}");
            if mode == OptMode::NoOpt {
                assert!(w.contains(what), "{w}");
                assert_eq!(*r, reach, "{err}");
            }
        }
    }
}

fn compiles(ast: &UOp) {
    for target in targets() {
        for mode in [OptMode::Heuristic, OptMode::NoOpt] {
            if let Err(e) = compile(ast, &target, &mode, "k") {
                panic!("{e}");
            }
        }
    }
}

/// `out = in + 1` over `n` contiguous elements.
fn elementwise(n: i64) -> UOp {
    store_ast(st(&[n]), load(1, st(&[n])) + UOp::constant(wgrad_dtype::DType::F32, 1.0))
}

#[test]
fn indices_up_to_2_pow_31_minus_1_are_accepted() {
    compiles(&elementwise(MAX));
    // 2^31 elements: as one loop or launch the bound 2^31 is past int32, but upcast by 4 the
    // kernel counts to 2^29 and indexes up to 2^31 - 1
    let ast = elementwise(MAX + 1);
    let err = compile(&ast, &targets()[0], &OptMode::NoOpt, "k").map(|_| ()).unwrap_err();
    assert!(matches!(err, CodegenError::Lower(LowerError::IndexOverflow { .. })), "{err}");
    compile(&ast, &targets()[0], &OptMode::Heuristic, "k").unwrap();
    // 2^31 + 1 elements: the output's last index is 2^31 however the kernel is cut
    refused(&elementwise(MAX + 2), "the bound of axis 0", i128::from(MAX) + 2);
}

#[test]
fn a_view_reaching_past_int32_is_refused() {
    // row sums of 2^16 overlapping rows 2^16 apart: every dim and the launch fit, the last
    // row starts at 2^32 - 2^16
    let rows = load(1, strided(&[1 << 16, 1 << 15], &[1 << 16, 1], 0));
    let ast = store_ast(st(&[1 << 16, 1]), rows.reduce_axis(Ops::Add, &[1]));
    refused(&ast, "buffer view 1 of shape (65536, 32768)", 65535 * 65536 + 32767);
    // a transposed read of a buffer of 2^31 - 2^15 elements reaches its last element, no further
    let (rows, cols) = ((1 << 16) - 1, 1 << 15);
    let ast = store_ast(st(&[rows, cols]), load(1, strided(&[rows, cols], &[1, rows], 0)));
    compiles(&ast);
}

#[test]
fn a_flip_reaches_its_offset_not_twice_it() {
    // a flipped view is offset n - 1 with stride -1: every partial sum stays in [-(n-1), n-1]
    let n = MAX;
    compiles(&store_ast(st(&[n]), load(1, strided(&[n], &[-1], n - 1))));
    let ast = store_ast(st(&[4]), load(1, strided(&[4], &[1], MAX)));
    refused(&ast, "buffer view 1 of shape (4)", i128::from(MAX) + 3);
}

#[test]
fn a_broadcast_reduce_larger_than_int32_compiles() {
    // the first half of the engine's split sum of 2^31 + 7 ones (limits example): 131 outputs,
    // each a loop of 16393005 over a broadcast constant; no index passes 2^31
    let ones = load(1, strided(&[131, 16_393_005], &[0, 0], 0));
    compiles(&store_ast(st(&[131, 1]), ones.reduce_axis(Ops::Add, &[1])));
    // unsplit, its loop counts past int32
    refused(&sum_ast(&[MAX + 8], &[0]), "the bound of axis 0", i128::from(MAX) + 8);
}
