//! Indexing by comparison, folded (tinygrad's arange folding and reduce collapse).
//!
//! `Tensor::arange` is a sum of masked bits; lowered over a loop index `r` it reads
//! `r%2 + ((r//2)%2)*2 + .. + (r >= 64 ? 1 : 0)*64`, the digits of `r` added back together, which
//! folds to `r`. A one-hot reduce (`embedding`, `gather`, tensor indexing: the index compared with
//! an arange, the matching row kept, summed over the vocabulary) then reads
//! `sum over r < n of (x == r ? e(r) : 0)`: exactly one iteration survives, so the loop collapses
//! into `e(x)` with every load of it gated by `0 <= x < n` (an index outside the table picks
//! nothing, so the result is 0 as the sum's was, and no load leaves its buffer).
//!
//! Every rule here is exact for any value of its operands under `exec_alu` semantics.

use super::{cint, fits, split_add, sum};
use crate::{Arg, Ops, Rule, UOp, UOpMap, UPat, rule};

// ---- arange folding: the digits of a number added back together ----

/// A term `((x // div) % modulus) * mul` of an integer sum: a run of digits of `x` in a mixed
/// radix (`modulus` `None`: every digit from `div` up).
struct Digits {
    x: UOp,
    div: i128,
    modulus: Option<i128>,
    mul: i128,
}

impl Digits {
    /// `t` read as digits of some `x`: `x % m`, `(x // d) % m`, `x // d` or a step
    /// `c < x ? 1 : 0` (see [`step`]), each maybe times a nonzero constant.
    fn of(t: &UOp) -> Option<Digits> {
        let (t, mul) = match t.op() {
            Ops::Mul => (&t.src()[0], cint(&t.src()[1]).filter(|&c| c != 0)?),
            _ => (t, 1),
        };
        let (x, div, modulus) = match t.op() {
            Ops::Mod => {
                let (x, div) = quotient(&t.src()[0]);
                (x, div, Some(cint(&t.src()[1]).filter(|&m| m > 0)?))
            }
            Ops::Idiv => match quotient(t) {
                (_, 1) => return None,
                (x, div) => (x, div, None),
            },
            Ops::Where => {
                let (x, div) = step(t)?;
                (x, div, None)
            }
            _ => return None,
        };
        Some(Digits { x, div, modulus, mul })
    }

    /// The run of `self` followed by `upper`, when `upper` holds the digits of the same number
    /// right above `self`'s at the same scale: `x%c + ((x//c)%d)*c -> x%(c*d)`.
    fn join(&self, upper: &Digits) -> Option<Digits> {
        let m = self.modulus?;
        let adjacent = self.x == upper.x
            && Some(upper.div) == self.div.checked_mul(m)
            && Some(upper.mul) == self.mul.checked_mul(m);
        if !adjacent {
            return None;
        }
        let modulus = match upper.modulus {
            Some(n) => Some(m.checked_mul(n)?),
            None => None,
        };
        Some(Digits { x: self.x.clone(), div: self.div, modulus, mul: self.mul })
    }

    /// The term as a UOp.
    fn build(&self) -> Option<UOp> {
        let x = &self.x;
        let mut t = if self.div == 1 { x.clone() } else { x.idiv(fits(x, self.div)?) };
        if let Some(m) = self.modulus {
            t = &t % &fits(x, m)?;
        }
        Some(if self.mul == 1 { t } else { &t * &fits(x, self.mul)? })
    }
}

/// `n // d` for a positive constant `d` as `(n, d)`, or as `(y, d/k)` when `n` is [`scaled`]
/// by a `k` dividing `d`; anything else `t` as `(t, 1)`.
fn quotient(t: &UOp) -> (UOp, i128) {
    match (t.op(), t.src().get(1).and_then(cint)) {
        (Ops::Idiv, Some(d)) if d > 0 => divided(&t.src()[0], d),
        _ => (t.clone(), 1),
    }
}

/// The digit `n // d` (for `d > 0`) as `(n, d)`, or as `(y, d/k)` for an `n` [`scaled`] by a
/// `k` that divides `d`.
fn divided(n: &UOp, d: i128) -> (UOp, i128) {
    match scaled(n) {
        Some((y, k)) if d % k == 0 => (y, d / k),
        _ => (n.clone(), d),
    }
}

/// `y*k + j` (or `y*k`) with `0 <= j < k`, `y >= 0` and no wrapping, as `(y, k)`: divided by a
/// multiple `k*m` of `k` it is `y // m`.
fn scaled(n: &UOp) -> Option<(UOp, i128)> {
    let (yk, j) = match n.op() {
        Ops::Add => (&n.src()[0], cint(&n.src()[1])?),
        _ => (n, 0),
    };
    if yk.op() != Ops::Mul {
        return None;
    }
    let (y, k) = (&yk.src()[0], cint(&yk.src()[1])?);
    let (lo, hi) = n.int_bounds()?;
    let dt = n.dtype();
    let inside = lo > dt.min_value().to_i128() && hi < dt.max_value().to_i128();
    (k > 0 && (0..k).contains(&j) && y.int_bounds()?.0 >= 0 && inside).then(|| (y.clone(), k))
}

