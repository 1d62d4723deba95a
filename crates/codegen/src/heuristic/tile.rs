//! Register tiles for matmul-shaped kernels: a sum over the product of two loads, each
//! broadcast along an output axis the other one reads (matmuls, batched matmuls,
//! convolutions, their gradients).
//!
//! Each thread computes a `um x un` tile of outputs (UPCAST on an `m` axis, which the second
//! load broadcasts, and an `n` axis, which the first load broadcasts), so every value loaded
//! is used `un` or `um` times from registers; the reduce's last axis is unrolled; the
//! workgroup puts neighbouring `n` tiles on neighbouring threads (the first LOCAL is the
//! fastest-varying thread id), then `m` tiles. A thread's `n` outputs are interleaved: runs of
//! 4 neighbours, the runs a workgroup's width apart (UPCAST `n` by 4, LOCAL `n`, then UPCAST
//! `n` by the rest), so a warp's vector reads of the staged block touch neighbouring words
//! instead of every other 16 bytes (two-way bank conflicts), and its stores are whole lines.
//! Both factors are staged in workgroup memory, two blocks of each (STAGE 2, `tile_stage.rs`);
//! an `x @ W.T` whose blocks cannot be staged (masked by a PADTO) keeps its threads mostly
//! along `m` and its `n` outputs neighbours ([`THREADS_ALONG_K`]). The tile shrinks while it
//! would leave fewer threads than a quarter of the target's `parallelism` ([`THREAD_SHARE`]),
//! and while its `m` and `n` axes alone would leave a workgroup unfilled, so that a batch of
//! narrow products keeps each workgroup within one matrix rather than spread over a batch axis
//! (MiniLM's attention `P @ V`, 128x32 outputs a head, f32 on an H200: 8x8 over two heads
//! 79.5-80.5 us, 8x4 in one head 72.9-73.5, 8x4 over two heads 77.9-78.3).
//!
//! Measured on an H200 (f32, TFLOP/s): 4096^3 `x @ W` 32.8 -> 40.2 with the interleave, `x @
//! W.T` 25.4 -> 36.9 (which had kept one block and 4 threads along `n`, 32 along `m`); MiniLM's
//! projections (16384 rows, `x @ W.T`) 25.7-27.6 -> 32.9-35.9. Before staging (scalar loads) a
//! 4096^3 GEMM ran at 19.9-20.9 with the 8x8 tile, a 16x8 workgroup and k unrolled by 8,
//! against 7.1 with tinygrad's 4x4 rules; 1024^3 at 14.2 with a 4x4 tile (an 8x8 one leaves 64
//! workgroups for 132 multiprocessors).

use super::operands::{factor_operands, strides};
use super::{int, try_opt};
use crate::{Kernel, OptOps};

/// Tiles `(um, un)` in order of preference. 8x4 before 4x8: an H200's f32 1024^3 68.2 against
/// 71.5 us, 2048x384x2048 127.4 against 133.7, 4096x384x4096 397.1 against 413.6.
const TILES: [(usize, usize); 7] = [(8, 8), (8, 4), (4, 8), (4, 4), (2, 4), (4, 2), (2, 2)];
/// A tile may leave as few threads as the target's `parallelism` over this. With 2 (a half),
/// an H200's f32 1024^3 and `(m, k) @ (k, n)` with few outputs and a long reduce fell to 4x4
/// or 2x4 tiles: 1024^3 87.0 us (8x4: 68.2), 2048x384x2048 192.6 (127.4), 4096x384x4096
/// 505.4 (397.1); 2048^3 keeps 8x8 either way (469.0 us; 8x4 495.2).
const THREAD_SHARE: usize = 4;
/// Largest workgroup a tile kernel uses (128 beat 256 for the GEMMs measured on an H200).
const MAX_WORKGROUP: usize = 128;
/// Output axes no tile divides are padded to a multiple of this.
const PAD: usize = 16;
/// Workgroup extents tried per axis, widest first.
const LOCALS: [usize; 5] = [32, 16, 8, 4, 2];
/// Neighbouring `n` outputs a thread computes (a 16-byte vector of f32).
const RUN: usize = 4;
/// Most workgroup threads along `n` and along `m`.
const THREADS: (usize, usize) = (16, 16);
/// The same for an unstaged `x @ W.T` (the second load contiguous along the reduce, its blocks
/// not staged, as where a PADTO masked them): neighbouring `n` threads would read different
/// rows of W, each its own cache line, so the workgroup goes along `m` and a thread's `n`
/// outputs stay neighbours (an H100's 4096^3, unstaged: 18.5 TFLOP/s with 4 threads along `n`
/// and 32 along `m`, 12.3 with 16 and 8).
const THREADS_ALONG_K: (usize, usize) = (4, 32);

