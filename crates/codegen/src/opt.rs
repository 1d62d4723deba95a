//! OptOps: the kernel transformations (upcast, unroll, local, group, pad, swap) and the checks
//! that decide whether one is valid on a kernel and a target (tinygrad v0.10's `apply_opt`).
//!
//! Axis conventions: `UNROLL`'s axis counts from `first_reduce()`, `GROUP`/`GROUPTOP`'s from
//! `first_reduce() + group_for_reduces()`, every other op's from 0. An `arg` of 0 means the
//! whole axis; `SWAP`'s arg is the other axis. A refused opt leaves the kernel unchanged.

use std::fmt;
use std::str::FromStr;

use wgrad_ops::{Arg, GroupOp, Ops, UOp, UOpMap};
use wgrad_shape::Sint;

use crate::kernel::{Kernel, buffer_st, int_product};

/// The kinds of kernel transformation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OptOps {
    /// Tensor cores: a matmul-shaped reduce onto cooperative-matrix tiles (`tensor_core.rs`);
    /// `axis` picks the `(m, n, k)` axes, `arg` the target's configuration.
    Tc,
    /// Split a non-reduce axis; the inner part becomes registers.
    Upcast,
    /// Split a reduce axis; the inner part is unrolled into registers.
    Unroll,
    /// Split a global axis; the inner part becomes a workgroup dim.
    Local,
    /// Split a reduce axis across the workgroup (inner part), finished in workgroup memory.
    Group,
    /// Like `Group` with the outer part of the axis.
    Grouptop,
    /// Do not split global axes into workgroups.
    Nolocals,
    /// Round an axis up to a multiple of `arg`, masking the extra elements.
    Padto,
    /// Exchange two global axes.
    Swap,
    /// Stage a register-tiled matmul's two factors in workgroup memory each step of its
    /// reduce loop (`tile_stage.rs`); no axis, `arg` 0 for one block of each, 2 for two
    /// (double-buffered), and the last opt of a kernel.
    Stage,
}

impl OptOps {
    /// Every kind, in declaration order.
    pub const ALL: [OptOps; 10] = [
        OptOps::Tc,
        OptOps::Upcast,
        OptOps::Unroll,
        OptOps::Local,
        OptOps::Group,
        OptOps::Grouptop,
        OptOps::Nolocals,
        OptOps::Padto,
        OptOps::Swap,
        OptOps::Stage,
    ];
}

impl fmt::Display for OptOps {
    /// tinygrad's name: `UPCAST`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format!("{self:?}").to_uppercase())
    }
}

impl FromStr for OptOps {
    type Err = OptError;

    /// The kind named as [`fmt::Display`] prints it (`UPCAST`).
    fn from_str(s: &str) -> Result<OptOps, OptError> {
        OptOps::ALL.into_iter().find(|op| op.to_string() == s).ok_or_else(|| OptError::Parse(s.into()))
    }
}

/// One transformation: `op` on `axis` (see the module doc for how it counts) by `arg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Opt {
    /// What to do.
    pub op: OptOps,
    /// Which axis; `None` for `NOLOCALS`.
    pub axis: Option<usize>,
    /// The amount (0: the whole axis), or the other axis of a `SWAP`.
    pub arg: usize,
}

impl Opt {
    /// `op` on `axis` by `arg`.
    pub fn new(op: OptOps, axis: usize, arg: usize) -> Opt {
        Opt { op, axis: Some(axis), arg }
    }

    /// The `NOLOCALS` opt.
    pub fn nolocals() -> Opt {
        Opt { op: OptOps::Nolocals, axis: None, arg: 0 }
    }

    /// The `STAGE` opt: one block of each factor in workgroup memory.
    pub fn stage() -> Opt {
        Opt { op: OptOps::Stage, axis: None, arg: 0 }
    }

    /// The `STAGE` opt with two blocks of each factor: the next step's copy runs while the
    /// tiles compute (`tile_stage.rs`).
    pub fn double_stage() -> Opt {
        Opt { op: OptOps::Stage, axis: None, arg: 2 }
    }
}

