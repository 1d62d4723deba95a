//! Lowering a kernel with TC applied. A workgroup is one subgroup per lane of its local axes
//! (LOCAL after TC), each owning the output tiles of the upcast axes (UPCAST after TC); an
//! unrolled reduce axis (UNROLL after TC) gives more k tiles per step of the reduce loop.
//!
//! - The factors' tiles are `CoopLoad`ed straight from their buffers when the workgroup is one
//!   subgroup. With several, each step of the reduce loop first copies the workgroup's blocks of
//!   both factors into workgroup memory ([`crate::tensor_core::Stage`]: rows padded against bank
//!   conflicts, four elements a thread and copy, which the vectorizer folds into one load),
//!   between two barriers; the tiles are then read from there. Where a subgroup holds at most
//!   [`PREFETCH_MAX_TILES`] tiles and one reduce loop steps, each thread's runs are loaded a step
//!   ahead: the first step's into registers (`DefineAcc`s of four elements) before the loop, the
//!   next step's (`min(r + 1, last)`) right after the copies' barrier, so that they are in flight
//!   while the step's tiles multiply; the copies store the registers.
//! - `Wmma` chains the k tiles of a step and accumulates over the reduce loops (a `Reduce` of
//!   cooperative matrices).
//! - Epilogue, tile by tile: the subgroup `CoopStore`s an accumulator into its own tile of
//!   workgroup memory; after a barrier its threads share the tile's elements, four neighbours
//!   along a row a thread where the target has vectors of 4 (`(lane + 32 * g) * 4 + i`), for
//!   the rest of the kernel (casts, bias, the store), lowered as usual with the reduce read back
//!   from there, so the vectorizer folds the output's stores (MiniLM's f16 forward on an H200:
//!   3.16 -> 3.05 ms of kernels); a second barrier frees the tile for the next one. Both
//!   barriers are the subgroup's own ([`SUBGROUP_BARRIER`]): no other subgroup touches its
//!   tile, so the others need not wait (MiniLM's f16 FFN up on an H200: 147 -> 139 us a layer).

use std::collections::HashMap;

use wgrad_dtype::{AddrSpace, DType};
use wgrad_ops::{Arg, Coop, CoopRole, Ops, SUBGROUP_BARRIER, UOp, UOpMap};
use wgrad_shape::{IndexAlgebra, Sint};

use crate::linearize::is_global_load;
use crate::lowerer::{LowerError, Lowerer, unexpected, with};
use crate::tensor_core::{STAGE_VECTOR, Stage, int_stride, tc_factors, tile_layout};
use crate::{Kernel, TensorCoreShape};

