//! Grouped reductions: a reduce with too few outputs to keep the device busy with one thread each
//! (fewer than the target's `parallelism`), or rows too short to keep a thread's loads in
//! flight, is split across a workgroup (GROUP), so that neighbouring threads read neighbouring
//! elements and the partial results meet in workgroup memory. The group is the smallest power
//! of two that brings the threads up to the target's parallelism (within 16..=256): every
//! thread of a group later reads the group's partials back, all of them unless they were first
//! combined in subgroups, so wider groups can cost more than they give (measured on an H200
//! without subgroups, row sum 4096x8192 f32: 3.26 TB/s with 32 threads a row and 8 elements a
//! step, 0.82 TB/s with 256 threads and 1).
//!
//! - A *row* reduce (a reduce axis that every load reads contiguously or not at all) is first
//!   unrolled by 8 (or 4, 2), so each thread reads a run of neighbouring elements (16-byte loads
//!   once vectorized), then grouped on the same axis: thread `t` reads `(i * G + t) * 8 + u`.
//!   Rows shorter than [`MIN_REDUCE`] (from [`MIN_COLUMN_REDUCE`]) are grouped too when so few
//!   that a group of [`MIN_REDUCE`] threads each would not fill the target, and no product of
//!   two loads: beautiful_mnist's batch-norm sums over 64 partials (32 rows) took 7.1-7.7 us
//!   with a thread a row, 5.5-6.2 grouped by 16 (an H200, batch 64: nine such kernels, the
//!   step's kernels 1009 -> 992 us); MiniLM's mask count (128 rows of 128) 8.7 -> 6.1 us.
//! - A *column* reduce (no such reduce axis, but an output axis read contiguously) gives each
//!   thread 4 neighbouring outputs (UPCAST, one 16-byte load a row) when the target has 4-wide
//!   vectors, puts 16 such threads side by side (LOCAL) and groups the largest reduce axis over
//!   twice the threads a row reduce would take; a group wider than 16 takes fewer columns, so
//!   the workgroup stays within [`COLUMN_THREADS`], and a thread's rows are unrolled
//!   ([`unroll_rows`]). A column reduce shorter than [`MIN_REDUCE`] is
//!   grouped too when its outputs fill at most half the target and it is no product of two
//!   loads: MiniLM's mean pooling (49152 outputs, 128 tokens each, with the last layer norm)
//!   took 90 us in f32 with tinygrad's upcasts (4096 threads of 12 outputs) and 21 us grouped
//!   (H100).
//! - A *skinny product* (`x @ W.T` for a few rows: a product of two loads over one row,
//!   outputs at most a quarter of the target's parallelism) takes several rows and columns a
//!   thread, so each load serves several outputs, before its reduce is grouped
//!   ([`skinny_product`]).
//! - Otherwise the largest reduce axis is grouped.
//! - Many short rows (outputs enough for one thread each and at least [`MIN_SHORT_ROWS`], rows
//!   of 64 to 255 neighbouring elements, as the attention softmax's): a few threads a row,
//!   every load unrolled ([`short_rows`]).
//! - Rows of 256 to 1024 neighbouring elements, too few for a thread each but at least
//!   [`MIN_ONE_PASS_ROWS`] (a layer norm's): 64 threads a row, 4 rows a thread, every load
//!   unrolled ([`one_pass_rows`]); nested reduces share the unrolled loads.
//!
//! Each thread runs at least [`MIN_ITERATIONS`] steps of its own before the partials meet
//! (along the grouped axis and the other reduce axes together). What a thread has left to loop
//! over after the row, column or largest-axis plans is unrolled whole when it is at most
//! [`MAX_REST`] steps ([`unroll_rest`]), and a group narrower than a subgroup shares its
//! workgroup with rows that neighbour it in memory ([`fill_workgroup`]). BEAM's picks for
//! beautiful_mnist's batch-norm statistics on an H100 (64 channels of 512 x 6 x 6; 32 of 512
//! x 20 x 20 in two stages): 65-129 -> 8-19 us and 65 -> 31 us a kernel, the step's kernels 4.18
//! -> 3.71 ms.
//! A kernel with nested reduces (all over the same axes: a max inside a sum) is grouped as its
//! first reduce, each reduce looping over the row in turn; where the partials are combined in
//! subgroups (see [`Kernel::subgroup_partials`]), by the widest group, so that few rows are in
//! flight and the second loop over a row reads it from the cache. (Keeping the row in one
//! workgroup's registers instead, 32 to 256 threads, read it once but ran slower on an H200
//! when every thread read all the group's partials back, twice.)

