//! Hand-coded optimisations: the opts a kernel gets without a search. First the shapes that
//! want a plan of their own: a half-precision matmul on a target with tensor cores (TC and
//! tiles per subgroup, `tensor_core`), rows an elementwise kernel reduces itself (`rows`), a
//! matrix-vector product (tinygrad's matvec opts), a convolution
//! (a register tile over filters and window positions, `conv`), a matmul-shaped kernel (a
//! register tile, `tile`), a long reduce with few outputs (a grouped reduce,
//! `grouping`); every other kernel gets tinygrad v0.10's remaining rules in order (masked and
//! broadcast upcasts, unrolling, one more upcast, locals). A one-hot reduce that collapses into
//! indexed loads (`collapse`) gets only the output-axis rules. An opt the kernel or target
//! refuses is skipped; the caller decides whether to optimise at all (NOOPT).

use wgrad_ops::{Arg, Ops};
use wgrad_shape::{ShapeTracker, Sint};

use crate::{Kernel, Opt, OptOps};

mod collapse;
mod conv;
mod grouping;
mod operands;
mod rows;
mod tensor_core;
mod tile;

/// Lanes of the widest vector access the heuristics plan for (16 bytes of f32).
const VECTOR: i64 = 4;

/// Threads per row, rows per workgroup and rows per thread of the matvec opts.
const MV_THREADS_PER_ROW: usize = 8;
const MV_BLOCKSIZE: usize = 4;
const MV_ROWS_PER_THREAD: usize = 4;

/// Applies `Opt::new(op, axis, arg)` if the kernel takes it; says whether it did.
fn try_opt(k: &mut Kernel, op: OptOps, axis: usize, arg: usize) -> bool {
    k.apply_opt(Opt::new(op, axis, arg)).is_ok()
}

fn int(s: &Sint) -> Option<usize> {
    s.as_int().and_then(|v| usize::try_from(v).ok())
}

fn product(xs: &[Sint]) -> i64 {
    xs.iter().map(Sint::vmax).product()
}

/// The stride of `axis` in the last view of `st` (tinygrad looks at that view, not the real
/// strides, when it looks for broadcasts).
fn last_stride(st: &ShapeTracker, axis: usize) -> i64 {
    st.views().last().expect("a tracker has a view").strides()[axis].vmin()
}

/// Optimises `k` without a search (see the module doc for the order of the rules).
pub fn hand_coded_optimizations(k: &mut Kernel) {
    if rows::row_reduce(k) {
        return;
    }
    if collapse::reduce_collapses(k) {
        // a one-hot reduce that lowers to indexed loads: only its output axes get opts
        upcast_masked(k);
        upcast_broadcasts(k);
        upcast_last(k);
        make_locals(k);
        return;
    }
    if tensor_core::tensor_cores(k)
        || matvec(k)
        || conv::conv_tile(k)
        || tile::register_tile(k)
        || grouping::group_reduce(k)
    {
        return;
    }
    upcast_masked(k);
    upcast_broadcasts(k);
    unroll_reduce(k);
    upcast_last(k);
    make_locals(k);
}

/// A sum over the product of two loads where not both are broadcast somewhere, the first
/// read contiguously along the reduce: GROUP 8, LOCAL 4, UPCAST 4 on the first global axis
/// they divide. Returns whether it applied.
fn matvec(k: &mut Kernel) -> bool {
    let target = k.target();
    if !(target.has_local && target.has_shared) || k.full_shape().len() < 2 {
        return false;
    }
    let Some(r) = k.reduceop() else { return false };
    let mul = &r.src()[0];
    if !matches!(r.arg(), Arg::ReduceAxis(Ops::Add, _))
        || mul.op() != Ops::Mul
        || mul.src().iter().any(|s| s.op() != Ops::Load)
    {
        return false;
    }
    let st_of = |u| k.bufs().iter().position(|b| b == u).map(|i| &k.sts()[i]);
    let (Some(st0), Some(st1)) = (st_of(&mul.src()[0]), st_of(&mul.src()[1])) else { return false };
    let (strides0, strides1) = (st0.real_strides(false), st1.real_strides(false));
    let expanded = |st: &ShapeTracker, strides: &[Option<Sint>]| {
        st.shape().iter().zip(strides).any(|(s, st)| s.vmax() > 1 && st.as_ref().is_some_and(|x| *x == 0))
    };
    let fr = k.first_reduce();
    let unit = strides0.get(fr).and_then(Option::as_ref).is_some_and(|s| *s == 1);
    if !unit || (expanded(st0, &strides0) && expanded(st1, &strides1)) {
        return false;
    }
    let divides = |s: &Sint, d: usize| int(s).is_some_and(|v| v % d == 0);
    if !divides(&k.full_shape()[fr], MV_THREADS_PER_ROW) {
        return false;
    }
    let rows = MV_BLOCKSIZE * MV_ROWS_PER_THREAD;
    let Some(g) = (0..k.global_dims()).find(|&g| divides(&k.full_shape()[g], rows)) else { return false };
    try_opt(k, OptOps::Group, 0, MV_THREADS_PER_ROW);
    try_opt(k, OptOps::Local, g, MV_BLOCKSIZE);
    try_opt(k, OptOps::Upcast, g, MV_ROWS_PER_THREAD);
    true
}