/// Gives a matmul-shaped kernel a register tile; says whether it did. Output axes that no
/// tile divides are padded (PADTO, masked) to a multiple of [`PAD`] first.
pub(super) fn register_tile(k: &mut Kernel) -> bool {
    let Some(plan) = Plan::of(k) else { return false };
    if let Some(tile) = plan.tile() {
        return apply(k, &plan, tile);
    }
    let mut padded = k.clone();
    let odd = |&a: &usize| plan.sizes[a] % 8 != 0 && plan.sizes[a] > PAD;
    let pads: Vec<usize> =
        plan.ms.iter().take(1).chain(plan.ns.iter().take(1)).copied().filter(odd).collect();
    if pads.is_empty() || !pads.iter().all(|&a| try_opt(&mut padded, OptOps::Padto, a, PAD)) {
        return false;
    }
    // the padded axes are masked now: keep the axes found before, with the new sizes
    let Some(plan) = plan.resized(&padded) else { return false };
    match plan.tile() {
        Some(tile) if apply(&mut padded, &plan, tile) => {
            *k = padded;
            true
        }
        _ => false,
    }
}

/// The axes of a matmul-shaped kernel before any opt.
struct Plan {
    /// Every non-upcast axis's size.
    sizes: Vec<usize>,
    /// `m` axes (the second load is broadcast along them, the first is not), last first.
    ms: Vec<usize>,
    /// `n` axes (the first load is broadcast along them, the second is not), last first.
    ns: Vec<usize>,
    /// Number of output elements.
    outputs: usize,
    /// Fewest threads a tile may leave.
    min_threads: usize,
    /// Threads a workgroup may have, when the target has workgroups.
    workgroup: Option<usize>,
    /// Whether the second load is contiguous along the reduce (`x @ W.T`).
    along_k: bool,
    /// Whether a factor is an expression of loads, which only a staged tile computes once
    /// per element.
    expression: bool,
}

impl Plan {
    fn of(k: &Kernel) -> Option<Plan> {
        let (a, b, expression) = factor_operands(k)?;
        let (fr, fu) = (k.first_reduce(), k.first_upcast());
        if fr == fu || k.upcasted() > 0 || k.local_dims() > 0 {
            return None;
        }
        let sizes = k.full_shape()[..fu].iter().map(int).collect::<Option<Vec<usize>>>()?;
        let (sa, sb) = (strides(k, a), strides(k, b));
        let only = |s: &[Option<i64>], t: &[Option<i64>], i: usize| s[i] == Some(0) && t[i] != Some(0);
        let ms: Vec<usize> = (0..fr).rev().filter(|&i| only(&sb, &sa, i)).collect();
        let ns: Vec<usize> = (0..fr).rev().filter(|&i| only(&sa, &sb, i)).collect();
        let outputs = sizes[..fr].iter().product();
        let min_threads = k.target().parallelism / THREAD_SHARE;
        let workgroup = k.target().has_local.then(|| max_workgroup(k));
        let along_k = sb.get(fu - 1) == Some(&Some(1));
        (!ms.is_empty() && !ns.is_empty()).then_some(Plan {
            sizes,
            ms,
            ns,
            outputs,
            min_threads,
            workgroup,
            along_k,
            expression,
        })
    }

    /// The same axes with the sizes of `k` (after a PADTO).
    fn resized(&self, k: &Kernel) -> Option<Plan> {
        let sizes = k.full_shape()[..k.first_upcast()].iter().map(int).collect::<Option<Vec<usize>>>()?;
        let outputs = sizes[..k.first_reduce()].iter().product();
        Some(Plan { sizes, outputs, ms: self.ms.clone(), ns: self.ns.clone(), ..*self })
    }

    /// The first tile of [`TILES`] that divides an `m` and an `n` axis, keeps `min_threads`
    /// and leaves threads enough along those two axes to fill a workgroup (else the first
    /// that does the rest): `(m, um, n, un)`.
    fn tile(&self) -> Option<(usize, usize, usize, usize)> {
        let pick = |axes: &[usize], amount: usize| {
            axes.iter().copied().find(|&i| self.sizes[i].is_multiple_of(amount) && self.sizes[i] > amount)
        };
        let tiles = || {
            TILES
                .iter()
                .filter(|(um, un)| self.outputs / (um * un) >= self.min_threads)
                .filter_map(|&(um, un)| Some((pick(&self.ms, um)?, um, pick(&self.ns, un)?, un)))
        };
        let fills = |&(m, um, n, un): &(usize, usize, usize, usize)| {
            self.workgroup
                .is_none_or(|w| self.threads(n, un, THREADS.0) * self.threads(m, um, THREADS.1) >= w)
        };
        tiles().find(fills).or_else(|| tiles().next())
    }