/// The lowered graph (a `Sink` of `Store`s) of `k`, whose optimised AST is `ast`.
pub(crate) fn lower_tc(
    k: &Kernel,
    tc: &TensorCoreShape,
    mut lw: Lowerer,
    ast: &UOp,
) -> Result<UOp, LowerError> {
    let reduce =
        ast.toposort().into_iter().find(|u| u.op() == Ops::ReduceAxis).ok_or_else(|| unexpected(ast))?;
    let (a, b) = tc_factors(&reduce).ok_or_else(|| unexpected(&reduce))?;
    let layouts = factor_layouts(k).ok_or_else(|| unexpected(&reduce))?;
    let (tm, tn, _) = tc.dims;
    let tile = tm * tn;
    let tile_axes = k.shape_len() - 3;
    let full = k.full_shape();
    // the workgroup: `warps` subgroups of `threads`; each subgroup's position on the local axes
    let threads = k.target().subgroup_size.unwrap_or(1) as i64;
    let warps = k.tc_warps();
    let lidx = UOp::special("lidx0", threads * warps);
    let (lane, warp) = match warps {
        1 => (lidx.clone(), UOp::index_const(0)),
        _ => (lidx.rem(&UOp::index_const(threads)), lidx.floordiv(&UOp::index_const(threads))),
    };
    let (gd, local_dims) = (k.global_dims(), k.local_dims());
    let mut rest = warp.clone();
    for a in (gd..gd + local_dims).rev() {
        let size = UOp::index_const(full[a].vmax());
        lw.idxs[a] = rest.rem(&size);
        lw.ridxs[a] = lw.idxs[a].clone();
        rest = rest.floordiv(&size);
    }
    let Arg::ReduceAxis(_, axes) = reduce.arg() else { return Err(unexpected(&reduce)) };
    let ranges: Vec<UOp> = axes.iter().filter(|&&a| a < lw.fu).map(|&a| lw.ridxs[a].clone()).collect();
    // the tiles of each step: staged in workgroup memory, or straight from the buffers
    let factors = [(&a, CoopRole::A, layouts.0), (&b, CoopRole::B, layouts.1)];
    let stages = k.tc_stages();
    let unrolled: Vec<bool> = (lw.fu..tile_axes).map(|a| full[a] != k.output_shape()[a]).collect();
    let tiles =
        upcast_lanes(&lw.upcast_sizes[..tile_axes - lw.fu], &unrolled, false, lw.upcast_sizes.len()).len();
    let prefetch = match (ranges.as_slice(), tiles <= PREFETCH_MAX_TILES) {
        ([range], true) => Some(range),
        _ => None,
    };
    let mut prefetches = vec![];
    let staged = match &stages {
        Some(stages) => {
            let copy = StageCopy { lidx: &lidx, threads: threads * warps, prefetch };
            let (locals, barrier, assigns) = stage_blocks(&lw, full, &factors, stages, &ranges, &copy)?;
            prefetches = assigns;
            Some((locals, barrier))
        }
        None => None,
    };
    let tile_of = |lane_values: &[i64], f: usize| -> Result<UOp, LowerError> {
        let (load, role, layout) = factors[f];
        let dtype = load.dtype().vec(tile as u32);
        let Some((local, barrier)) = &staged else {
            let index = lw.index(&load.src()[0], &load.src()[1], &lw.idxs, lane_values, None)?;
            return coop_load(index, role, layout.0, layout.1, dtype, None);
        };
        let stage = &stages.as_ref().ok_or_else(|| unexpected(ast))?[f];
        let at = |axes: &[usize]| {
            axes.iter().fold(UOp::index_const(0), |acc, &ax| {
                let digit = match ax >= lw.fu {
                    true => UOp::index_const(lane_values[ax - lw.fu]),
                    false => lw.idxs[ax].clone(),
                };
                acc.mul(&UOp::index_const(full[ax].vmax())).add(&digit)
            })
        };
        let first = at(&stage.outer).mul(&UOp::index_const(stage.stride)).add(&at(&stage.inner));
        let index = UOp::new(Ops::Index, local[f].dtype(), [local[f].clone(), first], Arg::None);
        coop_load(index, role, layout.0, stage.stride, dtype, Some(barrier.clone()))
    };
    // per output tile, its k tiles chained and summed over the reduce loops
    let mut outputs = vec![];
    for out_lane in
        upcast_lanes(&lw.upcast_sizes[..tile_axes - lw.fu], &unrolled, false, lw.upcast_sizes.len())
    {
        let acc_dtype = tc.dtype_out.vec(tile as u32);
        let mut chain = UOp::constant(acc_dtype, 0);
        for k_lane in upcast_lanes(&lw.upcast_sizes[..tile_axes - lw.fu], &unrolled, true, out_lane.len()) {
            let lane_values: Vec<i64> = out_lane.iter().zip(&k_lane).map(|(o, k)| o + k).collect();
            let (fa, fb) = (tile_of(&lane_values, 0)?, tile_of(&lane_values, 1)?);
            chain = UOp::new(Ops::Wmma, acc_dtype, [fa, fb, chain], Arg::None);
        }
        let acc = match ranges.is_empty() {
            true => chain,
            false => UOp::new(Ops::Reduce, acc_dtype, [&[chain], &ranges[..]].concat(), Arg::Op(Ops::Add)),
        };
        outputs.push((out_lane, acc));
    }
    // the epilogue, a tile at a time through the subgroup's tile of workgroup memory
    let local = UOp::new(
        Ops::DefineLocal,
        tc.dtype_out.ptr_sized(AddrSpace::Local, warps as usize * tile),
        [],
        Arg::Str("tc0".into()),
    );
    let base = warp.mul(&UOp::index_const(tile as i64));
    let at = |offset: &UOp| UOp::new(Ops::Index, local.dtype(), [local.clone(), offset.clone()], Arg::None);
    let layout = Arg::Coop(Coop { role: CoopRole::C, row_major: true });
    // each thread's elements of a tile in runs of `width` along a row, which the vectorizer
    // folds into one load of the tile and one store of the output where it is contiguous
    let width = [4, 2]
        .into_iter()
        .find(|&w| {
            k.target().vector_widths.contains(&(w as usize))
                && tn as i64 % w == 0
                && (tile as i64) % (threads * w) == 0
        })
        .unwrap_or(1);
    let mut stores = vec![];
    let mut freed: Option<UOp> = None;
    let mut first: Option<UOp> = None;
    for (out_lane, acc) in outputs {
        let mut src = vec![at(&base), acc, UOp::index_const(tn as i64)];
        src.extend(freed.take());
        let stored = UOp::new(Ops::CoopStore, DType::VOID, src, layout.clone());
        let barrier = subgroup_barrier([stored]);
        let mut round = vec![];
        for j in 0..tile as i64 / threads {
            // element `(lane + threads * group) * width + i` of the tile, `j = group * width + i`
            let (group, i) = (j / width, j % width);
            let chunk = lane.add(&UOp::index_const(threads * group));
            let e = chunk.mul(&UOp::index_const(width)).add(&UOp::index_const(i));
            let value = UOp::load(tc.dtype_out, [at(&base.add(&e)), barrier.clone()]);
            let mut idxs = lw.idxs.clone();
            idxs.extend(out_lane[..tile_axes - lw.fu].iter().map(|&v| UOp::index_const(v)));
            let per_row = UOp::index_const(tn as i64 / width);
            let row = chunk.floordiv(&per_row);
            let col = chunk.rem(&per_row).mul(&UOp::index_const(width)).add(&UOp::index_const(i));
            idxs.extend([row, col, UOp::index_const(0)]);
            let mut epilogue = lw.with_indices(idxs, HashMap::from([(reduce.clone(), value)]));
            for store in ast.src() {
                round.push(epilogue.lower(store, &[])?);
            }
        }
        freed = Some(subgroup_barrier(round.clone()));
        stores.extend(round);
        first.get_or_insert(barrier);
    }
    // the next step's loads first in the loop body, before the tiles: issued later, a driver sinks
    // them to their use at the end of the body, where they no longer overlap the multiply-adds
    let sink = UOp::sink([prefetches, stores].concat());
    Ok(match first {
        Some(barrier) => epilogue_loads_after(&sink, &barrier),
        None => sink,
    })
}

