//! Symbolic integers (`Sint`): the dims, strides, offsets and mask bounds of views.
//!
//! A `Sint` is either a plain integer or a polynomial: a sum of integer multiples of
//! monomials, each monomial a sorted product of atoms (variables, `//`, `%` and `<` of
//! other `Sint`s). Invariants, kept by every constructor:
//! - canonical form: no zero coefficients, monomials sorted, like terms combined, so equal
//!   sums of products compare equal (`a*b == b*a`, `(a*2)//2 == a`, `(a*4)%2 == 0`);
//! - an expression without atoms is always `Int`, so `as_int` sees every constant;
//! - each polynomial caches its bounds (`vmin`/`vmax`), computed from the variables' ranges;
//! - `//` and `%` use floor semantics; comparisons are `0`/`1` integers, `and` is `*`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::{IndexAlgebra, Variable};

mod ops;

/// Concrete values for variables, e.g. the values bound into a shape.
pub type VarVals = BTreeMap<Variable, i64>;

/// A symbolic integer: a constant or a canonical sum of products over variables.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Sint(Repr);

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Repr {
    Int(i64),
    Sym(Arc<Poly>),
}

/// Monomial -> coefficient; the empty monomial holds the constant. Never constant-only.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Poly {
    terms: BTreeMap<Vec<Atom>, i64>,
    min: i64,
    max: i64,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Atom {
    /// A variable, with the value bound to it if any.
    Var(Variable, Option<i64>),
    Div(Sint, Sint),
    Mod(Sint, Sint),
    Lt(Sint, Sint),
}

type Terms = BTreeMap<Vec<Atom>, i64>;

impl Atom {
    fn rank(&self) -> u8 {
        match self {
            Atom::Var(..) => 0,
            Atom::Div(..) => 1,
            Atom::Mod(..) => 2,
            Atom::Lt(..) => 3,
        }
    }

    fn bounds(&self) -> (i64, i64) {
        match self {
            Atom::Var(v, _) => (v.min(), v.max()),
            Atom::Div(a, d) => div_bounds(a.bounds(), d.bounds()).unwrap_or((i64::MIN, i64::MAX)),
            Atom::Mod(a, d) => match d.bounds() {
                (lo, hi) if lo > 0 && a.vmin() >= 0 => (0, a.vmax().min(hi - 1)),
                (lo, hi) if lo > 0 => (0, hi - 1),
                _ => (i64::MIN, i64::MAX),
            },
            Atom::Lt(..) => (0, 1),
        }
    }
}

