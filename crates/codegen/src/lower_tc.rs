//! Lowering a kernel with TC applied: each workgroup is one subgroup that owns the output tiles
//! of the upcast axes. Per tile, the factors' tiles are `CoopLoad`ed straight from their buffers
//! and `Wmma` accumulates them over the reduce loops (a `Reduce` of cooperative matrices);
//! the accumulators are then `CoopStore`d into workgroup memory, and after a barrier the
//! subgroup's threads share the tile's elements (`lidx0 + threads * j`) for the rest of the
//! kernel (casts, bias, the store), lowered as usual with the reduce read back from there.

use std::collections::HashMap;

use wgrad_dtype::{AddrSpace, DType};
use wgrad_ops::{Arg, Coop, CoopRole, Ops, UOp};
use wgrad_shape::IndexAlgebra;

use crate::lowerer::{LowerError, Lowerer, unexpected, with};
use crate::tensor_core::{int_stride, tc_factors, tile_layout};
use crate::{Kernel, TensorCoreShape};

/// The lowered graph (a `Sink` of `Store`s) of `k`, whose optimised AST is `ast`.
pub(crate) fn lower_tc(k: &Kernel, tc: &TensorCoreShape, lw: Lowerer, ast: &UOp) -> Result<UOp, LowerError> {
    let reduce =
        ast.toposort().into_iter().find(|u| u.op() == Ops::ReduceAxis).ok_or_else(|| unexpected(ast))?;
    let (a, b) = tc_factors(&reduce).ok_or_else(|| unexpected(&reduce))?;
    let layouts = factor_layouts(k).ok_or_else(|| unexpected(&reduce))?;
    let (tm, tn, _) = tc.dims;
    let tile = tm * tn;
    let tile_axes = k.shape_len() - 3;
    let lanes = tile_lanes(&lw.upcast_sizes[..tile_axes - lw.fu], lw.upcast_sizes.len());
    let acc_dtype = tc.dtype_out.vec(tile as u32);
    let local = UOp::new(
        Ops::DefineLocal,
        tc.dtype_out.ptr_sized(AddrSpace::Local, lanes.len() * tile),
        [],
        Arg::Str("tc0".into()),
    );
    let Arg::ReduceAxis(_, axes) = reduce.arg() else { return Err(unexpected(&reduce)) };
    let ranges: Vec<UOp> = axes.iter().filter(|&&a| a < lw.fu).map(|&a| lw.ridxs[a].clone()).collect();
    let mut coop_stores = vec![];
    for (t, lane) in lanes.iter().enumerate() {
        let tiles =
            [(&a, CoopRole::A, layouts.0), (&b, CoopRole::B, layouts.1)].map(|(load, role, layout)| {
                let index = lw.index(&load.src()[0], &load.src()[1], &lw.idxs, lane, None)?;
                coop_load(index, role, layout, load.dtype().vec(tile as u32))
            });
        let [fa, fb] = tiles;
        let wmma = UOp::new(Ops::Wmma, acc_dtype, [fa?, fb?, UOp::constant(acc_dtype, 0)], Arg::None);
        let acc = match ranges.is_empty() {
            true => wmma,
            false => UOp::new(Ops::Reduce, acc_dtype, [&[wmma], &ranges[..]].concat(), Arg::Op(Ops::Add)),
        };
        let at = UOp::new(
            Ops::Index,
            local.dtype(),
            [local.clone(), UOp::index_const((t * tile) as i64)],
            Arg::None,
        );
        let layout = Arg::Coop(Coop { role: CoopRole::C, row_major: true });
        coop_stores.push(UOp::new(
            Ops::CoopStore,
            DType::VOID,
            [at, acc, UOp::index_const(tn as i64)],
            layout,
        ));
    }
    let barrier = UOp::new(Ops::Barrier, DType::VOID, coop_stores, Arg::None);
    let threads = k.target().subgroup_size.unwrap_or(1);
    let lidx = UOp::special("lidx0", threads as i64);
    let mut stores = vec![];
    for (t, lane) in lanes.iter().enumerate() {
        for j in 0..tile / threads {
            let e = lidx.add(&UOp::index_const((threads * j) as i64));
            let at = UOp::index_const((t * tile) as i64).add(&e);
            let index = UOp::new(Ops::Index, local.dtype(), [local.clone(), at], Arg::None);
            let value = UOp::load(tc.dtype_out, [index, barrier.clone()]);
            let mut idxs = lw.idxs.clone();
            idxs.extend(lane[..tile_axes - lw.fu].iter().map(|&v| UOp::index_const(v)));
            let tn = UOp::index_const(tn as i64);
            idxs.extend([e.floordiv(&tn), e.rem(&tn), UOp::index_const(0)]);
            let mut epilogue = lw.with_indices(idxs, HashMap::from([(reduce.clone(), value)]));
            for store in ast.src() {
                stores.push(epilogue.lower(store, &[])?);
            }
        }
    }
    Ok(UOp::sink(stores))
}

/// `CoopLoad` of a factor's tile at `index` (which must be ungated).
fn coop_load(
    index: UOp,
    role: CoopRole,
    (row_major, stride): (bool, i64),
    dtype: DType,
) -> Result<UOp, LowerError> {
    if index.src().len() != 2 {
        return Err(unexpected(&index));
    }
    let src = [index, UOp::index_const(stride)];
    Ok(UOp::new(Ops::CoopLoad, dtype, src, Arg::Coop(Coop { role, row_major })))
}

/// Every lane of the non-tile upcast axes `sizes`, padded with 0 for the tile axes to `len`.
fn tile_lanes(sizes: &[i64], len: usize) -> Vec<Vec<i64>> {
    let mut lanes = vec![vec![0; len]];
    for (i, &n) in sizes.iter().enumerate() {
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