    /// Threads `axis` has room for once a tile takes `amount` of it: what is left of it, at
    /// most `cap`.
    fn threads(&self, axis: usize, amount: usize, cap: usize) -> usize {
        (self.sizes[axis] / amount).min(cap)
    }
}

/// Applies the tile `(m, um, n, un)`, the unroll, the workgroup and the staging to `k`; an
/// `x @ W.T` whose blocks cannot be staged takes [`THREADS_ALONG_K`] instead, and a tile with
/// an expression factor none.
fn apply(k: &mut Kernel, plan: &Plan, tile: (usize, usize, usize, usize)) -> bool {
    let Some(mut tiled_k) = tiled(k, plan, tile, THREADS, true) else { return false };
    // an H200's 4096^3 `x @ W`: 25.5 -> 29.2 TFLOP/s with two blocks instead of none
    let chosen = match (tiled_k.apply_opt(crate::Opt::double_stage()).is_ok(), plan.expression) {
        (true, _) => Some(tiled_k),
        (false, true) => None,
        (false, false) if !plan.along_k => Some(tiled_k),
        (false, false) => tiled(k, plan, tile, THREADS_ALONG_K, false),
    };
    chosen.map(|t| *k = t).is_some()
}

/// `k` with the tile `(m, um, n, un)`, the unroll and a workgroup of at most `threads` along
/// `(n, m)` ([`THREADS`] along other axes); with `interleave` (and workgroups), a thread's `n` outputs in runs of [`RUN`].
fn tiled(
    k: &Kernel,
    plan: &Plan,
    (m, um, n, un): (usize, usize, usize, usize),
    threads: (usize, usize),
    interleave: bool,
) -> Option<Kernel> {
    let mut tiled = k.clone();
    let run = if interleave && k.target().has_local { un.min(RUN) } else { un };
    if !(try_opt(&mut tiled, OptOps::Upcast, m, um) && try_opt(&mut tiled, OptOps::Upcast, n, run)) {
        return None;
    }
    let fr = tiled.first_reduce();
    unroll_last_reduce(&mut tiled, plan.sizes[plan.sizes.len() - 1]);
    let mut remaining = plan.sizes[..fr].to_vec();
    remaining[m] /= um;
    remaining[n] /= un;
    let others = (0..fr).rev().filter(|&i| i != m && i != n);
    let order: Vec<usize> = [n, m].into_iter().chain(others).collect();
    let cap = |a: usize| match a {
        _ if a == n => threads.0,
        _ if a == m => threads.1,
        _ => THREADS.0,
    };
    let caps: Vec<usize> = order.iter().map(|&a| cap(a)).collect();
    workgroup(&mut tiled, &order, &caps, &remaining, (n, un / run)).then_some(tiled)
}

/// Threads a tile kernel's workgroup may have on `k`'s target: [`MAX_WORKGROUP`] at most.
fn max_workgroup(k: &Kernel) -> usize {
    MAX_WORKGROUP.min(k.target().max_local_invocations)
}

/// Unrolls the last reduce axis (of `size`): whole when at most 8, else by 8, 4 or 2.
fn unroll_last_reduce(k: &mut Kernel, size: usize) {
    let axis = k.first_upcast() - 1 - k.first_reduce();
    let amount =
        if size <= 8 { 0 } else { [8, 4, 2].into_iter().find(|u| size.is_multiple_of(*u)).unwrap_or(1) };
    if amount != 1 {
        try_opt(k, OptOps::Unroll, axis, amount);
    }
}

/// LOCAL on global `axes` in order (`sizes`: every global axis's size, `n`'s counting its
/// whole upcast), each by the widest of [`LOCALS`] that divides it, is at most its `caps` entry
/// and keeps the workgroup within [`MAX_WORKGROUP`]; right after `n`'s, the rest of its upcast
/// (`(n, amount)`). Says whether that upcast applied.
fn workgroup(
    k: &mut Kernel,
    axes: &[usize],
    caps: &[usize],
    sizes: &[usize],
    (n, amount): (usize, usize),
) -> bool {
    let max = max_workgroup(k);
    // each axis's position now: an axis used up whole moves the later ones down
    let mut position: Vec<usize> = (0..sizes.len()).collect();
    for (&axis, &cap) in axes.iter().zip(caps) {
        let threads = k.local_size() as usize;
        let fits = |&l: &usize| sizes[axis].is_multiple_of(l) && l <= cap && threads * l <= max;
        let local =
            LOCALS.iter().copied().find(fits).filter(|&l| try_opt(k, OptOps::Local, position[axis], l));
        if axis == n && amount > 1 && !try_opt(k, OptOps::Upcast, position[axis], amount) {
            return false;
        }
        if local == Some(sizes[axis]) {
            position.iter_mut().skip(axis + 1).for_each(|p| *p -= 1);
        }
    }
    true
}
