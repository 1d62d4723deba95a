//! Arithmetic on `Sint`: the `IndexAlgebra` impl, `std::ops` operators (`/` and `%` with
//! floor semantics) and `Sum`/`Product`. Every result is brought to canonical form.

use std::iter::{Product, Sum};
use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

use super::{Atom, Repr, Sint, Terms};
use crate::{IndexAlgebra, Variable};

pub(super) fn add(a: &Sint, b: &Sint) -> Sint {
    if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
        return Sint::int(x + y);
    }
    let mut terms = a.terms();
    for (m, c) in b.terms() {
        *terms.entry(m).or_default() += c;
    }
    Sint::from_terms(terms)
}

pub(super) fn mul(a: &Sint, b: &Sint) -> Sint {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => return Sint::int(x * y),
        (Some(1), _) => return b.clone(),
        (_, Some(1)) => return a.clone(),
        _ => {}
    }
    let mut terms = Terms::new();
    for (m1, c1) in a.terms() {
        for (m2, c2) in b.terms() {
            let mut m: Vec<Atom> = m1.iter().chain(&m2).cloned().collect();
            m.sort();
            *terms.entry(m).or_default() += c1 * c2;
        }
    }
    Sint::from_terms(terms)
}

impl IndexAlgebra for Sint {
    fn int(v: i64) -> Self {
        Sint(Repr::Int(v))
    }
    fn bool(v: bool) -> Self {
        Sint(Repr::Int(i64::from(v)))
    }
    fn var(v: &Variable) -> Self {
        Sint::var(v)
    }
    fn add(&self, rhs: &Self) -> Self {
        add(self, rhs)
    }
    fn mul(&self, rhs: &Self) -> Self {
        mul(self, rhs)
    }
    fn floordiv(&self, rhs: &Self) -> Self {
        self.floor_div(rhs)
    }
    fn rem(&self, rhs: &Self) -> Self {
        self.floor_mod(rhs)
    }
    fn lt(&self, rhs: &Self) -> Self {
        Sint::lt(self, rhs)
    }
    fn and(&self, rhs: &Self) -> Self {
        mul(self, rhs)
    }
}

impl From<i64> for Sint {
    fn from(v: i64) -> Self {
        Sint::int(v)
    }
}

impl From<&Variable> for Sint {
    fn from(v: &Variable) -> Self {
        Sint::var(v)
    }
}

impl PartialEq<i64> for Sint {
    fn eq(&self, other: &i64) -> bool {
        self.as_int() == Some(*other)
    }
}

macro_rules! binop {
    ($trait:ident, $method:ident, $f:expr) => {
        impl $trait<&Sint> for &Sint {
            type Output = Sint;
            fn $method(self, rhs: &Sint) -> Sint {
                $f(self, rhs)
            }
        }
        impl $trait<Sint> for Sint {
            type Output = Sint;
            fn $method(self, rhs: Sint) -> Sint {
                $f(&self, &rhs)
            }
        }
        impl $trait<&Sint> for Sint {
            type Output = Sint;
            fn $method(self, rhs: &Sint) -> Sint {
                $f(&self, rhs)
            }
        }
        impl $trait<i64> for &Sint {
            type Output = Sint;
            fn $method(self, rhs: i64) -> Sint {
                $f(self, &Sint::int(rhs))
            }
        }
        impl $trait<i64> for Sint {
            type Output = Sint;
            fn $method(self, rhs: i64) -> Sint {
                $f(&self, &Sint::int(rhs))
            }
        }
    };
}

binop!(Add, add, add);
binop!(Sub, sub, |a: &Sint, b: &Sint| add(a, &-b));
binop!(Mul, mul, mul);
binop!(Div, div, |a: &Sint, b: &Sint| a.floor_div(b)); // floor division; panics on zero
binop!(Rem, rem, |a: &Sint, b: &Sint| a.floor_mod(b)); // floor modulo; panics on zero

impl Neg for &Sint {
    type Output = Sint;
    fn neg(self) -> Sint {
        mul(self, &Sint::int(-1))
    }
}

impl Neg for Sint {
    type Output = Sint;
    fn neg(self) -> Sint {
        -&self
    }
}

impl Sum for Sint {
    fn sum<I: Iterator<Item = Sint>>(iter: I) -> Sint {
        iter.fold(Sint::int(0), |a, b| a + b)
    }
}

impl Product for Sint {
    fn product<I: Iterator<Item = Sint>>(iter: I) -> Sint {
        iter.fold(Sint::int(1), |a, b| a * b)
    }
}

impl<'a> Product<&'a Sint> for Sint {
    fn product<I: Iterator<Item = &'a Sint>>(iter: I) -> Sint {
        iter.fold(Sint::int(1), |a, b| a * b)
    }
}
