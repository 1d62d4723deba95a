//! The index algebra: the small set of operations that index and validity expressions are
//! built from. `wgrad-shape` implements it for its own symbolic dims; `wgrad-ops` implements it
//! for `UOp`, so views produce lowered index code directly and one simplifier serves both.

use crate::Variable;

/// Integer and boolean arithmetic that views emit their index and validity expressions in.
///
/// Index expressions only ever divide non-negative values by positive divisors, so
/// `floordiv` and `rem` may be implemented with either floor or truncating semantics.
pub trait IndexAlgebra: Clone + Sized {
    /// The integer constant `v`.
    fn int(v: i64) -> Self;
    /// The boolean constant `v`.
    fn bool(v: bool) -> Self;
    /// The symbolic variable `v` (unbound: its value is only known at run time).
    fn var(v: &Variable) -> Self;
    /// `self + rhs`.
    fn add(&self, rhs: &Self) -> Self;
    /// `self * rhs`.
    fn mul(&self, rhs: &Self) -> Self;
    /// `self // rhs` for `self >= 0`, `rhs > 0`.
    fn floordiv(&self, rhs: &Self) -> Self;
    /// `self % rhs` for `self >= 0`, `rhs > 0`.
    fn rem(&self, rhs: &Self) -> Self;
    /// `self < rhs`, a boolean.
    fn lt(&self, rhs: &Self) -> Self;
    /// `self && rhs` for booleans.
    fn and(&self, rhs: &Self) -> Self;
}
