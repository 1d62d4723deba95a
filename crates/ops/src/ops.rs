//! The closed op vocabulary ([`Ops`]) and its groups ([`GroupOp`]), which patterns match on.

use std::fmt;

/// Every micro-op of the IR, named as in tinygrad (`Ops.DEFINE_GLOBAL` is [`Ops::DefineGlobal`]).
///
/// The order is meaningful: commutative operands are sorted by it, and [`Ops::Const`] comes
/// last among the ops kernels hold, so constants end up on the right (`x+2`, never `2+x`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Ops {
    // graph and meta
    /// The root collecting every output; `src` are the outputs, dtype void.
    Sink,
    /// Does nothing; left behind by rewrites that delete a store.
    Noop,
    /// A kernel of the schedule; `src` are its buffers.
    Kernel,
    /// A device name in `arg` ([`crate::Arg::Str`]).
    Device,
    /// A tensor's storage: `src` = (device), arg [`crate::Arg::Buffer`].
    Buffer,
    /// A copy of `src[0]` onto the device `src[1]`.
    Copy,
    /// Forces `src[0]` into a fresh contiguous buffer.
    Contiguous,
    /// Writes `src[1]` into the buffer `src[0]`; its value is the updated buffer.
    Assign,
    /// A kernel argument: a pointer dtype, arg = slot number ([`crate::Arg::Int`]).
    DefineGlobal,
    /// Workgroup memory: a local pointer dtype, arg = name ([`crate::Arg::Str`]).
    DefineLocal,
    /// An accumulator register: `src` = (initial value, ranges...), arg = id.
    DefineAcc,
    /// How a buffer is viewed: arg [`crate::Arg::View`]; `src` optionally the viewed value.
    View,
    /// Binds a variable to a value: `src` = (DefineVar, Const).
    Bind,
    // movement
    /// New shape ([`crate::Arg::Ints`]) of the same elements.
    Reshape,
    /// Axis permutation ([`crate::Arg::Ints`]).
    Permute,
    /// Broadcast size-1 axes to a new shape ([`crate::Arg::Ints`]).
    Expand,
    /// Zero padding (before, after) per axis ([`crate::Arg::Pairs`]).
    Pad,
    /// Keep `[start, end)` per axis ([`crate::Arg::Pairs`]).
    Shrink,
    /// Reverse the listed axes ([`crate::Arg::Ints`]).
    Flip,
    // reduce
    /// Reduce `src[0]` over axes: arg [`crate::Arg::ReduceAxis`] (op, axes). Kernel-AST form.
    ReduceAxis,
    /// Reduce `src[0]` over the ranges `src[1..]`; arg = the op ([`crate::Arg::Op`]). Lowered form.
    Reduce,
    // memory
    /// Reads: `src` = (pointer or buffer, view or index..., gate?).
    Load,
    /// Writes: `src` = (pointer or buffer, view or index..., value), dtype void.
    Store,
    /// Pointer arithmetic: `src` = (pointer, index, gate?), a pointer dtype.
    Index,
    // unary
    /// `2^x`.
    Exp2,
    /// `log2(x)`.
    Log2,
    /// `sin(x)`.
    Sin,
    /// `sqrt(x)`.
    Sqrt,
    /// `1/x`.
    Recip,
    /// `-x`.
    Neg,
    /// Truncation toward zero.
    Trunc,
    /// Value conversion into `dtype` (not an ALU op: it changes the dtype).
    Cast,
    /// Bit reinterpretation into `dtype` of the same size.
    Bitcast,
    // binary
    /// `x + y`.
    Add,
    /// `x * y`.
    Mul,
    /// `x / y` truncating toward zero (C-style).
    Idiv,
    /// `x % y` with the sign of `x` (C-style).
    Mod,
    /// `max(x, y)`.
    Max,
    /// `x < y` (bool result).
    CmpLt,
    /// `x != y` (bool result).
    CmpNe,
    /// `x ^ y`.
    Xor,
    /// `x | y`.
    Or,
    /// `x & y`.
    And,
    /// `x << y`.
    Shl,
    /// `x >> y`.
    Shr,
    /// Threefry-2x32 (20 rounds) of the u64 counter `x` under the u64 key `y`.
    Threefry,
    /// `x - y`.
    Sub,
    /// `x / y` for floats.
    Fdiv,
    /// `x ^ y` (power).
    Pow,
    // ternary
    /// `c ? x : y`.
    Where,
    /// `x * y + z`.
    MulAcc,
    // control
    /// A loop index in `[0, src[0])`; arg = axis id ([`crate::Arg::Int`]).
    Range,
    /// Closes the loop `src[0]`.
    EndRange,
    /// Runs its body when `src[0]` holds.
    If,
    /// Closes the `If` in `src[0]`.
    EndIf,
    /// Workgroup barrier; arg [`crate::Arg::Str`] of [`SUBGROUP_BARRIER`] when only the
    /// invocations of one subgroup need to meet (what a subgroup wrote to workgroup memory,
    /// only its own invocations read).
    Barrier,
    /// A hardware index (`gidx0`, `lidx1`) or subgroup builtin ([`SUBGROUP_ID`],
    /// [`SUBGROUP_LANE`], [`NUM_SUBGROUPS`]): arg [`crate::Arg::Special`] (name, size), the
    /// value in `[0, size)`.
    Special,
    // vector
    /// Builds a vector from scalar sources.
    Vectorize,
    /// Picks lanes ([`crate::Arg::Ints`]) of a vector.
    Gep,
    /// Splits a value along upcast axes ([`crate::Arg::Pairs`] of (axis, size)).
    Unroll,
    /// Gathers upcast axes ([`crate::Arg::Pairs`]) into a vector.
    Contract,
    /// Tensor-core matrix multiply-accumulate: `src` = (a, b, acc), cooperative matrices (see
    /// [`Ops::CoopLoad`]) of roles A, B and C; the result is `acc + a * b`, of `acc`'s dtype.
    Wmma,
    // leaves, constants last
    /// A symbolic integer: arg [`crate::Arg::Var`].
    DefineVar,
    /// A constant: arg [`crate::Arg::Const`], already cast to `dtype`.
    Const,
    // tensor graphs only (never in kernels, so after `Const`: existing ops keep their numbers)
    /// `src[0]` unchanged, with no gradient flowing through it.
    Detach,
    /// `src[0]` unchanged; its gradient is realized into a buffer of its own.
    ContiguousBackward,
    // tensor-core tiles (added last: existing ops keep their numbers; never commutative operands)
    /// A cooperative-matrix tile read by a whole subgroup: `src` = (`Index(buf, first)`, stride:
    /// an int\[, a `Barrier` it comes after\]), arg [`crate::Arg::Coop`]; dtype `T.vec(n * n)`,
    /// the `n x n` tile in row-major order. Element `(r, c)` is `buf[first + r * stride + c]`
    /// (row-major layout) or `buf[first + c * stride + r]` (column-major).
    CoopLoad,
    /// Writes a cooperative matrix (role C) as [`Ops::CoopLoad`] reads one: `src` =
    /// (`Index(buf, first)`, value, stride\[, a `Barrier` it comes after\]), arg
    /// [`crate::Arg::Coop`]; dtype void.
    CoopStore,
    /// `src[0]` combined over the invocations of this invocation's subgroup (`subgroupAdd`,
    /// `subgroupMax`, `subgroupMul`), every invocation getting the result: arg
    /// [`crate::Arg::Op`] (`Add`, `Max` or `Mul`). Every invocation of the workgroup must
    /// reach it (uniform control flow).
    SubgroupReduce,
}

