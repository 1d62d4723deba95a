//! Vector loads and stores: `w` lanes through an index counting vectors, lanes read with
//! `Gep` and written from a `Vectorize`; what else a vector may do is refused.

use crate::common;

use common::{global, program, run_stores, vector_index};
use wgrad_dtype::DType;
use wgrad_ops::{Arg, Ops, UOp};
use wgrad_runtime_cpu::{CpuBuffer, CpuError, Memory, run};

/// `out[4i+k] = a[4i+3-k] * 2` over 5 threads: lanes reversed inside each vector.
fn reverse_lanes(valid: Option<&UOp>) -> Vec<UOp> {
    let (out, a) = (global(DType::F32, 0, 20), global(DType::F32, 1, 20));
    let i = UOp::special("gidx0", 5);
    let v = UOp::load(DType::F32.vec(4), [vector_index(&a, &i, 4, valid)]);
    let lanes: Vec<UOp> = (0..4).map(|k| &v.gep(3 - k) * 2.0f32).collect();
    vec![UOp::store([vector_index(&out, &i, 4, valid), UOp::vectorize(&lanes)])]
}

fn inputs() -> Vec<CpuBuffer> {
    vec![CpuBuffer::zeros(DType::F32, 20), CpuBuffer::from_values(DType::F32, (0..20).map(f64::from))]
}

#[test]
fn vector_loads_and_stores_move_whole_lanes() {
    let out = run_stores(&reverse_lanes(None), inputs());
    let want: Vec<f64> = (0..20).map(|e| f64::from(2 * (e / 4 * 4 + 3 - e % 4))).collect();
    assert_eq!(out[0].to_f64(), want);
}

#[test]
fn a_gated_vector_access_is_all_or_nothing() {
    let valid = UOp::special("gidx0", 5).cmp_lt(3);
    let out = run_stores(&reverse_lanes(Some(&valid)), inputs());
    let want: Vec<f64> =
        (0..20).map(|e| if e < 12 { f64::from(2 * (e / 4 * 4 + 3 - e % 4)) } else { 0.0 }).collect();
    assert_eq!(out[0].to_f64(), want);
}

#[test]
fn pairs_and_several_lanes_at_once() {
    // out as vec2s: out[2i..2i+2] = a[4i+1], a[4i+2] (a two-lane Gep of a vec4)
    let (out, a) = (global(DType::I32, 0, 8), global(DType::I32, 1, 16));
    let i = UOp::special("gidx0", 4);
    let v = UOp::load(DType::I32.vec(4), [vector_index(&a, &i, 4, None)]);
    let middle = UOp::new(Ops::Gep, DType::I32.vec(2), [v], Arg::Ints([1, 2].into()));
    let st = UOp::store([vector_index(&out, &i, 2, None), middle]);
    let bufs = vec![CpuBuffer::zeros(DType::I32, 8), CpuBuffer::from_values(DType::I32, 0..16i64)];
    let got = run_stores(&[st], bufs)[0].to_f64();
    assert_eq!(got, [1.0, 2.0, 5.0, 6.0, 9.0, 10.0, 13.0, 14.0]);
}

#[test]
fn a_vector_lane_out_of_bounds_is_an_error() {
    // five vec4s of a 19-element buffer: the last lane of the last vector is element 19
    let (out, a) = (global(DType::F32, 0, 20), global(DType::F32, 1, 19));
    let i = UOp::special("gidx0", 5);
    let v = UOp::load(DType::F32.vec(4), [vector_index(&a, &i, 4, None)]);
    let p = program(&[UOp::store([vector_index(&out, &i, 4, None), v])]);
    let mut bufs = vec![CpuBuffer::zeros(DType::F32, 20), CpuBuffer::zeros(DType::F32, 19)];
    let err = run(&p, &mut bufs, &[]).unwrap_err();
    assert!(matches!(err, CpuError::OutOfBounds { buffer: Memory::Global(1), index: 19, size: 19 }), "{err}");
}

#[test]
fn vector_arithmetic_is_refused() {
    let (out, a) = (global(DType::F32, 0, 8), global(DType::F32, 1, 8));
    let i = UOp::special("gidx0", 2);
    let v = UOp::load(DType::F32.vec(4), [vector_index(&a, &i, 4, None)]);
    let p = program(&[UOp::store([vector_index(&out, &i, 4, None), v.sqrt()])]);
    let mut bufs = vec![CpuBuffer::zeros(DType::F32, 8), CpuBuffer::zeros(DType::F32, 8)];
    assert!(matches!(run(&p, &mut bufs, &[]), Err(CpuError::Unsupported { op: Ops::Sqrt, .. })));
}