/// Small (<= 7) masked output axes are upcast whole, while the upcast total stays <= 49.
fn upcast_masked(k: &mut Kernel) {
    let mut to_upcast: Vec<usize> = vec![];
    for axis in 0..k.first_reduce() {
        let Some(size) = int(&k.full_shape()[axis]) else { continue };
        let upcast = product(&k.full_shape()[k.first_upcast()..])
            * to_upcast.iter().map(|&a| k.full_shape()[a].vmax()).product::<i64>()
            * size as i64;
        if size <= 7 && upcast <= 49 && k.sts().iter().any(|st| st.axis_is_masked(axis)) {
            to_upcast.push(axis);
        }
    }
    for &axis in to_upcast.iter().rev() {
        try_opt(k, OptOps::Upcast, axis, 0);
    }
}

/// While the output has >= 1024 elements, upcast by 3 or 4 an output axis that some buffer
/// broadcasts (stride 0) and has no broadcast upcast axis yet; prefer axes fewer buffers
/// read with a positive stride, then smaller stride sums, then lower axes and amounts, except
/// that 4 comes first on an axis some buffer reads contiguously where the target has 4-wide
/// vectors (tinygrad takes 3 there: 3 lanes are scalar accesses, 4 one 16-byte access).
fn upcast_broadcasts(k: &mut Kernel) {
    let mut done: Vec<usize> = vec![];
    let vectors = k.target().vector_widths.contains(&4);
    while product(&k.output_shape()[..k.first_reduce()]) >= 1024 {
        let mut choices: Vec<(usize, i64, usize, bool, usize)> = vec![];
        for axis in 0..k.first_reduce() {
            let contiguous = vectors && (0..k.sts().len()).any(|i| operands::strides(k, i)[axis] == Some(1));
            for amt in [3, 4] {
                let divides = int(&k.full_shape()[axis]).is_some_and(|v| v % amt == 0);
                let broadcast = (0..k.sts().len()).any(|i| {
                    last_stride(&k.sts()[i], axis) == 0
                        && !k.upcasted_axis(i).iter().any(|(_, st, _)| st.as_ref().is_some_and(|s| *s == 0))
                });
                if !done.contains(&axis) && divides && broadcast {
                    let strides: Vec<i64> = k.sts().iter().map(|st| last_stride(st, axis)).collect();
                    let positive = strides.iter().filter(|&&s| s > 0).count();
                    choices.push((positive, strides.iter().sum(), axis, contiguous == (amt == 3), amt));
                }
            }
        }
        let Some(&(_, _, axis, _, amt)) = choices.iter().min() else { break };
        if !try_opt(k, OptOps::Upcast, axis, amt) {
            break;
        }
        done.push(axis);
    }
}