/// A barrier among one subgroup's invocations, after `src`.
fn subgroup_barrier(src: impl Into<Box<[UOp]>>) -> UOp {
    UOp::new(Ops::Barrier, DType::VOID, src, Arg::Str(SUBGROUP_BARRIER.into()))
}

/// `sink` with its ungated global loads outside the tiles' work (a bias, a residual) ordered
/// after `barrier`, the first tile's store: the linearizer then issues them together as the
/// epilogue begins (`is_prefetch`), instead of each in the round of its tile, where its
/// latency stalls the subgroup between two barriers.
fn epilogue_loads_after(sink: &UOp, barrier: &UOp) -> UOp {
    let before: UOpMap<()> = barrier.toposort().into_iter().map(|u| (u, ())).collect();
    let gated: UOpMap<UOp> = sink
        .toposort()
        .into_iter()
        .filter(|u| is_global_load(u) && u.src().len() == 1 && !before.contains_key(u))
        .map(|u| {
            let load = UOp::load(u.dtype(), [u.src()[0].clone(), barrier.clone()]);
            (u, load)
        })
        .collect();
    sink.substitute(&gated)
}

/// The factors' blocks of one step of the reduce loop copied into workgroup memory: the two
/// `DefineLocal`s and the barrier after the copies. The copies come after a barrier of their
/// own at the top of the step, which keeps them from overwriting the last step's tiles.
fn stage_blocks(
    lw: &Lowerer,
    full: &[Sint],
    factors: &[(&UOp, CoopRole, (bool, i64)); 2],
    stages: &[Stage; 2],
    ranges: &[UOp],
    copy: &StageCopy<'_>,
) -> Result<([UOp; 2], UOp, Vec<UOp>), LowerError> {
    let (lidx, threads) = (copy.lidx, copy.threads);
    let top = UOp::new(Ops::Barrier, DType::VOID, ranges.to_vec(), Arg::None);
    let mut copies = vec![];
    let mut locals = vec![];
    // with a prefetch: each run's register and the indices of its elements
    let mut registers: Vec<(UOp, Vec<UOp>, DType)> = vec![];
    let first = |index: &UOp, range: &UOp| {
        index.substitute(&UOpMap::from_iter([(range.clone(), UOp::index_const(0))]))
    };
    for (f, ((load, _, _), stage)) in factors.iter().zip(stages).enumerate() {
        let dtype = load.dtype();
        let size = (stage.outer_len * stage.stride) as usize;
        let local = UOp::new(
            Ops::DefineLocal,
            dtype.ptr_sized(AddrSpace::Local, size),
            [],
            Arg::Str(["tca", "tcb"][f].into()),
        );
        let vectors = stage.inner_len / STAGE_VECTOR;
        for j in 0..stage.outer_len * vectors / threads {
            let g = lidx.add(&UOp::index_const(threads * j));
            let (row, within) = (g.floordiv(&UOp::index_const(vectors)), g.rem(&UOp::index_const(vectors)));
            let mut idxs = lw.idxs.clone();
            idxs.extend(lw.upcast_sizes.iter().map(|_| UOp::index_const(0)));
            digits(&mut idxs, &stage.outer, &row, full, 1);
            let contiguous = digits(&mut idxs, &stage.inner, &within, full, STAGE_VECTOR);
            let mut indices = vec![];
            let mut targets = vec![];
            for c in 0..STAGE_VECTOR {
                let mut idxs = idxs.clone();
                idxs[contiguous] = idxs[contiguous].add(&UOp::index_const(c));
                indices.push(lw.index(&load.src()[0], &load.src()[1], &idxs, &[], None)?);
                let at = row
                    .mul(&UOp::index_const(stage.stride))
                    .add(&within.mul(&UOp::index_const(STAGE_VECTOR)))
                    .add(&UOp::index_const(c));
                targets.push(UOp::new(Ops::Index, local.dtype(), [local.clone(), at], Arg::None));
            }
            match copy.prefetch {
                None => copies.extend(
                    targets
                        .into_iter()
                        .zip(indices)
                        .map(|(t, i)| UOp::store([t, UOp::load(dtype, [i, top.clone()])])),
                ),
                Some(range) => {
                    // the first step's run, loaded before the loop into a register of its own
                    let loads: Vec<UOp> =
                        indices.iter().map(|i| UOp::load(dtype, [first(i, range)])).collect();
                    let id = PREFETCH_ID + registers.len() as i64;
                    let register = UOp::new(
                        Ops::DefineAcc,
                        dtype.vec(STAGE_VECTOR as u32),
                        [UOp::vectorize(&loads)],
                        Arg::Int(id),
                    );
                    for (c, t) in targets.into_iter().enumerate() {
                        copies.push(UOp::store([t, top.clone(), register.gep(c)]));
                    }
                    registers.push((register, indices, dtype));
                }
            }
        }
        locals.push(local);
    }
    let barrier = UOp::new(Ops::Barrier, DType::VOID, copies, Arg::None);
    let locals: [UOp; 2] = locals.try_into().map_err(|_| unexpected(&barrier))?;
    // after the copies, each register loads the next step's run (the last step's again on the
    // last step), in flight while this step's tiles multiply
    let assigns = match copy.prefetch {
        Some(range) => {
            // min(r + 1, last) as -max(-(r + 1), -last): an H200's driver keeps these loads in
            // flight under a min, not under a select (FFN up 735 -> 717 us against 741)
            let last = range.src()[0].add(&UOp::index_const(-1));
            let neg = UOp::index_const(-1);
            let next = range.add(&UOp::index_const(1)).mul(&neg).maximum(last.mul(&neg)).mul(&neg);
            let step = UOpMap::from_iter([(range.clone(), next)]);
            registers
                .into_iter()
                .map(|(register, indices, scalar)| {
                    let loads: Vec<UOp> = indices
                        .iter()
                        .map(|i| UOp::load(scalar, [i.substitute(&step), barrier.clone()]))
                        .collect();
                    UOp::new(Ops::Assign, register.dtype(), [register, UOp::vectorize(&loads)], Arg::None)
                })
                .collect()
        }
        None => vec![],
    };
    Ok((locals, barrier, assigns))
}

