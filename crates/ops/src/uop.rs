//! [`UOp`]: an immutable, hash-consed node of the graph, and its constructors.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Weak};

use wgrad_dtype::{AddrSpace, ConstValue, DType};
use wgrad_shape::{ShapeTracker, Variable};

use crate::intern::{Node, intern};
use crate::{Arg, Ops};

/// A micro-op: `op` applied to the sources `src`, producing a `dtype`, parameterised by `arg`.
///
/// Cloning is a reference-count increment. Structurally equal UOps are the same allocation,
/// so `==` is pointer equality and hashing reads a stored hash: both O(1).
#[derive(Clone)]
pub struct UOp(pub(crate) Arc<Node>);

impl UOp {
    /// The unique UOp with these fields.
    pub fn new(op: Ops, dtype: DType, src: impl Into<Box<[UOp]>>, arg: Arg) -> UOp {
        intern(op, dtype, src.into(), arg)
    }

    /// The op.
    pub fn op(&self) -> Ops {
        self.0.op
    }

    /// The result type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// The sources (operands).
    pub fn src(&self) -> &[UOp] {
        &self.0.src
    }

    /// The argument.
    pub fn arg(&self) -> &Arg {
        &self.0.arg
    }

    /// The structural hash (stable across runs).
    pub fn structural_hash(&self) -> u64 {
        self.0.hash
    }

    /// The value of a `Const`.
    pub fn const_value(&self) -> Option<ConstValue> {
        (self.op() == Ops::Const).then(|| self.arg().as_const()).flatten()
    }

    /// The value of an integer `Const` (any int or bool dtype).
    pub fn const_int(&self) -> Option<i128> {
        self.const_value().filter(|c| !matches!(c, ConstValue::Float(_))).map(ConstValue::to_i128)
    }

    /// This UOp with other sources.
    pub fn with_src(&self, src: impl Into<Box<[UOp]>>) -> UOp {
        UOp::new(self.op(), self.dtype(), src, self.arg().clone())
    }

    /// The constant `v` cast to `dtype` (a vector dtype broadcasts it to every lane).
    pub fn constant(dtype: DType, v: impl Into<ConstValue>) -> UOp {
        UOp::new(Ops::Const, dtype, [], Arg::Const(v.into().cast(dtype.scalar_dtype())))
    }

    /// The constant `v` in this UOp's dtype.
    pub fn const_like(&self, v: impl Into<ConstValue>) -> UOp {
        UOp::constant(self.dtype(), v)
    }

    /// An `int32` index constant.
    pub fn index_const(v: i64) -> UOp {
        UOp::constant(DType::I32, v)
    }

    /// The `int32` symbolic variable `v`.
    pub fn define_var(v: &Variable) -> UOp {
        UOp::new(Ops::DefineVar, DType::I32, [], Arg::Var(v.clone()))
    }

    /// The `int32` variable `name` in `[min, max]`.
    ///
    /// # Panics
    /// When `min > max`.
    pub fn variable(name: &str, min: i64, max: i64) -> UOp {
        let v = Variable::new(name, min, max).unwrap_or_else(|| panic!("variable {name}: {min} > {max}"));
        UOp::define_var(&v)
    }

    /// The loop index of axis `axis`, running over `[0, end)`.
    pub fn range(end: &UOp, axis: i64) -> UOp {
        UOp::new(Ops::Range, end.dtype(), [end.clone()], Arg::Int(axis))
    }

    /// A lowered `Reduce`'s values and ranges: the first source and every non-`Range` source
    /// after it are values (combined in order after the accumulator), the rest its ranges.
    pub fn reduce_parts(&self) -> (&[UOp], &[UOp]) {
        let src = self.src();
        let values = src.iter().skip(1).position(|r| r.op() == Ops::Range).map_or(src.len(), |i| i + 1);
        src.split_at(values)
    }

    /// The hardware index `name` (`gidx0`, `lidx1`) in `[0, size)`.
    pub fn special(name: &str, size: i64) -> UOp {
        UOp::new(Ops::Special, DType::I32, [], Arg::Special(name.into(), size))
    }

    /// The kernel argument `slot`: a global pointer to `dtype`.
    pub fn define_global(dtype: DType, slot: i64) -> UOp {
        UOp::new(Ops::DefineGlobal, dtype.ptr(AddrSpace::Global), [], Arg::Int(slot))
    }

    /// A kernel-AST `View` of `st` (how a load, store or masked constant sees its buffer).
    pub fn view(st: impl Into<Arc<ShapeTracker>>) -> UOp {
        UOp::new(Ops::View, DType::VOID, [], Arg::View(st.into()))
    }

    /// The root of a graph with these outputs.
    pub fn sink(src: impl Into<Box<[UOp]>>) -> UOp {
        UOp::new(Ops::Sink, DType::VOID, src, Arg::None)
    }

    /// Canonical operand order: by op, then argument, dtype and structural hash. Constants
    /// sort last; variables by name.
    pub fn canonical_cmp(&self, other: &UOp) -> Ordering {
        if self == other {
            return Ordering::Equal;
        }
        self.op()
            .cmp(&other.op())
            .then_with(|| self.arg().canonical_cmp(other.arg()))
            .then_with(|| self.dtype().cmp(&other.dtype()))
            .then_with(|| self.structural_hash().cmp(&other.structural_hash()))
    }
}

/// A handle on a UOp that does not keep it alive: the key of tables that must forget a
/// graph once nothing else holds it (tinygrad's weak-keyed dictionaries).
#[derive(Clone)]
pub struct WeakUOp(Weak<Node>);

impl UOp {
    /// A weak handle on this UOp.
    pub fn downgrade(&self) -> WeakUOp {
        WeakUOp(Arc::downgrade(&self.0))
    }
}

impl WeakUOp {
    /// The UOp, if something still holds it.
    pub fn upgrade(&self) -> Option<UOp> {
        self.0.upgrade().map(UOp)
    }

    /// Whether the UOp is still alive.
    pub fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

impl PartialEq for UOp {
    fn eq(&self, other: &UOp) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for UOp {}

impl Hash for UOp {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash);
    }
}