impl fmt::Display for Opt {
    /// `Opt(op=UPCAST, axis=0, arg=4)`; without an axis `Opt(op=NOLOCALS)`, or
    /// `Opt(op=STAGE, arg=2)` with an amount.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.axis {
            Some(a) => write!(f, "Opt(op={}, axis={a}, arg={})", self.op, self.arg),
            None if self.arg != 0 => write!(f, "Opt(op={}, arg={})", self.op, self.arg),
            None => write!(f, "Opt(op={})", self.op),
        }
    }
}

impl FromStr for Opt {
    type Err = OptError;

    /// An opt as [`fmt::Display`] prints it: `Opt(op=UPCAST, axis=0, arg=4)`, `Opt(op=NOLOCALS)`,
    /// `Opt(op=STAGE)`, `Opt(op=STAGE, arg=2)`.
    fn from_str(s: &str) -> Result<Opt, OptError> {
        let bad = || OptError::Parse(s.into());
        let inner = s.trim().strip_prefix("Opt(").and_then(|f| f.strip_suffix(')')).ok_or_else(bad)?;
        let fields: Vec<&str> = inner.split(", ").collect();
        fn value<'a>(field: &'a str, name: &str) -> Option<&'a str> {
            field.strip_prefix(name)?.strip_prefix('=')
        }
        let number = |field: &str, name: &str| -> Result<usize, OptError> {
            value(field, name).ok_or_else(bad)?.parse().map_err(|_| bad())
        };
        let op: OptOps = fields.first().and_then(|f| value(f, "op")).ok_or_else(bad)?.parse()?;
        let (axis, arg) = match fields[1..] {
            [] => (None, 0),
            [arg] => (None, number(arg, "arg")?),
            [axis, arg] => (Some(number(axis, "axis")?), number(arg, "arg")?),
            _ => return Err(bad()),
        };
        Ok(Opt { op, axis, arg })
    }
}

/// Why an opt (or a kernel AST) was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptError {
    /// The AST is not a kernel AST codegen understands.
    #[error("not a kernel AST: {0}")]
    Ast(String),
    /// The op needs an axis.
    #[error("{0} needs an axis")]
    MissingAxis(OptOps),
    /// The axis does not exist.
    #[error("invalid axis {axis}: the kernel has {shape_len} axes")]
    InvalidAxis {
        /// The real axis asked for.
        axis: usize,
        /// Number of axes.
        shape_len: usize,
    },
    /// An amount of 1, or a symbolic whole axis.
    #[error("shift/padto of {amt} (1 or a symbolic amount) is meaningless")]
    MeaninglessAmount {
        /// The amount, as text.
        amt: String,
    },
    /// The amount does not divide the axis.
    #[error("axis of size {size} is not divisible by {amt}")]
    NotDivisible {
        /// The axis size.
        size: String,
        /// The amount.
        amt: usize,
    },
    /// NOLOCALS was applied.
    #[error("not using locals")]
    LocalsDisabled,
    /// More workgroup memory than the target has.
    #[error("exceeds maximum shared memory size: needs {needed}, max {max}")]
    SharedMemory {
        /// Bytes needed.
        needed: i64,
        /// Bytes available.
        max: usize,
    },
    /// A workgroup larger than the target allows.
    #[error("workgroup of {size} invocations exceeds the target's {max}")]
    TooManyLocals {
        /// Invocations the opt would make.
        size: i64,
        /// The target's maximum.
        max: usize,
    },
    /// LOCAL without local support.
    #[error("target does not support local")]
    NoLocal,
    /// GROUP without local or shared memory support.
    #[error("target does not support local or shared mem")]
    NoShared,
    /// LOCAL on a non-global axis.
    #[error("local is for globals: axis {axis}, {global_dims} global dims")]
    NotGlobal {
        /// The axis.
        axis: usize,
        /// Number of global axes.
        global_dims: usize,
    },
    /// GROUP on an axis that is not an ungrouped reduce axis.
    #[error("must be reduce axis to group: axis {0}")]
    NotReduce(usize),
    /// UNROLL or PADTO of an upcast axis.
    #[error("can't {0} an upcast axis")]
    Upcasted(OptOps),
    /// UPCAST of a reduce axis.
    #[error("upcast is for non-reduce: axis {0}")]
    UpcastReduce(usize),
    /// An upcast or unroll larger than allowed.
    #[error("don't {op} more than {max} (asked {amt})")]
    TooLarge {
        /// UPCAST or UNROLL.
        op: OptOps,
        /// The amount.
        amt: usize,
        /// The limit.
        max: usize,
    },
    /// NOLOCALS without local support, or twice.
    #[error("NOLOCALS is meaningless if target does not support local or already not using locals")]
    NolocalsMeaningless,
    /// NOLOCALS after LOCAL or GROUP.
    #[error("can't have no locals with locals")]
    NolocalsWithLocals,
    /// SWAP outside the global axes, or not `axis < other`.
    #[error(
        "swap is only for globals with axis < other: axis {axis}, other {other}, {global_dims} global dims"
    )]
    Swap {
        /// The axis.
        axis: usize,
        /// The other axis.
        other: usize,
        /// Number of global axes.
        global_dims: usize,
    },
    /// PADTO with symbolic dims.
    #[error("padto does not work with symbolic shapes")]
    PadSymbolic,
    /// PADTO of a reduce axis whose padding would change the result.
    #[error("cannot pad the reduce: not a sum, or an op between it and its loads has f(0) != 0")]
    PadUnsafeReduce,
    /// PADTO that more than quadruples an axis.
    #[error("pad adds more than quadruple the work: size {size}, pad to {amt}")]
    PadTooMuch {
        /// The axis size.
        size: i64,
        /// The multiple asked for.
        amt: usize,
    },
    /// PADTO of an axis that is already a multiple.
    #[error("nothing was padded")]
    NothingPadded,
    /// TC does not apply to this kernel or target; the message says why.
    #[error("tensor cores: {0}")]
    TensorCore(String),
    /// STAGE does not apply to this kernel, or an opt came after it; the message says why.
    #[error("stage: {0}")]
    Stage(String),
    /// Text that is not an opt as `Opt`'s `Display` prints it.
    #[error("not an opt: `{0}`")]
    Parse(String),
}

