//! The opts `hand_coded_optimizations` picks for typical kernels, as tinygrad v0.10 would.

mod common;

use common::*;
use wgrad_codegen::{Kernel, Opt, OptOps, Target, hand_coded_optimizations};
use wgrad_ops::{Ops, UOp};

fn optimized(ast: &UOp, target: Target) -> Kernel {
    let mut k = Kernel::new(ast, target).unwrap();
    hand_coded_optimizations(&mut k);
    k
}

use OptOps::*;

fn opts(list: &[(OptOps, usize, usize)]) -> Vec<Opt> {
    list.iter().map(|&(op, axis, arg)| opt(op, axis, arg)).collect()
}

#[test]
fn matmul_upcasts_broadcasts_unrolls_and_locals() {
    let k = optimized(&matmul_ast(64, 64, 64), Target::generic_gpu());
    let want = [(Upcast, 1, 4), (Upcast, 0, 4), (Unroll, 0, 4), (Local, 0, 8), (Local, 1, 16)];
    assert_eq!(k.applied_opts(), opts(&want));
    assert_eq!(k.describe(), "(2 | 8, 16 | 16 | 4, 4 | 4) global/local/reduce/upcast/unroll");
}

#[test]
fn matmul_respects_the_target() {
    let none = optimized(&matmul_ast(64, 64, 64), Target::no_locals());
    assert_eq!(none.applied_opts(), opts(&[(Upcast, 1, 4), (Upcast, 0, 4), (Unroll, 0, 4)]));
    let tiny = optimized(&matmul_ast(64, 64, 64), Target::tiny());
    assert_eq!(tiny.applied_opts(), opts(&[(Upcast, 1, 4), (Upcast, 0, 4), (Unroll, 0, 4), (Local, 1, 8)]));
    assert!(tiny.local_size() <= 8);
}

#[test]
fn matvec_groups_locals_and_upcasts() {
    let k = optimized(&matvec_ast(256, 512), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Group, 0, 8), (Local, 0, 4), (Upcast, 0, 4)]));
    assert_eq!(k.describe(), "(16 | 4 | 8 | 64 | 4) global/local/group/reduce/upcast");
}

#[test]
fn full_reduction_groups_by_256() {
    let k = optimized(&sum_ast(&[4096], &[0]), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Grouptop, 0, 256)]));
    assert_eq!(k.describe(), "(256 | 16) group/reduce");
}

#[test]
fn small_output_reduce_groups_by_16() {
    let k = optimized(&sum_ast(&[64, 1024], &[1]), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Grouptop, 0, 16)]));
    assert_eq!(k.describe(), "(64 | 16 | 64) global/group/reduce");
}

#[test]
fn small_reduce_axes_are_unrolled() {
    let x = load(1, strided(&[64, 64, 3, 3], &[576, 9, 1, 3], 0));
    let k =
        optimized(&store_ast(st(&[64, 64, 1, 1]), x.reduce_axis(Ops::Add, &[2, 3])), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Unroll, 1, 0), (Unroll, 0, 0), (Local, 0, 32)]));
    assert_eq!(k.describe(), "(128 | 32 | 3, 3) global/local/unroll");
}

#[test]
fn large_reduce_axis_is_unrolled_by_4() {
    let k = optimized(&sum_ast(&[4096, 64], &[1]), Target::generic_gpu());
    assert_eq!(
        k.applied_opts(),
        opts(&[(Unroll, 0, 4), (Local, 0, 32)]),
        "nothing more is upcast once unrolled"
    );
}

#[test]
fn elementwise_upcasts_the_broadcast_axis() {
    let a = load(1, strided(&[64, 64], &[1, 0], 0));
    let b = load(2, st(&[64, 64]));
    let k = optimized(&store_ast(st(&[64, 64]), a + b), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Upcast, 1, 4), (Local, 0, 8), (Local, 1, 16)]));
    assert_eq!(k.describe(), "(8 | 8, 16 | 4) global/local/upcast");
}

#[test]
fn contiguous_elementwise_is_upcast_for_vectors_and_widened_without() {
    let ast = store_ast(st(&[4096]), load(1, st(&[4096])) + load(2, st(&[4096])));
    let vectors = optimized(&ast, Target::generic_gpu());
    assert_eq!(vectors.applied_opts(), opts(&[(Upcast, 0, 4), (Local, 0, 32)]));
    // scalar lanes would only break up coalesced loads: no upcast, a 256-thread workgroup
    let scalar = optimized(&ast, Target { vector_widths: vec![1], ..Target::generic_gpu() });
    assert_eq!(scalar.applied_opts(), opts(&[(Local, 0, 256)]));
    assert_eq!(scalar.describe(), "(16 | 256) global/local");
}

#[test]
fn masked_small_axes_are_upcast_whole() {
    let x = load(1, padded(st(&[3, 256]), &[(0, 1), (0, 0)]));
    let k = optimized(&store_ast(st(&[4, 256]), x), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Upcast, 0, 0), (Local, 0, 32)]));
    assert_eq!(k.describe(), "(8 | 32 | 4) global/local/upcast");
}
