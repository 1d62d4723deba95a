//! [`UPat`]: patterns over op, dtype, arg and sources, with named captures.
//!
//! A pattern matches a UOp when its op is in the pattern's op set, its dtype passes the dtype
//! test, its arg equals the pattern's arg, and its sources match the source pattern:
//! exactly in order, in any order (commutative ops), as a prefix with any number of extra
//! sources, or every source against one pattern. A name binds the matched UOp; a name used
//! twice must bind the same UOp both times (`x + x`).

use std::ops;
use std::sync::Arc;

use wgrad_dtype::DType;

use crate::{Arg, GroupOp, OpSet, Ops, UOp};

/// What a pattern requires of a dtype (scalar element type; vector width is not checked
/// unless the pattern names a vector dtype exactly).
#[derive(Clone, Debug)]
pub enum DTypePat {
    /// Any dtype.
    Any,
    /// One of these dtypes, exactly.
    OneOf(Arc<[DType]>),
    /// Any integer dtype (signed or unsigned).
    Int,
    /// Any signed integer dtype.
    SignedInt,
    /// Any float dtype.
    Float,
}

impl DTypePat {
    fn accepts(&self, dt: DType) -> bool {
        match self {
            DTypePat::Any => true,
            DTypePat::OneOf(l) => l.contains(&dt),
            DTypePat::Int => dt.is_int(),
            DTypePat::SignedInt => dt.is_int() && !dt.is_unsigned(),
            DTypePat::Float => dt.is_float(),
        }
    }
}

#[derive(Clone, Debug)]
enum SrcPat {
    Any,
    Exact(Arc<[UPat]>),
    AnyOrder(Arc<[UPat]>),
    Prefix(Arc<[UPat]>),
    Each(Arc<UPat>),
}

/// A pattern over UOps (see the module docs).
#[derive(Clone, Debug)]
pub struct UPat {
    ops: Option<OpSet>,
    dtype: DTypePat,
    arg: Option<Arg>,
    value: Option<f64>,
    src: SrcPat,
    name: Option<&'static str>,
}

/// The UOps bound by the names of a pattern during a match.
#[derive(Default, Debug)]
pub struct Captures {
    bound: Vec<(&'static str, UOp)>,
}

impl Captures {
    /// The UOp bound to `name`.
    pub fn get(&self, name: &str) -> Option<&UOp> {
        self.bound.iter().find(|(n, _)| *n == name).map(|(_, u)| u)
    }

    pub(crate) fn clear(&mut self) {
        self.bound.clear();
    }
}

impl ops::Index<&str> for Captures {
    type Output = UOp;