/// `c < x ? 1 : 0` with `0 <= x < 2*(c+1)`: the digit `x // (c+1)` (see [`divided`]).
fn step(t: &UOp) -> Option<(UOp, i128)> {
    let [cond, one, zero] = t.src() else { return None };
    if cond.op() != Ops::CmpLt || cint(one)? != 1 || cint(zero)? != 0 {
        return None;
    }
    let (c, x) = (cint(&cond.src()[0])?, &cond.src()[1]);
    let (lo, hi) = x.int_bounds()?;
    (x.dtype() == t.dtype() && c >= 0 && lo >= 0 && hi <= 2 * c + 1).then(|| divided(x, c + 1))
}

/// Joins the digit runs among the terms of the sum `root` (see [`Digits::join`]).
fn join_digits(root: &UOp) -> Option<UOp> {
    if !root.dtype().is_int() || root.dtype().is_vector() {
        return None;
    }
    let mut terms: Vec<(UOp, Option<Digits>)> =
        split_add(root).into_iter().map(|t| (t.clone(), Digits::of(&t))).collect();
    if terms.iter().filter(|(_, d)| d.is_some()).count() < 2 {
        return None;
    }
    let mut joined = false;
    while let Some((i, j, run)) = first_join(&terms) {
        terms[i] = (run.build()?, Some(run));
        terms.remove(j);
        joined = true;
    }
    joined.then(|| sum(terms.into_iter().map(|(t, _)| t), root))
}

/// The first pair of terms `(lower, upper)` whose digits join, and the joined run.
fn first_join(terms: &[(UOp, Option<Digits>)]) -> Option<(usize, usize, Digits)> {
    let digits = || terms.iter().enumerate().filter_map(|(i, (_, d))| Some((i, d.as_ref()?)));
    digits().find_map(|(i, lower)| digits().find_map(|(j, upper)| Some((i, j, lower.join(upper)?))))
}

/// `c < x ? 1 : 0` for an `x` in `[0, 1]`: `x` itself.
fn bool_valued(t: &UOp) -> Option<UOp> {
    let (x, div) = step(t)?;
    (div == 1).then_some(x)
}

// ---- reduce collapse: a sum over a loop that keeps one iteration ----

/// Whether `r` occurs in the graph of `u`.
fn uses(u: &UOp, r: &UOp) -> bool {
    u == r || u.toposort().contains(r)
}

/// The `x` for which `cond` is false exactly where `r == x`: `cond` is `x != r`, or `z != r + y`
/// (an `x` of `z - y`), with nothing but the `r` depending on `r`.
fn solve_ne(cond: &UOp, r: &UOp) -> Option<UOp> {
    if cond.op() != Ops::CmpNe {
        return None;
    }
    let (a, b) = (&cond.src()[0], &cond.src()[1]);
    let (with_r, other) = if uses(a, r) { (a, b) } else { (b, a) };
    if uses(other, r) || with_r.dtype() != r.dtype() {
        return None;
    }
    let (hits, rest): (Vec<UOp>, Vec<UOp>) = split_add(with_r).into_iter().partition(|t| t == r);
    if hits.len() != 1 || rest.iter().any(|t| uses(t, r)) {
        return None;
    }
    Some(if rest.is_empty() { other.clone() } else { other - &sum(rest, other) })
}

/// The conjuncts of a bool `a & b & ..`.
fn conjuncts(c: &UOp) -> Vec<UOp> {
    match c.op() {
        Ops::And if c.dtype().is_bool() => c.src().iter().flat_map(conjuncts).collect(),
        _ => vec![c.clone()],
    }
}

/// `e` with `r` replaced by `x` and every `Index` that read through `r` gated by `ok` too.
fn substitute_gated(e: &UOp, r: &UOp, x: &UOp, ok: &UOp) -> UOp {
    let mut done: UOpMap<UOp> = UOpMap::default();
    for u in e.toposort() {
        let new = if &u == r {
            x.clone()
        } else {
            let src: Vec<UOp> = u.src().iter().map(|s| done[s].clone()).collect();
            match (src.as_slice() == u.src(), u.op()) {
                (true, _) => u.clone(),
                (false, Ops::Index) => match src.as_slice() {
                    [buf, idx] => u.with_src([buf.clone(), idx.clone(), ok.clone()]),
                    [buf, idx, valid] => u.with_src([buf.clone(), idx.clone(), valid & ok]),
                    _ => u.with_src(src),
                },
                (false, _) => u.with_src(src),
            }
        };
        done.insert(u, new);
    }
    done.remove(e).unwrap_or_else(|| e.clone())
}

