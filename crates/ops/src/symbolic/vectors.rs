//! Vectors: lanes picked out of vectors that were built lane by lane, and back.

use crate::{Arg, Ops, Rule, UOp, UPat, rule};

/// The one lane a single-lane `Gep` picks.
fn lane(gep: &UOp) -> Option<usize> {
    match gep.arg() {
        Arg::Ints(lanes) if lanes.len() == 1 => usize::try_from(lanes[0]).ok(),
        _ => None,
    }
}

/// `gep(vectorize(s0, s1, ...), i) -> si`.
fn pick_lane(gep: &UOp, vec: &UOp) -> Option<UOp> {
    vec.src().get(lane(gep)?).cloned()
}

/// `vectorize(gep(x, 0), gep(x, 1), ..., gep(x, n-1)) -> x` for an `x` of `n` lanes.
fn whole_vector(vec: &UOp) -> Option<UOp> {
    let x = vec.src().first()?.src().first()?;
    let in_order = vec
        .src()
        .iter()
        .enumerate()
        .all(|(i, g)| g.op() == Ops::Gep && g.src().first() == Some(x) && lane(g) == Some(i));
    (in_order && x.dtype() == vec.dtype()).then(|| x.clone())
}

/// The rules of this topic, in order.
pub(super) fn rules() -> Vec<Rule> {
    vec![
        // gep(vectorize(s0, s1, ...), i) -> si
        rule!(UPat::op(Ops::Gep).named("gep").src([UPat::op(Ops::Vectorize).named("vec")]) => |gep, vec| pick_lane(gep, vec)),
        // vectorize(gep(x, 0), ..., gep(x, n-1)) -> x
        rule!(UPat::op(Ops::Vectorize).named("vec").src_each(UPat::op(Ops::Gep)) => |vec| whole_vector(vec)),
    ]
}