/// Whether `u` is 0 wherever the loads under it read padding (0): loads and masked constants
/// are, plain constants when they are 0, `Mul`/`And` when any operand is, others when all are.
fn zero_on_pad(u: &UOp, memo: &mut UOpMap<bool>) -> bool {
    if let Some(&z) = memo.get(u) {
        return z;
    }
    let z = match u.op() {
        Ops::Load => true,
        Ops::Const => buffer_st(u).is_some() || u.const_value().is_some_and(|c| !c.is_truthy()),
        Ops::Mul | Ops::And => u.src().iter().any(|s| zero_on_pad(s, memo)),
        _ => !u.src().is_empty() && u.src().iter().all(|s| zero_on_pad(s, memo)),
    };
    memo.insert(u.clone(), z);
    z
}

/// Whether padding a reduce axis of `r` with zeros leaves its result unchanged: a sum of a
/// value with no op of f(0) != 0 under it and that is 0 on the padding.
fn can_pad_reduce(r: &UOp) -> bool {
    let src = &r.src()[0];
    matches!(r.arg(), Arg::ReduceAxis(Ops::Add, _))
        && !src.toposort().iter().any(|u| GroupOp::UNSAFE_PAD.contains(u.op()))
        && zero_on_pad(src, &mut UOpMap::default())
}

fn int_size(s: &Sint) -> Result<usize, OptError> {
    s.as_int().and_then(|v| usize::try_from(v).ok()).ok_or(OptError::MeaninglessAmount { amt: s.to_string() })
}

impl Kernel {
    /// The axis `opt` names, counted from 0 (`None` for `NOLOCALS`).
    pub fn real_axis(&self, opt: &Opt) -> Option<usize> {
        let a = opt.axis?;
        Some(match opt.op {
            OptOps::Unroll => self.first_reduce() + a,
            OptOps::Group | OptOps::Grouptop => self.first_reduce() + self.group_for_reduces + a,
            _ => a,
        })
    }

