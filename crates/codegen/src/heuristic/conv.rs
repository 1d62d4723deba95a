//! Register tiles for convolution-shaped kernels: a sum over the product of an *image* load
//! and a *filter* load where the image is read through sliding windows, an output axis and a
//! reduce axis with the same stride (`x[.. + (ox + kx) * s]`). Convolutions have this shape
//! forward (`ox` and `kx`), by the input (the same, over the padded gradient) and by the
//! weight (`kx` is the output, `ox` the reduce).
//!
//! Each thread computes outputs for `n` filters (the output axis the image is broadcast along)
//! at `m` neighbouring window positions, and `m2` positions of a second window pair (rows);
//! the window's reduce axis is unrolled with it, so the `m + k - 1` image values a row of
//! windows needs are loaded once and used `n` times from registers (the lanes' indices fold
//! to the same loads), and each filter value is used `m * m2` times. The workgroup spreads
//! neighbouring window positions over neighbouring threads and leaves the filter axis out, so
//! the threads of a workgroup read one filter value at a time (a broadcast), and fills at least
//! four fifths of the subgroups it takes: a workgroup of 72 threads leaves a quarter of its
//! third subgroup idle. The tile shrinks while it would leave fewer threads than half the
//! target's `parallelism` (a quarter for a weight gradient, whose threads each run a long
//! reduce: beautiful_mnist's at batch 512 on an H100, conv2's 549 -> 399 us, conv4's 106 -> 86
//! us, with larger tiles), and on a GPU keeps at most 64 accumulators where a load is masked.
//! A tile that would leave too few threads, or (forward and by the input) load more than one
//! value per two multiply-adds, gives way to a larger tile whose threads share a reduce axis in
//! small groups ([`MIN_REUSE`], [`SMALL_GROUP`]).
//!
//! Measured on lavapipe (2 cores, the conv2 forward of beautiful_mnist at batch 64): 8 filters
//! x 4 positions x 2 rows with the 5-wide kernel row unrolled ran 2-4x faster than the
//! matmul-shaped tile (8 images x 8 filters).

use wgrad_ops::{Arg, Ops, UOp};
use wgrad_shape::Sint;

use super::int;
use crate::{Kernel, Opt, OptOps};

