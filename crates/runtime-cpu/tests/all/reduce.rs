//! Reductions on the interpreter: loops, a matmul, workgroup reductions through local
//! memory and barriers, and parallel execution.

use crate::common;

use common::{global, load, program, range, reduce, run_stores, store, values};
use wgrad_dtype::{AddrSpace, DType};
use wgrad_ops::{Arg, Ops, UOp};
use wgrad_runtime_cpu::{CpuBuffer, CpuProgram};

fn f32_buffer(vals: &[f32]) -> CpuBuffer {
    CpuBuffer::from_values(DType::F32, vals.iter().map(|&v| f64::from(v)))
}

fn local(size: usize) -> UOp {
    UOp::new(Ops::DefineLocal, DType::F32.ptr_sized(AddrSpace::Local, size), [], Arg::Str("temp0".into()))
}

#[test]
fn sum_and_max_over_a_loop() {
    let a_vals = values(4 * 50, 5);
    let (sum_out, max_out, a) =
        (global(DType::F32, 0, 4), global(DType::F32, 1, 4), global(DType::F32, 2, 200));
    let g = UOp::special("gidx0", 4);
    let r = range(50, 1);
    let x = load(&a, &(&(&g * 50) + &r), None);
    let sum = store(&sum_out, &g, None, &reduce(Ops::Add, &x, &[&r]));
    let max = store(&max_out, &g, None, &reduce(Ops::Max, &x, &[&r]));
    let bufs = run_stores(
        &[sum, max],
        vec![CpuBuffer::zeros(DType::F32, 4), CpuBuffer::zeros(DType::F32, 4), f32_buffer(&a_vals)],
    );
    for (row, chunk) in a_vals.chunks(50).enumerate() {
        let want_sum = chunk.iter().fold(0.0f32, |s, &v| s + v);
        let want_max = chunk.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        assert_eq!(bufs[0].get(row).unwrap().to_f64(), f64::from(want_sum));
        assert_eq!(bufs[1].get(row).unwrap().to_f64(), f64::from(want_max));
    }
}

#[test]
fn matmul_16x16x16() {
    let n = 16i64;
    let (a_vals, b_vals) = (values(256, 6), values(256, 7));
    let (c, a, b) = (global(DType::F32, 0, 256), global(DType::F32, 1, 256), global(DType::F32, 2, 256));
    let (i, j, k) = (UOp::special("gidx0", n), UOp::special("lidx0", n), range(n, 2));
    let prod = &load(&a, &(&(&i * n) + &k), None) * &load(&b, &(&(&k * n) + &j), None);
    let st = store(&c, &(&(&i * n) + &j), None, &reduce(Ops::Add, &prod, &[&k]));
    let bufs =
        run_stores(&[st], vec![CpuBuffer::zeros(DType::F32, 256), f32_buffer(&a_vals), f32_buffer(&b_vals)]);
    let n = 16;
    let want: Vec<f64> = (0..n * n)
        .map(|ij| f64::from((0..n).fold(0.0f32, |s, k| s + a_vals[ij / n * n + k] * b_vals[k * n + ij % n])))
        .collect();
    assert_eq!(bufs[0].to_f64(), want);
}

/// Sum of 64 values by 16 threads: 4 each, then through local memory and a barrier.
#[test]
fn group_reduce_through_local_memory() {
    let a_vals = values(64, 8);
    let (out, a) = (global(DType::F32, 0, 1), global(DType::F32, 1, 64));
    let l = UOp::special("lidx0", 16);
    let r = range(4, 1);
    let partial = reduce(Ops::Add, &load(&a, &(&(&l * 4) + &r), None), &[&r]);
    let tmp = local(16);
    let barrier = UOp::new(Ops::Barrier, DType::VOID, [store(&tmp, &l, None, &partial)], Arg::None);
    let r2 = range(16, 2);
    let second = UOp::load(DType::F32, [tmp.index(&r2), barrier]);
    let st = store(&out, &UOp::index_const(0), Some(&l.cmp_eq(0)), &reduce(Ops::Add, &second, &[&r2]));
    let bufs = run_stores(&[st], vec![CpuBuffer::zeros(DType::F32, 1), f32_buffer(&a_vals)]);
    let want = a_vals.chunks(4).map(|c| c.iter().fold(0.0f32, |s, &v| s + v)).fold(0.0f32, |s, v| s + v);
    assert_eq!(bufs[0].to_f64(), [f64::from(want)]);
}

/// A barrier inside a loop: each round, thread l shares a value and reads its neighbour's
/// (two halves of local memory alternate, so one barrier per round suffices).
#[test]
fn barrier_inside_a_loop() {
    let a_vals = values(64, 9);
    let (out, a) = (global(DType::F32, 0, 16), global(DType::F32, 1, 64));
    let l = UOp::special("lidx0", 16);
    let r = range(4, 1);
    let half = &(&r % 2) * 16;
    let tmp = local(32);
    let shared = store(&tmp, &(&half + &l), None, &load(&a, &(&(&r * 16) + &l), None));
    let barrier = UOp::new(Ops::Barrier, DType::VOID, [shared], Arg::None);
    let neighbour = &(&l + 1) % 16;
    let read = UOp::load(DType::F32, [tmp.index(&(&half + &neighbour)), barrier]);
    let st = store(&out, &l, None, &reduce(Ops::Add, &read, &[&r]));
    let p = program(std::slice::from_ref(&st));
    let barrier_depth = p.depths()[p.uops.iter().position(|u| u.op() == Ops::Barrier).unwrap()];
    assert_eq!(barrier_depth, 1, "{p}");
    let bufs = run_stores(&[st], vec![CpuBuffer::zeros(DType::F32, 16), f32_buffer(&a_vals)]);
    let want: Vec<f64> =
        (0..16).map(|l| f64::from((0..4).fold(0.0f32, |s, r| s + a_vals[r * 16 + (l + 1) % 16]))).collect();
    assert_eq!(bufs[0].to_f64(), want);
}

#[test]
fn parallel_matches_one_worker() {
    let a_vals = values(4096, 10);
    let (out, a) = (global(DType::F32, 0, 64), global(DType::F32, 1, 4096));
    let (g, r) = (UOp::special("gidx0", 64), range(64, 1));
    let x = load(&a, &(&(&g * 64) + &r), None);
    let st = store(&out, &g, None, &reduce(Ops::Add, &(&x * &x).sqrt(), &[&r]));
    let compiled = CpuProgram::new(&program(&[st])).unwrap();
    let results: Vec<Vec<u8>> = [1, 3, 8]
        .into_iter()
        .map(|workers| {
            let mut bufs = vec![CpuBuffer::zeros(DType::F32, 64), f32_buffer(&a_vals)];
            compiled.run(&mut bufs, &[], workers).unwrap();
            bufs[0].to_bytes()
        })
        .collect();
    assert!(results.iter().all(|r| *r == results[0]));
    assert!(results[0].iter().any(|&b| b != 0));
}