    /// The amount of a split or pad: `arg`, or the whole axis for 0; never 1 or symbolic, and
    /// dividing the axis unless padding.
    fn amount(&self, opt: &Opt, axis: usize) -> Result<usize, OptError> {
        let size = &self.full_shape()[axis];
        let amt = if opt.arg == 0 { int_size(size)? } else { opt.arg };
        if amt == 1 {
            return Err(OptError::MeaninglessAmount { amt: "1".into() });
        }
        let divides = (size % i64::try_from(amt).expect("an amount fits in i64")).as_int() == Some(0);
        if opt.op != OptOps::Padto && !divides {
            return Err(OptError::NotDivisible { size: size.to_string(), amt });
        }
        Ok(amt)
    }

    /// The workgroup memory (bytes) the grouped reduces need once this split by `amt` (or a
    /// new group) is made must fit the target.
    fn check_shared(&self, opt: &Opt, amt: usize) -> Result<(), OptError> {
        let Some(r) = self.reduceop() else { return Ok(()) };
        let grouping = matches!(opt.op, OptOps::Group | OptOps::Grouptop);
        if !(grouping || self.group_for_reduces > 0) {
            return Ok(());
        }
        let fu = self.first_upcast();
        let (full, out) = (&self.full_shape()[fu..], &self.output_shape()[fu..]);
        let upcast: i64 = full.iter().zip(out).filter(|(a, b)| a == b).map(|(a, _)| a.vmax()).product();
        // an unroll's lanes are summed in registers before the partials: no more slots
        let grows = if opt.op == OptOps::Unroll { 1 } else { amt as i64 };
        // one buffer of partials per reduce
        let needed = grows
            * self.target.workgroup_itemsize(r.dtype()) as i64
            * upcast
            * self.local_size()
            * self.reduceops.len() as i64;
        match needed <= self.target.shared_max as i64 {
            true => Ok(()),
            false => Err(OptError::SharedMemory { needed, max: self.target.shared_max }),
        }
    }

    /// The workgroup memory the partials of reduces spanning local output axes take (a row an
    /// elementwise kernel reduces itself): per such reduce, a slot per thread and per upcast
    /// lane it does not reduce. `None` where no reduce spans an output axis.
    fn row_partial_bytes(&self) -> Option<i64> {
        let (bufs, fr, fu) = (self.bufs().len(), self.first_reduce(), self.first_upcast());
        let gd = fr - self.local_dims();
        let spanned = |i: usize, axes: std::ops::Range<usize>| {
            let lanes = || int_product(&self.sts()[bufs + 2 * i].shape()[fu..]);
            (!self.reduced_axes(i, axes).is_empty()).then(lanes)
        };
        let n = self.reduceops().len();
        (0..n).any(|i| spanned(i, 0..fr).is_some()).then(|| {
            let locals = int_product(&self.full_shape()[gd..fr]);
            (0..n)
                .filter_map(|i| {
                    spanned(i, gd..fr).map(|lanes| {
                        lanes * locals * self.target.workgroup_itemsize(self.reduceops()[i].dtype()) as i64
                    })
                })
                .sum()
        })
    }

    /// A workgroup grown by `amt` must fit the target.
    fn check_local_size(&self, amt: usize) -> Result<(), OptError> {
        let size = self.local_size() * amt as i64;
        match size <= self.target.max_local_invocations as i64 {
            true => Ok(()),
            false => Err(OptError::TooManyLocals { size, max: self.target.max_local_invocations }),
        }
    }

