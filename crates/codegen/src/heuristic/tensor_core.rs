//! Tensor cores for a half-precision matmul-shaped kernel, where the target has them: the
//! first TC configuration and axis choice the kernel takes, then more tiles per subgroup and
//! several subgroups per workgroup, which stages both factors' blocks in workgroup memory.
//!
//! - The usual plan: UPCAST 4, else 2, on each output axis of the tiles (up to the 4x4 tiles of
//!   a 64x64 block) while enough subgroups stay to keep a quarter of the target's `parallelism`
//!   busy; then 2x2 subgroups (LOCAL 2 on each output axis), two k tiles a step (UNROLL 2). On
//!   the H200 a 4096^3 f16 GEMM went from 104 TFLOP/s with one subgroup a workgroup to 133-140
//!   with 2x2 (docs/PERFORMANCE.md).
//! - A short reduce (at most [`SHORT_REDUCE_TILES`] k tiles, as MiniLM's K = 384 matmuls) over
//!   enough workgroups to fill the device: 4x2 tiles a subgroup and 2x4 subgroups (the same
//!   128x128 block), one k tile a step. Its staged blocks take 12 KiB instead of 20, so more
//!   workgroups share a multiprocessor. On the H200 it ran MiniLM's K = 384 projections
//!   6-13% faster and its attention scores 4% faster; the 4096^3 GEMM would run 3x slower, and
//!   a 384-wide output (384 workgroups) 4% slower (docs/PERFORMANCE.md).
//! - A wide block, for what the short plan leaves (at most [`WIDE_REDUCE_TILES`] k tiles,
//!   column tiles a multiple of 12, rows of 8 tiles, a quarter of the target kept busy): 2x2
//!   subgroups of 4x6 tiles (a 128x192 block), one k tile a step, BEAM's pick for MiniLM's
//!   attention output on an H200. In the model on the H200 it ran the two 384-wide projections
//!   20-23% faster than the usual plan; the short plan's kernels (1152 and 1536 columns) ran
//!   14-44% slower with it, so they keep theirs (docs/PERFORMANCE.md).
//! - No tensor cores for a few rows (an output axis one tile wide) whose reduce is longer than
//!   the short plan's, over too few output tiles to keep a quarter of the target busy (a
//!   one-sentence forward's FFN down): the grouped reduce (`grouping`) splits the reduce across
//!   threads instead.

use crate::{Kernel, Opt, OptOps};

/// The side of a tensor-core tile the heuristics plan for.
const TILE: i64 = 16;
/// The longest reduce (in k tiles) that takes the short-reduce plan.
const SHORT_REDUCE_TILES: i64 = 24;
/// The longest reduce (in k tiles) that takes the wide-block plan (the longest measured).
const WIDE_REDUCE_TILES: i64 = 96;

/// Applies TC and its tile plan; returns whether TC applied.
pub(super) fn tensor_cores(k: &mut Kernel) -> bool {
    // a few rows: an output axis no wider than one tile
    let few_rows = (0..k.first_reduce()).any(|a| (2..=TILE).contains(&k.full_shape()[a].vmax()));
    let choices = k.tc_axis_choices().len();
    let configs = k.target().tensor_cores.len();
    let mut tc = k.clone();
    let applied = (0..configs)
        .any(|arg| (0..choices).any(|axis| tc.apply_opt(Opt::new(OptOps::Tc, axis, arg)).is_ok()));
    if !applied {
        return false;
    }
    let (fr, fu) = (tc.first_reduce(), tc.first_upcast());
    let k_tiles: i64 = tc.full_shape()[fr..fu].iter().map(|s| s.vmax()).product();
    // a few rows' long reduce, too few output tiles to keep a quarter of the target busy: each
    // subgroup would walk the whole reduce alone, where a grouped reduce splits it (H200,
    // MiniLM's 16-row f16 FFN down, 384 x 1536: 14.5 us with TC, 8.8 as a skinny product)
    if few_rows && k_tiles > SHORT_REDUCE_TILES && !keeps_a_quarter_busy(&tc) {
        return false;
    }
    *k = tc;
    if k_tiles <= SHORT_REDUCE_TILES {
        let mut short = k.clone();
        short_reduce_plan(&mut short);
        if fills_the_device(&short) {
            *k = short;
            return true;
        }
    }
    if k_tiles <= WIDE_REDUCE_TILES {
        let mut wide = k.clone();
        if wide_block_plan(&mut wide) && keeps_a_quarter_busy(&wide) {
            *k = wide;
            return true;
        }
    }
    usual_plan(k);
    true
}

