//! Terms: canonical operand order, collecting like terms, re-association, bounds folding.
//!
//! Re-association and collecting like terms change a float result's rounding, so they apply
//! to integers only (a float expression keeps the graph's order, so that a value recomputed
//! in another kernel, such as a max's input in its gradient's tie mask, is bit-identical);
//! exact rewrites (`x + x -> x*2`, `(x + c)*-1 -> -x + -c`, max of constants) apply to all.

use std::cmp::Ordering;

use wgrad_dtype::ConstValue;

use super::{cint, fits};
use crate::{DTypePat, GroupOp, OpSet, Ops, Rule, UOp, UPat, rule};

fn var(name: &'static str) -> UPat {
    UPat::var(name)
}

fn cvar(name: &'static str) -> UPat {
    UPat::cvar(name)
}

fn int_var(name: &'static str) -> UPat {
    UPat::var(name).dtype_class(DTypePat::Int)
}

/// Integer commutative ops with their operands out of canonical order, swapped.
fn canonical_order(x: &UOp) -> Option<UOp> {
    let s = x.src();
    (s[1].canonical_cmp(&s[0]) == Ordering::Less).then(|| x.with_src([s[1].clone(), s[0].clone()]))
}

/// `c0 + c1` or `c + 1` as a constant, if it does not overflow.
fn add_consts(c0: &UOp, c1: i128) -> Option<UOp> {
    fits(c0, cint(c0)?.checked_add(c1)?)
}

/// A node whose bounds pin it to one value, as that constant.
fn pinned(x: &UOp) -> Option<UOp> {
    let (lo, hi) = x.int_bounds()?;
    (lo == hi).then(|| {
        x.const_like(if x.dtype().is_unsigned() {
            ConstValue::UInt(lo as u64)
        } else {
            ConstValue::Int(lo as i64)
        })
    })
}

/// `max(x, y)` decided by bounds.
fn max_by_bounds(x: &UOp, y: &UOp) -> Option<UOp> {
    let ((x0, x1), (y0, y1)) = (x.int_bounds()?, y.int_bounds()?);
    if x0 >= y1 {
        Some(x.clone())
    } else if x1 <= y0 {
        Some(y.clone())
    } else {
        None
    }
}

/// `(x op c1) op c2 -> x op (c1 op c2)`, the constants folded.
fn fold_two_consts(f: &UOp, x: &UOp, c1: &UOp, c2: &UOp) -> Option<UOp> {
    let folded = crate::exec_alu(f.op(), f.dtype(), &[c1.const_value()?, c2.const_value()?]).ok()?;
    Some(x.alu(f.op(), &[&f.const_like(folded)]))
}

/// `x + y`, `x * y` with a non-constant `y`.
fn not_const(y: &UOp) -> bool {
    y.op() != Ops::Const
}

/// The rules of this topic, in order.
pub(super) fn rules() -> Vec<Rule> {
    let commutative_ints = UPat::ops(GroupOp::COMMUTATIVE).dtype_class(DTypePat::Int).named("x");
    let foldable = GroupOp::ALU.union(OpSet::of(&[Ops::DefineVar, Ops::Special, Ops::Range]));
    let mut rules = vec![
        // y op x -> x op y when x sorts first (constants last)
        rule!(commutative_ints => |x| canonical_order(x)),
        // x|(x&y) -> x
        rule!(var("x") | (var("x") & var("y")) => |x| Some(x.clone())),
        // x*c0 + x*c1 -> x*(c0+c1)
        rule!(int_var("x") * cvar("c0") + int_var("x") * cvar("c1") => |x, c0, c1| Some(x * (c0 + c1))),
        // (y + x*c0) + x*c1 -> y + x*(c0+c1)
        rule!((var("y") + int_var("x") * cvar("c0")) + int_var("x") * cvar("c1") => |x, y, c0, c1| Some(y + x * (c0 + c1))),
        // x + x*c -> x*(c+1)
        rule!(var("x") + var("x") * cvar("c") => |x, c| Some(x * add_consts(c, 1)?)),
        // (y + x) + x*c -> y + x*(c+1)
        rule!((var("y") + var("x")) + var("x") * cvar("c") => |x, y, c| Some(y + x * add_consts(c, 1)?)),
        // x + x -> x*2
        rule!(var("x") + var("x") => |x| Some(x * 2)),
        // (y + x) + x -> y + x*2
        rule!((var("y") + int_var("x")) + int_var("x") => |x, y| Some(y + x * 2)),
        // (x + c)*-1 -> x*-1 + -c
        rule!((var("x") + cvar("c")) * -1 => |x, c| Some(-x + -c)),
        // x ? v : v -> v
        rule!(UPat::any().where_(var("v"), var("v")) => |v| Some(v.clone())),
        // true ? a : b -> a, false ? a : b -> b
        rule!(cvar("g").where_(var("a"), var("b")) => |g, a, b| Some(if g.const_value()?.is_truthy() { a.clone() } else { b.clone() })),
        // !c ? t : f -> c ? f : t
        rule!(var("c").ne(UPat::konst(1.0).dtype(wgrad_dtype::DType::BOOL)).where_(var("t"), var("f")) => |c, t, f| Some(c.where_(f, t))),
        // ALU/leaf with vmin == vmax -> that constant
        rule!(UPat::ops(foldable).named("x") => |x| pinned(x)),
        // max(x, y) -> x if x >= y always (and y if y >= x)
        rule!(var("x").maximum(var("y")) => |x, y| max_by_bounds(x, y)),
        // (x + c1) + y -> (x + y) + c1
        rule!((int_var("x") + cvar("c1")) + var("y") => |x, c1, y| not_const(y).then(|| (x + y) + c1)),
        // (x * c1) * y -> (x * y) * c1
        rule!((int_var("x") * cvar("c1")) * var("y") => |x, c1, y| not_const(y).then(|| (x * y) * c1)),
        // (x + y)*c -> x*c + y*c (ints; floats have inf*0)
        rule!((int_var("x") + var("y")) * cvar("c") => |x, y, c| Some(x * c + y * c)),
    ];
    // (x op c1) op c2 -> x op (c1 op c2) (a float sum or product only where it is exact: max)
    for op in GroupOp::ASSOCIATIVE.iter() {
        let x = if matches!(op, Ops::Add | Ops::Mul) { int_var("x") } else { var("x") };
        let pat = UPat::alu(op, [UPat::alu(op, [x, cvar("c1")]), cvar("c2")]).named("f");
        rules.push(rule!(pat => |f, x, c1, c2| fold_two_consts(f, x, c1, c2)));
    }
    rules
}
