//! Rows reduced in place: an elementwise kernel whose reduces span one of its output axes (a
//! softmax's max and sum, a layer norm's statistics, read back over the rows they reduce).
//!
//! A row is split over a few threads of one workgroup, each holding up to [`VALUES`] of its
//! values in registers: UPCAST by a vector, LOCAL by the row's threads, UPCAST by the rest, so
//! neighbouring threads read neighbouring vectors; the reduces combine a thread's values, then
//! the row's threads' partials through workgroup memory, and every thread writes its own
//! values' outputs. More rows fill the workgroup up to [`WORKGROUP`] threads, except where a
//! row takes two or more whole subgroups on a target with subgroup ops: it keeps its
//! workgroup to itself, so that each subgroup combines its partials before they meet
//! ([`Kernel::row_subgroup_partials`]). Where a target's subgroups all have one size and a
//! row split over one subgroup leaves each thread [`SUBGROUP_VALUES`] or more of its values, the
//! row takes one subgroup, whose combine finishes its reduces without workgroup memory
//! ([`Kernel::rows_in_subgroups`]).

use super::int;
use crate::{Kernel, Opt, OptOps};

/// Most values of a row one thread holds.
const VALUES: usize = 32;
/// Most threads a workgroup takes. An H100, MiniLM's rows (a layer norm's 16384 of 384, an
/// attention softmax's 196608 of 128; us): 12 threads a row by 8 rows 34.0 (f32) and 18.3
/// (f16) against 35.3 and 20.2 by 4 rows; 4 threads a row by 32 rows 59.9, by 8 59.8, by 16
/// 111.6, 8 threads by 8 57.1, 32 threads (4 values) 273.4.
const WORKGROUP: usize = 128;
/// Fewest values of a row a thread holds where the row takes one subgroup
/// ([`Kernel::rows_in_subgroups`]). H200, MiniLM (us a forward over the layers, f32 / f16): the
/// layer norms' rows of 384 as 32 threads of 12 values 337 / 213 against 374 / 285 as 12
/// threads of 32 through workgroup memory; the softmax's rows of 128 as 32 threads of 4 values
/// 348 / 283 against 359 / 237 as 4 threads of 32 (the f16 rows' 8-byte loads too small).
const SUBGROUP_VALUES: usize = 8;

/// Gives an elementwise kernel whose reduces span one output axis its row plan; says whether
/// it did.
pub(super) fn row_reduce(k: &mut Kernel) -> bool {
    let target = k.target().clone();
    if !target.has_local || k.first_reduce() != k.first_upcast() {
        return false;
    }
    let Some(axis) = spanned(k) else { return false };
    let Some(n) = int(&k.full_shape()[axis]) else { return false };
    let vector = if n % 4 == 0 && target.vector_widths.contains(&4) { 4 } else { 1 };
    let lanes = n / vector;
    let max_threads = target.max_local_invocations.min(target.max_local_size[0]);
    let Some(fewest) = (1..=lanes.min(max_threads)).find(|t| lanes % t == 0 && n / t <= VALUES) else {
        return false;
    };
    // a row one subgroup wide, where each thread keeps enough of it, combines its partials
    // without workgroup memory or a barrier
    let one_subgroup =
        |s: usize| (fewest..=max_threads).contains(&s) && lanes.is_multiple_of(s) && n / s >= SUBGROUP_VALUES;
    let subgroup = target
        .subgroup_size
        .filter(|&s| target.fixed_subgroup_size && one_subgroup(s) && k.partials_fit_subgroups());
    let threads = subgroup.unwrap_or(fewest);
    let apply = |k: &mut Kernel, op, axis, arg| arg == 1 || k.apply_opt(Opt::new(op, axis, arg)).is_ok();
    if !apply(k, OptOps::Upcast, axis, vector) || !apply(k, OptOps::Local, axis, threads) {
        return false;
    }
    let whole_subgroups = |s: usize| threads >= 2 * s && threads.is_multiple_of(s);
    let own_workgroup = target.subgroup_ops && target.subgroup_size.is_some_and(whole_subgroups);
    let candidates = if own_workgroup { 0 } else { k.global_dims() };
    let rows = (0..candidates).rev().filter(|&a| a != axis).find_map(|a| {
        let size = int(&k.full_shape()[a])?;
        let fit = (0..=WORKGROUP.ilog2())
            .rev()
            .map(|p| 1 << p)
            .find(|w| size % w == 0 && threads * w <= WORKGROUP)?;
        Some((a, fit))
    });
    if let Some((a, w)) = rows {
        apply(k, OptOps::Local, a, w);
    }
    let rest = lanes / threads;
    match spanned(k) {
        Some(axis) => apply(k, OptOps::Upcast, axis, rest),
        None => rest == 1,
    }
}

/// The one global axis the kernel's reduces span (the same for all, as the scheduler makes
/// them), if any.
fn spanned(k: &Kernel) -> Option<usize> {
    if k.reduceops().is_empty() {
        return None;
    }
    match k.reduced_axes(0, 0..k.global_dims()).as_slice() {
        [axis] => Some(*axis),
        _ => None,
    }
}