/// `(n, m, m2)` tiles in order of preference: filters, window positions, rows.
const TILES: [(usize, usize, usize); 10] = [
    (8, 4, 4),
    (8, 4, 2),
    (4, 4, 4),
    (4, 4, 2),
    (8, 4, 1),
    (4, 4, 1),
    (4, 2, 1),
    (2, 2, 1),
    (2, 1, 1),
    (1, 2, 1),
];
/// Most accumulators a thread keeps.
const MAX_ACCUMULATORS: usize = 160;
/// The same where a load is masked (an input gradient's padded image: its validity and
/// indices take registers too) on a device that runs [`MANY_THREADS`]. beautiful_mnist's conv2
/// input gradient at batch 512 on an H100: 768 us with 4 x 4 x 8 accumulators, 678 us with 4 x
/// 2 x 8. On lavapipe (256 threads) the larger tile stays: with the cap a training step at
/// batch 64 took 335-346 ms instead of 299-305.
const MAX_MASKED_ACCUMULATORS: usize = 64;
/// A target's parallelism from which [`MAX_MASKED_ACCUMULATORS`] applies (a GPU's).
const MANY_THREADS: usize = 1 << 15;
/// A window axis this short is upcast whole when the accumulators allow (10: beautiful_mnist's
/// conv3 input gradient at batch 512 on an H200, 137 -> 110 us with its rows of 10 whole).
const WHOLE_WINDOW: usize = 10;
/// Multiply-adds per value loaded that a tile must reach to stand without a group (a weight
/// gradient's tile always may). beautiful_mnist at batch 64 on an H200: conv3's input
/// gradient took 83.5 us with 2 filters at 1 position (0.67 a load), 23.9 with whole rows of
/// 10 in groups of 4; conv2's forward 131.5 us with 4 filters at 2 positions (1.5), 104.6
/// with 4 filters at 4 positions on 2 rows in groups of 4. At batch 512 conv4's forward keeps
/// 2 filters at 6 positions (2.6): 91 us, against 134 in groups.
const MIN_REUSE: usize = 2;
/// Largest group for which a grouped tile is chosen by its size and group (else by its
/// group alone).
const SMALL_GROUP: usize = 4;
/// A grouped tile this large or larger is chosen by the fewest threads sharing its reduce
/// first (each group's partials meet in workgroup memory), then by its size; smaller tiles
/// reuse their loads too little. beautiful_mnist at batch 64 on an H200: conv2's forward
/// took 105 us with 4 filters x 4 positions x 2 rows in groups of 4, 76.5 with 4 x 4 in
/// groups of 2; conv3's and conv4's forward (2 filters x 8 positions in groups of 4) lost
/// 2.5-3.7 us each with 8 positions in groups of 2.
const MIN_GROUPED_TILE: usize = 16;
/// A window's reduce axis this short is unrolled whole, a longer one by up to [`UNROLL`].
const WHOLE_UNROLL: usize = 8;
const UNROLL: usize = 4;
/// Most threads of a group sharing a reduce axis, when no tile keeps enough threads alone.
const MAX_GROUP: usize = 32;
/// Largest workgroup; an axis this short may be a workgroup dim whole.
const MAX_WORKGROUP: usize = 128;
/// Largest workgroup of a weight gradient whose threads share a reduce in groups, the groups'
/// threads counted: beautiful_mnist at batch 64 on an H200, conv1's weight gradient (groups of
/// 24) took 27.4 us in workgroups of 120 threads and 18.1 in two groups a workgroup, conv4's
/// (groups of 32) 42.7 and 32.7. Other grouped tiles keep [`MAX_WORKGROUP`] of outputs: capped
/// the same way, conv2's forward went 76.5 -> 85.5 us.
const MAX_GROUPED_WEIGHT_WORKGROUP: usize = 64;
const WHOLE_LOCAL: usize = 16;
/// Share of its subgroups' lanes a workgroup's threads fill at least, as `(4, 5)` = 80%: the
/// conv2 input gradient of beautiful_mnist at batch 512 took 1016 us on an H200 with 72
/// threads (three subgroups of 32, 75% full) and 767 us with 96.
const MIN_FILL: (usize, usize) = (4, 5);

/// Gives a convolution-shaped kernel its tile; says whether it did.
pub(super) fn conv_tile(k: &mut Kernel) -> bool {
    let Some(plan) = Plan::of(k) else { return false };
    let Some(tile) = plan.tile() else { return false };
    let mut tiled = k.clone();
    if plan.apply(&mut tiled, tile).is_none() {
        return false;
    }
    *k = tiled;
    true
}

/// A tile: `n` filters, `m` window positions, `m2` along the `rows` axis; with `group`, the
/// threads of a workgroup share a reduce axis: `(axis, threads)`.
#[derive(Clone, Copy)]
struct Tile {
    n: usize,
    m: usize,
    rows: Option<usize>,
    m2: usize,
    group: Option<(usize, usize)>,
}

/// The axes of a convolution-shaped kernel before any opt.
struct Plan {
    /// Every axis's size (outputs then reduces).
    sizes: Vec<usize>,
    /// First reduce axis.
    fr: usize,
    /// The output axis the image is broadcast along (filters).
    n: usize,
    /// The innermost window: (output axis, reduce axis).
    window: (usize, usize),
    /// Output axes for a third upcast, best first: a second window's (rows), then one the
    /// image moves along and the filter does not (images in a batch, input channels of a
    /// weight gradient).
    rows: Vec<usize>,
    /// Fewest threads a tile may leave.
    min_threads: usize,
    /// Most accumulators a thread keeps.
    accumulators: usize,
    /// A weight gradient: the window's output (the kernel's width) shorter than its reduce
    /// over positions, so each thread runs a long reduce.
    long_reduces: bool,
}