/// Whether the short-reduce plan took its whole block (2x4 subgroups) and its workgroups
/// bring at least the target's `parallelism` threads: its gain is more workgroups on each
/// multiprocessor, which needs more of them than the device holds at once.
fn fills_the_device(k: &Kernel) -> bool {
    k.tc_warps() == 8 && threads(k) >= k.target().parallelism as i64
}

/// Whether the kernel's workgroups bring at least a quarter of the target's `parallelism`
/// threads (what [`upcast_while_busy`] keeps).
fn keeps_a_quarter_busy(k: &Kernel) -> bool {
    threads(k) >= k.target().parallelism as i64 / 4
}

/// The threads of all the kernel's workgroups.
fn threads(k: &Kernel) -> i64 {
    let workgroups: i64 = k.full_shape()[..k.global_dims()].iter().map(|s| s.vmax()).product();
    workgroups * k.target().subgroup_size.unwrap_or(1) as i64 * k.tc_warps()
}

/// UPCAST by the first of `amounts` that keeps a quarter of the target busy, on `axis`.
fn upcast_while_busy(k: &mut Kernel, axis: usize, amounts: &[usize]) {
    let threads = k.target().subgroup_size.unwrap_or(1) as i64;
    let busy = k.target().parallelism as i64 / 4;
    for &amt in amounts {
        let groups: i64 = k.full_shape()[..k.first_reduce()].iter().map(|s| s.vmax()).product();
        if groups / amt as i64 * threads >= busy && k.apply_opt(Opt::new(OptOps::Upcast, axis, amt)).is_ok() {
            return;
        }
    }
}

/// 2x2 subgroups of up to 4x4 tiles each, two k tiles a step.
fn usual_plan(k: &mut Kernel) {
    // the last axis first: an axis upcast whole is dropped, which moves the ones after it
    for axis in k.tc_output_axes().into_iter().rev() {
        upcast_while_busy(k, axis, &[4, 2]);
    }
    for axis in k.tc_output_axes().into_iter().rev() {
        let _ = k.apply_opt(Opt::new(OptOps::Local, axis, 2));
    }
    if k.local_dims() > 0 && k.first_upcast() > k.first_reduce() {
        let _ = k.apply_opt(Opt::new(OptOps::Unroll, 0, 2));
    }
}

/// 2x2 subgroups of 4x6 tiles each, one k tile a step, in BEAM's order: 4 row tiles, 4
/// subgroups along the columns, 3 column tiles, 2 subgroups along the rows, then 2 of the
/// column subgroups made tiles. Says whether every step applied.
fn wide_block_plan(k: &mut Kernel) -> bool {
    let (Some(&n), Some(m)) = (
        k.tc_column_axes().last(),
        k.tc_output_axes().into_iter().rev().find(|a| !k.tc_column_axes().contains(a)),
    ) else {
        return false;
    };
    let size = |k: &Kernel, a: usize| k.full_shape()[a].as_int();
    if size(k, n).is_none_or(|s| s % 12 != 0 || s == 12) || size(k, m).is_none_or(|s| s % 8 != 0 || s == 8) {
        return false;
    }
    // the column subgroups are the first local axis: no axis is used up before it
    let first_local = k.global_dims();
    [(OptOps::Upcast, m, 4), (OptOps::Local, n, 4), (OptOps::Upcast, n, 3), (OptOps::Local, m, 2)]
        .into_iter()
        .all(|(op, axis, amt)| k.apply_opt(Opt::new(op, axis, amt)).is_ok())
        && k.apply_opt(Opt::new(OptOps::Upcast, first_local, 2)).is_ok()
}

/// 2x4 subgroups of 4x2 tiles each, one k tile a step.
fn short_reduce_plan(k: &mut Kernel) {
    // the innermost axis of the columns (`n`) and of the rows (`m`), found again after each opt
    let column = |k: &Kernel| k.tc_column_axes().last().copied();
    let row = |k: &Kernel| k.tc_output_axes().into_iter().rev().find(|a| !k.tc_column_axes().contains(a));
    if let Some(n) = column(k) {
        upcast_while_busy(k, n, &[2]);
    }
    if let Some(m) = row(k) {
        upcast_while_busy(k, m, &[4, 2]);
    }
    for (axis, amt) in [(column(k), 4), (row(k), 2)] {
        if let Some(axis) = axis {
            let _ = k.apply_opt(Opt::new(OptOps::Local, axis, amt));
        }
    }
}
