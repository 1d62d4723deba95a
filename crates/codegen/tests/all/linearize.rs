//! The linearizer on hand-built lowered graphs: order, loops, accumulators, hoisting,
//! barriers and errors.

use wgrad_codegen::{LinearizeError, Program, linearize};
use wgrad_dtype::{AddrSpace, DType};
use wgrad_ops::{Arg, Ops, UOp};

fn global(slot: i64, size: usize) -> UOp {
    UOp::new(Ops::DefineGlobal, DType::F32.ptr_sized(AddrSpace::Global, size), [], Arg::Int(slot))
}

fn load(buf: &UOp, idx: &UOp) -> UOp {
    UOp::load(buf.dtype().base(), [buf.index(idx)])
}

fn store(buf: &UOp, idx: &UOp, value: &UOp) -> UOp {
    UOp::store([buf.index(idx), value.clone()])
}

fn reduce(value: &UOp, ranges: &[&UOp]) -> UOp {
    let src: Vec<UOp> = std::iter::once(value.clone()).chain(ranges.iter().map(|&r| r.clone())).collect();
    UOp::new(Ops::Reduce, value.dtype(), src, Arg::Op(Ops::Add))
}

/// Position of the first uop satisfying `f`.
fn pos(p: &Program, f: impl Fn(&UOp) -> bool) -> usize {
    p.uops.iter().position(f).expect("uop present")
}

fn pos_of(p: &Program, u: &UOp) -> usize {
    pos(p, |x| x == u)
}

/// Every uop after its sources (sources that are uops of the program).
fn check_order(p: &Program) {
    for (i, u) in p.uops.iter().enumerate() {
        for s in u.src() {
            if let Some(j) = p.uops.iter().position(|x| x == s) {
                assert!(j < i, "uop {i} ({}) before its source {j}\n{p}", u.op());
            }
        }
    }
}

#[test]
fn elementwise_with_specials() {
    let (a, b, out) = (global(1, 1024), global(2, 1024), global(0, 1024));
    let idx = &(&UOp::special("gidx0", 8) * 128) + &UOp::special("lidx0", 128);
    let sink = UOp::sink([store(&out, &idx, &(&load(&a, &idx) + &load(&b, &idx)))]);
    let p = linearize(&sink, "add").unwrap();
    check_order(&p);
    assert_eq!(p.global_size, [8, 1, 1]);
    assert_eq!(p.local_size, [128, 1, 1]);
    let slots: Vec<(usize, bool, Option<usize>)> =
        p.buffers.iter().map(|b| (b.slot, b.writable, b.size)).collect();
    assert_eq!(slots, [(0, true, Some(1024)), (1, false, Some(1024)), (2, false, Some(1024))]);
    assert!(p.buffers.iter().all(|b| b.dtype == DType::F32));
    // definitions first, the store last, no sink
    let first_other = pos(&p, |u| !matches!(u.op(), Ops::DefineGlobal | Ops::Special));
    assert!(p.uops[first_other..].iter().all(|u| !matches!(u.op(), Ops::DefineGlobal | Ops::Special)));
    assert_eq!(p.uops.last().unwrap().op(), Ops::Store);
    assert!(p.uops.iter().all(|u| u.op() != Ops::Sink));
}

#[test]
fn sum_becomes_accumulator() {
    let (a, out) = (global(1, 64), global(0, 4));
    let g = UOp::special("gidx0", 4);
    let r = UOp::range(&UOp::index_const(16), 0);
    let total = reduce(&load(&a, &(&(&g * 16) + &r)), &[&r]);
    let sink = UOp::sink([store(&out, &g, &(&total * 2.0f32))]);
    let p = linearize(&sink, "sum").unwrap();
    check_order(&p);
    assert!(p.uops.iter().all(|u| u.op() != Ops::Reduce));
    let acc = pos(&p, |u| u.op() == Ops::DefineAcc);
    let range = pos(&p, |u| u.op() == Ops::Range);
    let assign = pos(&p, |u| u.op() == Ops::Assign);
    let end = pos(&p, |u| u.op() == Ops::EndRange);
    assert!(acc < range && range < assign && assign < end, "{p}");
    assert_eq!(p.uops[acc].src()[0].const_value().map(|c| c.to_f64()), Some(0.0));
    // the scaled result reads the accumulator after the loop
    let user = pos(&p, |u| u.op() == Ops::Mul && u.src().contains(&p.uops[acc]));
    assert!(user > end, "{p}");
    assert_eq!(p.depths()[assign], 1);
    assert!(p.to_string().contains("Ops.DEFINE_ACC"));
}