    /// # Panics
    /// When `name` is unbound (rules check their names when built, so this is a bug).
    fn index(&self, name: &str) -> &UOp {
        self.get(name).unwrap_or_else(|| panic!("pattern name {name:?} is not bound"))
    }
}

/// The continuation of a match: called with the bindings once everything matched; `Some`
/// ends the search, `None` backtracks to the next way of matching.
pub(crate) type Cont<'a> = dyn FnMut(&mut Captures) -> Option<UOp> + 'a;

const IDENTITY: [usize; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

impl UPat {
    /// Matches anything.
    pub fn any() -> UPat {
        UPat { ops: None, dtype: DTypePat::Any, arg: None, value: None, src: SrcPat::Any, name: None }
    }

    /// Matches anything, bound to `name`.
    pub fn var(name: &'static str) -> UPat {
        UPat::any().named(name)
    }

    /// Matches UOps of op `op` (any sources).
    pub fn op(op: Ops) -> UPat {
        UPat::ops(op.into())
    }

    /// Matches UOps whose op is in `ops` (any sources).
    pub fn ops(ops: OpSet) -> UPat {
        UPat { ops: Some(ops), ..UPat::any() }
    }

    /// Any constant, bound to `name`.
    pub fn cvar(name: &'static str) -> UPat {
        UPat::op(Ops::Const).named(name)
    }

    /// The constant equal to `v` (in any dtype: `1` matches `1`, `1.0` and `true`).
    pub fn konst(v: f64) -> UPat {
        UPat { value: Some(v), ..UPat::op(Ops::Const) }
    }

    /// The ALU op `op` over `src`, in any order when `op` is commutative.
    pub fn alu(op: Ops, src: impl Into<Vec<UPat>>) -> UPat {
        let src = src.into();
        if GroupOp::COMMUTATIVE.contains(op) {
            UPat::op(op).src_any_order(src)
        } else {
            UPat::op(op).src(src)
        }
    }

    /// This pattern, binding `name`.
    pub fn named(mut self, name: &'static str) -> UPat {
        self.name = Some(name);
        self
    }

    /// This pattern, requiring dtype `dt` exactly.
    pub fn dtype(self, dt: DType) -> UPat {
        self.dtypes(&[dt])
    }

    /// This pattern, requiring one of these dtypes exactly.
    pub fn dtypes(mut self, dts: &[DType]) -> UPat {
        self.dtype = DTypePat::OneOf(dts.into());
        self
    }

    /// This pattern, requiring a dtype class.
    pub fn dtype_class(mut self, class: DTypePat) -> UPat {
        self.dtype = class;
        self
    }

    /// This pattern, requiring the argument `arg`.
    pub fn arg(mut self, arg: Arg) -> UPat {
        self.arg = Some(arg);
        self
    }

    /// This pattern, requiring exactly these sources in this order.
    pub fn src(mut self, src: impl Into<Vec<UPat>>) -> UPat {
        self.src = SrcPat::Exact(src.into().into());
        self
    }

    /// This pattern, requiring these sources in any order.
    pub fn src_any_order(mut self, src: impl Into<Vec<UPat>>) -> UPat {
        self.src = SrcPat::AnyOrder(src.into().into());
        self
    }

    /// This pattern, requiring these first sources and allowing any more after them.
    pub fn src_prefix(mut self, src: impl Into<Vec<UPat>>) -> UPat {
        self.src = SrcPat::Prefix(src.into().into());
        self
    }

    /// This pattern, requiring every source (any number) to match `each`.
    pub fn src_each(mut self, each: UPat) -> UPat {
        self.src = SrcPat::Each(Arc::new(each));
        self
    }

    /// `self ? t : f`.
    pub fn where_(self, t: UPat, f: UPat) -> UPat {
        UPat::alu(Ops::Where, [self, t, f])
    }

    /// `self < rhs`.
    pub fn lt(self, rhs: impl Into<UPat>) -> UPat {
        UPat::alu(Ops::CmpLt, [self, rhs.into()])
    }

    /// `self != rhs`.
    pub fn ne(self, rhs: impl Into<UPat>) -> UPat {
        UPat::alu(Ops::CmpNe, [self, rhs.into()])
    }

    /// `self // rhs` (truncating).
    pub fn idiv(self, rhs: impl Into<UPat>) -> UPat {
        UPat::alu(Ops::Idiv, [self, rhs.into()])
    }

    /// `max(self, rhs)`.
    pub fn maximum(self, rhs: impl Into<UPat>) -> UPat {
        UPat::alu(Ops::Max, [self, rhs.into()])
    }

    /// A `Cast` of this pattern.
    pub fn cast(self) -> UPat {
        UPat::op(Ops::Cast).src([self])
    }

    /// The ops this pattern can match at its root (`None`: any).
    pub fn root_ops(&self) -> Option<OpSet> {
        self.ops
    }

    /// Op sets that some direct source must belong to for this pattern to match: a cheap
    /// test run before the full match.
    pub(crate) fn required_source_ops(&self) -> Vec<OpSet> {
        match &self.src {
            SrcPat::Exact(l) | SrcPat::AnyOrder(l) | SrcPat::Prefix(l) => {
                l.iter().filter_map(|p| p.ops).collect()
            }
            SrcPat::Any | SrcPat::Each(_) => Vec::new(),
        }
    }

    /// Every name bound anywhere in the pattern.
    pub fn names(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        self.collect_names(&mut out);
        out
    }

    fn collect_names(&self, out: &mut Vec<&'static str>) {
        if let Some(n) = self.name.filter(|n| !out.contains(n)) {
            out.push(n);
        }
        match &self.src {
            SrcPat::Any => {}
            SrcPat::Each(p) => p.collect_names(out),
            SrcPat::Exact(l) | SrcPat::AnyOrder(l) | SrcPat::Prefix(l) => {
                l.iter().for_each(|p| p.collect_names(out))
            }
        }
    }

    fn accepts_node(&self, u: &UOp) -> bool {
        self.ops.is_none_or(|o| o.contains(u.op()))
            && self.dtype.accepts(u.dtype())
            && self.arg.as_ref().is_none_or(|a| a == u.arg())
            && self.value.is_none_or(|v| u.const_value().is_some_and(|c| c.to_f64() == v))
    }

    /// Matches `u` and calls `k` with the bindings for every way it matches, until `k`
    /// returns `Some`.
    pub(crate) fn match_with(&self, u: &UOp, caps: &mut Captures, k: &mut Cont) -> Option<UOp> {
        if !self.accepts_node(u) {
            return None;
        }
        let mark = caps.bound.len();
        if let Some(name) = self.name {
            match caps.get(name) {
                Some(prev) if prev != u => return None,
                Some(_) => {}
                None => caps.bound.push((name, u.clone())),
            }
        }
        let src = u.src();
        let ret = match &self.src {
            SrcPat::Any => k(caps),
            SrcPat::Exact(p) if p.len() == src.len() => match_in_order(p, src, caps, k),
            SrcPat::Prefix(p) if p.len() <= src.len() => match_in_order(p, src, caps, k),
            SrcPat::Each(p) => match_each(p, src, caps, k),
            SrcPat::AnyOrder(p) if p.len() == src.len() => match_any_order(p, src, caps, k),
            _ => None,
        };
        if ret.is_none() {
            caps.bound.truncate(mark);
        }
        ret
    }

    /// Whether `u` matches, and the bindings of the first match.
    pub fn matches(&self, u: &UOp) -> Option<Captures> {
        let mut caps = Captures::default();
        let mut found = false;
        self.match_with(u, &mut caps, &mut |_| {
            found = true;
            Some(u.clone())
        });
        found.then_some(caps)
    }
}

fn match_in_order(pats: &[UPat], src: &[UOp], caps: &mut Captures, k: &mut Cont) -> Option<UOp> {
    if pats.len() <= IDENTITY.len() {
        return match_seq(pats, src, &IDENTITY, caps, k);
    }
    let order: Vec<usize> = (0..pats.len()).collect();
    match_seq(pats, src, &order, caps, k)
}

fn match_seq(pats: &[UPat], src: &[UOp], order: &[usize], caps: &mut Captures, k: &mut Cont) -> Option<UOp> {
    match pats.split_first() {
        None => k(caps),
        Some((p, rest)) => {
            p.match_with(&src[order[0]], caps, &mut |c| match_seq(rest, src, &order[1..], c, k))
        }
    }
}

fn match_each(p: &UPat, src: &[UOp], caps: &mut Captures, k: &mut Cont) -> Option<UOp> {
    match src.split_first() {
        None => k(caps),
        Some((s, rest)) => p.match_with(s, caps, &mut |c| match_each(p, rest, c, k)),
    }
}

fn match_any_order(pats: &[UPat], src: &[UOp], caps: &mut Captures, k: &mut Cont) -> Option<UOp> {
    if src.len() == 2 {
        let direct = match_seq(pats, src, &[0, 1], caps, k);
        if direct.is_some() || src[0] == src[1] {
            return direct;
        }
        return match_seq(pats, src, &[1, 0], caps, k);
    }
    permutations(src.len()).iter().find_map(|order| match_seq(pats, src, order, caps, k))
}

/// Every ordering of `0..n` (sources of commutative ops are few).
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..n {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

impl From<i64> for UPat {
    /// The constant `v`.
    fn from(v: i64) -> UPat {
        UPat::konst(v as f64)
    }
}

impl From<i32> for UPat {
    /// The constant `v`.
    fn from(v: i32) -> UPat {
        UPat::konst(f64::from(v))
    }
}

macro_rules! upat_operator {
    ($trait:ident, $method:ident, $op:expr) => {
        impl<R: Into<UPat>> ops::$trait<R> for UPat {
            type Output = UPat;
            fn $method(self, rhs: R) -> UPat {
                UPat::alu($op, [self, rhs.into()])
            }
        }
    };
}

upat_operator!(Add, add, Ops::Add);
upat_operator!(Mul, mul, Ops::Mul);
upat_operator!(Rem, rem, Ops::Mod);
upat_operator!(BitAnd, bitand, Ops::And);
upat_operator!(BitOr, bitor, Ops::Or);
upat_operator!(BitXor, bitxor, Ops::Xor);
