//! The typed argument of a UOp ([`Arg`]): what tinygrad keeps in its untyped `arg`.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use wgrad_dtype::ConstValue;
use wgrad_shape::{ShapeTracker, Sint, Variable};

use crate::Ops;

/// The argument of a UOp; which variant an op takes is documented on its [`Ops`] variant.
///
/// Equality and hashing are structural; float constants compare by bit pattern, so `0.0` and
/// `-0.0` differ and a NaN equals itself (what hash-consing needs).
#[derive(Clone, Debug)]
pub enum Arg {
    /// No argument.
    None,
    /// The value of a `Const`.
    Const(ConstValue),
    /// An integer: a `DefineGlobal` slot, a `Range` axis, a `DefineAcc` id.
    Int(i64),
    /// A list of integers: a shape, a permutation, axes, `Gep` lanes.
    Ints(Arc<[i64]>),
    /// A list of pairs: pads, shrinks, `Unroll`/`Contract` (axis, size) lists.
    Pairs(Arc<[(i64, i64)]>),
    /// A name: a device, a local buffer, a tensor-core kind.
    Str(Arc<str>),
    /// An op: the reduction of a `Reduce`.
    Op(Ops),
    /// The (op, axes) of a `ReduceAxis`.
    ReduceAxis(Ops, Arc<[usize]>),
    /// The (name, size) of a `Special`: a hardware index in `[0, size)`.
    Special(Arc<str>, i64),
    /// The variable of a `DefineVar`.
    Var(Variable),
    /// A buffer's number and element count.
    Buffer {
        /// Unique buffer number.
        num: u64,
        /// Number of elements.
        size: usize,
    },
    /// How a `View` sees its buffer or value: a stack of views in a ShapeTracker.
    View(Arc<ShapeTracker>),
    /// The role and memory layout of a cooperative-matrix load or store.
    Coop(Coop),
}

/// Which operand of `D = A * B + C` a cooperative matrix is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoopRole {
    /// The left factor (`m x k`).
    A,
    /// The right factor (`k x n`).
    B,
    /// The accumulator and result (`m x n`).
    C,
}

/// A cooperative-matrix access: its role and whether rows (`row_major`) or columns are
/// contiguous in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Coop {
    /// The operand it is.
    pub role: CoopRole,
    /// Rows are contiguous: element `(r, c)` at `r * stride + c`; else at `c * stride + r`.
    pub row_major: bool,
}

impl Arg {
    /// The constant, if this is `Arg::Const`.
    pub fn as_const(&self) -> Option<ConstValue> {
        match self {
            Arg::Const(c) => Some(*c),
            _ => None,
        }
    }

    /// The integer, if this is `Arg::Int`.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Arg::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// A contiguous view of `shape`.
    pub fn contiguous_view(shape: &[i64]) -> Arg {
        let shape: Vec<Sint> = shape.iter().map(|&d| Sint::from(d)).collect();
        // A negative dim is a caller bug; every non-negative shape has a contiguous tracker.
        Arg::View(Arc::new(ShapeTracker::from_shape(&shape).expect("non-negative shape")))
    }

    /// The ShapeTracker, if this is `Arg::View`.
    pub fn as_view(&self) -> Option<&ShapeTracker> {
        match self {
            Arg::View(st) => Some(st),
            _ => None,
        }
    }

    /// A total order key of the variant, then a comparable payload (floats by `total_cmp`).
    pub(crate) fn canonical_cmp(&self, other: &Arg) -> Ordering {
        match (self, other) {
            (Arg::Const(a), Arg::Const(b)) => a.to_f64().total_cmp(&b.to_f64()),
            (Arg::Int(a), Arg::Int(b)) => a.cmp(b),
            (Arg::Var(a), Arg::Var(b)) => a.cmp(b),
            (Arg::Special(a, x), Arg::Special(b, y)) => (a, x).cmp(&(b, y)),
            (Arg::Str(a), Arg::Str(b)) => a.cmp(b),
            _ => self.variant().cmp(&other.variant()),
        }
    }