#[test]
fn a_sum_of_several_values_adds_each_to_the_accumulator_in_turn() {
    // the lanes of an unrolled sum of products: (acc + a0*b0) + a1*b1, so each product can
    // contract into a fused multiply-add
    let (a, out) = (global(1, 64), global(0, 1));
    let r = UOp::range(&UOp::index_const(32), 0);
    let lane = |i: i64| {
        let x = load(&a, &(&(&r * 2) + i));
        &x * &x
    };
    let total = UOp::new(Ops::Reduce, DType::F32, [lane(0), lane(1), r.clone()], Arg::Op(Ops::Add));
    let p = linearize(&UOp::sink([store(&out, &UOp::index_const(0), &total)]), "sumsq").unwrap();
    check_order(&p);
    let acc = &p.uops[pos(&p, |u| u.op() == Ops::DefineAcc)];
    let update = &p.uops[pos(&p, |u| u.op() == Ops::Assign)].src()[1];
    let first = &update.src()[0];
    let is = |u: &UOp, op: Ops| u.op() == op;
    assert!(is(update, Ops::Add) && is(&update.src()[1], Ops::Mul), "{p}");
    assert!(is(first, Ops::Add) && first.src()[0] == *acc && is(&first.src()[1], Ops::Mul), "{p}");
    assert_ne!(first.src()[1], update.src()[1], "one step a lane:\n{p}");
}

#[test]
fn nested_ranges_nest_by_axis() {
    let (a, out) = (global(1, 64), global(0, 1));
    let (r0, r1) = (UOp::range(&UOp::index_const(8), 0), UOp::range(&UOp::index_const(8), 1));
    let total = reduce(&load(&a, &(&(&r0 * 8) + &r1)), &[&r0, &r1]);
    let sink = UOp::sink([store(&out, &UOp::index_const(0), &total)]);
    let p = linearize(&sink, "sum2").unwrap();
    check_order(&p);
    let ranges: Vec<usize> = (0..p.uops.len()).filter(|&i| p.uops[i].op() == Ops::Range).collect();
    let ends: Vec<usize> = (0..p.uops.len()).filter(|&i| p.uops[i].op() == Ops::EndRange).collect();
    assert_eq!(p.uops[ranges[0]], r0);
    assert_eq!(p.uops[ranges[1]], r1);
    // r1 closes before r0: proper nesting
    assert_eq!(p.uops[ends[0]].src()[0], r1);
    assert_eq!(p.uops[ends[1]].src()[0], r0);
    assert_eq!(p.depths()[pos(&p, |u| u.op() == Ops::Assign)], 2);
}

#[test]
fn loop_invariant_load_is_hoisted() {
    let (a, b, out) = (global(1, 64), global(2, 4), global(0, 4));
    let g = UOp::special("gidx0", 4);
    let r = UOp::range(&UOp::index_const(16), 0);
    let scale = load(&b, &g);
    let total = reduce(&(&load(&a, &(&(&g * 16) + &r)) * &scale), &[&r]);
    let p = linearize(&UOp::sink([store(&out, &g, &total)]), "hoist").unwrap();
    check_order(&p);
    assert!(pos_of(&p, &scale) < pos_of(&p, &r), "{p}");
    assert_eq!(p.depths()[pos_of(&p, &scale)], 0);
}

#[test]
fn stores_wait_for_the_loads_of_later_outputs() {
    // two outputs, each updated in place: both loads come before the first store, which stays
    // before a loop that follows it
    let (x, y, z, w) = (global(0, 64), global(1, 64), global(2, 64), global(3, 4));
    let g = UOp::special("gidx0", 64);
    let r = UOp::range(&UOp::index_const(16), 0);
    let (lx, ly) = (load(&x, &g), load(&y, &g));
    let (sx, sy) = (store(&x, &g, &(&lx * 2.0)), store(&y, &g, &(&ly * 3.0)));
    let gw = UOp::special("gidx1", 4);
    let sum = reduce(&load(&z, &(&(&gw * 16) + &r)), &[&r]);
    let sw = store(&w, &gw, &sum);
    let p = linearize(&UOp::sink([sx.clone(), sy.clone(), sw.clone()]), "outputs").unwrap();
    check_order(&p);
    assert!(pos_of(&p, &lx).max(pos_of(&p, &ly)) < pos_of(&p, &sx).min(pos_of(&p, &sy)), "{p}");
    assert!(pos_of(&p, &sx) < pos_of(&p, &sy), "{p}");
    assert!(pos_of(&p, &sy) < pos_of(&p, &r), "{p}");
    assert_eq!(p.uops.last().map(UOp::op), Some(Ops::Store));
}