/// For a kernel whose one reduce is a sum of a product, the real strides (validity ignored:
/// padded images are windows too) of the loads on each side of the product: each side may be
/// any elementwise expression of loads (the gradient of a relu, a cast).
fn product_sides(k: &Kernel) -> Option<[Vec<Vec<Option<i64>>>; 2]> {
    let [r] = k.reduceops() else { return None };
    let Arg::ReduceAxis(Ops::Add, _) = r.arg() else { return None };
    let mut mul = &r.src()[0];
    while mul.op() == Ops::Cast {
        mul = &mul.src()[0];
    }
    if mul.op() != Ops::Mul {
        return None;
    }
    let side = |u: &UOp| -> Vec<Vec<Option<i64>>> {
        let loads = u.toposort().into_iter().filter(|l| l.op() == Ops::Load);
        let bufs = loads.filter_map(|l| k.bufs().iter().position(|b| *b == l));
        let strides = |i: usize| {
            k.sts()[i].real_strides(true).iter().map(|s| s.as_ref().and_then(Sint::as_int)).collect()
        };
        bufs.map(strides).collect()
    };
    let sides = [side(&mul.src()[0]), side(&mul.src()[1])];
    sides.iter().all(|s| !s.is_empty()).then_some(sides)
}

/// Whether every load of `side` has a stride on `axis` that `pred` accepts.
fn all(side: &[Vec<Option<i64>>], axis: usize, pred: impl Fn(Option<i64>) -> bool) -> bool {
    side.iter().all(|s| pred(s[axis]))
}

/// The divisor of `size` closest to `want`, at most twice it (the larger of two as close; 1
/// when nothing else fits or `want` is 1).
fn divisor(size: usize, want: usize) -> usize {
    let divisors = (2..=size.min(2 * want)).filter(|d| size.is_multiple_of(*d));
    let closest = divisors.min_by_key(|&d| (d.abs_diff(want), std::cmp::Reverse(d)));
    if want > 1 { closest.unwrap_or(1) } else { 1 }
}

impl Tile {
    /// Outputs a thread keeps.
    fn size(&self) -> usize {
        self.n * self.m * self.m2
    }

    /// Whether a thread's multiply-adds reach [`MIN_REUSE`] a value loaded, with the window's
    /// reduce unrolled by `unroll`: each of `m2` rows loads `m + unroll - 1` image values, and
    /// `unroll` values of each of `n` filters.
    fn reuses_loads(&self, unroll: usize) -> bool {
        let loads = (self.m + unroll - 1) * self.m2 + self.n * unroll;
        self.size() * unroll >= MIN_REUSE * loads
    }

    /// Threads sharing a reduce axis (1 without a group).
    fn group_size(&self) -> usize {
        self.group.map_or(1, |(_, g)| g)
    }
}