use super::operands::{mul_operands, reduce_load_strides, strides};
use super::{int, try_opt};
use crate::{Kernel, OptOps};

/// Shortest reduce worth grouping.
const MIN_REDUCE: usize = 256;
/// Shortest column reduce worth grouping when its outputs are at most half the target's
/// parallelism and it is no product of two loads (a small matmul keeps tinygrad's rules).
const MIN_COLUMN_REDUCE: usize = 64;
/// Fewest loop steps a thread of a grouped reduce runs on its own.
const MIN_ITERATIONS: usize = 4;
/// Most reduce steps a thread of a grouped reduce may have left for [`unroll_rest`] to unroll
/// them (BEAM unrolled 72 for a batch norm's statistics on an H100).
const MAX_REST: usize = 128;
/// Most lanes one UNROLL takes (the opt's limit).
const MAX_UNROLL: usize = 32;
/// Smallest and largest group of a row reduce.
const GROUPS: (usize, usize) = (16, 256);
/// Outputs a thread of a skinny product takes along its shorter and its longer output axis.
const SKINNY_TILE: (usize, usize) = (4, 2);
/// Smallest and largest group of a skinny product's reduce.
const SKINNY_GROUPS: (usize, usize) = (32, 256);
/// Unrolls tried on a row, widest first.
const UNROLLS: [usize; 3] = [8, 4, 2];
/// Neighbouring outputs per workgroup of a column reduce, in order of preference (fewer where
/// the group would take the workgroup past [`COLUMN_THREADS`]).
const COLUMN_LOCALS: [usize; 3] = [16, 32, 8];
/// Outputs a thread of a column reduce takes, one vector of them.
const VECTOR: usize = 4;
/// Threads a grouped row reduce's workgroup is filled up to with rows.
const FILLED: usize = 128;
/// Smallest and largest group of a column reduce.
const COLUMN_GROUPS: (usize, usize) = (2, 64);
/// Most threads a column reduce's workgroup takes, its columns times its group: every thread
/// reads all of the group's partials back, and a wider group takes fewer columns instead. On an
/// H100, 16 columns by a group of 64 (1024 threads) read column sums of 256-16384 rows and
/// 256-4096 columns in 39-96 us, 4 columns by 64 in 9.4-24.9 us.
const COLUMN_THREADS: usize = 256;
/// Rows a thread of a column reduce unrolls a step when it has more than twice as many left
/// ([`unroll_rows`]; on an H100 16 rows a step read a 16384 x 384 column sum in 24.9 us).
const COLUMN_UNROLL: usize = 16;
/// Many short rows: elements a thread reads a step, threads a row, rows a workgroup.
const SHORT_ROW: (usize, usize, usize) = (4, 4, 8);
/// Rows read in one pass: rows a thread, threads a row ([`one_pass_rows`]).
const ONE_PASS: (usize, usize) = (4, 64);
/// Most loads a thread of a one-pass row makes a row.
const MAX_ONE_PASS_LOADS: usize = 16;
/// Fewest rows that take the one-pass plan, whatever the target's parallelism (measured at
/// 16384; lavapipe's rows stay on the loop).
const MIN_ONE_PASS_ROWS: usize = 1 << 12;
/// Fewest rows that take the short-row plan, whatever the target's parallelism: measured where
/// a thread a row thrashed a GPU's cache (196608 rows); on lavapipe, whose parallelism is 256,
/// MNIST's weight-gradient sums (800 to 25600 rows of 64) made a training step 2.5% slower.
const MIN_SHORT_ROWS: usize = 1 << 16;

