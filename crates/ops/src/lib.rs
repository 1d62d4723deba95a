//! The UOp IR of wgrad: hash-consed micro-ops, pattern matching, graph rewriting and symbolic
//! simplification. Every later stage (scheduling, lowering, rendering, the CPU interpreter)
//! speaks this one IR, as tinygrad's `ops.py` is.
//!
//! # UOps
//!
//! A [`UOp`] is `op(src...) -> dtype` with an `arg`:
//! - `op` ([`Ops`]) is what it does, from a closed vocabulary grouped by [`GroupOp`];
//! - `dtype` is the type of its value (`void` for stores, sinks and control);
//! - `src` are its operands, themselves UOps: a graph is a DAG reached from its root;
//! - `arg` ([`Arg`]) parameterises the op: a constant's value, a range's axis, a reduce's
//!   (op, axes), a variable, a view.
//!
//! Invariants:
//! - UOps are immutable and hash-consed: building a UOp equal (op, dtype, arg, and the very
//!   same sources) to a live one returns that one. `==` is pointer equality, hashing is O(1),
//!   and dropped graphs free their nodes ([`live_uops`] counts the table).
//! - A `Const` holds its value already cast to its dtype.
//! - ALU ops ([`GroupOp::ALU`]) take operands of their own dtype, except comparisons (bool
//!   result), `Where` (bool condition) and `Threefry` (u64). `Cast`/`Bitcast` change dtypes.
//! - Every UOp knows the range of its values ([`UOp::vmin`], [`UOp::vmax`]), computed when
//!   built from its sources.
//! - As in tinygrad, `-x` is built as `x*-1` and `x-y` as `x+y*-1`.
//!
//! # Kernel ASTs
//!
//! A kernel, as the scheduler hands it to codegen (tinygrad v0.10's kernel AST):
//!
//! ```text
//! Sink(Store(DefineGlobal(slot 0), View(output view), value), ...)
//! value := Load(DefineGlobal(slot i), View(input view))      reads, in the kernel's full shape
//!        | Const | ALU(value...) | Cast(value)
//!        | ReduceAxis(value) arg (op, axes)                    the axes become 1
//! ```
//!
//! Every `View` of one kernel has the same number of dims; loads carry the full shape
//! (reduce axes included), the store the output shape. After lowering, views become
//! `Index(DefineGlobal, index expression)` over `Range`/`Special` indices and reductions
//! become `Reduce(value, ranges...)`; [`estimate`] understands both forms.
//!
//! # Rewriting
//!
//! [`UPat`] patterns and [`rule!`]s make a [`PatternMatcher`]; [`graph_rewrite`] applies one
//! to a graph until it reaches a fixed point. [`symbolic`] holds the simplifier
//! ([`UOp::simplify`]); [`verify`] checks graphs against the type rules.

mod alu;
mod arg;
mod bounds;
mod builder;
mod error;
mod estimate;
mod graph;
mod index;
mod intern;
mod matcher;
mod ops;
mod print;
mod rewrite;
mod spec;
mod symbolic;
mod uop;
mod upat;

pub use alu::{bitcast, exec_alu, identity_element, threefry2x32};
pub use arg::{Arg, Coop, CoopRole};
pub use builder::IntoUOp;
pub use error::OpsError;
pub use estimate::{Estimate, estimate};
pub use graph::{UOpMap, UOpSet};
pub use intern::{FxBuild, FxHasher, live_uops};
pub use matcher::{PatternMatcher, Rule};
pub use ops::{GroupOp, NUM_SUBGROUPS, OpSet, Ops, SUBGROUP_BARRIER, SUBGROUP_ID, SUBGROUP_LANE};
pub use print::print_uops;
pub use rewrite::{graph_rewrite, graph_rewrite_top_down};
pub use spec::{SpecViolation, coop_side, verify, verify_uops};
pub use symbolic::{symbolic, symbolic_simple};
pub use uop::{UOp, WeakUOp};
pub use upat::{Captures, DTypePat, UPat};