/// The arg of a `Barrier` among the invocations of one subgroup (`subgroupBarrier`).
pub const SUBGROUP_BARRIER: &str = "subgroup";
/// The `Special` naming this invocation's subgroup within its workgroup (`subgroup_id`).
pub const SUBGROUP_ID: &str = "sgid";
/// The `Special` naming this invocation within its subgroup (`subgroup_invocation_id`).
pub const SUBGROUP_LANE: &str = "sglane";
/// The `Special` counting the workgroup's subgroups (`num_subgroups`): its size is one more
/// than the most there can be.
pub const NUM_SUBGROUPS: &str = "nsg";

impl Ops {
    /// Every op, in order.
    pub const ALL: [Ops; 69] = [
        Ops::Sink,
        Ops::Noop,
        Ops::Kernel,
        Ops::Device,
        Ops::Buffer,
        Ops::Copy,
        Ops::Contiguous,
        Ops::Assign,
        Ops::DefineGlobal,
        Ops::DefineLocal,
        Ops::DefineAcc,
        Ops::View,
        Ops::Bind,
        Ops::Reshape,
        Ops::Permute,
        Ops::Expand,
        Ops::Pad,
        Ops::Shrink,
        Ops::Flip,
        Ops::ReduceAxis,
        Ops::Reduce,
        Ops::Load,
        Ops::Store,
        Ops::Index,
        Ops::Exp2,
        Ops::Log2,
        Ops::Sin,
        Ops::Sqrt,
        Ops::Recip,
        Ops::Neg,
        Ops::Trunc,
        Ops::Cast,
        Ops::Bitcast,
        Ops::Add,
        Ops::Mul,
        Ops::Idiv,
        Ops::Mod,
        Ops::Max,
        Ops::CmpLt,
        Ops::CmpNe,
        Ops::Xor,
        Ops::Or,
        Ops::And,
        Ops::Shl,
        Ops::Shr,
        Ops::Threefry,
        Ops::Sub,
        Ops::Fdiv,
        Ops::Pow,
        Ops::Where,
        Ops::MulAcc,
        Ops::Range,
        Ops::EndRange,
        Ops::If,
        Ops::EndIf,
        Ops::Barrier,
        Ops::Special,
        Ops::Vectorize,
        Ops::Gep,
        Ops::Unroll,
        Ops::Contract,
        Ops::Wmma,
        Ops::DefineVar,
        Ops::Const,
        Ops::Detach,
        Ops::ContiguousBackward,
        Ops::CoopLoad,
        Ops::CoopStore,
        Ops::SubgroupReduce,
    ];