/// Unrolls the last reduce axis when small (<= 32; a second one too when both are <= 3),
/// else by 4 when it divides; only while few registers are upcast already.
fn unroll_reduce(k: &mut Kernel) {
    let (fr, fu) = (k.first_reduce(), k.first_upcast());
    let upcast = product(&k.full_shape()[fu..]);
    let reduce_upcast = k.upcasted_axis(0).iter().any(|(_, _, r)| *r);
    if fr >= fu || (upcast > 4 && reduce_upcast) || (k.upcasted() > 0 && upcast >= 64) {
        return;
    }
    let last = |k: &Kernel| k.full_unupcasted_shape().last().and_then(int);
    let axis = |k: &Kernel| k.full_unupcasted_shape().len() - 1 - k.first_reduce();
    match last(k) {
        Some(s) if s <= 32 => {
            try_opt(k, OptOps::Unroll, axis(k), 0);
            if k.first_reduce() < k.first_upcast() && s <= 3 && last(k).is_some_and(|s2| s2 <= 3) {
                try_opt(k, OptOps::Unroll, axis(k), 0);
            }
        }
        Some(s) if s % 4 == 0 => {
            try_opt(k, OptOps::Unroll, axis(k), 4);
        }
        _ => {}
    }
}

/// With nothing upcast yet, upcasts the last output axis by 4 when it divides, some buffer
/// reads or writes it contiguously and the target has 4-wide vector loads: the lanes fold into
/// 16-byte accesses (without them they are scalar accesses that only break up the coalesced
/// access of neighbouring threads).
fn upcast_last(k: &mut Kernel) {
    let fr = k.first_reduce();
    if k.upcasted() == 0
        && fr > 0
        && k.target().vector_widths.contains(&4)
        && int(&k.full_shape()[fr - 1]).is_some_and(|v| v % 4 == 0)
        && (0..k.sts().len()).any(|i| operands::strides(k, i)[fr - 1] == Some(1))
    {
        try_opt(k, OptOps::Upcast, fr - 1, 4);
    }
}

/// Whether a thread of `k` holds at most one vector's worth of outputs (no register tile).
fn one_vector_per_thread(k: &Kernel) -> bool {
    product(&k.full_shape()[k.first_upcast()..]) <= VECTOR
}

/// Up to 3 output axes become local, broadcast axes first (then later axes), each by the
/// first of 32 (axis 0 only; 256, 128, 64, 32 when a thread holds at most a vector), 16, 8, 4,
/// 3, 2 that divides it and keeps the workgroup <= 128 (256 when a thread holds at most a
/// vector; and within the target); the last of them is the fastest thread id.
fn make_locals(k: &mut Kernel) {
    if !k.target().has_local {
        return;
    }
    // without a register tile (at most a vector a thread), a wide first axis keeps neighbouring
    // threads on neighbouring elements in big workgroups, which memory-bound kernels need
    // (measured on an H200 with scalar lanes: 3.7 TB/s with 256 threads, 2.8 with 128);
    // otherwise tinygrad's cap of 128
    let plain = one_vector_per_thread(k);
    let max = k.target().max_local_invocations.min(if plain { 256 } else { 128 });
    let mut ranking: Vec<(bool, usize)> = (0..k.first_reduce())
        .map(|axis| (k.sts().iter().any(|st| last_stride(st, axis) == 0), axis))
        .collect();
    ranking.sort_by_key(|&(broadcast, axis)| (!broadcast, std::cmp::Reverse(axis)));
    let mut to_local: Vec<(usize, usize)> = vec![];
    for (_, axis) in ranking {
        let size: usize = to_local.iter().map(|(_, s)| s).product();
        let wide: &[usize] = if axis != 0 {
            &[]
        } else if plain {
            &[256, 128, 64, 32]
        } else {
            &[32]
        };
        let candidates = wide.iter().chain(&[16, 8, 4, 3, 2]);
        let fits = |&&x: &&usize| int(&k.full_shape()[axis]).is_some_and(|v| v % x == 0) && size * x <= max;
        if let Some(&sz) = candidates.clone().find(fits) {
            to_local.push((axis, sz));
        }
    }
    to_local.truncate(3);
    // the last axis first: the first local is the fastest thread id, so neighbouring threads
    // walk the (usually contiguous) last axis and their vectors meet in whole cache lines
    // (tinygrad applies them first axis first); a later axis used up whole moves no earlier one
    to_local.sort_unstable_by(|a, b| b.cmp(a));
    for (axis, sz) in to_local {
        try_opt(k, OptOps::Local, axis, sz);
    }
}
