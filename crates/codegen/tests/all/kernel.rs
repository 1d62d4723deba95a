//! Kernel construction: buffers, shapes, axis merging, simplify_ones, shift_to, the optimised AST.

use crate::common;

use common::*;
use wgrad_codegen::{AxisKind, Kernel, OptError, OptOps, Target, buffer_st};
use wgrad_dtype::DType;
use wgrad_ops::{Arg, Ops, UOp};

#[test]
fn collects_store_then_loads_and_reduce_trackers() {
    let k = kernel(&matmul_ast(64, 64, 64));
    assert_eq!(k.bufs().iter().map(UOp::op).collect::<Vec<_>>(), [Ops::Store, Ops::Load, Ops::Load]);
    assert_eq!(k.sts().len(), 3 + 2, "three buffers and (output, input) for the reduce");
    let slots: Vec<String> = k.membufs().iter().map(|b| b.arg().to_string()).collect();
    assert_eq!(slots, ["0", "1", "2"]);
    assert!(k.sts().iter().all(|st| st.shape().len() == 3));
    assert_eq!(full(&k), [64, 64, 64]);
    assert_eq!(output(&k), [64, 64, 1]);
    assert_eq!((k.first_reduce(), k.first_upcast(), k.global_dims()), (2, 3, 2));
}

#[test]
fn masked_const_is_a_buffer() {
    let c = masked_const(1.0, DType::F32, padded(st(&[4]), &[(2, 2)]));
    let k = kernel(&store_ast(st(&[8]), load(1, st(&[8])) + c.clone()));
    assert_eq!(k.bufs().len(), 3);
    assert!(k.bufs().contains(&c));
    assert!(buffer_st(&c).unwrap().axis_is_masked(0));
}

#[test]
fn reduce_axes_move_last() {
    let k = kernel(&sum_ast(&[8, 16], &[0]));
    assert_eq!(full(&k), [16, 8]);
    assert_eq!(output(&k), [16, 1]);
    assert_eq!(k.first_reduce(), 1);
    assert_eq!(strides(&k, 1), [1, 16], "the load reads the moved axes");
}

#[test]
fn contiguous_axes_merge() {
    let ast = store_ast(st(&[4, 8, 16]), load(1, st(&[4, 8, 16])) + load(2, st(&[4, 8, 16])));
    assert_eq!(full(&kernel(&ast)), [512]);
    let all = kernel(&sum_ast(&[4, 8], &[0, 1]));
    assert_eq!((full(&all), output(&all)), (vec![32], vec![1]), "reduce axes merge with each other");
    let bcast = store_ast(st(&[4, 8]), load(1, strided(&[4, 8], &[0, 0], 0)));
    assert_eq!(full(&kernel(&bcast)), [32], "broadcast axes merge when every buffer allows it");
}

#[test]
fn transposed_axes_do_not_merge() {
    let ast = store_ast(st(&[4, 8]), load(1, strided(&[4, 8], &[1, 4], 0)));
    assert_eq!(full(&kernel(&ast)), [4, 8]);
}

#[test]
fn reduce_boundary_is_kept() {
    let k = kernel(&sum_ast(&[4, 8], &[1]));
    assert_eq!((full(&k), output(&k)), (vec![4, 8], vec![4, 1]));
}

#[test]
fn masked_axes_do_not_merge() {
    let input = padded(st(&[4, 8]), &[(0, 0), (0, 2)]);
    let k = kernel(&store_ast(st(&[4, 10]), load(1, input)));
    assert_eq!(full(&k), [4, 10]);
}

#[test]
fn simplify_ones_drops_size_one_axes() {
    let ast = store_ast(st(&[4, 1, 8]), load(1, strided(&[4, 1, 8], &[1, 0, 4], 0)));
    let k = kernel(&ast);
    assert_eq!(full(&k), [4, 8]);
    assert_eq!(strides(&k, 1), [1, 4]);
}

fn transposed() -> Kernel {
    kernel(&store_ast(st(&[8, 16]), load(1, strided(&[8, 16], &[1, 8], 0))))
}

#[test]
fn shift_to_splits_and_moves_last() {
    let mut k = transposed();
    k.shift_to(1, 4, false, None);
    assert_eq!(full(&k), [8, 4, 4]);
    assert_eq!(strides(&k, 0), [16, 4, 1]);
    assert_eq!(strides(&k, 1), [1, 32, 8]);
}

#[test]
fn shift_to_top_takes_the_outer_part() {
    let mut k = transposed();
    k.shift_to(1, 4, true, None);
    assert_eq!(full(&k), [8, 4, 4]);
    assert_eq!(strides(&k, 0), [16, 1, 4], "the outer 4 (stride 4) moves last");
}