/// Group sizes to try, best first: the smallest power of two within `(lo, hi)` that makes
/// `outputs * group >= wanted`, then narrower ones, then wider ones.
fn group_sizes(outputs: usize, wanted: usize, (lo, hi): (usize, usize)) -> Vec<usize> {
    let best = wanted.div_ceil(outputs.max(1)).next_power_of_two().clamp(lo, hi);
    let narrower = std::iter::successors(Some(best), |&g| (g > lo).then_some(g / 2));
    let wider = std::iter::successors(Some(best * 2), |&g| (g < hi).then_some(g * 2)).filter(|&g| g <= hi);
    narrower.chain(wider).collect()
}

/// Groups the reduce of `k` when it is long and its outputs are few; says whether it did.
pub(super) fn group_reduce(k: &mut Kernel) -> bool {
    let target = k.target();
    if !(target.has_local && target.has_shared) || k.reduceops().is_empty() {
        return false;
    }
    let parallelism = target.parallelism;
    let (fr, fu) = (k.first_reduce(), k.first_upcast());
    let Some(sizes) = k.full_shape()[..fu].iter().map(int).collect::<Option<Vec<usize>>>() else {
        return false;
    };
    let outputs: usize = sizes[..fr].iter().product();
    let reduce: usize = sizes[fr..].iter().product();
    if fr >= fu {
        return false;
    }
    let loads = reduce_load_strides(k);
    let contiguous = |a: usize| {
        sizes[a] > 1
            && loads.iter().all(|s| matches!(s[a], Some(0 | 1)))
            && loads.iter().any(|s| s[a] == Some(1))
    };
    if outputs >= parallelism {
        let short_row = fu - fr == 1
            && contiguous(fr)
            && (MIN_COLUMN_REDUCE..MIN_REDUCE).contains(&reduce)
            && outputs >= MIN_SHORT_ROWS;
        return short_row && mul_operands(k).is_none() && short_rows(k, reduce);
    }
    let one_pass = fu - fr == 1
        && contiguous(fr)
        && reduce.is_multiple_of(ONE_PASS.1)
        && (MIN_REDUCE..=ONE_PASS.1 * MAX_ONE_PASS_LOADS).contains(&reduce)
        && outputs >= MIN_ONE_PASS_ROWS
        && outputs * ONE_PASS.1 / ONE_PASS.0 >= parallelism
        && mul_operands(k).is_none();
    if one_pass && one_pass_rows(k) {
        return true;
    }
    let short = reduce >= MIN_COLUMN_REDUCE && outputs * 2 <= parallelism && mul_operands(k).is_none();
    if reduce < MIN_REDUCE && !short {
        return false;
    }
    // nested reduces read the row once each: with partials combined in subgroups (cheap to
    // read back), the widest group keeps the fewest rows in flight, so the later reads hit
    // the cache (H200, softmax 4096x8192 f32: the logsumexp kernel takes 68 us with groups
    // of 32 and 50 us with 256; 2.66 TB/s)
    let wanted = match k.reduceops().len() > 1 && !k.has_parallel_reduces() && k.subgroup_partials() {
        true => outputs * GROUPS.1,
        false => parallelism,
    };
    let rows = group_sizes(outputs, wanted, GROUPS);
    let row = (fr..fu).rev().find(|&a| contiguous(a));
    let column = (0..fr).rev().find(|&a| contiguous(a));
    let grouped = match (row, column) {
        (Some(_), _) if reduce >= MIN_REDUCE && skinny_product(k, outputs) => true,
        (Some(axis), _) if reduce >= MIN_REDUCE || (short && outputs * MIN_REDUCE <= parallelism) => {
            group_row(k, axis, sizes[axis], &rows)
        }
        (None, Some(axis)) => return group_column(k, axis, sizes[axis], outputs, &rows),
        (None, None) if reduce >= MIN_REDUCE => group_largest(k, &rows),
        _ => false,
    };
    if grouped {
        finish_group(k);
    }
    grouped
}