/// How a workgroup copies the factors' blocks: its thread index and count, and the reduce
/// loop whose next step's elements each thread loads ahead into registers, if any.
struct StageCopy<'a> {
    lidx: &'a UOp,
    threads: i64,
    prefetch: Option<&'a UOp>,
}

/// Most output tiles a subgroup holds for its copies to load a step ahead: the registers of a
/// step's runs fit beside 8 accumulator tiles (MiniLM's f16 QKV, FFN up and `P @ V` on an H200:
/// 1.5-2.6% faster), not beside the 24 of the wide block (its two kernels 1-3% slower).
const PREFETCH_MAX_TILES: usize = 8;

/// The first `DefineAcc` id of the prefetch registers, clear of the linearizer's accumulators.
const PREFETCH_ID: i64 = 1 << 20;

/// Writes into `idxs` the digits of `position` over `axes` (mixed radix, the last axis
/// fastest), where the last axis counts in units of `unit` elements (its digit is scaled back);
/// returns the last axis.
fn digits(idxs: &mut [UOp], axes: &[usize], position: &UOp, full: &[Sint], unit: i64) -> usize {
    let mut rest = position.clone();
    let last = axes.len() - 1;
    for (n, &ax) in axes.iter().enumerate().rev() {
        let size = full[ax].vmax() / if n == last { unit } else { 1 };
        let digit = rest.rem(&UOp::index_const(size));
        idxs[ax] = if n == last { digit.mul(&UOp::index_const(unit)) } else { digit };
        rest = rest.floordiv(&UOp::index_const(size));
    }
    axes[last]
}

