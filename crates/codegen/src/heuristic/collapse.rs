//! Reduces that collapse: a sum over a loop that keeps one iteration (the one-hot reduce of
//! `embedding`, `gather` and tensor indexing) becomes one gated load when the kernel is lowered
//! and simplified (`wgrad_ops`' reduce collapse), but only while its reduce axis is a plain loop:
//! unrolled, its lanes compare against `r*4 + k`; grouped, it is split across threads. Such a
//! kernel is planned as the elementwise kernel it becomes.

use wgrad_ops::{Arg, Ops};

use crate::{Kernel, Target, lower};

/// Whether the reduce of `k` (no opts applied yet) disappears once lowered and simplified.
/// Only sums over something compared are tried (the lowering costs a kernel's compile).
pub(super) fn reduce_collapses(k: &Kernel) -> bool {
    let one_hot = |r: &wgrad_ops::UOp| {
        matches!(r.arg(), Arg::ReduceAxis(Ops::Add, _)) && r.toposort().iter().any(|u| u.op() == Ops::CmpNe)
    };
    if k.reduceops().is_empty() || !k.applied_opts().is_empty() || !k.reduceops().iter().all(one_hot) {
        return false;
    }
    // lowered with loops for every axis: the target's launch limits do not matter here
    let plain = Kernel::new(k.ast(), Target { has_local: false, ..k.target().clone() });
    let sink = plain.ok().and_then(|p| lower(&p).ok());
    sink.is_some_and(|s| !s.simplify().toposort().iter().any(|u| u.op() == Ops::Reduce))
}