/// The sizes of the reduce axes a thread of a grouped reduce still loops over, when known.
fn looped(k: &Kernel) -> Option<Vec<usize>> {
    let (from, fu) = (k.first_reduce() + k.group_for_reduces(), k.first_upcast());
    k.full_shape()[from..fu].iter().map(int).collect()
}

/// What every grouped plan but the column one ends with: the rest unrolled, small groups
/// sharing their workgroup.
fn finish_group(k: &mut Kernel) {
    unroll_rest(k);
    fill_workgroup(k);
}

/// Unrolls every reduce axis a thread of a grouped reduce still loops over (innermost first)
/// when, with what is unrolled already, they take at most [`MAX_REST`] steps: all of the
/// thread's loads are then in flight at once, and nested reduces share them.
fn unroll_rest(k: &mut Kernel) {
    let (from, fu) = (k.first_reduce() + k.group_for_reduces(), k.first_upcast());
    let Some(rest) = looped(k) else { return };
    let unrolled: usize = (fu..k.shape_len())
        .filter(|&a| k.output_shape()[a] != k.full_shape()[a])
        .filter_map(|a| int(&k.full_shape()[a]))
        .product();
    if rest.iter().product::<usize>() * unrolled > MAX_REST {
        return;
    }
    for axis in (from..fu).rev() {
        // a longer axis than one unroll takes goes in two steps (36 = 12 x 3), whole vectors of
        // 4 among the inner lanes where possible
        while let Some(size) = int(&k.full_shape()[axis]).filter(|&s| s > 1) {
            let fr = k.first_reduce();
            let fits = |d: &usize| size.is_multiple_of(*d) && size / d <= MAX_UNROLL;
            let step =
                (2..=size.min(MAX_UNROLL)).rev().filter(fits).max_by_key(|&d| (d == size, d % 4 == 0, d));
            if !step.is_some_and(|d| try_opt(k, OptOps::Unroll, axis - fr, if d == size { 0 } else { d })) {
                break;
            }
        }
    }
}

/// A product of two loads over one reduce axis with few outputs (at most a quarter of the
/// target's parallelism) on two output axes, each factor broadcast along one of them: `x @
/// W.T` for a few rows of `x`, a one-sentence forward's projections. Each thread takes
/// [`SKINNY_TILE`] outputs, 4 along the shorter axis and 2 along the longer (each load of a
/// factor serves the other's lanes: the weight is read once per 4 rows, not once per row),
/// and a group of threads splits the reduce into runs of neighbours (GROUPTOP; each run is
/// unrolled whole after, as every grouped plan's rest is), the group the smallest power of two
/// within [`SKINNY_GROUPS`] that brings the threads up to the target's parallelism and leaves
/// each thread [`MIN_ITERATIONS`] steps.
/// BEAM's picks for MiniLM's 16-row float32 projections on an H200, as a rule: QKV 17.8 ->
/// 8.9 us, FFN up 21.2 -> 10.5, FFN down 13.3 -> 9.7, attention output 9.6 -> 7.4, where a
/// group of 16 to 32 threads summed each output alone (docs/PERFORMANCE.md).
fn skinny_product(k: &mut Kernel, outputs: usize) -> bool {
    let parallelism = k.target().parallelism;
    let Some((a, b)) = mul_operands(k) else { return false };
    let (fr, fu) = (k.first_reduce(), k.first_upcast());
    if fu - fr != 1 || outputs * 4 > parallelism {
        return false;
    }
    let (sa, sb) = (strides(k, a), strides(k, b));
    let axes: Vec<usize> = (0..fr).filter(|&x| int(&k.full_shape()[x]).is_some_and(|n| n > 1)).collect();
    let broadcast = |s: &[Option<i64>], x: usize| s[x] == Some(0);
    let [m, n] = axes[..] else { return false };
    if !((broadcast(&sa, m) && broadcast(&sb, n)) || (broadcast(&sa, n) && broadcast(&sb, m))) {
        return false;
    }
    let (Some(size_m), Some(size_n), Some(reduce)) =
        (int(&k.full_shape()[m]), int(&k.full_shape()[n]), int(&k.full_shape()[fr]))
    else {
        return false;
    };
    let (short, long) = if size_m <= size_n { (m, n) } else { (n, m) };
    let (tile_short, tile_long) = SKINNY_TILE;
    let groups = group_sizes(outputs / (tile_short * tile_long), parallelism, SKINNY_GROUPS);
    // an axis upcast whole is gone, moving those after it
    let gone = usize::from(short < long && size_m.min(size_n) == tile_short);
    let mut tried = k.clone();
    let planned = groups.iter().any(|&g| {
        reduce.is_multiple_of(g)
            && reduce / g >= MIN_ITERATIONS
            && try_opt(&mut tried, OptOps::Grouptop, 0, g)
    }) && try_opt(&mut tried, OptOps::Upcast, short, tile_short)
        && try_opt(&mut tried, OptOps::Upcast, long - gone, tile_long);
    if planned {
        *k = tried;
    }
    planned
}