/// `CoopLoad` of a factor's tile at `index` (which must be ungated), after `barrier` if given.
fn coop_load(
    index: UOp,
    role: CoopRole,
    row_major: bool,
    stride: i64,
    dtype: DType,
    barrier: Option<UOp>,
) -> Result<UOp, LowerError> {
    if index.src().len() != 2 {
        return Err(unexpected(&index));
    }
    let src: Vec<UOp> =
        [Some(index), Some(UOp::index_const(stride)), barrier].into_iter().flatten().collect();
    Ok(UOp::new(Ops::CoopLoad, dtype, src, Arg::Coop(Coop { role, row_major })))
}

/// Every lane of the non-tile upcast axes `sizes` that are (`unrolled`) or are not reduce axes,
/// the others 0, padded with 0 for the tile axes to `len`.
fn upcast_lanes(sizes: &[i64], unrolled: &[bool], reduce: bool, len: usize) -> Vec<Vec<i64>> {
    let mut lanes = vec![vec![0; len]];
    for (i, &n) in sizes.iter().enumerate().filter(|&(i, _)| unrolled[i] == reduce) {
        lanes = lanes.into_iter().flat_map(|l| (0..n).map(move |v| with(&l, i, v))).collect();
    }
    lanes
}

/// The (row-major, stride) of the A tile (rows along m, columns along k) and the B tile (rows
/// along k, columns along n), from the factors' strides along the tile axes.
fn factor_layouts(k: &Kernel) -> Option<((bool, i64), (bool, i64))> {
    let [sa, sb] = k.tc_factor_strides()?;
    let (t, int) = (k.shape_len() - 3, int_stride);
    Some((tile_layout((int(&sa[t]), int(&sa[t + 2])))?, tile_layout((int(&sb[t + 2]), int(&sb[t + 1])))?))
}