    /// Applies `opt` after checking it is valid here, records it, and drops size-1 axes.
    pub fn apply_opt(&mut self, opt: Opt) -> Result<(), OptError> {
        if self.staged > 0 {
            return Err(OptError::Stage(format!("{} after STAGE, which must be the last opt", opt.op)));
        }
        if self.tc.is_some() && !matches!(opt.op, OptOps::Upcast | OptOps::Local | OptOps::Unroll) {
            return Err(OptError::TensorCore(format!(
                "only UPCAST, LOCAL and UNROLL apply after TC, not {}",
                opt.op
            )));
        }
        if self.dont_use_locals && matches!(opt.op, OptOps::Local | OptOps::Group | OptOps::Grouptop) {
            return Err(OptError::LocalsDisabled);
        }
        if opt.op == OptOps::Nolocals {
            self.apply_nolocals()?;
        } else if opt.op == OptOps::Stage {
            self.apply_stage(opt.arg)?;
        } else if opt.op == OptOps::Tc {
            self.apply_tc(opt.axis.ok_or(OptError::MissingAxis(opt.op))?, opt.arg)?;
        } else {
            let axis = self.real_axis(&opt).ok_or(OptError::MissingAxis(opt.op))?;
            if axis >= self.shape_len() {
                return Err(OptError::InvalidAxis { axis, shape_len: self.shape_len() });
            }
            match opt.op {
                OptOps::Swap => self.apply_swap(axis, opt.arg)?,
                OptOps::Padto => {
                    let amt = self.amount(&opt, axis)?;
                    self.apply_padto(axis, amt)?;
                }
                op => {
                    let amt = self.amount(&opt, axis)?;
                    if self.tc.is_some() {
                        self.check_tc_split(op, axis, amt)?;
                    }
                    self.check_split(op, axis, amt)?;
                    self.check_shared(&opt, amt)?;
                    let before = self.row_partial_bytes().map(|_| self.clone());
                    self.split(op, axis, amt);
                    if let Some(before) = before {
                        let needed = self.row_partial_bytes().unwrap_or(0);
                        if needed > self.target.shared_max as i64 {
                            *self = before;
                            return Err(OptError::SharedMemory { needed, max: self.target.shared_max });
                        }
                    }
                }
            }
        }
        self.applied_opts.push(opt);
        self.simplify_ones();
        Ok(())
    }

    fn apply_stage(&mut self, arg: usize) -> Result<(), OptError> {
        self.staged = match arg {
            0 => 1,
            2 => 2,
            _ => return Err(OptError::Stage(format!("STAGE keeps one block (arg 0) or two (2), not {arg}"))),
        };
        if self.tile_stages().is_none() {
            self.staged = 0;
            let why = "not a register-tiled matmul of two unmasked loads whose blocks split over the \
                       workgroup and fit its memory";
            return Err(OptError::Stage(why.into()));
        }
        Ok(())
    }

    fn apply_nolocals(&mut self) -> Result<(), OptError> {
        if !self.target.has_local || self.dont_use_locals {
            return Err(OptError::NolocalsMeaningless);
        }
        if self.local_dims != 0 || self.group_for_reduces != 0 {
            return Err(OptError::NolocalsWithLocals);
        }
        self.dont_use_locals = true;
        Ok(())
    }

    fn apply_swap(&mut self, axis: usize, other: usize) -> Result<(), OptError> {
        let global_dims = self.global_dims();
        if !(axis < other && other < global_dims) {
            return Err(OptError::Swap { axis, other, global_dims });
        }
        let mut perm: Vec<usize> = (0..self.shape_len()).collect();
        perm.swap(axis, other);
        self.reshape_and_permute(None, Some(&perm));
        Ok(())
    }

    /// Whether the split (or PADTO) `op` of `axis` by `amt` is valid here.
    fn check_split(&self, op: OptOps, axis: usize, amt: usize) -> Result<(), OptError> {
        let (fr, fu, gfr) = (self.first_reduce(), self.first_upcast(), self.group_for_reduces);
        match op {
            OptOps::Local if !self.target.has_local => Err(OptError::NoLocal),
            OptOps::Local if axis >= self.global_dims() => {
                Err(OptError::NotGlobal { axis, global_dims: self.global_dims() })
            }
            OptOps::Local if self.tc.is_some() => Ok(()),
            OptOps::Local => self.check_local_size(amt),
            OptOps::Group | OptOps::Grouptop if !(self.target.has_local && self.target.has_shared) => {
                Err(OptError::NoShared)
            }
            OptOps::Group | OptOps::Grouptop if !(fr + gfr <= axis && axis < fu) => {
                Err(OptError::NotReduce(axis))
            }
            OptOps::Group | OptOps::Grouptop => self.check_local_size(amt),
            OptOps::Unroll if axis >= fu => Err(OptError::Upcasted(op)),
            OptOps::Unroll if amt > 32 => Err(OptError::TooLarge { op, amt, max: 32 }),
            OptOps::Upcast if axis >= fr => Err(OptError::UpcastReduce(axis)),
            OptOps::Upcast if amt > 16 => Err(OptError::TooLarge { op, amt, max: 16 }),
            _ => Ok(()),
        }
    }