    /// Number of sources of an ALU op (1, 2 or 3); `None` for other ops.
    pub fn arity(self) -> Option<usize> {
        [GroupOp::UNARY, GroupOp::BINARY, GroupOp::TERNARY]
            .iter()
            .position(|g| g.contains(self))
            .map(|i| i + 1)
    }
}

impl fmt::Display for Ops {
    /// tinygrad's spelling: `Ops.DEFINE_GLOBAL`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = format!("{self:?}");
        let mut out = String::from("Ops.");
        for (i, c) in name.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_uppercase());
        }
        f.pad(&out)
    }
}

/// A set of [`Ops`], as a bit mask; the groups below are constants of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct OpSet(u128);

impl OpSet {
    /// The empty set.
    pub const EMPTY: OpSet = OpSet(0);

    /// The set of the listed ops.
    pub const fn of(ops: &[Ops]) -> OpSet {
        let mut bits = 0u128;
        let mut i = 0;
        while i < ops.len() {
            bits |= 1 << ops[i] as u8;
            i += 1;
        }
        OpSet(bits)
    }

    /// Whether `op` is in the set.
    pub const fn contains(self, op: Ops) -> bool {
        self.0 & (1 << op as u8) != 0
    }

    /// Union of two sets.
    pub const fn union(self, other: OpSet) -> OpSet {
        OpSet(self.0 | other.0)
    }

    /// The ops of `self` not in `other`.
    pub const fn minus(self, other: OpSet) -> OpSet {
        OpSet(self.0 & !other.0)
    }

    /// The ops in the set, in order.
    pub fn iter(self) -> impl Iterator<Item = Ops> {
        Ops::ALL.into_iter().filter(move |&op| self.contains(op)).take(self.0.count_ones() as usize)
    }
}

impl From<Ops> for OpSet {
    fn from(op: Ops) -> OpSet {
        OpSet::of(&[op])
    }
}

/// The op groups of tinygrad's `GroupOp`.
pub struct GroupOp;

impl GroupOp {
    /// One-operand ALU ops (dtype preserving; `Cast`/`Bitcast` are not ALU).
    pub const UNARY: OpSet =
        OpSet::of(&[Ops::Exp2, Ops::Log2, Ops::Sin, Ops::Sqrt, Ops::Recip, Ops::Neg, Ops::Trunc]);
    /// Two-operand ALU ops.
    pub const BINARY: OpSet = OpSet::of(&[
        Ops::Add,
        Ops::Mul,
        Ops::Idiv,
        Ops::Mod,
        Ops::Max,
        Ops::CmpLt,
        Ops::CmpNe,
        Ops::Xor,
        Ops::Or,
        Ops::And,
        Ops::Shl,
        Ops::Shr,
        Ops::Threefry,
        Ops::Sub,
        Ops::Fdiv,
        Ops::Pow,
    ]);
    /// Three-operand ALU ops.
    pub const TERNARY: OpSet = OpSet::of(&[Ops::Where, Ops::MulAcc]);
    /// Every ALU op: what [`crate::exec_alu`] evaluates.
    pub const ALU: OpSet = GroupOp::UNARY.union(GroupOp::BINARY).union(GroupOp::TERNARY);
    /// `f(x, y) == f(y, x)`.
    pub const COMMUTATIVE: OpSet =
        OpSet::of(&[Ops::Add, Ops::Mul, Ops::Max, Ops::CmpNe, Ops::Xor, Ops::And, Ops::Or]);
    /// `f(f(x, y), z) == f(x, f(y, z))`.
    pub const ASSOCIATIVE: OpSet = OpSet::of(&[Ops::Add, Ops::Mul, Ops::And, Ops::Or, Ops::Max]);
    /// `f(x, x) == x`.
    pub const IDEMPOTENT: OpSet = OpSet::of(&[Ops::Or, Ops::And, Ops::Max]);
    /// Comparisons (bool results).
    pub const COMPARISON: OpSet = OpSet::of(&[Ops::CmpLt, Ops::CmpNe]);
    /// Ops with `f(0) != 0`: a pad (zeros) under them is not a pad after them.
    pub const UNSAFE_PAD: OpSet = OpSet::of(&[Ops::Recip, Ops::Log2, Ops::Exp2, Ops::Idiv, Ops::Pow]);
    /// Movement ops.
    pub const MOVEMENT: OpSet =
        OpSet::of(&[Ops::Reshape, Ops::Expand, Ops::Permute, Ops::Pad, Ops::Shrink, Ops::Flip]);
    /// Leaves whose value is not a sum/product of others: what symbolic treats as atoms.
    pub const IRREDUCIBLE: OpSet = OpSet::of(&[Ops::Const, Ops::DefineVar, Ops::Special, Ops::Range]);
}