/// Unrolls the contiguous reduce `axis` (of `size`) by the widest of [`UNROLLS`] that divides
/// it and groups it by the first of `groups` that fits, or groups the largest reduce axis.
fn group_row(k: &mut Kernel, axis: usize, size: usize, groups: &[usize]) -> bool {
    let fr = k.first_reduce();
    for unroll in UNROLLS.into_iter().filter(|&u| size.is_multiple_of(u)) {
        let mut unrolled = k.clone();
        if try_opt(&mut unrolled, OptOps::Unroll, axis - fr, unroll)
            && group_axis(&mut unrolled, axis, size / unroll, groups, 1)
        {
            *k = unrolled;
            return true;
        }
    }
    group_axis(k, axis, size, groups, 1) || group_largest(k, groups)
}

/// Many short rows (a reduce of [`MIN_COLUMN_REDUCE`] to [`MIN_REDUCE`] neighbouring elements,
/// outputs enough to fill the target one thread each, at least [`MIN_SHORT_ROWS`]), planned by
/// [`SHORT_ROW`]` = (vector, group, rows)`: each thread reads a vector of neighbours a step
/// with every step unrolled (all its loads in flight at once), `group` threads a row, `rows`
/// rows a workgroup (LOCAL on the output axis that takes it along which the loads move least,
/// [`nearest_first`]). BEAM's pick for MiniLM's attention softmax (196608 rows of 128 keys,
/// f32, a max and a sum of exponentials): 91 -> 35 us on an H200, 2.9 TB/s, where one thread a
/// row looping over it read 1.1 TB/s. Its statistics alone (`P @ V` computing the rest):
/// 42.9 -> 36.3 us with the workgroup's 8 rows neighbours in memory instead of 8 batches apart.
fn short_rows(k: &mut Kernel, size: usize) -> bool {
    let (vector, group, rows) = SHORT_ROW;
    if !size.is_multiple_of(vector * group) {
        return false;
    }
    // rows shorter than MIN_REDUCE: at most 15 steps a thread
    let steps = size / (vector * group);
    let divides = |&a: &usize| int(&k.full_shape()[a]).is_some_and(|s| s.is_multiple_of(rows));
    let Some(axis) = nearest_first(k, k.first_reduce()).into_iter().find(divides) else {
        return false;
    };
    let mut tried = k.clone();
    let planned = try_opt(&mut tried, OptOps::Local, axis, rows)
        && try_opt(&mut tried, OptOps::Unroll, 0, vector)
        && try_opt(&mut tried, OptOps::Group, 0, group)
        && (steps == 1 || try_opt(&mut tried, OptOps::Unroll, 1, 0));
    if planned {
        *k = tried;
    }
    planned
}

