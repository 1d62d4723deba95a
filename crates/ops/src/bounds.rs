//! vmin/vmax: the range of values every UOp can take, computed once when the node is built.
//!
//! Integer bounds are exact-width `i128` intervals; any result that could leave the dtype's
//! range (and so wrap) widens to the full dtype range. Leaves: `Const` is its value, `Range`
//! is `[0, end.vmax - 1]`, `Special` is `[0, size - 1]`, `DefineVar` its variable's bounds.
//! Floats are only bounded for constants; bools are `[false, true]` unless decided.

use wgrad_dtype::{ConstValue, DType};

use crate::{Arg, Ops, UOp};

/// The interval of values of a node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Bounds {
    /// An integer (or bool as 0/1) interval.
    Int(i128, i128),
    /// A float interval.
    Float(f64, f64),
    /// No values (void, pointers).
    None,
}

/// The full range of `dtype`.
fn full(dtype: DType) -> Bounds {
    if dtype.is_ptr() || dtype.scalar_dtype() == DType::VOID {
        Bounds::None
    } else if dtype.is_float() {
        Bounds::Float(f64::NEG_INFINITY, f64::INFINITY)
    } else {
        Bounds::Int(dtype.min_value().to_i128(), dtype.max_value().to_i128())
    }
}

impl Bounds {
    /// The bounds of a node with these fields, from its sources' bounds.
    pub(crate) fn compute(op: Ops, dtype: DType, src: &[UOp], arg: &Arg) -> Bounds {
        let whole = full(dtype);
        let Bounds::Int(lo, hi) = whole else {
            return match (op, arg) {
                (Ops::Const, Arg::Const(c)) if dtype.is_float() => Bounds::Float(c.to_f64(), c.to_f64()),
                _ => whole,
            };
        };
        match int_bounds(op, src, arg) {
            Some((a, b)) if lo <= a && a <= b && b <= hi => Bounds::Int(a, b),
            _ => whole,
        }
    }

    /// The interval as integers, if it is an integer interval.
    pub(crate) fn int(self) -> Option<(i128, i128)> {
        match self {
            Bounds::Int(a, b) => Some((a, b)),
            _ => None,
        }
    }
}

fn ib(u: &UOp) -> Option<(i128, i128)> {
    u.0.bounds.int()
}

fn corners(a: (i128, i128), b: (i128, i128), f: impl Fn(i128, i128) -> Option<i128>) -> Option<(i128, i128)> {
    let vals = [f(a.0, b.0)?, f(a.0, b.1)?, f(a.1, b.0)?, f(a.1, b.1)?];
    Some((*vals.iter().min()?, *vals.iter().max()?))
}