#[test]
fn shift_to_inserts_before() {
    let mut k = transposed();
    k.shift_to(1, 2, false, Some(0));
    assert_eq!(full(&k), [2, 8, 8]);
    assert_eq!(strides(&k, 0), [1, 16, 2]);
}

#[test]
fn shift_to_keeps_size_one_axes_of_reduced_trackers() {
    let mut k = kernel(&sum_ast(&[4, 8], &[1]));
    k.shift_to(1, 4, false, None);
    assert_eq!(full(&k), [4, 2, 4]);
    assert_eq!(output(&k), [4, 1, 1]);
}

#[test]
fn axis_kinds_and_description() {
    let mut k = kernel(&matmul_ast(64, 64, 64));
    assert_eq!(k.describe(), "(64, 64 | 64) global/reduce");
    k.apply_opt(opt(OptOps::Upcast, 1, 4)).unwrap();
    k.apply_opt(opt(OptOps::Unroll, 0, 4)).unwrap();
    k.apply_opt(opt(OptOps::Local, 0, 8)).unwrap();
    use AxisKind::*;
    assert_eq!(k.axis_kinds(), [Global, Global, Local, Reduce, Upcast, Unroll]);
    assert_eq!(k.describe(), "(8, 16 | 8 | 16 | 4 | 4) global/local/reduce/upcast/unroll");
    assert_eq!(
        k.describe_opts(),
        "[Opt(op=UPCAST, axis=1, arg=4), Opt(op=UNROLL, axis=0, arg=4), Opt(op=LOCAL, axis=0, arg=8)]"
    );
}

#[test]
fn rejects_non_kernel_asts() {
    let x = load(1, st(&[4]));
    assert!(matches!(Kernel::new(&x, Target::generic_gpu()), Err(OptError::Ast(_))));
    let mixed = store_ast(st(&[4]), load(1, st(&[4, 1])));
    assert!(matches!(Kernel::new(&mixed, Target::generic_gpu()), Err(OptError::Ast(_))));
}

fn views(ast: &UOp) -> Vec<UOp> {
    ast.toposort().into_iter().filter(|u| u.op() == Ops::View).collect()
}

#[test]
fn optimized_ast_carries_the_new_trackers() {
    let mut k = kernel(&sum_ast(&[8, 16], &[1]));
    assert_eq!(k.get_optimized_ast(), *k.ast(), "nothing changed");
    k.apply_opt(opt(OptOps::Upcast, 0, 4)).unwrap();
    k.apply_opt(opt(OptOps::Unroll, 0, 4)).unwrap();
    let ast = k.get_optimized_ast();
    for v in views(&ast) {
        assert_eq!(v.arg().as_view().unwrap().shape().len(), 4);
    }
    let r = ast.toposort().into_iter().find(|u| u.op() == Ops::ReduceAxis).unwrap();
    assert!(matches!(r.arg(), Arg::ReduceAxis(Ops::Add, axes) if axes[..] == [1, 3]));
}

#[test]
fn grouped_reduce_goes_through_workgroup_memory() {
    let mut k = kernel(&sum_ast(&[4, 256], &[1]));
    k.apply_opt(opt(OptOps::Grouptop, 0, 16)).unwrap();
    let ast = k.get_optimized_ast();
    let topo = ast.toposort();
    let local = topo.iter().find(|u| u.op() == Ops::DefineLocal).unwrap();
    assert_eq!(local.dtype().ptr_size(), Some(16));
    let reduces: Vec<&UOp> = topo.iter().filter(|u| u.op() == Ops::ReduceAxis).collect();
    assert_eq!(reduces.len(), 2);
    assert!(matches!(reduces[0].arg(), Arg::ReduceAxis(_, axes) if axes[..] == [2]));
    assert!(matches!(reduces[1].arg(), Arg::ReduceAxis(_, axes) if axes[..] == [1]));
}

#[test]
fn workgroup_buffer_holds_locals_groups_and_upcasts() {
    let mut k = kernel(&matvec_ast(256, 512));
    wgrad_codegen::hand_coded_optimizations(&mut k);
    assert_eq!(k.describe(), "(16 | 4 | 8 | 64 | 4) global/local/group/reduce/upcast");
    let ast = k.get_optimized_ast();
    let local = ast.toposort().into_iter().find(|u| u.op() == Ops::DefineLocal).unwrap();
    assert_eq!(local.dtype().ptr_size(), Some(4 * 8 * 4));
}
