//! Division and modulo: folding by bounds, by constant factors and by common divisors.
//!
//! Every fold here is exact for C-style (truncating) division: the decompositions only
//! apply when the numerator's terms are non-negative, where truncation and floor agree.

use super::{cint, const_factor, divides, fits, gcd, split_add, sum};
use crate::{DTypePat, Ops, Rule, UOp, UPat, rule};

fn int_var(name: &'static str) -> UPat {
    UPat::var(name).dtype_class(DTypePat::Int)
}

fn var(name: &'static str) -> UPat {
    UPat::var(name)
}

fn cvar(name: &'static str) -> UPat {
    UPat::cvar(name)
}

/// `x // y` or `x % y` whose quotient is the same over all bounds: `q`, `x - q*y`.
fn fold_by_bounds(x: &UOp, y: &UOp, op: Ops) -> Option<UOp> {
    let ((x0, x1), (y0, y1)) = (x.int_bounds()?, y.int_bounds()?);
    if y0 <= 0 && y1 >= 0 {
        return None;
    }
    let q = x0 / y0;
    if [x0 / y1, x1 / y0, x1 / y1].iter().any(|&o| o != q) {
        return None;
    }
    let q = fits(x, q)?;
    Some(if op == Ops::Idiv { q } else { x - &(y * &q) })
}

/// A numerator as `sum(f_i * v_i) + konst` with every `f_i > 0` and `v_i >= 0`.
struct Linear {
    terms: Vec<(UOp, i128)>,
    konst: i128,
}

impl Linear {
    /// The decomposition of `x` for division by `c`; for `%`, inner `u % m` with `c | m`
    /// become `u` (their residues mod `c` agree). `None` unless every term is non-negative.
    fn of(x: &UOp, c: i128, op: Ops) -> Option<(Linear, bool)> {
        let mut lin = Linear { terms: Vec::new(), konst: 0 };
        let mut changed = false;
        for mut t in split_add(x) {
            if let Some(k) = cint(&t) {
                lin.konst += k;
                continue;
            }
            if op == Ops::Mod && t.op() == Ops::Mod && cint(&t.src()[1]).is_some_and(|m| m > 0 && m % c == 0)
            {
                t = t.src()[0].clone();
                changed = true;
            }
            let f = const_factor(&t);
            let v = divides(&t, f)?;
            if f <= 0 || v.int_bounds()?.0 < 0 {
                return None;
            }
            lin.terms.push((v, f));
        }
        (lin.konst >= 0).then_some((lin, changed))
    }

    /// `sum(g(f_i) * v_i) + k`, skipping zero coefficients.
    fn build(&self, like: &UOp, g: impl Fn(i128) -> i128, k: i128) -> Option<UOp> {
        let mut parts = Vec::new();
        for (v, f) in &self.terms {
            let coef = g(*f);
            if coef != 0 {
                parts.push(if coef == 1 { v.clone() } else { v * &fits(like, coef)? });
            }
        }
        if k != 0 || parts.is_empty() {
            parts.push(fits(like, k)?);
        }
        Some(sum(parts, like))
    }

    /// Largest value of `sum((f_i % c) * v_i) + konst % c`.
    fn remainder_max(&self, c: i128) -> Option<i128> {
        self.terms
            .iter()
            .try_fold(self.konst % c, |acc, (v, f)| acc.checked_add((f % c).checked_mul(v.int_bounds()?.1)?))
    }
}

/// `x // c` or `x % c` for a positive constant `c` over a non-negative linear `x`.
fn fold_linear(x: &UOp, y: &UOp, op: Ops) -> Option<UOp> {
    let c = cint(y).filter(|&c| c > 0)?;
    if x.dtype().is_vector() || x.int_bounds()?.0 < 0 {
        return None;
    }
    let (lin, changed) = Linear::of(x, c, op)?;
    // the remainder part never reaches c: x//c is the quotient part, x%c the remainder part
    if lin.remainder_max(c)? < c {
        return if op == Ops::Idiv {
            lin.build(x, |f| f / c, lin.konst / c)
        } else {
            lin.build(x, |f| f % c, lin.konst % c)
        };
    }
    // a common factor g of everything: x//c = (x/g)//(c/g), x%c = ((x/g)%(c/g))*g
    let g = lin.terms.iter().fold(gcd(c, lin.konst), |g, (_, f)| gcd(g, *f));
    if g > 1 {
        let inner = lin.build(x, |f| f / g, lin.konst / g)?;
        let cg = fits(x, c / g)?;
        return Some(if op == Ops::Idiv { inner.idiv(&cg) } else { &(&inner % &cg) * &fits(x, g)? });
    }
    // pull whole multiples of c out: x = c*Q + R with Q, R >= 0
    let pulls = lin.konst >= c || lin.terms.iter().any(|(_, f)| *f >= c);
    if !pulls && !changed {
        return None;
    }
    let rem = lin.build(x, |f| f % c, lin.konst % c)?;
    if op == Ops::Mod {
        return Some(rem % y);
    }
    Some(&lin.build(x, |f| f / c, lin.konst / c)? + &rem.idiv(y))
}