/// Integer (or bool) bounds of an op, before clamping to the dtype; `None` for "anything".
fn int_bounds(op: Ops, src: &[UOp], arg: &Arg) -> Option<(i128, i128)> {
    let s = |i: usize| src.get(i).and_then(ib);
    match op {
        Ops::Const => arg.as_const().map(|c| (c.to_i128(), c.to_i128())),
        Ops::DefineVar => match arg {
            Arg::Var(v) => Some((i128::from(v.min()), i128::from(v.max()))),
            _ => None,
        },
        Ops::Bind => s(0),
        Ops::Range => s(0).map(|(_, end)| (0, (end - 1).max(0))),
        Ops::Special => match arg {
            Arg::Special(_, size) => Some((0, i128::from(*size - 1).max(0))),
            _ => None,
        },
        Ops::Add => corners(s(0)?, s(1)?, |a, b| a.checked_add(b)),
        Ops::Sub => corners(s(0)?, s(1)?, |a, b| a.checked_sub(b)),
        Ops::Mul => corners(s(0)?, s(1)?, |a, b| a.checked_mul(b)),
        Ops::Neg => s(0).map(|(a, b)| (-b, -a)),
        Ops::Max => {
            let ((a0, a1), (b0, b1)) = (s(0)?, s(1)?);
            Some((a0.max(b0), a1.max(b1)))
        }
        Ops::Idiv => {
            let (y0, y1) = s(1)?;
            // truncating division is monotone on each side when the divisor keeps its sign
            (y0 > 0 || y1 < 0).then(|| corners(s(0)?, (y0, y1), |a, b| Some(a / b)))?
        }
        Ops::Mod => mod_bounds(s(0)?, s(1)?),
        Ops::CmpLt => {
            let ((a0, a1), (b0, b1)) = (s(0)?, s(1)?);
            Some((i128::from(a1 < b0), i128::from(a0 < b1)))
        }
        Ops::CmpNe => {
            let ((a0, a1), (b0, b1)) = (s(0)?, s(1)?);
            let always = a1 < b0 || b1 < a0;
            let never = a0 == a1 && b0 == b1 && a0 == b0;
            Some((i128::from(always), i128::from(!never)))
        }
        Ops::And => {
            let ((a0, a1), (b0, b1)) = (s(0)?, s(1)?);
            (a0 >= 0 && b0 >= 0).then_some((if a0 == a1 && b0 == b1 { a0 & b0 } else { 0 }, a1.min(b1)))
        }
        Ops::Or | Ops::Xor => {
            let ((a0, a1), (b0, b1)) = (s(0)?, s(1)?);
            let top = u128::try_from(a1.max(b1) + 1).ok()?.checked_next_power_of_two()? as i128 - 1;
            let lo = if op == Ops::Or { a0.max(b0) } else { 0 };
            (a0 >= 0 && b0 >= 0).then_some((lo, top))
        }
        Ops::Shr => {
            let ((a0, a1), (b0, b1)) = (s(0)?, s(1)?);
            (a0 >= 0 && b0 == b1 && (0..64).contains(&b0)).then(|| (a0 >> b0, a1 >> b0))
        }
        Ops::Shl => {
            let ((a0, a1), (b0, b1)) = (s(0)?, s(1)?);
            (b0 == b1 && (0..64).contains(&b0))
                .then(|| Some((a0.checked_mul(1 << b0)?, a1.checked_mul(1 << b0)?)))?
        }
        Ops::Where => {
            let (c0, c1) = s(0)?;
            match (c0, c1) {
                (1, 1) => s(1),
                (0, 0) => s(2),
                _ => {
                    let ((a0, a1), (b0, b1)) = (s(1)?, s(2)?);
                    Some((a0.min(b0), a1.max(b1)))
                }
            }
        }
        Ops::Cast => s(0),
        _ => None,
    }
}

/// Bounds of C-style `x % y`: the sign of `x`, magnitude below `|y|`.
fn mod_bounds((x0, x1): (i128, i128), (y0, y1): (i128, i128)) -> Option<(i128, i128)> {
    if y0 <= 0 && y1 >= 0 {
        return None;
    }
    let m = y0.abs().max(y1.abs()) - 1;
    if x0 >= 0 {
        Some((0, x1.min(m)))
    } else if x1 <= 0 {
        Some((x0.max(-m), 0))
    } else {
        Some((-m, m))
    }
}

impl UOp {
    /// The smallest value this UOp can take (in its scalar dtype).
    pub fn vmin(&self) -> ConstValue {
        self.bound(false)
    }

    /// The largest value this UOp can take (in its scalar dtype).
    pub fn vmax(&self) -> ConstValue {
        self.bound(true)
    }

    /// Integer bounds `(vmin, vmax)` for int and bool UOps; `None` for floats, void, pointers.
    pub fn int_bounds(&self) -> Option<(i128, i128)> {
        self.0.bounds.int()
    }

    fn bound(&self, max: bool) -> ConstValue {
        let dt = self.dtype().scalar_dtype();
        match self.0.bounds {
            Bounds::Int(a, b) => {
                let v = if max { b } else { a };
                if dt.is_unsigned() { ConstValue::UInt(v as u64) } else { ConstValue::Int(v as i64) }.cast(dt)
            }
            Bounds::Float(a, b) => ConstValue::Float(if max { b } else { a }),
            Bounds::None => ConstValue::Int(0),
        }
    }
}