impl PartialOrd for Atom {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Atom {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (Atom::Var(a, x), Atom::Var(b, y)) => (a, x).cmp(&(b, y)),
            (Atom::Div(a, b), Atom::Div(c, d))
            | (Atom::Mod(a, b), Atom::Mod(c, d))
            | (Atom::Lt(a, b), Atom::Lt(c, d)) => (&a.0, &b.0).cmp(&(&c.0, &d.0)),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// `floor(a / b)` for `b != 0`, saturating.
pub(crate) fn fdiv(a: i64, b: i64) -> i64 {
    let (a, b) = (i128::from(a), i128::from(b));
    let q = if a % b != 0 && (a < 0) != (b < 0) { a / b - 1 } else { a / b };
    q.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Bounds of `a // d` when `d` has a constant sign.
fn div_bounds(a: (i64, i64), d: (i64, i64)) -> Option<(i64, i64)> {
    if d.0 <= 0 && d.1 >= 0 {
        return None;
    }
    let c = [fdiv(a.0, d.0), fdiv(a.0, d.1), fdiv(a.1, d.0), fdiv(a.1, d.1)];
    Some((*c.iter().min()?, *c.iter().max()?))
}

fn mul_bounds(a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
    let c =
        [a.0.saturating_mul(b.0), a.0.saturating_mul(b.1), a.1.saturating_mul(b.0), a.1.saturating_mul(b.1)];
    (c.into_iter().min().unwrap_or(0), c.into_iter().max().unwrap_or(0))
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

impl Sint {
    /// The integer `v`.
    pub const fn int(v: i64) -> Self {
        Sint(Repr::Int(v))
    }

    /// The unbound variable `v`.
    pub fn var(v: &Variable) -> Self {
        Self::atom(Atom::Var(v.clone(), None))
    }

    /// `v` bound to `value`; callers check the range (see [`Variable::bind`]).
    pub(crate) fn bound(v: &Variable, value: i64) -> Self {
        Self::atom(Atom::Var(v.clone(), Some(value)))
    }

    fn atom(a: Atom) -> Self {
        Self::from_terms(BTreeMap::from([(vec![a], 1)]))
    }

    fn from_terms(mut terms: Terms) -> Self {
        terms.retain(|_, c| *c != 0);
        if terms.keys().all(Vec::is_empty) {
            return Sint(Repr::Int(terms.values().sum()));
        }
        let (mut min, mut max) = (0i64, 0i64);
        for (m, c) in &terms {
            let mono = m.iter().fold((1, 1), |acc, a| mul_bounds(acc, a.bounds()));
            let (lo, hi) = mul_bounds(mono, (*c, *c));
            (min, max) = (min.saturating_add(lo), max.saturating_add(hi));
        }
        Sint(Repr::Sym(Arc::new(Poly { terms, min, max })))
    }

    fn terms(&self) -> Terms {
        match &self.0 {
            Repr::Int(0) => Terms::new(),
            Repr::Int(c) => BTreeMap::from([(vec![], *c)]),
            Repr::Sym(p) => p.terms.clone(),
        }
    }

    /// The value when constant.
    pub fn as_int(&self) -> Option<i64> {
        match self.0 {
            Repr::Int(v) => Some(v),
            Repr::Sym(_) => None,
        }
    }

    /// The truth value of a constant comparison result (`0` false, anything else true).
    pub fn as_bool(&self) -> Option<bool> {
        self.as_int().map(|v| v != 0)
    }

    /// Smallest value the expression can take over its variables' ranges.
    pub fn vmin(&self) -> i64 {
        self.bounds().0
    }

    /// Largest value the expression can take over its variables' ranges.
    pub fn vmax(&self) -> i64 {
        self.bounds().1
    }

    fn bounds(&self) -> (i64, i64) {
        match &self.0 {
            Repr::Int(v) => (*v, *v),
            Repr::Sym(p) => (p.min, p.max),
        }
    }

    /// `self < rhs` as `1`/`0`, folded to a constant when the bounds decide it.
    pub fn lt(&self, rhs: &Sint) -> Sint {
        let diff = self - rhs;
        match (diff.bounds(), self.as_int(), rhs.as_int()) {
            ((_, hi), _, _) if hi < 0 => Sint::int(1),
            ((lo, _), _, _) if lo >= 0 => Sint::int(0),
            (_, None, Some(c)) => match self.factor_out(c) {
                Some((k, q, _)) => q.lt(&Sint::int(c / k)), // k*q + r < k*m -> q < m
                None => Self::atom(Atom::Lt(self.clone(), rhs.clone())),
            },
            (_, Some(c), None) => match rhs.factor_out(c + 1) {
                Some((k, q, _)) => Sint::int((c + 1) / k - 1).lt(&q), // k*m-1 < k*q + r -> m-1 < q
                None => Self::atom(Atom::Lt(self.clone(), rhs.clone())),
            },
            _ => Self::atom(Atom::Lt(self.clone(), rhs.clone())),
        }
    }

    /// `(k, q, r)` with `self == k*q + r`, `k > 1` dividing `c` and `0 <= r < k`: the form in
    /// which `// c`, `% c` and `< c` only look at `q`.
    fn factor_out(&self, c: i64) -> Option<(i64, Sint, Sint)> {
        let Repr::Sym(p) = &self.0 else { return None };
        let mut ks: Vec<i64> = p.terms.iter().filter(|(m, _)| !m.is_empty()).map(|(_, k)| k.abs()).collect();
        ks.sort_unstable_by(|a, b| b.cmp(a));
        ks.dedup();
        ks.into_iter().filter(|k| *k > 1 && c % k == 0).find_map(|k| {
            let (q, r) = self.split(&[], k);
            (r.vmin() >= 0 && r.vmax() < k).then_some((k, q, r))
        })
    }

    /// `self <= rhs` as `1`/`0`.
    pub fn le(&self, rhs: &Sint) -> Sint {
        self.lt(&(rhs + 1))
    }

    /// `max(self, rhs)` when the bounds decide which is larger.
    pub fn smax(&self, rhs: &Sint) -> Option<Sint> {
        match (self - rhs).bounds() {
            (lo, _) if lo >= 0 => Some(self.clone()),
            (_, hi) if hi <= 0 => Some(rhs.clone()),
            _ => None,
        }
    }

    /// `min(self, rhs)` when the bounds decide which is smaller.
    pub fn smin(&self, rhs: &Sint) -> Option<Sint> {
        Some(-(-self).smax(&-rhs)?)
    }

    /// The single term `coeff * monomial` when `self` has exactly one (constants included).
    fn single_term(&self) -> Option<(Vec<Atom>, i64)> {
        match &self.0 {
            Repr::Int(0) => None,
            Repr::Int(c) => Some((vec![], *c)),
            Repr::Sym(p) if p.terms.len() == 1 => p.terms.iter().next().map(|(m, c)| (m.clone(), *c)),
            Repr::Sym(_) => None,
        }
    }

    /// `(q, r)` with `self == q*d + r`, `q` taking every term that `d = dc*dm` divides (`dc > 0`).
    fn split(&self, dm: &[Atom], dc: i64) -> (Sint, Sint) {
        let (mut q, mut r) = (Terms::new(), Terms::new());
        for (m, c) in self.terms() {
            match remove_factors(&m, dm) {
                Some(rest) => {
                    *q.entry(rest).or_default() += c.div_euclid(dc);
                    *r.entry(m).or_default() += c.rem_euclid(dc);
                }
                None => *r.entry(m).or_default() += c,
            }
        }
        (Self::from_terms(q), Self::from_terms(r))
    }

    /// Greatest common divisor of all coefficients (constant included).
    fn content(&self) -> i64 {
        self.terms().values().fold(0, |g, c| gcd(g, *c))
    }

    /// Every coefficient divided exactly by `g`.
    fn div_exact(&self, g: i64) -> Sint {
        Self::from_terms(self.terms().into_iter().map(|(m, c)| (m, c / g)).collect())
    }

    fn floor_div(&self, d: &Sint) -> Sint {
        if let (Some(a), Some(b)) = (self.as_int(), d.as_int()) {
            assert!(b != 0, "symbolic division by zero: {self} // {d}");
            return Sint::int(fdiv(a, b));
        }
        match d.single_term() {
            Some((_, c)) if c < 0 => (-self).floor_div(&-d),
            Some((dm, dc)) => {
                let (q, r) = self.split(&dm, dc);
                q + r.div_rest(d)
            }
            None => self.div_rest(d),
        }
    }

    /// `self // d` once the terms that `d` divides are gone.
    fn div_rest(&self, d: &Sint) -> Sint {
        if let Some((lo, hi)) = div_bounds(self.bounds(), d.bounds())
            && lo == hi
        {
            return Sint::int(lo);
        }
        if let Some(c) = d.as_int() {
            let g = gcd(self.content(), c);
            if g > 1 {
                return self.div_exact(g).div_rest(&Sint::int(c / g));
            }
            if let Some((m, 1)) = self.single_term()
                && let [Atom::Div(x, inner)] = m.as_slice()
                && let Some(c2) = inner.as_int()
            {
                return x.floor_div(&Sint::int(c * c2)); // (x//c2)//c -> x//(c*c2)
            }
            if let Some((k, q, _)) = self.factor_out(c) {
                return q.floor_div(&Sint::int(c / k)); // (k*q + r)//(k*m) -> q//m
            }
        }
        Self::atom(Atom::Div(self.clone(), d.clone()))
    }

    fn floor_mod(&self, d: &Sint) -> Sint {
        if let (Some(a), Some(b)) = (self.as_int(), d.as_int()) {
            assert!(b != 0, "symbolic modulo by zero: {self} % {d}");
            return Sint::int(a - b * fdiv(a, b));
        }
        match d.single_term() {
            Some((_, c)) if c < 0 => -(-self).floor_mod(&-d),
            Some((dm, dc)) => self.split(&dm, dc).1.mod_rest(d),
            None => self.mod_rest(d),
        }
    }

    /// `self % d` once the terms that `d` divides are gone.
    fn mod_rest(&self, d: &Sint) -> Sint {
        if let Some((k, hi)) = div_bounds(self.bounds(), d.bounds())
            && k == hi
        {
            return self - &(d * k);
        }
        if let Some(c) = d.as_int() {
            let g = gcd(self.content(), c);
            if g > 1 {
                return self.div_exact(g).mod_rest(&Sint::int(c / g)) * g;
            }
            if let Some((m, 1)) = self.single_term()
                && let [Atom::Mod(x, inner)] = m.as_slice()
                && inner.as_int().is_some_and(|c2| c2 % c == 0)
            {
                return x.floor_mod(d); // (x%(k*c))%c -> x%c
            }
            if let Some((k, q, r)) = self.factor_out(c) {
                return q.floor_mod(&Sint::int(c / k)) * k + r; // (k*q + r)%(k*m) -> k*(q%m) + r
            }
        }
        Self::atom(Atom::Mod(self.clone(), d.clone()))
    }

    /// Rebuilds the expression in any algebra, `leaf` giving each variable (and its bound value).
    fn fold<A: IndexAlgebra>(&self, leaf: &impl Fn(&Variable, Option<i64>) -> A) -> A {
        let p = match &self.0 {
            Repr::Int(v) => return A::int(*v),
            Repr::Sym(p) => p,
        };
        let mut acc: Option<A> = None;
        for (m, c) in p.terms.iter().filter(|(m, _)| !m.is_empty()) {
            let atoms = m.iter().map(|a| a.fold(leaf));
            let all_lt = m.iter().all(|a| matches!(a, Atom::Lt(..)));
            let mono = atoms.reduce(|x, y| if all_lt { x.and(&y) } else { x.mul(&y) });
            let Some(mono) = mono else { continue };
            let term = if *c == 1 { mono } else { mono.mul(&A::int(*c)) };
            acc = Some(match acc {
                None => term,
                Some(a) => a.add(&term),
            });
        }
        let constant = p.terms.get(&Vec::new()).copied().unwrap_or(0);
        match acc {
            Some(a) if constant != 0 => a.add(&A::int(constant)),
            Some(a) => a,
            None => A::int(constant),
        }
    }

    /// The expression in another index algebra, e.g. as a `UOp`.
    pub fn to_algebra<A: IndexAlgebra>(&self) -> A {
        self.fold(&|v, _| A::var(v))
    }

    fn visit_vars(&self, f: &mut impl FnMut(&Variable, Option<i64>)) {
        let Repr::Sym(p) = &self.0 else { return };
        for a in p.terms.keys().flatten() {
            match a {
                Atom::Var(v, b) => f(v, *b),
                Atom::Div(x, y) | Atom::Mod(x, y) | Atom::Lt(x, y) => {
                    x.visit_vars(f);
                    y.visit_vars(f);
                }
            }
        }
    }

    /// The variables the expression mentions, bound or not.
    pub fn vars(&self) -> BTreeSet<Variable> {
        let mut out = BTreeSet::new();
        self.visit_vars(&mut |v, _| {
            out.insert(v.clone());
        });
        out
    }

    /// The expression with bound variables made plain variables, and the values they had.
    pub fn unbind(&self) -> (Sint, VarVals) {
        let mut vals = VarVals::new();
        self.visit_vars(&mut |v, b| {
            if let Some(b) = b {
                vals.insert(v.clone(), b);
            }
        });
        (self.fold(&|v, _| Sint::var(v)), vals)
    }

    /// The expression with each variable in `vals` replaced by its value, then simplified.
    pub fn substitute(&self, vals: &VarVals) -> Sint {
        self.fold(&|v, b| match (vals.get(v), b) {
            (Some(x), _) => Sint::int(*x),
            (None, Some(b)) => Sint::bound(v, b),
            (None, None) => Sint::var(v),
        })
    }

    /// The expression with every bound variable replaced by its value.
    pub fn bound_value(&self) -> Sint {
        let (unbound, vals) = self.unbind();
        unbound.substitute(&vals)
    }

    /// For each of `idxs`, its coefficient when the expression is linear in it (`0` when
    /// absent); `None` when it appears inside a `//`, `%`, `<` or a product of two of them.
    pub(crate) fn linear_coeffs(&self, idxs: &[Variable]) -> Vec<Option<Sint>> {
        let mut out: Vec<Option<Sint>> = vec![Some(Sint::int(0)); idxs.len()];
        for (m, c) in self.terms() {
            let hits: Vec<usize> = m.iter().filter_map(|a| linear_var(a, idxs)).collect();
            for (i, slot) in out.iter_mut().enumerate() {
                let nested = m.iter().any(|a| linear_var(a, idxs).is_none() && a.mentions(&idxs[i]));
                let count = hits.iter().filter(|h| **h == i).count();
                if nested || count > 1 || (count == 1 && hits.len() > 1) {
                    *slot = None;
                } else if count == 1 {
                    let rest: Terms = BTreeMap::from([(without_var(&m, &idxs[i]), c)]);
                    *slot = slot.take().map(|s| s + Sint::from_terms(rest));
                }
            }
        }
        out
    }

    /// Whether `v` occurs anywhere in the expression.
    pub(crate) fn mentions(&self, v: &Variable) -> bool {
        let mut found = false;
        self.visit_vars(&mut |x, _| found |= x == v);
        found
    }
}

impl Atom {
    fn fold<A: IndexAlgebra>(&self, leaf: &impl Fn(&Variable, Option<i64>) -> A) -> A {
        match self {
            Atom::Var(v, b) => leaf(v, *b),
            Atom::Div(a, d) => a.fold(leaf).floordiv(&d.fold(leaf)),
            Atom::Mod(a, d) => a.fold(leaf).rem(&d.fold(leaf)),
            Atom::Lt(a, b) => a.fold(leaf).lt(&b.fold(leaf)),
        }
    }

    fn mentions(&self, v: &Variable) -> bool {
        match self {
            Atom::Var(x, _) => x == v,
            Atom::Div(a, b) | Atom::Mod(a, b) | Atom::Lt(a, b) => a.mentions(v) || b.mentions(v),
        }
    }
}

/// Which of `idxs` the atom is, if it is a plain (unbound) one of them.
fn linear_var(a: &Atom, idxs: &[Variable]) -> Option<usize> {
    match a {
        Atom::Var(v, None) => idxs.iter().position(|x| x == v),
        _ => None,
    }
}

fn without_var(m: &[Atom], v: &Variable) -> Vec<Atom> {
    remove_factors(m, &[Atom::Var(v.clone(), None)]).unwrap_or_else(|| m.to_vec())
}

/// `m` with one copy of each atom of `factors` removed, if `m` contains them all.
fn remove_factors(m: &[Atom], factors: &[Atom]) -> Option<Vec<Atom>> {
    let mut rest = m.to_vec();
    for f in factors {
        let i = rest.iter().position(|a| a == f)?;
        rest.remove(i);
    }
    Some(rest)
}

/// Prints like tinygrad: `a`, `(a*2)`, `((a*b)+1)`, `((x+1)//2)`, `(a-b)`, `(x<3)`.
impl fmt::Display for Sint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = match &self.0 {
            Repr::Int(v) => return write!(f, "{v}"),
            Repr::Sym(p) => p,
        };
        let mut acc: Option<String> = None;
        for (m, c) in p.terms.iter().filter(|(m, _)| !m.is_empty()) {
            let mono =
                m.iter().map(ToString::to_string).reduce(|a, b| format!("({a}*{b})")).unwrap_or_default();
            let scaled = |c: i64| if c == 1 { mono.clone() } else { format!("({mono}*{c})") };
            acc = Some(match acc {
                None => scaled(*c),
                Some(a) if *c > 0 => format!("({a}+{})", scaled(*c)),
                Some(a) => format!("({a}-{})", scaled(-c)),
            });
        }
        let acc = acc.unwrap_or_default();
        match p.terms.get(&Vec::new()).copied().unwrap_or(0) {
            0 => f.write_str(&acc),
            k if k > 0 => write!(f, "({acc}+{k})"),
            k => write!(f, "({acc}-{})", -k),
        }
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::Var(v, _) => write!(f, "{v}"),
            Atom::Div(a, d) => write!(f, "({a}//{d})"),
            Atom::Mod(a, d) => write!(f, "({a}%{d})"),
            Atom::Lt(a, b) => write!(f, "({a}<{b})"),
        }
    }
}

impl fmt::Debug for Sint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