/// `x // c` or `x % c` where `x` is `a*v + k` with `v` taking two values: a linear map.
fn fold_two_values(x: &UOp, y: &UOp, op: Ops) -> Option<UOp> {
    let c = cint(y).filter(|&c| c > 0)?;
    let (lin, _) = Linear::of(x, c, Ops::Idiv)?;
    let [(v, f)] = lin.terms.as_slice() else { return None };
    let (v0, v1) = v.int_bounds()?;
    if v1 - v0 != 1 {
        return None;
    }
    let eval =
        |val: i128| if op == Ops::Idiv { (f * val + lin.konst) / c } else { (f * val + lin.konst) % c };
    let (a, b) = (eval(v0), eval(v1));
    Some(&(v - &fits(x, v0)?) * &fits(x, b - a)? + &fits(x, a)?)
}

/// `(x//c1)//c2 -> x//(c1*c2)` for positive `c1`, `c2`.
fn nested_div(x: &UOp, c1: &UOp, c2: &UOp) -> Option<UOp> {
    let (a, b) = (cint(c1)?, cint(c2)?);
    (a > 0 && b > 0).then(|| Some(x.idiv(fits(x, a.checked_mul(b)?)?)))?
}

/// `(x//c + a)//d -> (x + a*c)//(c*d)` when both numerators are non-negative.
fn merge_div_offset(x: &UOp, c: &UOp, a: &UOp, d: &UOp, inner: &UOp) -> Option<UOp> {
    let (cv, av, dv) = (cint(c)?, cint(a)?, cint(d)?);
    if cv <= 0 || dv <= 0 || x.int_bounds()?.0 < 0 || inner.int_bounds()?.0 < 0 {
        return None;
    }
    Some((x + &fits(x, av.checked_mul(cv)?)?).idiv(fits(x, cv.checked_mul(dv)?)?))
}

/// Whether `-u` cannot overflow: `u` never takes its dtype's minimum (which negates to itself).
fn negatable(u: &UOp) -> bool {
    u.int_bounds().is_some_and(|(lo, _)| lo > u.dtype().min_value().to_i128())
}

/// `x // d` with `d < 0` or `x < 0`: flip signs so the operands are non-negative.
fn div_flip_sign(x: &UOp, d: &UOp) -> Option<UOp> {
    let ((_, x1), (_, d1)) = (x.int_bounds()?, d.int_bounds()?);
    if x.dtype().is_unsigned() {
        return None;
    }
    if d1 < 0 && negatable(d) {
        Some(-&x.idiv(-d))
    } else if x1 < 0 && d1 > 0 && negatable(x) {
        Some(-&(-x).idiv(d))
    } else {
        None
    }
}

/// `x % d` with `d < 0` (`x % -d`, same in C) or `x < 0` (`-((-x) % d)`).
fn mod_flip_sign(x: &UOp, d: &UOp) -> Option<UOp> {
    let ((_, x1), (_, d1)) = (x.int_bounds()?, d.int_bounds()?);
    if x.dtype().is_unsigned() {
        return None;
    }
    if d1 < 0 && negatable(d) {
        Some(x % &(-d))
    } else if x1 < 0 && d1 > 0 && negatable(x) {
        Some(-&((-x) % d))
    } else {
        None
    }
}

/// The rules of this topic, in order.
pub(super) fn rules() -> Vec<Rule> {
    vec![
        // (x//c1)//c2 -> x//(c1*c2)
        rule!(int_var("x").idiv(cvar("c1")).idiv(cvar("c2")) => |x, c1, c2| nested_div(x, c1, c2)),
        // (x//c + a)//d -> (x + a*c)//(c*d)
        rule!((int_var("x").idiv(cvar("c")) + cvar("a")).named("n").idiv(cvar("d")) => |x, c, a, d, n| merge_div_offset(x, c, a, d, n)),
        // x//y -> q when the quotient is the same everywhere
        rule!(int_var("x").idiv(var("y")) => |x, y| fold_by_bounds(x, y, Ops::Idiv)),
        // x%y -> x - q*y when the quotient is the same everywhere
        rule!(int_var("x") % var("y") => |x, y| fold_by_bounds(x, y, Ops::Mod)),
        // (a*v + k)//c with v in {v0, v0+1} -> linear in v
        rule!(int_var("x").idiv(cvar("c")) => |x, c| fold_two_values(x, c, Ops::Idiv)),
        // (a*v + k)%c with v in {v0, v0+1} -> linear in v
        rule!(int_var("x") % cvar("c") => |x, c| fold_two_values(x, c, Ops::Mod)),
        // (c*Q + R)//c -> Q + R//c, (g*X)//(g*c) -> X//c
        rule!(int_var("x").idiv(cvar("c")) => |x, c| fold_linear(x, c, Ops::Idiv)),
        // (c*Q + R)%c -> R%c, (g*X)%(g*c) -> (X%c)*g
        rule!(int_var("x") % cvar("c") => |x, c| fold_linear(x, c, Ops::Mod)),
        // x//-d -> -(x//d), (-x)//d -> -(x//d)
        rule!(int_var("x").idiv(var("d")) => |x, d| div_flip_sign(x, d)),
        // x%-d -> x%d, (-x)%d -> -(x%d)
        rule!(int_var("x") % var("d") => |x, d| mod_flip_sign(x, d)),
    ]
}
