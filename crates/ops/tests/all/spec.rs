//! The verifier accepts well-typed graphs and names the offending node of bad ones.

use wgrad_dtype::DType;
use wgrad_ops::{Arg, Ops, OpsError, SUBGROUP_BARRIER, SpecViolation, UOp, verify};

fn bad(u: &UOp) -> (usize, UOp, SpecViolation) {
    match verify(u) {
        Err(OpsError::Spec { index, node, violation }) => (index, node, violation),
        other => panic!("expected a spec error, got {other:?}"),
    }
}

fn raw(op: Ops, dtype: DType, src: Vec<UOp>) -> UOp {
    UOp::new(op, dtype, src, Arg::None)
}

#[test]
fn well_typed_graphs_pass() {
    let x = UOp::variable("x", 0, 10);
    let buf = UOp::define_global(DType::F32, 0);
    let idx = buf.index(&(&x * 2 + 1));
    let val = UOp::load(DType::F32, [idx.clone()]);
    let gated = x.cmp_lt(5).where_(&val, &UOp::constant(DType::F32, 0.0));
    let sink = UOp::sink([UOp::store([idx, gated.sqrt()])]);
    verify(&sink).unwrap();
}

#[test]
fn alu_operands_must_agree() {
    let e = raw(Ops::Add, DType::I32, vec![UOp::index_const(1), UOp::constant(DType::F32, 2.0)]);
    let (index, node, violation) = bad(&e);
    assert_eq!(node, e);
    assert_eq!(index, 2);
    assert_eq!(violation, SpecViolation::SourceDType { index: 1, got: DType::F32, expected: DType::I32 });
    let msg = verify(&e).unwrap_err().to_string();
    assert!(msg.starts_with("uop 2 (Ops.ADD dtypes.int)"), "{msg}");
}

#[test]
fn comparisons_yield_bool() {
    let e = raw(Ops::CmpLt, DType::I32, vec![UOp::index_const(1), UOp::index_const(2)]);
    assert_eq!(bad(&e).2, SpecViolation::ResultDType { got: DType::I32, expected: DType::BOOL });
}

#[test]
fn where_condition_is_bool() {
    let i = UOp::index_const(1);
    let e = raw(Ops::Where, DType::I32, vec![i.clone(), i.clone(), i]);
    assert!(matches!(bad(&e).2, SpecViolation::DTypeClass { what: "condition", .. }));
}

#[test]
fn bitwise_ops_are_not_on_floats() {
    let f = UOp::constant(DType::F32, 1.0);
    let e = raw(Ops::Xor, DType::F32, vec![f.clone(), f]);
    assert!(matches!(bad(&e).2, SpecViolation::DTypeClass { .. }));
}

#[test]
fn memory_ops_check_pointers_and_values() {
    let buf = UOp::define_global(DType::F32, 0);
    let idx = buf.index(&UOp::index_const(0));
    let store = UOp::store([idx.clone(), UOp::index_const(3)]);
    assert_eq!(bad(&store).2, SpecViolation::SourceDType { index: 1, got: DType::I32, expected: DType::F32 });
    let load = UOp::load(DType::F32, [UOp::index_const(0)]);
    assert!(matches!(bad(&load).2, SpecViolation::DTypeClass { what: "source 0", .. }));
    let wrong = UOp::load(DType::I32, [idx.clone()]);
    assert_eq!(bad(&wrong).2, SpecViolation::ResultDType { got: DType::I32, expected: DType::F32 });
    let float_index = raw(Ops::Index, buf.dtype(), vec![buf, UOp::constant(DType::F32, 0.0)]);
    assert!(matches!(bad(&float_index).2, SpecViolation::DTypeClass { what: "source 1", .. }));
}

