//! The moves of a BEAM search: tinygrad's action list, and every kernel one legal action away
//! from a given one.
//!
//! The list is a table of (op, amounts, axes); on a target with tensor cores every kernel also
//! gets the TC actions (each axis choice by each configuration, tinygrad's first rows).
//! Actions `apply_opt` refuses on a kernel are simply not taken.

use std::sync::LazyLock;

use wgrad_codegen::{AxisKind, Kernel, Opt, OptOps};

/// Largest product of upcast and unrolled axes a candidate may have (tinygrad's
/// `BEAM_UPCAST_MAX`).
const MAX_UPCAST: i64 = 256;
/// Largest workgroup (local and grouped axes) a candidate may have (`BEAM_LOCAL_MAX`).
const MAX_LOCAL: i64 = 1024;

/// (op, amounts, number of axes): every amount on every axis below the number.
const TABLE: [(OptOps, &[usize], usize); 6] = [
    (OptOps::Upcast, &[0, 2, 3, 4, 5, 7], 8),
    (OptOps::Unroll, &[0, 4, 7], 5),
    (OptOps::Local, &[2, 3, 4, 8, 13, 16, 29], 6),
    (OptOps::Grouptop, &[13, 16, 28, 29, 32, 49, 64, 256], 3),
    (OptOps::Group, &[0, 4, 8, 16], 3),
    (OptOps::Padto, &[32], 7),
];

/// Every action a search tries, in tinygrad's order: the table, two extra LOCALs, the SWAPs
/// of the first five global axes, and NOLOCALS; then STAGE (wgrad's own).
pub static ACTIONS: LazyLock<Vec<Opt>> = LazyLock::new(|| {
    let mut actions: Vec<Opt> = TABLE
        .iter()
        .flat_map(|&(op, amounts, axes)| {
            amounts.iter().flat_map(move |&amt| (0..axes).map(move |axis| Opt::new(op, axis, amt)))
        })
        .collect();
    actions.extend([Opt::new(OptOps::Local, 0, 32), Opt::new(OptOps::Local, 6, 2)]);
    actions.extend((0..5).flat_map(|a| (a + 1..5).map(move |b| Opt::new(OptOps::Swap, a, b))));
    actions.push(Opt::nolocals());
    actions.extend([Opt::stage(), Opt::double_stage()]);
    actions
});

/// Whether `opt` splits off the whole axis it names while the list also has the same split
/// by 0 (which means the whole axis): the two give one kernel, so only the 0 is tried.
fn whole_axis_twice(k: &Kernel, opt: &Opt) -> bool {
    let whole = Opt { arg: 0, ..*opt };
    opt.op != OptOps::Swap
        && k.real_axis(opt).is_some_and(|axis| k.full_shape()[axis] == opt.arg as i64)
        && ACTIONS.contains(&whole)
}

/// Whether a candidate's registers and workgroup stay within the search's limits (a tensor
/// core's tile axes, spread over its subgroup, do not count).
pub(super) fn within_limits(k: &Kernel) -> bool {
    let (mut upcast, mut local) = (1, 1);
    let tile_axes = if k.tensor_core().is_some() { 3 } else { 0 };
    let kinds = k.axis_kinds();
    for (kind, size) in kinds[..kinds.len() - tile_axes].iter().zip(k.full_shape()) {
        match *kind {
            AxisKind::Upcast | AxisKind::Unroll => upcast *= size.vmax(),
            AxisKind::Local | AxisKind::GroupReduce => local *= size.vmax(),
            AxisKind::Global | AxisKind::Reduce => {}
        }
    }
    upcast <= MAX_UPCAST && local <= MAX_LOCAL
}

/// The TC actions for `k`: every axis choice (at most 9, as tinygrad) by every configuration
/// of the target.
fn tc_actions(k: &Kernel) -> Vec<Opt> {
    let choices = k.tc_axis_choices().len().min(9);
    (0..k.target().tensor_cores.len())
        .flat_map(|arg| (0..choices).map(move |axis| Opt::new(OptOps::Tc, axis, arg)))
        .collect()
}

/// Every kernel one action away from `k` that `apply_opt` accepts and that stays within
/// the limits (upcast <= 256, workgroup <= 1024), TC actions first, then in the order of
/// [`ACTIONS`].
pub fn kernel_actions(k: &Kernel) -> Vec<Kernel> {
    let table = ACTIONS
        .iter()
        .filter(|opt| opt.axis.is_none() || k.real_axis(opt).is_some_and(|axis| axis < k.shape_len()))
        .filter(|opt| !whole_axis_twice(k, opt));
    tc_actions(k)
        .iter()
        .chain(table)
        .filter_map(|opt| {
            let mut next = k.clone();
            next.apply_opt(*opt).ok().filter(|_| within_limits(&next)).map(|()| next)
        })
        .collect()
}