    fn variant(&self) -> u8 {
        match self {
            Arg::None => 0,
            Arg::Const(_) => 1,
            Arg::Int(_) => 2,
            Arg::Ints(_) => 3,
            Arg::Pairs(_) => 4,
            Arg::Str(_) => 5,
            Arg::Op(_) => 6,
            Arg::ReduceAxis(..) => 7,
            Arg::Special(..) => 8,
            Arg::Var(_) => 9,
            Arg::Buffer { .. } => 10,
            Arg::View(_) => 11,
            Arg::Coop(_) => 12,
        }
    }
}

/// A constant as (kind, bits): the identity used for equality and hashing.
fn const_key(c: ConstValue) -> (u8, u64) {
    match c {
        ConstValue::Bool(b) => (0, u64::from(b)),
        ConstValue::Int(i) => (1, i as u64),
        ConstValue::UInt(u) => (2, u),
        ConstValue::Float(f) => (3, f.to_bits()),
    }
}

impl PartialEq for Arg {
    fn eq(&self, other: &Arg) -> bool {
        match (self, other) {
            (Arg::None, Arg::None) => true,
            (Arg::Const(a), Arg::Const(b)) => const_key(*a) == const_key(*b),
            (Arg::Int(a), Arg::Int(b)) => a == b,
            (Arg::Ints(a), Arg::Ints(b)) => a == b,
            (Arg::Pairs(a), Arg::Pairs(b)) => a == b,
            (Arg::Str(a), Arg::Str(b)) => a == b,
            (Arg::Op(a), Arg::Op(b)) => a == b,
            (Arg::ReduceAxis(o, a), Arg::ReduceAxis(p, b)) => o == p && a == b,
            (Arg::Special(n, s), Arg::Special(m, t)) => n == m && s == t,
            (Arg::Var(a), Arg::Var(b)) => a == b,
            (Arg::Buffer { num: a, size: s }, Arg::Buffer { num: b, size: t }) => a == b && s == t,
            (Arg::View(a), Arg::View(b)) => a == b,
            (Arg::Coop(a), Arg::Coop(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Arg {}

impl Hash for Arg {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.variant().hash(h);
        match self {
            Arg::None => {}
            Arg::Const(c) => const_key(*c).hash(h),
            Arg::Int(i) => i.hash(h),
            Arg::Ints(v) => v.hash(h),
            Arg::Pairs(v) => v.hash(h),
            Arg::Str(s) => s.hash(h),
            Arg::Op(o) => o.hash(h),
            Arg::ReduceAxis(o, a) => (o, a).hash(h),
            Arg::Special(n, s) => (n, s).hash(h),
            Arg::Var(v) => v.hash(h),
            Arg::Buffer { num, size } => (num, size).hash(h),
            Arg::View(st) => st.hash(h),
            Arg::Coop(c) => c.hash(h),
        }
    }
}

impl fmt::Display for Arg {
    /// The compact form the printer shows: `None`, `3`, `(0, 1)`, `(Ops.ADD, (1,))`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::None => f.write_str("None"),
            Arg::Const(c) => write!(f, "{c}"),
            Arg::Int(i) => write!(f, "{i}"),
            Arg::Ints(v) => write!(f, "{v:?}"),
            Arg::Pairs(v) => write!(f, "{v:?}"),
            Arg::Str(s) => write!(f, "{s:?}"),
            Arg::Op(o) => write!(f, "{o}"),
            Arg::ReduceAxis(o, a) => write!(f, "({o}, {a:?})"),
            Arg::Special(n, s) => write!(f, "({n:?}, {s})"),
            Arg::Var(v) => write!(f, "({:?}, {}, {})", v.name(), v.min(), v.max()),
            Arg::Buffer { num, size } => write!(f, "(buf {num}, {size})"),
            Arg::View(st) => write!(f, "{st:?}"),
            Arg::Coop(c) => write!(f, "({:?}, {})", c.role, if c.row_major { "row" } else { "col" }),
        }
    }
}