/// Rows of [`MIN_REDUCE`] to `64 * 16` neighbouring elements, too few to give every thread a
/// row (at least [`MIN_ONE_PASS_ROWS`], enough to fill the target with 64 threads for 4 of
/// them): planned by [`ONE_PASS`]` = (rows, group)`. Each of `group` threads reads a run of
/// neighbours of each of its `rows` rows (GROUPTOP), every load unrolled, so all of them are in
/// flight at once, and reduces nested over the row (a layer norm's mean in its variance) share
/// the loads: the row is read once. BEAM's pick for MiniLM's layer norms (16384 rows of 384) on an
/// H200: 17.3 -> 13.8 us in f16, 21.4 -> 14.6 us in f32, where 16 threads a row looped over
/// 6 vectors each.
fn one_pass_rows(k: &mut Kernel) -> bool {
    let (rows, group) = ONE_PASS;
    let fr = k.first_reduce();
    let Some(axis) = (0..fr).find(|&a| int(&k.full_shape()[a]).is_some_and(|s| s.is_multiple_of(rows)))
    else {
        return false;
    };
    let mut tried = k.clone();
    let planned = try_opt(&mut tried, OptOps::Grouptop, 0, group)
        && try_opt(&mut tried, OptOps::Unroll, 1, 0)
        && try_opt(&mut tried, OptOps::Upcast, axis, rows);
    if planned {
        *k = tried;
    }
    planned
}

/// Puts several rows of a grouped reduce whose group is narrower than a subgroup (32 where
/// the target does not say) in one workgroup (LOCAL on the output axis that takes it along
/// which the loads move least, the last of equals), up to [`FILLED`] threads: a workgroup of
/// 16 threads leaves half of each subgroup idle, and a GPU runs few workgroups at once (MiniLM's layer norms, 16384 rows of 384: H200 figures
/// in PERFORMANCE.md).
fn fill_workgroup(k: &mut Kernel) {
    let group = usize::try_from(k.local_size()).unwrap_or(FILLED).max(1);
    let spare = FILLED / group;
    if group >= k.target().subgroup_size.unwrap_or(32) || spare < 2 {
        return;
    }
    for axis in nearest_first(k, k.global_dims()) {
        let Some(size) = int(&k.full_shape()[axis]) else { continue };
        let mut rows = 1usize << spare.ilog2();
        while rows > 1 {
            if size.is_multiple_of(rows) && try_opt(k, OptOps::Local, axis, rows) {
                return;
            }
            rows /= 2;
        }
    }
}

/// The first `n` axes, those along which the reduce's loads move least first (the largest
/// stride any of them takes there; the last of equals first): a workgroup's rows along the
/// first are neighbours in memory.
fn nearest_first(k: &Kernel, n: usize) -> Vec<usize> {
    let loads = reduce_load_strides(k);
    let reach = |a: usize| loads.iter().map(|s| s[a].map_or(i64::MAX, i64::abs)).max().unwrap_or(0);
    let mut axes: Vec<usize> = (0..n).rev().collect();
    axes.sort_by_key(|&a| reach(a));
    axes
}

/// Gives each thread a vector of neighbouring outputs along the contiguous output `axis` (of
/// `size`; `outputs` in all) where the target has 4-wide vectors, puts neighbouring outputs on
/// neighbouring threads (fewer of them where the group is wide, [`COLUMN_THREADS`]), groups the
/// largest reduce axis by the group that would bring one thread per output to twice the
/// target's parallelism (a wider group to make up for the vectors would make every thread read
/// more partials back than rows of its own) and unrolls the rows ([`unroll_rows`]); failing
/// that, groups the largest reduce axis by one of `rows` alone.
fn group_column(k: &mut Kernel, axis: usize, size: usize, outputs: usize, rows: &[usize]) -> bool {
    let vector = if k.target().vector_widths.contains(&VECTOR) { VECTOR } else { 1 };
    let groups = group_sizes(outputs, 2 * k.target().parallelism, COLUMN_GROUPS);
    let widest = groups.first().map_or(1, |&g| COLUMN_THREADS / g).max(VECTOR);
    for upcast in [vector, 1] {
        let per_thread = size / upcast;
        let locals = COLUMN_LOCALS.iter().map(|&l| l.min(widest));
        for local in locals.filter(|&l| size.is_multiple_of(l * upcast) && per_thread > l) {
            let mut tried = k.clone();
            if (upcast == 1 || try_opt(&mut tried, OptOps::Upcast, axis, upcast))
                && try_opt(&mut tried, OptOps::Local, axis, local)
                && group_largest(&mut tried, &groups)
            {
                unroll_rows(&mut tried);
                *k = tried;
                return true;
            }
        }
    }
    let grouped = group_largest(k, rows);
    if grouped {
        finish_group(k);
    }
    grouped
}