/// Whether the bool `v` implies `ok`: every conjunct of `ok` is one of `v`.
fn gated_by(v: &UOp, ok: &UOp) -> bool {
    let have = conjuncts(v);
    conjuncts(ok).iter().all(|c| have.contains(c))
}

/// Whether `e` is a load (maybe cast) whose index is gated by `ok`: 0 wherever `ok` is false.
fn zero_unless(e: &UOp, ok: &UOp) -> bool {
    match e.op() {
        Ops::Cast => zero_unless(&e.src()[0], ok),
        Ops::Load => e.src().len() == 1 && e.src()[0].src().get(2).is_some_and(|v| gated_by(v, ok)),
        _ => false,
    }
}

/// The sum over the range `r` of `value`, without the loop, if exactly one iteration of it can be
/// nonzero: `x == r ? e(r) : 0` (the test maybe one conjunct of several) is
/// `0 <= x < n ? e(x) : 0`; casts and sums of such terms collapse term by term.
fn pick(value: &UOp, r: &UOp) -> Option<UOp> {
    match value.op() {
        Ops::Cast => Some(pick(&value.src()[0], r)?.cast(value.dtype())),
        Ops::Add => Some(&pick(&value.src()[0], r)? + &pick(&value.src()[1], r)?),
        Ops::Where => pick_where(value, r),
        _ => None,
    }
}

/// [`pick`] of `c ? t : f` with `t` or `f` zero.
fn pick_where(w: &UOp, r: &UOp) -> Option<UOp> {
    let [c, t, f] = w.src() else { return None };
    let is_zero = |u: &UOp| u.const_value().is_some_and(|v| v.to_f64() == 0.0);
    // x != r ? 0 : e
    let (x, rest, e) = if is_zero(t) && !is_zero(f) {
        (solve_ne(c, r)?, vec![], f)
    } else if is_zero(f) {
        // (x == r) & rest ? e : 0, with x == r written !(x != r)
        let all = conjuncts(c);
        let (i, x) = all.iter().enumerate().find_map(|(i, a)| {
            let ne = (a.op() == Ops::CmpNe && a.src()[1].const_value().is_some_and(|v| v.is_truthy()))
                .then(|| &a.src()[0])?;
            Some((i, solve_ne(ne, r)?))
        })?;
        let rest: Vec<UOp> =
            all.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, a)| a.clone()).collect();
        (x, rest, t)
    } else {
        return None;
    };
    if e.toposort().iter().any(|u| matches!(u.op(), Ops::Store | Ops::Barrier | Ops::DefineAcc)) {
        return None;
    }
    let n = r.src()[0].cast(x.dtype());
    let ok = &x.cmp_lt(x.const_like(0)).logical_not() & &x.cmp_lt(&n);
    let at = x.cast(r.dtype());
    let e = substitute_gated(e, r, &at, &ok);
    let rest = rest.iter().map(|a| substitute_gated(a, r, &at, &ok));
    let cond = rest.fold(ok.clone(), |acc, a| &acc & &a);
    Some(if cond == ok && zero_unless(&e, &ok) { e } else { cond.where_(&e, &e.const_like(0)) })
}

/// A sum reduce that [`pick`]s one iteration of one of its ranges, without that range.
fn collapse(red: &UOp) -> Option<UOp> {
    let ([value], ranges) = red.reduce_parts() else { return None };
    ranges.iter().enumerate().filter(|(_, r)| r.op() == Ops::Range).find_map(|(i, r)| {
        let picked = pick(value, r)?;
        let others: Vec<UOp> =
            ranges.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, o)| o.clone()).collect();
        Some(if others.is_empty() {
            picked
        } else {
            UOp::new(Ops::Reduce, red.dtype(), [vec![picked], others].concat(), red.arg().clone())
        })
    })
}

/// The rules of this topic, in order.
pub(super) fn rules() -> Vec<Rule> {
    vec![
        // c < x ? 1 : 0 -> x, for x in [0, 1]
        rule!(UPat::op(Ops::Where).named("t") => |t| bool_valued(t)),
        // x%c + ((x//c)%d)*c -> x%(c*d), x%c + (x//c)*c -> x (in any sum, at any scale)
        rule!(UPat::op(Ops::Add).named("root") => |root| join_digits(root)),
        // sum over r of (x == r ? e(r) : 0) -> 0 <= x < n ? e(x) : 0
        rule!(UPat::op(Ops::Reduce).arg(Arg::Op(Ops::Add)).named("red") => |red| collapse(red)),
    ]
}
