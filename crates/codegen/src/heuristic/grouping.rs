//! Grouped reductions: a reduce with too few outputs to keep the device busy with one thread each
//! (fewer than the target's `parallelism`)
//! is split across a workgroup (GROUP), so that neighbouring threads read neighbouring
//! elements and the partial results meet in workgroup memory.
//!
//! - A *row* reduce (a reduce axis that every load reads contiguously or not at all) is first
//!   unrolled by 4 where the target has 4-wide vectors, so each thread reads 16 bytes at a time,
//!   then grouped on the same axis: thread `t` reads elements `(i * G + t) * 4 + u`.
//! - A *column* reduce (no such reduce axis, but an output axis read contiguously) puts
//!   neighbouring outputs on neighbouring threads (LOCAL) and groups the largest reduce axis
//!   over the rest of the workgroup.
//! - Otherwise the largest reduce axis is grouped.
//!
//! Each thread runs at least [`MIN_ITERATIONS`] loop steps of its own before the partials meet.

use super::operands::{reduce_loads, strides};
use super::{int, try_opt};
use crate::{Kernel, OptOps};

/// Shortest reduce worth grouping.
const MIN_REDUCE: usize = 256;
/// Fewest loop steps a thread of a grouped reduce runs on its own.
const MIN_ITERATIONS: usize = 4;
/// Group sizes tried for a row reduce (and for the largest axis), widest first.
const ROW_GROUPS: [usize; 5] = [256, 128, 64, 32, 16];
/// Neighbouring outputs per workgroup of a column reduce, and its group sizes.
const COLUMN_LOCALS: [usize; 3] = [32, 16, 8];
const COLUMN_GROUPS: [usize; 3] = [8, 4, 2];

/// Groups the reduce of `k` when it is long and its outputs are few; says whether it did.
pub(super) fn group_reduce(k: &mut Kernel) -> bool {
    let target = k.target();
    if !(target.has_local && target.has_shared) || k.reduceops().len() != 1 {
        return false;
    }
    let (fr, fu) = (k.first_reduce(), k.first_upcast());
    let Some(sizes) = k.full_shape()[..fu].iter().map(int).collect::<Option<Vec<usize>>>() else {
        return false;
    };
    let outputs: usize = sizes[..fr].iter().product();
    let reduce: usize = sizes[fr..].iter().product();
    if fr >= fu || outputs >= target.parallelism || reduce < MIN_REDUCE {
        return false;
    }
    let loads: Vec<Vec<Option<i64>>> = reduce_loads(k).into_iter().map(|i| strides(k, i)).collect();
    let contiguous = |a: usize| {
        sizes[a] > 1
            && loads.iter().all(|s| matches!(s[a], Some(0 | 1)))
            && loads.iter().any(|s| s[a] == Some(1))
    };
    if let Some(axis) = (fr..fu).rev().find(|&a| contiguous(a)) {
        return group_row(k, axis, sizes[axis]);
    }
    if let Some(axis) = (0..fr).rev().find(|&a| contiguous(a)) {
        return group_column(k, axis, sizes[axis]);
    }
    group_largest(k, &ROW_GROUPS)
}

/// Unrolls the contiguous reduce `axis` (of `size`) by 4 for vector loads and groups it, or
/// the largest reduce axis when it does not divide.
fn group_row(k: &mut Kernel, axis: usize, size: usize) -> bool {
    if k.target().vector_widths.contains(&4) && size.is_multiple_of(4) {
        let mut unrolled = k.clone();
        let fr = k.first_reduce();
        if try_opt(&mut unrolled, OptOps::Unroll, axis - fr, 4)
            && group_axis(&mut unrolled, axis, size / 4, &ROW_GROUPS)
        {
            *k = unrolled;
            return true;
        }
    }
    group_axis(k, axis, size, &ROW_GROUPS) || group_largest(k, &ROW_GROUPS)
}

/// Puts neighbouring outputs along the contiguous output `axis` (of `size`) on neighbouring
/// threads and groups the largest reduce axis over the rest of the workgroup.
fn group_column(k: &mut Kernel, axis: usize, size: usize) -> bool {
    for &local in COLUMN_LOCALS.iter().filter(|&&l| size.is_multiple_of(l) && size > l) {
        let mut tried = k.clone();
        if try_opt(&mut tried, OptOps::Local, axis, local) && group_largest(&mut tried, &COLUMN_GROUPS) {
            *k = tried;
            return true;
        }
    }
    group_largest(k, &ROW_GROUPS)
}

/// Groups the largest ungrouped reduce axis by the first of `groups` that fits.
fn group_largest(k: &mut Kernel, groups: &[usize]) -> bool {
    let (from, fu) = (k.first_reduce() + k.group_for_reduces(), k.first_upcast());
    let largest = (from..fu).filter_map(|a| int(&k.full_shape()[a]).map(|s| (s, a))).max();
    largest.is_some_and(|(size, axis)| group_axis(k, axis, size, groups))
}

/// Groups reduce `axis` (of `size`) by the first of `groups` that divides it, leaves each
/// thread [`MIN_ITERATIONS`] steps and fits the workgroup.
fn group_axis(k: &mut Kernel, axis: usize, size: usize, groups: &[usize]) -> bool {
    let from = k.first_reduce() + k.group_for_reduces();
    groups
        .iter()
        .filter(|&&g| size.is_multiple_of(g) && size / g >= MIN_ITERATIONS)
        .any(|&g| try_opt(k, OptOps::Group, axis - from, g))
}