impl Plan {
    fn of(k: &Kernel) -> Option<Plan> {
        let (fr, fu) = (k.first_reduce(), k.first_upcast());
        if fr == fu || k.upcasted() > 0 || k.local_dims() > 0 || k.group_for_reduces() > 0 {
            return None;
        }
        let sizes = k.full_shape()[..fu].iter().map(int).collect::<Option<Vec<usize>>>()?;
        let [sa, sb] = product_sides(k)?;
        let zero = |s: Option<i64>| s == Some(0);
        let moves = |s: Option<i64>| s.is_some_and(|s| s != 0);
        [(&sa, &sb), (&sb, &sa)].into_iter().find_map(|(image, filter)| {
            // window pairs: every image load moves along both axes alike, the filter only
            // along the reduce; innermost (smallest image stride) first
            let window = |o: usize, r: usize| {
                let same = image.iter().all(|s| moves(s[o]) && s[o] == s[r]);
                same && all(filter, o, zero) && filter.iter().any(|s| moves(s[r]))
            };
            let mut pairs: Vec<(i64, usize, usize)> = (0..fr)
                .flat_map(|o| (fr..fu).map(move |r| (o, r)))
                .filter(|&(o, r)| window(o, r))
                .map(|(o, r)| (image.iter().map(|s| s[o].unwrap_or(0).abs()).min().unwrap_or(0), o, r))
                .collect();
            pairs.sort_unstable();
            let &(_, o, r) = pairs.first()?;
            let second = pairs.iter().find(|&&(_, o2, r2)| o2 != o && r2 != r).map(|&(_, o2, _)| o2);
            let windowed = |i: usize| pairs.iter().any(|p| p.1 == i);
            let batch = (0..fr)
                .rev()
                .find(|&i| !windowed(i) && image.iter().any(|s| moves(s[i])) && all(filter, i, zero));
            let rows: Vec<usize> = second.into_iter().chain(batch).collect();
            let n = (0..fr).rev().find(|&i| all(image, i, zero) && filter.iter().any(|s| moves(s[i])))?;
            // a weight gradient (the window's output, the kernel's width, shorter than its
            // reduce over positions) runs long reduces: a quarter of the parallelism will do
            let long_reduces = sizes[o] < sizes[r];
            let share = if long_reduces { 4 } else { 2 };
            let min_threads = k.target().parallelism / share;
            let masked = k.bufs().iter().zip(k.sts()).any(|(b, st)| b.op() == Ops::Load && st.has_mask());
            let gpu = k.target().parallelism >= MANY_THREADS;
            let accumulators = if masked && gpu { MAX_MASKED_ACCUMULATORS } else { MAX_ACCUMULATORS };
            Some(Plan {
                sizes: sizes.clone(),
                fr,
                n,
                window: (o, r),
                rows,
                min_threads,
                accumulators,
                long_reduces,
            })
        })
    }

    /// The first tile of [`TILES`] that keeps `min_threads` and, unless a weight gradient's,
    /// reuses its loads ([`Tile::reuses_loads`]); failing that, one that keeps them with a
    /// group of threads sharing a reduce axis: for a weight gradient the first such tile (a
    /// layer with few filters and channels: without the tile every window position reloads
    /// the output gradient, without the group too few threads run); otherwise, among tiles
    /// with a group of at most [`SMALL_GROUP`], the one of the smallest group of those holding
    /// at least [`MIN_GROUPED_TILE`] outputs (the largest such), else the largest; else the
    /// one with the smallest group (the first of those). Forward, the first tile had groups
    /// of 32 combine 128 partials each: beautiful_mnist's conv3 at batch 64 ran at 1.1
    /// TFLOP/s.
    fn tile(&self) -> Option<Tile> {
        let outputs: usize = self.sizes[..self.fr].iter().product();
        let tiles = || TILES.iter().flat_map(|&(n, m, m2)| self.fitting(n, m, m2));
        let unroll = self.unroll();
        let alone = |t: &Tile| self.long_reduces || t.reuses_loads(unroll);
        if let Some(tile) = tiles().find(|t| outputs / t.size() >= self.min_threads && alone(t)) {
            return Some(tile);
        }
        // a reduce axis other than the window's (that one is unrolled)
        let axes: Vec<usize> = (self.fr..self.sizes.len()).filter(|&a| a != self.window.1).collect();
        let mut grouped = tiles().filter_map(|tile| {
            let threads = outputs / tile.size();
            let group = axes.iter().find_map(|&a| {
                let g = (2..=MAX_GROUP.min(self.sizes[a]))
                    .find(|&g| self.sizes[a].is_multiple_of(g) && threads * g >= self.min_threads)?;
                Some((a, g))
            })?;
            Some(Tile { group: Some(group), ..tile })
        });
        if self.long_reduces {
            return grouped.next();
        }
        let grouped: Vec<Tile> = grouped.collect();
        let small = || grouped.iter().filter(|t| t.group_size() <= SMALL_GROUP);
        let least_shared = small().filter(|t| t.size() >= MIN_GROUPED_TILE);
        let least_shared = least_shared.min_by_key(|t| (t.group_size(), std::cmp::Reverse(t.size())));
        let largest = || small().min_by_key(|t| (std::cmp::Reverse(t.size()), t.group_size()));
        least_shared.or_else(largest).or_else(|| grouped.iter().min_by_key(|t| t.group_size())).copied()
    }

