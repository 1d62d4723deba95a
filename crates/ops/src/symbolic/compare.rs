//! Comparisons: moving constants across `<`, dividing both sides by common factors.

use super::{cint, const_factor, divides, fits, gcd, split_add, sum};
use crate::{DTypePat, Rule, UOp, UPat, rule};

fn int_var(name: &'static str) -> UPat {
    UPat::var(name).dtype_class(DTypePat::Int)
}

fn cvar(name: &'static str) -> UPat {
    UPat::cvar(name)
}

/// `x + c0 < c1 -> x < c1 - c0`, if `c1 - c0` does not overflow.
fn move_const(x: &UOp, c0: &UOp, c1: &UOp) -> Option<UOp> {
    Some(x.cmp_lt(fits(x, cint(c1)?.checked_sub(cint(c0)?)?)?))
}

/// `x*c0 < c1 -> x < ceil(c1/c0)` for positive `c0`, `c1`.
fn divide_scaled(x: &UOp, c0: &UOp, c1: &UOp) -> Option<UOp> {
    let (a, b) = (cint(c0)?, cint(c1)?);
    (a > 0 && b > 0).then(|| Some(x.cmp_lt(fits(x, (b + a - 1) / a)?)))?
}

/// `x//c0 < c1 -> x < c1*c0` for positive `c0`, when `c1 > 0` or `x >= 0` (truncation and
/// floor agree where it matters).
fn undo_div(x: &UOp, c0: &UOp, c1: &UOp) -> Option<UOp> {
    let (a, b) = (cint(c0)?, cint(c1)?);
    let x_nonneg = x.int_bounds()?.0 >= 0;
    (a > 0 && (b > 0 || x_nonneg)).then(|| Some(x.cmp_lt(fits(x, b.checked_mul(a)?)?)))?
}

/// `d*X + r < c -> X < c/d` when `d` divides `c` and every scaled term, and the unscaled
/// rest `r` stays in `[0, d)`.
fn lt_common_factor(x: &UOp, c: &UOp) -> Option<UOp> {
    let c = cint(c)?;
    if c <= 0 {
        return None;
    }
    let (unit, scaled): (Vec<UOp>, Vec<UOp>) = split_add(x).into_iter().partition(|t| const_factor(t) == 1);
    let d = scaled.iter().fold(c, |g, t| gcd(g, const_factor(t)));
    if scaled.is_empty() || d <= 1 {
        return None;
    }
    let (lo, hi) = unit.iter().try_fold((0i128, 0i128), |(lo, hi), t| {
        let (a, b) = t.int_bounds()?;
        Some((lo + a, hi + b))
    })?;
    if lo < 0 || hi >= d {
        return None;
    }
    let reduced: Option<Vec<UOp>> = scaled.iter().map(|t| divides(t, d)).collect();
    Some(sum(reduced?, x).cmp_lt(fits(x, c / d)?))
}

/// The rules of this topic, in order.
pub(super) fn rules() -> Vec<Rule> {
    vec![
        // x + c0 < c1 -> x < c1 - c0
        rule!((int_var("x") + cvar("c0")).lt(cvar("c1")) => |x, c0, c1| move_const(x, c0, c1)),
        // x*c0 < c1 -> x < ceil(c1/c0)
        rule!((int_var("x") * cvar("c0")).lt(cvar("c1")) => |x, c0, c1| divide_scaled(x, c0, c1)),
        // x//c0 < c1 -> x < c1*c0
        rule!(int_var("x").idiv(cvar("c0")).lt(cvar("c1")) => |x, c0, c1| undo_div(x, c0, c1)),
        // d*X + r < c -> X < c/d
        rule!(int_var("x").lt(cvar("c")) => |x, c| lt_common_factor(x, c)),
        // x*-1 < y*-1 -> y < x
        rule!((int_var("x") * -1).lt(int_var("y") * -1) => |x, y| Some(y.cmp_lt(x))),
    ]
}
