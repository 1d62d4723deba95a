//! Folding: identities, constant folding through `exec_alu`, casts and boolean algebra.

use wgrad_dtype::{ConstValue, DType};

use super::cint;
use crate::{Arg, DTypePat, GroupOp, Ops, Rule, UOp, UPat, bitcast, exec_alu, rule};

fn var(name: &'static str) -> UPat {
    UPat::var(name)
}

fn bool_var(name: &'static str) -> UPat {
    UPat::var(name).dtype(DType::BOOL)
}

/// An ALU op over constants, evaluated.
fn fold_constants(a: &UOp) -> Option<UOp> {
    let vals: Option<Vec<ConstValue>> = a.src().iter().map(UOp::const_value).collect();
    let v = exec_alu(a.op(), a.dtype(), &vals?).ok()?;
    Some(a.const_like(v))
}

/// `x // x` and friends need `x` never zero.
fn nonzero(x: &UOp) -> bool {
    x.int_bounds().is_some_and(|(lo, hi)| lo > 0 || hi < 0)
}

/// `(x//c1)*c3 + (x%c1)*c2 -> x*c2` when `c1*c2 == c3`.
fn recombine_divmod(x: &UOp, c1: &UOp, c2: &UOp, c3: &UOp) -> Option<UOp> {
    (cint(c1)? * cint(c2)? == cint(c3)?).then(|| x * c2)
}

/// `bitcast(c)` of a constant.
fn fold_bitcast(root: &UOp, c: &UOp) -> Option<UOp> {
    let from = c.dtype().scalar_dtype();
    let to = root.dtype().scalar_dtype();
    let value = c.const_value()?;
    (from.itemsize() == to.itemsize() && !root.dtype().is_vector())
        .then(|| root.const_like(bitcast(value, from, to)))
}

/// `x*0 -> 0`, except a NaN/inf constant (whose product is NaN).
fn times_zero(x: &UOp, zero: &UOp) -> Option<UOp> {
    let nan = x.const_value().is_some_and(|c| !c.to_f64().is_finite());
    Some(if nan { zero.const_like(f64::NAN) } else { zero.clone() })
}

/// A reduce of a constant: a sum of zeros or a product of ones is that constant, and so is
/// a max over loops that each run at least once. A sum of several values drops its zeros.
/// (Such lanes appear where a mask zeroes a tile's lane; left in place they would need their
/// loop both inside and outside the others.)
fn reduce_of_constant(r: &UOp) -> Option<UOp> {
    let (values, ranges) = r.reduce_parts();
    let is_zero = |v: &UOp| v.const_value().is_some_and(|c| c.to_f64() == 0.0);
    if let [_, _, ..] = values {
        if !matches!(r.arg(), Arg::Op(Ops::Add)) || !values.iter().any(is_zero) {
            return None;
        }
        let kept: Vec<UOp> = values.iter().filter(|v| !is_zero(v)).cloned().collect();
        return Some(match kept.is_empty() {
            true => values[0].clone(),
            false => r.with_src([kept, ranges.to_vec()].concat()),
        });
    }
    let c = values[0].const_value()?;
    let runs = || ranges.iter().all(|x| x.src()[0].int_bounds().is_some_and(|(lo, _)| lo >= 1));
    let keep = match r.arg() {
        Arg::Op(Ops::Add) => c.to_f64() == 0.0,
        Arg::Op(Ops::Mul) => c.to_f64() == 1.0,
        Arg::Op(Ops::Max) => runs(),
        _ => false,
    };
    keep.then(|| values[0].clone())
}