    /// How far the window's reduce axis is unrolled: whole when short, else by about [`UNROLL`].
    fn unroll(&self) -> usize {
        let span = self.sizes[self.window.1];
        if span <= WHOLE_UNROLL { span } else { divisor(span, UNROLL) }
    }

    /// The tiles of up to `n` filters, `m` window positions and `m2` rows (each the closest
    /// divisor of its axis) that fit the plan's accumulators.
    fn fitting(&self, n: usize, m: usize, m2: usize) -> Vec<Tile> {
        let n = divisor(self.sizes[self.n], n);
        let width = self.sizes[self.window.0];
        let m = if width <= WHOLE_WINDOW { width } else { divisor(width, m) };
        // a third upcast on the first axis of `rows` it divides within the tile's bounds
        let options: Vec<(Option<usize>, usize)> = match m2 {
            1 => vec![(None, 1)],
            _ => self
                .rows
                .iter()
                .map(|&o2| (Some(o2), divisor(self.sizes[o2], m2)))
                .filter(|r| r.1 > 1)
                .collect(),
        };
        let tiles = options.into_iter().map(|(rows, m2)| Tile { n, m, rows, m2, group: None });
        tiles.filter(|t| t.size() > 1 && t.size() <= self.accumulators).collect()
    }

    /// Applies the tile, the unroll of the window's reduce axis and the workgroup.
    fn apply(&self, k: &mut Kernel, Tile { n, m, rows, m2, group }: Tile) -> Option<()> {
        // upcasts from the last axis down, so a whole axis leaving shifts none still to come
        let mut upcasts: Vec<(usize, usize)> = vec![(self.n, n), (self.window.0, m)];
        upcasts.extend(rows.map(|o2| (o2, m2)));
        upcasts.retain(|&(_, amt)| amt > 1);
        upcasts.sort_unstable_by_key(|&(axis, _)| std::cmp::Reverse(axis));
        let mut left = self.sizes[..self.fr].to_vec();
        for &(axis, amt) in &upcasts {
            k.apply_opt(Opt::new(OptOps::Upcast, axis, amt)).ok()?;
            left[axis] /= amt;
        }
        let r = self.window.1 - self.fr;
        let (span, unroll) = (self.sizes[self.window.1], self.unroll());
        if unroll > 1 {
            k.apply_opt(Opt::new(OptOps::Unroll, r, if unroll == span { 0 } else { unroll })).ok()?;
        }
        if let Some((axis, threads)) = group {
            // reduce axes keep their order; the window's leaves it when unrolled whole
            let gone = usize::from(unroll == span && self.window.1 < axis);
            k.apply_opt(Opt::new(OptOps::Group, axis - self.fr - gone, threads)).ok()?;
        }
        // neighbouring window positions on neighbouring threads, then rows, then the rest
        let first: Vec<usize> = std::iter::once(self.window.0).chain(self.rows.iter().copied()).collect();
        let rest = (0..self.fr).rev().filter(|&i| i != self.n && !first.contains(&i));
        let order: Vec<usize> = first.iter().copied().chain(rest).collect();
        let grouped = group.filter(|_| self.long_reduces).map_or(1, |(_, g)| g);
        self.workgroup(k, &order, &left, grouped);
        Some(())
    }

