//! The reference evaluator on hand-computable kernels, and kernels whose opts must not change
//! what they compute.

use crate::common;

use common::*;
use wgrad_codegen::ast_eval::eval_ast;
use wgrad_codegen::{Kernel, Opt, OptOps, Target, hand_coded_optimizations};
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Ops, UOp};

fn floats(xs: &[f64]) -> Vec<ConstValue> {
    xs.iter().map(|&x| ConstValue::Float(x)).collect()
}

fn iota(n: usize) -> Vec<ConstValue> {
    (0..n).map(|i| ConstValue::Float(i as f64)).collect()
}

/// Runs `ast` with an output of `out_len` elements in slot 0 and `inputs` in slots 1...
fn run(ast: &UOp, out_len: usize, inputs: Vec<Vec<ConstValue>>) -> Vec<ConstValue> {
    let mut bufs = vec![vec![ConstValue::Float(0.0); out_len]];
    bufs.extend(inputs);
    eval_ast(ast, &mut bufs).unwrap();
    bufs.swap_remove(0)
}

#[test]
fn elementwise_add_with_broadcast() {
    let a = load(1, st(&[2, 3]));
    let b = load(2, strided(&[2, 3], &[0, 1], 0));
    let out = run(&store_ast(st(&[2, 3]), a + b), 6, vec![iota(6), floats(&[10.0, 20.0, 30.0])]);
    assert_eq!(out, floats(&[10.0, 21.0, 32.0, 13.0, 24.0, 35.0]));
}

#[test]
fn sum_over_one_axis() {
    let out = run(&sum_ast(&[2, 3], &[1]), 2, vec![iota(6)]);
    assert_eq!(out, floats(&[3.0, 12.0]));
    let cols = run(&sum_ast(&[2, 3], &[0]), 3, vec![iota(6)]);
    assert_eq!(cols, floats(&[3.0, 5.0, 7.0]));
}

#[test]
fn padded_load_reads_zero_and_masked_const_is_zero_outside() {
    let pad = padded(st(&[3]), &[(1, 1)]);
    let x = load(1, pad.clone());
    let c = masked_const(1.0f32, DType::F32, pad);
    let out = run(&store_ast(st(&[5]), x + c), 5, vec![floats(&[5.0, 6.0, 7.0])]);
    assert_eq!(out, floats(&[0.0, 6.0, 7.0, 8.0, 0.0]));
}

#[test]
fn flip_reverses() {
    let x = load(1, st(&[4]).flip(&[true]).unwrap());
    assert_eq!(run(&store_ast(st(&[4]), x), 4, vec![iota(4)]), floats(&[3.0, 2.0, 1.0, 0.0]));
}

#[test]
fn max_and_mul_reduce_from_their_identities() {
    let x = || load(1, st(&[2, 3]));
    let input = floats(&[-5.0, -2.0, -9.0, 1.0, 2.0, 3.0]);
    let max = run(&store_ast(st(&[2, 1]), x().reduce_axis(Ops::Max, &[1])), 2, vec![input.clone()]);
    assert_eq!(max, floats(&[-2.0, 3.0]));
    let prod = run(&store_ast(st(&[2, 1]), x().reduce_axis(Ops::Mul, &[1])), 2, vec![input]);
    assert_eq!(prod, floats(&[-90.0, 6.0]));
}

#[test]
fn int_dtypes_wrap() {
    let x = load_dt(DType::I8, 1, st(&[3]));
    let ast = store_ast(st(&[3]), &x + &x);
    let mut bufs = vec![vec![ConstValue::Int(0); 3], [100, -100, 7].map(ConstValue::Int).to_vec()];
    eval_ast(&ast, &mut bufs).unwrap();
    assert_eq!(bufs[0], [-56, 56, 14].map(ConstValue::Int));
    let u = load_dt(DType::U8, 1, st(&[2]));
    let ast = store_ast(st(&[2]), &u * 3u32);
    let mut bufs = vec![vec![ConstValue::UInt(0); 2], vec![ConstValue::UInt(100), ConstValue::UInt(5)]];
    eval_ast(&ast, &mut bufs).unwrap();
    assert_eq!(bufs[0], [ConstValue::UInt(44), ConstValue::UInt(15)]);
}

/// The same results before and after `apply` on the kernel of `ast`.
fn same_after(ast: &UOp, out_len: usize, inputs: Vec<Vec<ConstValue>>, apply: impl Fn(&mut Kernel)) {
    let mut k = Kernel::new(ast, Target::generic_gpu()).unwrap();
    apply(&mut k);
    let want = run(ast, out_len, inputs.clone());
    assert_eq!(run(&k.get_optimized_ast(), out_len, inputs), want, "after {}", k.describe_opts());
}

#[test]
fn opts_do_not_change_results() {
    // (no grouped reduces: their workgroup buffers are beyond the evaluator)
    same_after(&matmul_ast(64, 40, 8), 2560, vec![iota(512), iota(320)], |k| {
        hand_coded_optimizations(k);
        assert_eq!(k.group_for_reduces(), 0);
    });
    same_after(&matmul_ast(6, 10, 7), 60, vec![iota(42), iota(70)], |k| {
        for o in
            [Opt::new(OptOps::Padto, 0, 8), Opt::new(OptOps::Padto, 2, 8), Opt::new(OptOps::Upcast, 0, 4)]
        {
            k.apply_opt(o).unwrap();
        }
    });
    let a = load(1, padded(st(&[3, 20]), &[(0, 1), (0, 0)]));
    let b = load(2, strided(&[4, 20], &[0, 1], 0));
    same_after(&store_ast(st(&[4, 20]), a * b), 80, vec![iota(60), iota(20)], |k| {
        hand_coded_optimizations(k)
    });
}

#[test]
fn any_accepted_opts_keep_results() {
    let flipped = st(&[5, 48]).flip(&[false, true]).unwrap();
    let stacked = padded(st(&[3, 64]), &[(0, 1), (0, 0)]);
    let x = load(1, strided(&[6, 8, 4], &[32, 1, 8], 0));
    let cases: Vec<(UOp, usize, Vec<Vec<ConstValue>>)> = vec![
        (matmul_ast(12, 20, 12), 240, vec![iota(144), iota(240)]),
        (sum_ast(&[24, 10], &[1]), 24, vec![iota(240)]),
        (store_ast(st(&[6, 1, 4]), x.reduce_axis(Ops::Max, &[1])), 24, vec![iota(192)]),
        (
            store_ast(st(&[5, 48]), load(1, strided(&[5, 48], &[1, 0], 0)) + load(2, flipped)),
            240,
            vec![iota(5), iota(240)],
        ),
        (
            store_ast(st(&[4, 64]), load(1, stacked.clone()) + masked_const(2.0f32, DType::F32, stacked)),
            256,
            vec![iota(192)],
        ),
    ];
    let tries = [
        (OptOps::Padto, 0, 16),
        (OptOps::Upcast, 0, 2),
        (OptOps::Unroll, 0, 2),
        (OptOps::Swap, 0, 1),
        (OptOps::Local, 0, 2),
        (OptOps::Upcast, 1, 0),
        (OptOps::Unroll, 0, 0),
        (OptOps::Local, 1, 3),
        (OptOps::Upcast, 0, 3),
    ];
    for (ast, out_len, inputs) in cases {
        same_after(&ast, out_len, inputs, |k| {
            for &(op, axis, arg) in &tries {
                let _ = k.apply_opt(Opt::new(op, axis, arg));
            }
            assert!(k.applied_opts().len() >= 3, "{}", k.describe_opts());
        });
    }
}