    /// Applies a checked split: the `amt` part of `axis` moves to where `op` keeps its axes.
    pub(crate) fn split(&mut self, op: OptOps, axis: usize, amt: usize) {
        let (fr, gfr) = (self.first_reduce(), self.group_for_reduces);
        match op {
            OptOps::Local => {
                self.shift_to(axis, amt, false, Some(fr));
                self.local_dims += 1;
            }
            OptOps::Group | OptOps::Grouptop => {
                self.shift_to(axis, amt, op == OptOps::Grouptop, Some(fr + gfr));
                self.group_for_reduces += 1;
            }
            OptOps::Unroll => {
                let whole = self.full_shape()[axis] == amt as i64;
                // a whole first reduce axis leaves a 1 at first_reduce, which simplify_ones
                // would count as a local axis
                if whole && axis == fr {
                    self.local_dims += 1;
                }
                if whole && axis < fr + gfr {
                    self.group_for_reduces -= 1;
                }
                self.shift_to(axis, amt, false, self.before_tiles());
                self.upcasted += 1;
            }
            _ => {
                self.shift_to(axis, amt, false, self.before_tiles());
                self.upcasted += 1;
            }
        }
    }

    /// Where a new upcast axis goes: last, or before the tile axes after TC (they stay last).
    fn before_tiles(&self) -> Option<usize> {
        self.tc.as_ref().map(|_| self.shape_len() - 3)
    }

    /// Whether two reduces of the AST share an axis side by side (neither in the other's
    /// source), as sibling kernels merged by the scheduler have them; each meets its partials
    /// in workgroup memory of its own when grouped, as nested ones do.
    pub(crate) fn has_parallel_reduces(&self) -> bool {
        let axes = |r: &UOp| match r.arg() {
            Arg::ReduceAxis(_, a) => a.to_vec(),
            _ => vec![],
        };
        let nested = |outer: &UOp, inner: &UOp| outer.toposort().contains(inner);
        self.reduceops.iter().enumerate().any(|(i, a)| {
            self.reduceops[i + 1..]
                .iter()
                .any(|b| axes(a).iter().any(|x| axes(b).contains(x)) && !nested(a, b) && !nested(b, a))
        })
    }

    fn apply_padto(&mut self, axis: usize, amt: usize) -> Result<(), OptError> {
        if self.sts.iter().any(|st| !st.vars().is_empty()) {
            return Err(OptError::PadSymbolic);
        }
        if axis >= self.first_upcast() {
            return Err(OptError::Upcasted(OptOps::Padto));
        }
        if axis >= self.first_reduce() && !self.reduceops.iter().all(can_pad_reduce) {
            return Err(OptError::PadUnsafeReduce);
        }
        let mut padded = self.sts.clone();
        let mut any = false;
        for st in &mut padded {
            let s = st.shape()[axis].as_int().ok_or(OptError::PadSymbolic)?;
            if s == 1 {
                continue;
            }
            if s <= (amt / 4) as i64 {
                return Err(OptError::PadTooMuch { size: s, amt });
            }
            let extra = (s + amt as i64 - 1) / amt as i64 * amt as i64 - s;
            if extra > 0 {
                let mut arg = vec![(Sint::int(0), Sint::int(0)); st.shape().len()];
                arg[axis].1 = Sint::int(extra);
                *st = st.pad(&arg).expect("a non-negative pad is valid");
                any = true;
            }
        }
        if !any {
            return Err(OptError::NothingPadded);
        }
        self.sts = padded;
        Ok(())
    }
}