#[test]
fn arity_and_args() {
    let e = raw(Ops::Add, DType::I32, vec![UOp::index_const(1)]);
    assert!(matches!(bad(&e).2, SpecViolation::Arity { got: 1, .. }));
    let r = UOp::new(
        Ops::ReduceAxis,
        DType::F32,
        [UOp::constant(DType::F32, 1.0)],
        Arg::ReduceAxis(Ops::Sub, [0].into()),
    );
    assert!(matches!(bad(&r).2, SpecViolation::Arg { .. }));
    let s = UOp::new(Ops::Special, DType::I32, [], Arg::Int(3));
    assert!(matches!(bad(&s).2, SpecViolation::Arg { .. }));
    // a barrier is a workgroup's (no arg) or a subgroup's
    let scoped = |arg: Arg| UOp::new(Ops::Barrier, DType::VOID, [], arg);
    assert!(verify(&scoped(Arg::None)).is_ok());
    assert!(verify(&scoped(Arg::Str(SUBGROUP_BARRIER.into()))).is_ok());
    assert!(matches!(bad(&scoped(Arg::Str("device".into()))).2, SpecViolation::Arg { .. }));
}

#[test]
fn vectors_have_their_lanes_and_vector_indices_their_element() {
    let buf = UOp::define_global(DType::F32, 0);
    let vec_index = UOp::new(Ops::Index, buf.dtype().vec(4), [buf.clone(), UOp::index_const(1)], Arg::None);
    let loaded = UOp::load(DType::F32.vec(4), [vec_index.clone()]);
    let lanes: Vec<UOp> = (0..4).map(|i| loaded.gep(i)).collect();
    verify(&UOp::sink([UOp::store([vec_index.clone(), UOp::vectorize(&lanes)])])).unwrap();
    // a vector index of another element type
    let bad_index = UOp::new(
        Ops::Index,
        DType::I32.vec(4).ptr(wgrad_dtype::AddrSpace::Global),
        [buf.clone(), UOp::index_const(1)],
        Arg::None,
    );
    assert!(matches!(bad(&bad_index).2, SpecViolation::ResultDType { .. }));
    // a lane past the vector's width
    let past = UOp::new(Ops::Gep, DType::F32, [loaded.clone()], Arg::Ints([4].into()));
    assert!(matches!(bad(&past).2, SpecViolation::Arg { .. }));
    // a Gep's dtype counts its lanes
    let two = UOp::new(Ops::Gep, DType::F32, [loaded.clone()], Arg::Ints([0, 1].into()));
    assert_eq!(bad(&two).2, SpecViolation::ResultDType { got: DType::F32, expected: DType::F32.vec(2) });
    // lanes of one dtype
    let mixed = raw(Ops::Vectorize, DType::F32.vec(2), vec![lanes[0].clone(), UOp::index_const(0)]);
    assert_eq!(bad(&mixed).2, SpecViolation::SourceDType { index: 1, got: DType::I32, expected: DType::F32 });
    // the store's value must be the vector the pointer points to
    let scalar_store = UOp::store([vec_index, lanes[0].clone()]);
    assert!(matches!(bad(&scalar_store).2, SpecViolation::SourceDType { index: 1, .. }));
}

#[test]
fn a_reduce_takes_its_values_then_its_ranges() {
    let buf = UOp::define_global(DType::F32, 0);
    let r = UOp::range(&UOp::index_const(4), 0);
    let v = |i: i64| UOp::load(DType::F32, [buf.index(&(&r * 2 + i))]);
    let (p0, p1) = (&v(0) * &v(0), &v(1) * &v(1));
    let sum = |src: Vec<UOp>| UOp::new(Ops::Reduce, DType::F32, src, Arg::Op(Ops::Add));
    let store = |red: UOp| UOp::sink([UOp::store([buf.index(&UOp::index_const(0)), red])]);
    verify(&store(sum(vec![p0.clone(), p1.clone(), r.clone()]))).unwrap();
    // a value after a range
    let (_, _, why) = bad(&store(sum(vec![p0.clone(), r.clone(), p1.clone()])));
    assert!(matches!(why, SpecViolation::DTypeClass { what: "reduce source", .. }), "{why:?}");
    // every value of the reduce's dtype
    let (_, _, why) = bad(&store(sum(vec![p0, UOp::index_const(1), r])));
    assert!(matches!(why, SpecViolation::SourceDType { index: 1, .. }), "{why:?}");
}