/// The rules of this phase, in order.
pub(super) fn rules() -> Vec<Rule> {
    let alu_of_consts = UPat::ops(GroupOp::ALU).named("a").src_each(UPat::op(Ops::Const));
    vec![
        // x+0 -> x
        rule!(var("x") + 0 => |x| Some(x.clone())),
        // x*1 -> x
        rule!(var("x") * 1 => |x| Some(x.clone())),
        // x//x -> 1 (x never 0)
        rule!(var("x").idiv(var("x")) => |x| nonzero(x).then(|| x.const_like(1))),
        // x//1 -> x
        rule!(var("x").idiv(1) => |x| Some(x.clone())),
        // x//-1 -> -x
        rule!(var("x").idiv(-1) => |x| Some(-x)),
        // (x%y)%y -> x%y
        rule!((var("x") % var("y")).named("b") % var("y") => |b| Some(b.clone())),
        // (x%c)+(x//c)*c -> x
        rule!((var("x") % UPat::cvar("c")) + var("x").idiv(UPat::cvar("c")) * UPat::cvar("c") => |x| Some(x.clone())),
        // (x//c1)*c3 + (x%c1)*c2 -> x*c2 if c1*c2 == c3
        rule!(var("x").idiv(UPat::cvar("c1")) * UPat::cvar("c3") + (var("x") % UPat::cvar("c1")) * UPat::cvar("c2")
            => |x, c1, c2, c3| recombine_divmod(x, c1, c2, c3)),
        // x&true -> x, x&false -> false
        rule!(bool_var("x") & UPat::cvar("c") => |x, c| Some(if c.const_value()?.is_truthy() { x.clone() } else { c.clone() })),
        // x|true -> true, x|false -> x
        rule!(bool_var("x") | UPat::cvar("c") => |x, c| Some(if c.const_value()?.is_truthy() { c.clone() } else { x.clone() })),
        // x&x, x|x, max(x,x) -> x
        rule!(UPat::ops(GroupOp::IDEMPOTENT).src([var("x"), var("x")]) => |x| Some(x.clone())),
        // !!x -> x
        rule!(bool_var("x").ne(true_()).ne(true_()) => |x| Some(x.clone())),
        // x ? true : false -> x
        rule!(bool_var("x").where_(true_(), false_()) => |x| Some(x.clone())),
        // x<x -> false
        rule!(var("x").lt(var("x")) => |x| Some(UOp::constant(DType::BOOL.vec(x.dtype().count()), false))),
        // x%x -> 0
        rule!(var("x").dtype_class(DTypePat::Int) % var("x") => |x| Some(x.const_like(0))),
        // x!=x -> false (ints)
        rule!(var("x").dtype_class(DTypePat::Int).ne(var("x")) => |x| Some(UOp::constant(DType::BOOL.vec(x.dtype().count()), false))),
        // load(index(buf, idx, false)) -> 0: a load masked off everywhere reads its default
        rule!(UPat::op(Ops::Load).named("l").src([UPat::op(Ops::Index).src([UPat::any(), UPat::any(), false_()])])
            => |l| Some(l.const_like(0))),
        // x*0 -> 0 (NaN/inf constants give NaN; a loaded NaN is not seen)
        rule!(var("x") * UPat::konst(0.0).named("z") => |x, z| times_zero(x, z)),
        // op(c0, c1, ...) -> exec_alu(op, c0, c1, ...)
        rule!(alu_of_consts => |a| fold_constants(a)),
        // reduce(0, +), reduce(1, *), reduce(c, max) -> the constant
        rule!(UPat::op(Ops::Reduce).named("r") => |r| reduce_of_constant(r)),
        // bool: x*y -> x&y, x+y -> x|y, max(x,y) -> x|y
        rule!(bool_var("x") * bool_var("y") => |x, y| Some(x & y)),
        rule!(bool_var("x") + bool_var("y") => |x, y| Some(x | y)),
        rule!(bool_var("x").maximum(bool_var("y")) => |x, y| Some(x | y)),
        // cast(c) -> c'
        rule!(UPat::op(Ops::Cast).named("r").src([UPat::cvar("c")]) => |r, c| Some(r.const_like(c.const_value()?))),
        // cast(x) to x's dtype -> x
        rule!(UPat::ops(crate::OpSet::of(&[Ops::Cast, Ops::Bitcast])).named("r").src([var("x")])
            => |r, x| (r.dtype() == x.dtype()).then(|| x.clone())),
        // bitcast(c) -> c'
        rule!(UPat::op(Ops::Bitcast).named("r").src([UPat::cvar("c")]) => |r, c| fold_bitcast(r, c)),
        // x-y -> x+y*-1
        rule!(UPat::op(Ops::Sub).src([var("x"), var("y")]) => |x, y| Some(x - y)),
        // neg(x) -> x*-1
        rule!(UPat::op(Ops::Neg).src([var("x")]) => |x| Some(-x)),
    ]
}

fn true_() -> UPat {
    UPat::op(Ops::Const).dtype(DType::BOOL).arg(Arg::Const(ConstValue::Bool(true)))
}

fn false_() -> UPat {
    UPat::op(Ops::Const).dtype(DType::BOOL).arg(Arg::Const(ConstValue::Bool(false)))
}