    /// LOCAL on the global axes in `order` (`left`: each output axis's size after the upcasts):
    /// the extents that fill [`MIN_FILL`] of the subgroups their threads take
    /// ([`filled_workgroup`]); failing that, each axis by the whole axis when short, else the
    /// widest of 16, 8, 4, 2 that divides it, while the workgroup stays within
    /// [`MAX_WORKGROUP`] and the target. `grouped` (more than 1 for a weight gradient's groups)
    /// threads already share each output: they count, within [`MAX_GROUPED_WEIGHT_WORKGROUP`].
    fn workgroup(&self, k: &mut Kernel, order: &[usize], left: &[usize], grouped: usize) {
        let cap = if grouped > 1 { MAX_GROUPED_WEIGHT_WORKGROUP } else { MAX_WORKGROUP };
        let max = cap.min(k.target().max_local_invocations);
        let subgroup = k.target().subgroup_size.unwrap_or(32);
        let extents = filled_workgroup(order, left, max, subgroup, grouped).unwrap_or_else(|| {
            let mut threads = grouped;
            order
                .iter()
                .map(|&axis| {
                    let size = left[axis];
                    let extent = match size <= WHOLE_LOCAL && threads * size <= max {
                        true => size,
                        false => [16, 8, 4, 2]
                            .into_iter()
                            .find(|&e| size.is_multiple_of(e) && threads * e <= max)
                            .unwrap_or(1),
                    };
                    threads *= extent;
                    extent
                })
                .collect()
        });
        // each output axis's position now: axes upcast whole are gone
        let mut position: Vec<Option<usize>> = vec![None; left.len()];
        let mut next = 0;
        for (axis, &size) in left.iter().enumerate() {
            if size > 1 {
                position[axis] = Some(next);
                next += 1;
            }
        }
        for (&axis, &extent) in order.iter().zip(&extents) {
            let Some(at) = position[axis] else { continue };
            if extent > 1 && k.apply_opt(Opt::new(OptOps::Local, at, extent)).is_ok() && extent == left[axis]
            {
                position.iter_mut().skip(axis + 1).flatten().for_each(|p| *p -= 1);
            }
        }
    }
}

/// Workgroup extents for the axes of `order` (each a divisor of its size in `left`, at most
/// [`WHOLE_LOCAL`]) whose threads (`grouped` a position), at most `max` and at least a
/// subgroup, fill at least [`MIN_FILL`] of the subgroups they take; of those, the largest
/// extents in `order` first.
fn filled_workgroup(
    order: &[usize],
    left: &[usize],
    max: usize,
    subgroup: usize,
    grouped: usize,
) -> Option<Vec<usize>> {
    let options: Vec<Vec<usize>> = order
        .iter()
        .map(|&a| (1..=left[a].min(WHOLE_LOCAL)).filter(|d| left[a].is_multiple_of(*d)).collect())
        .collect();
    let (mut pick, mut best): (Vec<usize>, Option<Vec<usize>>) = (vec![0; options.len()], None);
    loop {
        let extents: Vec<usize> = pick.iter().zip(&options).map(|(&i, o)| o[i]).collect();
        let threads: usize = grouped * extents.iter().product::<usize>();
        let lanes = threads.div_ceil(subgroup) * subgroup;
        let filled = threads * MIN_FILL.1 >= lanes * MIN_FILL.0;
        if (subgroup..=max).contains(&threads) && filled && best.as_ref().is_none_or(|b| extents > *b) {
            best = Some(extents);
        }
        // the next combination, the last axis fastest
        let Some(i) = (0..options.len()).rev().find(|&i| pick[i] + 1 < options[i].len()) else {
            return best;
        };
        pick[i] += 1;
        pick[i + 1..].iter_mut().for_each(|p| *p = 0);
    }
}