#[test]
fn group_reduce_through_local_memory() {
    let (a, out) = (global(1, 64), global(0, 1));
    let l = UOp::special("lidx0", 16);
    let r = UOp::range(&UOp::index_const(4), 1);
    let partial = reduce(&load(&a, &(&(&l * 4) + &r)), &[&r]);
    let tmp =
        UOp::new(Ops::DefineLocal, DType::F32.ptr_sized(AddrSpace::Local, 16), [], Arg::Str("temp0".into()));
    let st = store(&tmp, &l, &partial);
    let barrier = UOp::new(Ops::Barrier, DType::VOID, [st], Arg::None);
    let r2 = UOp::range(&UOp::index_const(16), 2);
    let second = UOp::load(DType::F32, [tmp.index(&r2), barrier]);
    let total = reduce(&second, &[&r2]);
    let valid = l.cmp_eq(0);
    let out_st = UOp::store([
        UOp::new(Ops::Index, out.dtype(), [out.clone(), UOp::index_const(0), valid], Arg::None),
        total,
    ]);
    let p = linearize(&UOp::sink([out_st]), "group").unwrap();
    check_order(&p);
    assert_eq!(p.local_size, [16, 1, 1]);
    // the reduce rewrite rebuilds the store, barrier and load: find them by shape
    let st_at = pos(&p, |u| u.op() == Ops::Store && u.src()[0].src()[0] == tmp);
    let bar_at = pos(&p, |u| u.op() == Ops::Barrier);
    let load_at = pos(&p, |u| u.op() == Ops::Load && u.src().len() == 2);
    assert!(st_at < bar_at && bar_at < load_at, "{p}");
    assert_eq!(p.depths()[bar_at], 0);
    // the first loop closes before the local store, the second opens after the barrier
    let end_r = pos(&p, |u| u.op() == Ops::EndRange && u.src()[0] == r);
    assert!(end_r < st_at && bar_at < pos_of(&p, &r2), "{p}");
    assert_eq!(p.uops.iter().filter(|u| u.op() == Ops::DefineAcc).count(), 2);
    assert!(!p.buffers.iter().any(|b| b.dtype != DType::F32));
}

#[test]
fn symbolic_end_and_variables() {
    let (a, out) = (global(1, 64), global(0, 1));
    let n = UOp::variable("n", 1, 64);
    let r = UOp::range(&n, 0);
    let total = reduce(&load(&a, &r), &[&r]);
    let p = linearize(&UOp::sink([store(&out, &UOp::index_const(0), &total)]), "var").unwrap();
    check_order(&p);
    assert_eq!(p.vars.len(), 1);
    assert_eq!(p.vars[0].name(), "n");
}

#[test]
fn malformed_inputs_are_typed_errors() {
    let out = global(0, 4);
    // a store of an int into a float buffer
    let bad = UOp::sink([store(&out, &UOp::index_const(0), &UOp::index_const(1))]);
    assert!(matches!(linearize(&bad, "bad"), Err(LinearizeError::Spec(_))));
    // a special that is no launch dimension
    let idx = UOp::special("gidx7", 4);
    let bad = UOp::sink([store(&out, &idx, &UOp::constant(DType::F32, 1.0))]);
    assert!(matches!(linearize(&bad, "bad"), Err(LinearizeError::Special { .. })));
    // a reduction's result used together with the range it reduces over
    let r = UOp::range(&UOp::index_const(4), 0);
    let total = reduce(&r.cast(DType::F32), &[&r]);
    let bad = UOp::sink([store(&out, &r, &total)]);
    assert!(matches!(linearize(&bad, "bad"), Err(LinearizeError::ReduceRangeEscapes { .. })));
}

#[test]
fn reduce_of_a_loop_invariant_value_stays_in_its_loop() {
    let (a, out) = (global(1, 4), global(0, 4));
    let g = UOp::special("gidx0", 4);
    let r = UOp::range(&UOp::index_const(8), 0);
    let x = load(&a, &g);
    let total = reduce(&x, &[&r]);
    let p = linearize(&UOp::sink([store(&out, &g, &(&total + &x))]), "invariant").unwrap();
    check_order(&p);
    let assign = pos(&p, |u| u.op() == Ops::Assign);
    assert!(pos_of(&p, &r) < assign && p.depths()[assign] == 1, "{p}");
    // the update inside the loop is not the user after it
    let update = &p.uops[assign].src()[1];
    let user = &p.uops.last().unwrap().src()[1];
    assert_ne!(update, user);
    assert!(pos_of(&p, user) > pos(&p, |u| u.op() == Ops::EndRange), "{p}");
}

/// Two sums share a reduce loop nested in an outer loop (a CPU kernel's global axis); one sums
/// loads that depend on the outer loop, the other a constant. The constant sum's accumulator
/// starts over in every outer iteration, so what reads it belongs in that loop too, after the
/// inner one (fuzz seed 106867: "no order exists").
#[test]
fn a_constant_sum_sharing_a_nested_loop_is_read_inside_the_outer_loop() {
    let (a, out, count) = (global(2, 12), global(0, 4), global(1, 4));
    let (g, r) = (UOp::range(&UOp::index_const(4), 0), UOp::range(&UOp::index_const(3), 1));
    let total = reduce(&load(&a, &(&(&g * 3) + &r)), &[&r]);
    let ones = reduce(&UOp::constant(DType::F32, 1.0), &[&r]);
    let sink = UOp::sink([store(&out, &g, &total), store(&count, &g, &(&ones * 2.0f32))]);
    let p = linearize(&sink, "shared").unwrap();
    check_order(&p);
    let depths = p.depths();
    let ends: Vec<usize> = (0..p.uops.len()).filter(|&i| p.uops[i].op() == Ops::EndRange).collect();
    let doubled = pos(&p, |u| u.op() == Ops::Mul && u.dtype() == DType::F32);
    assert!(depths[doubled] == 1 && ends[0] < doubled && doubled < ends[1], "{p}");
}
