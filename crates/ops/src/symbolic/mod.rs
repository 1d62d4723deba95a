//! The symbolic simplifier: rule tables every later stage uses, split by topic.
//!
//! Phases build on each other as in tinygrad: [`symbolic_simple`] (folding, identities) ->
//! [`symbolic`] (+ canonical order, like terms, comparisons, division and modulo). All rules
//! are exact for the semantics of [`crate::exec_alu`] (C-style division) and use the vmin/vmax
//! bounds of every UOp. Rule-writing rules: never rewrite to worse code; canonicalize
//! (constants right, terms sorted) rather than match every order; a rule body longer than
//! one expression is a named function.

mod collapse;
mod compare;
mod divmod;
mod folding;
mod terms;
mod vectors;

use std::sync::LazyLock;

use wgrad_dtype::ConstValue;

use crate::{Ops, PatternMatcher, UOp, graph_rewrite};

// ---- helpers shared by the rule files ----

/// The integer value of `u` if it is an integer constant.
fn cint(u: &UOp) -> Option<i128> {
    u.const_int().filter(|_| u.dtype().is_int())
}

/// The integer constant `v` in `like`'s dtype, if `v` fits it (no wrapping).
fn fits(like: &UOp, v: i128) -> Option<UOp> {
    let lo = like.dtype().min_value().to_i128();
    let hi = like.dtype().max_value().to_i128();
    (lo <= v && v <= hi).then(|| like.const_like(ConstValue::Int(v as i64)))
}

/// The terms of a sum: `(a+b)+c -> [a, b, c]`.
fn split_add(u: &UOp) -> Vec<UOp> {
    let mut out = Vec::new();
    let mut stack = vec![u.clone()];
    while let Some(t) = stack.pop() {
        if t.op() == Ops::Add {
            stack.extend(t.src().iter().rev().cloned());
        } else {
            out.push(t);
        }
    }
    out
}

/// The sum of `terms` (a zero of `like`'s dtype when empty).
fn sum(terms: impl IntoIterator<Item = UOp>, like: &UOp) -> UOp {
    terms.into_iter().reduce(|a, b| &a + &b).unwrap_or_else(|| like.const_like(0))
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

/// The largest known integer factor of `u`: a constant's value, `c` of `x*c`, the gcd over
/// the terms of a sum, else 1.
fn const_factor(u: &UOp) -> i128 {
    if let Some(c) = cint(u) {
        return c;
    }
    match u.op() {
        Ops::Mul => cint(&u.src()[1]).unwrap_or(1),
        Ops::Add => gcd(const_factor(&u.src()[0]), const_factor(&u.src()[1])),
        _ => 1,
    }
}

/// `u / d` when `d` divides `u` exactly by its known factors.
fn divides(u: &UOp, d: i128) -> Option<UOp> {
    if d == 1 {
        return Some(u.clone());
    }
    if let Some(c) = cint(u) {
        return (c % d == 0).then(|| fits(u, c / d)).flatten();
    }
    match u.op() {
        Ops::Mul => {
            let c = cint(&u.src()[1])?;
            match (c % d, c / d) {
                (0, 1) => Some(u.src()[0].clone()),
                (0, q) => Some(&u.src()[0] * &fits(u, q)?),
                _ => None,
            }
        }
        Ops::Add => Some(&divides(&u.src()[0], d)? + &divides(&u.src()[1], d)?),
        _ => None,
    }
}

// ---- the phases ----

/// Phase 1: the most generic folding rules (identities, constants, casts, bools).
pub fn symbolic_simple() -> &'static PatternMatcher {
    static PM: LazyLock<PatternMatcher> = LazyLock::new(|| PatternMatcher::new(folding::rules()));
    &PM
}

/// Phase 2: phase 1 plus canonical order, like terms, comparisons, division/modulo, vector
/// lanes, and indexing by comparison folded (arange folding, reduce collapse).
pub fn symbolic() -> &'static PatternMatcher {
    static PM: LazyLock<PatternMatcher> = LazyLock::new(|| {
        let mut rules = folding::rules();
        rules.extend(terms::rules());
        rules.extend(compare::rules());
        rules.extend(divmod::rules());
        rules.extend(vectors::rules());
        rules.extend(collapse::rules());
        PatternMatcher::new(rules)
    });
    &PM
}

impl UOp {
    /// This graph rewritten with [`symbolic`] to a fixed point.
    pub fn simplify(&self) -> UOp {
        graph_rewrite(self, symbolic(), &mut ())
    }

    /// `self / d` when `d` provably divides this integer expression: a constant multiple of
    /// `d`, a product with such a factor, or a sum of such terms (tinygrad's `divides`); `None`
    /// when that cannot be shown from the constant factors alone.
    pub fn divides(&self, d: i128) -> Option<UOp> {
        divides(self, d)
    }
}
