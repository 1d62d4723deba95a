//! Cost estimates of small kernels, in kernel-AST form and in lowered form.

use std::sync::Arc;

use wgrad_dtype::DType;
use wgrad_ops::{Arg, Ops, UOp, estimate, verify};
use wgrad_shape::{ShapeTracker, Sint};

fn view(shape: &[i64]) -> UOp {
    UOp::new(Ops::View, DType::VOID, [], Arg::contiguous_view(shape))
}

fn load(slot: i64, v: &UOp) -> UOp {
    UOp::load(DType::F32, [UOp::define_global(DType::F32, slot), v.clone()])
}

fn store(v: &UOp, value: &UOp) -> UOp {
    UOp::sink([UOp::store([UOp::define_global(DType::F32, 0), v.clone(), value.clone()])])
}

#[test]
fn elementwise_ast() {
    let v = view(&[4, 8]);
    let ast = store(&v, &(load(1, &v) + load(2, &v)).sqrt());
    verify(&ast).unwrap();
    let e = estimate(&ast);
    assert_eq!(e.flops, 64);
    assert_eq!(e.flops_by_dtype[&DType::F32], 64);
    assert_eq!(e.bytes_read, 2 * 32 * 4);
    assert_eq!(e.bytes_written, 32 * 4);
}

#[test]
fn broadcast_loads_count_their_real_elements() {
    let v = view(&[4, 8]);
    let row = UOp::new(
        Ops::View,
        DType::VOID,
        [],
        Arg::View(Arc::new(
            ShapeTracker::from_shape(&[Sint::from(1), Sint::from(8)])
                .unwrap()
                .expand(&[Sint::from(4), Sint::from(8)])
                .unwrap(),
        )),
    );
    let ast = store(&v, &(load(1, &v) * load(2, &row)));
    let e = estimate(&ast);
    assert_eq!(e.flops, 32);
    assert_eq!(e.bytes_read, (32 + 8) * 4);
}

#[test]
fn reduce_ast() {
    let input = view(&[4, 8]);
    let out = view(&[4, 1]);
    let sum = (load(1, &input) * 2.0).reduce_axis(Ops::Add, &[1]);
    let ast = store(&out, &sum);
    verify(&ast).unwrap();
    let e = estimate(&ast);
    assert_eq!(e.flops, 32 + 32);
    assert_eq!(e.bytes_read, 32 * 4);
    assert_eq!(e.bytes_written, 4 * 4);
}

#[test]
fn lowered_loops_multiply() {
    let g = UOp::special("gidx0", 4);
    let r = UOp::range(&UOp::index_const(8), 1);
    let input = UOp::define_global(DType::F32, 1).index(&(&g * 8 + &r));
    let val = UOp::load(DType::F32, [input]);
    let red = UOp::new(Ops::Reduce, DType::F32, [val.exp2(), r], Arg::Op(Ops::Add));
    let ast = UOp::sink([UOp::store([UOp::define_global(DType::F32, 0).index(&g), red])]);
    verify(&ast).unwrap();
    let e = estimate(&ast);
    // exp2 and the accumulate run 32 times; index math is not counted
    assert_eq!(e.flops, 64);
    assert_eq!(e.bytes_read, 32 * 4);
    assert_eq!(e.bytes_written, 4 * 4);
}

#[test]
fn vector_accesses_count_every_lane_once() {
    let g = UOp::special("gidx0", 4);
    let vec4 = |slot: i64| {
        let buf = UOp::define_global(DType::F32, slot);
        UOp::new(Ops::Index, buf.dtype().vec(4), [buf, g.clone()], Arg::None)
    };
    let val = UOp::load(DType::F32.vec(4), [vec4(1)]);
    let lanes: Vec<UOp> = (0..4).map(|i| val.gep(i).sqrt()).collect();
    let ast = UOp::sink([UOp::store([vec4(0), UOp::vectorize(&lanes)])]);
    verify(&ast).unwrap();
    let e = estimate(&ast);
    assert_eq!(e.flops, 16);
    assert_eq!(e.bytes_read, 16 * 4);
    assert_eq!(e.bytes_written, 16 * 4);
}
