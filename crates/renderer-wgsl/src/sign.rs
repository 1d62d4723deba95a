//! The sign of a float value, known from how it is computed: a reciprocal whose operand cannot
//! be zero (`1 + exp(-x)` in a sigmoid, `1 + c|x|` in erf) skips its zero check. NaN is always
//! possible and harmless (its reciprocal is NaN on every device); infinities are possible.

use wgrad_ops::{Ops, UOp};

/// How deep into its sources a value's sign is looked for (shared sources are looked at again).
const DEPTH: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sign {
    Positive,
    NonNegative,
    Negative,
    NonPositive,
    Unknown,
}

use Sign::*;

impl Sign {
    fn negated(self) -> Sign {
        match self {
            Positive => Negative,
            NonNegative => NonPositive,
            Negative => Positive,
            NonPositive => NonNegative,
            Unknown => Unknown,
        }
    }

    /// A value that is one of two values of these signs.
    fn either(self, other: Sign) -> Sign {
        match (self, other) {
            (a, b) if a == b => a,
            (Positive | NonNegative, Positive | NonNegative) => NonNegative,
            (Negative | NonPositive, Negative | NonPositive) => NonPositive,
            _ => Unknown,
        }
    }

    /// The sum of values of these signs (a sum of a positive value and a non-negative one is
    /// at least the positive one, rounding included).
    fn sum(self, other: Sign) -> Sign {
        match (self, other) {
            (Positive, Positive | NonNegative) | (NonNegative, Positive) => Positive,
            (Negative, Negative | NonPositive) | (NonPositive, Negative) => Negative,
            (NonNegative, NonNegative) => NonNegative,
            (NonPositive, NonPositive) => NonPositive,
            _ => Unknown,
        }
    }

    /// The product of values of these signs (which may underflow to zero).
    fn product(self, other: Sign) -> Sign {
        let up = |s: Sign| matches!(s, Positive | NonNegative);
        let down = |s: Sign| matches!(s, Negative | NonPositive);
        match (self, other) {
            (a, b) if (up(a) && up(b)) || (down(a) && down(b)) => NonNegative,
            (a, b) if (up(a) && down(b)) || (down(a) && up(b)) => NonPositive,
            _ => Unknown,
        }
    }
}

/// Whether the float value `u` is never ±0 (it may be NaN or infinite).
pub(crate) fn nonzero(u: &UOp) -> bool {
    matches!(sign(u, DEPTH), Positive | Negative)
}

fn sign(u: &UOp, depth: usize) -> Sign {
    if depth == 0 {
        return Unknown;
    }
    let of = |i: usize| sign(&u.src()[i], depth - 1);
    match u.op() {
        Ops::Const => match u.const_value().map(|c| c.to_f64()) {
            Some(c) if c > 0.0 => Positive,
            Some(c) if c < 0.0 => Negative,
            Some(0.0) => NonNegative,
            _ => Unknown,
        },
        Ops::Cast => {
            let from = u.src()[0].dtype();
            if from.is_bool() || from.is_unsigned() {
                NonNegative
            } else if from.is_float() && u.dtype().itemsize() > from.itemsize() {
                of(0)
            } else if from.is_float() {
                // a float no wider may round a tiny value to zero
                of(0).product(Positive)
            } else {
                Unknown
            }
        }
        Ops::Neg => of(0).negated(),
        Ops::Add => of(0).sum(of(1)),
        Ops::Mul if u.src()[0] == u.src()[1] => NonNegative,
        Ops::Mul => of(0).product(of(1)),
        Ops::Exp2 | Ops::Sqrt => NonNegative,
        Ops::Max => match (of(0), of(1)) {
            (Positive, _) | (_, Positive) => Positive,
            (NonNegative, _) | (_, NonNegative) => NonNegative,
            (a, b) => a.either(b),
        },
        Ops::Where if is_absolute_value(u) => NonNegative,
        Ops::Where => of(1).either(of(2)),
        _ => Unknown,
    }
}

/// `select(x, -x, x < 0)` or `select(-x, x, 0 < x)`.
fn is_absolute_value(w: &UOp) -> bool {
    let (cond, t, f) = (&w.src()[0], &w.src()[1], &w.src()[2]);
    let zero = |u: &UOp| u.op() == Ops::Const && u.const_value().is_some_and(|c| c.to_f64() == 0.0);
    let negation_of = |n: &UOp, x: &UOp| negated(n).is_some_and(|m| m == *x);
    if cond.op() != Ops::CmpLt {
        return false;
    }
    let (a, b) = (&cond.src()[0], &cond.src()[1]);
    (zero(b) && negation_of(t, a) && f == a) || (zero(a) && t == b && negation_of(f, b))
}

/// `x` when `n` is `-x`: `Neg(x)`, `x * -1` or `-1 * x`.
pub(crate) fn negated(n: &UOp) -> Option<UOp> {
    let minus_one = |u: &UOp| u.op() == Ops::Const && u.const_value().is_some_and(|c| c.to_f64() == -1.0);
    match (n.op(), n.src()) {
        (Ops::Neg, [x]) => Some(x.clone()),
        (Ops::Mul, [x, c] | [c, x]) if minus_one(c) => Some(x.clone()),
        _ => None,
    }
}