/// Unrolls the rows a thread of a column reduce loops over: all of them when they are at most
/// [`COLUMN_UNROLL`] * 2, else [`COLUMN_UNROLL`] (or the widest divisor below it) a step. Each
/// row is a vector load of the thread's columns, so a wider unroll holds 4 registers a row.
fn unroll_rows(k: &mut Kernel) {
    let Some(rest) = looped(k) else { return };
    if rest.iter().product::<usize>() <= 2 * COLUMN_UNROLL {
        unroll_rest(k);
        return;
    }
    let Some(&size) = rest.last() else { return };
    let axis = k.first_upcast() - 1 - k.first_reduce();
    let mut amount = COLUMN_UNROLL;
    while amount > 1 && !(size.is_multiple_of(amount) && try_opt(k, OptOps::Unroll, axis, amount)) {
        amount /= 2;
    }
}

/// Groups the largest ungrouped reduce axis by the first of `groups` that fits; failing that,
/// a reduce axis (largest first) by the divisor of it within the range of `groups` closest to
/// the first of them, while each thread keeps [`MIN_ITERATIONS`] steps of the whole reduce: a
/// batch norm's gradient over 2 x 20 x 20 positions (axes that cannot merge) takes groups of
/// 20, not one thread per output (measured on an H100: 0.8 ms with 8192 threads).
fn group_largest(k: &mut Kernel, groups: &[usize]) -> bool {
    let (from, fu) = (k.first_reduce() + k.group_for_reduces(), k.first_upcast());
    let mut axes: Vec<(usize, usize)> =
        (from..fu).filter_map(|a| int(&k.full_shape()[a]).map(|s| (s, a))).collect();
    axes.sort_unstable_by(|a, b| b.cmp(a));
    let reduce: usize = axes.iter().map(|&(size, _)| size).product();
    // a thread's steps on the other reduce axes count too: a batch norm's 512 images of 36
    // take a group of 256, two images a thread
    if axes.first().is_some_and(|&(size, axis)| group_axis(k, axis, size, groups, reduce / size)) {
        return true;
    }
    let (Some(&best), Some(&lo), Some(&hi)) = (groups.first(), groups.iter().min(), groups.iter().max())
    else {
        return false;
    };
    axes.iter().any(|&(size, axis)| {
        let mut divisors: Vec<usize> =
            (lo..=hi.min(size)).filter(|&g| size.is_multiple_of(g) && reduce / g >= MIN_ITERATIONS).collect();
        divisors.sort_unstable_by_key(|&g| (g.abs_diff(best), g));
        divisors.into_iter().any(|g| try_opt(k, OptOps::Group, axis - from, g))
    })
}

/// Groups reduce `axis` (of `size`) by the first of `groups` that divides it, leaves each
/// thread [`MIN_ITERATIONS`] steps (its steps along the axis times `others`, those it takes
/// on other axes) and fits the workgroup.
fn group_axis(k: &mut Kernel, axis: usize, size: usize, groups: &[usize], others: usize) -> bool {
    let from = k.first_reduce() + k.group_for_reduces();
    groups
        .iter()
        .filter(|&&g| size.is_multiple_of(g) && size / g * others >= MIN_ITERATIONS)
        .any(|&g| try_opt(k, OptOps::Group, axis - from, g))
}
