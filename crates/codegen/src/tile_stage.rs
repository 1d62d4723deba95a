//! Register-tiled matmuls stage their factors in workgroup memory: each step of the reduce loop,
//! the workgroup copies the block of each factor that its threads' tiles read (the local and
//! upcast axes the factor varies along, and the unrolled reduce axes) into a `DefineLocal`,
//! in the factor's own memory order so that neighbouring threads copy neighbouring elements
//! (vector loads where the factor is contiguous), between two barriers; the tiles then read
//! their lanes from there. The block is laid out reduce axes outer and output axes inner, so a
//! thread's lanes along its upcast output axis are neighbours (vector loads of workgroup
//! memory), rows padded against bank conflicts. It takes every kernel whose one reduce is a sum
//! of the product of two unmasked loads, with a workgroup and no grouped reduce, where the
//! blocks split evenly over the threads and fit the target's workgroup memory, once the STAGE
//! opt asked for it (the last opt: later ones are refused, so the kernel stays stageable).

use std::collections::{BTreeMap, HashMap};

use wgrad_dtype::{AddrSpace, DType};
use wgrad_ops::{Arg, Ops, UOp};
use wgrad_shape::{IndexAlgebra, Sint};

use crate::Kernel;
use crate::lowerer::{LowerError, Lowerer, unexpected};
use crate::tensor_core::tc_factors;

/// Elements of padding after each row of a staged block (16 bytes of f32).
const ROW_PAD: i64 = 4;

/// One factor's block of a reduce step in workgroup memory.
#[derive(Clone, Debug)]
pub(crate) struct TileStage {
    /// The factor's element type.
    pub(crate) dtype: DType,
    /// The kernel axes of the block, in the factor's memory order (its contiguous axis last).
    pub(crate) copy: Vec<usize>,
    /// Each block axis's step in workgroup memory (ordered: the index it builds is the same in
    /// every process).
    pub(crate) strides: BTreeMap<usize, i64>,
    /// Elements of workgroup memory the block takes (padding included).
    pub(crate) size: i64,
    /// Elements a thread copies with one access.
    pub(crate) vector: i64,
}

impl Kernel {
    /// The staged blocks of the two factors, when STAGE applied and the kernel can stage them
    /// (module doc).
    pub(crate) fn tile_stages(&self) -> Option<[TileStage; 2]> {
        let t = &self.target;
        if self.tc.is_some() || !t.has_local || !t.has_shared || self.local_dims == 0 {
            return None;
        }
        if !self.staged || self.group_for_reduces > 0 || self.reduceops.len() != 1 {
            return None;
        }
        let reduce = &self.reduceops[0];
        if !matches!(reduce.arg(), Arg::ReduceAxis(Ops::Add, _)) {
            return None;
        }
        let (a, b) = tc_factors(reduce)?;
        let threads = self.local_size();
        let stages = [self.stage_of(&a, threads)?, self.stage_of(&b, threads)?];
        let bytes: i64 = stages.iter().map(|s| s.size * s.dtype.itemsize() as i64).sum();
        (bytes <= t.shared_max as i64).then_some(stages)
    }

    /// The staged block of the factor `load`, for a workgroup of `threads`.
    fn stage_of(&self, load: &UOp, threads: i64) -> Option<TileStage> {
        let i = self.bufs.iter().position(|b| b == load)?;
        let st = &self.sts[i];
        if load.src()[0].op() != Ops::DefineGlobal || st.views().iter().any(|v| v.mask().is_some()) {
            return None;
        }
        let strides: Vec<Option<i64>> =
            st.real_strides(false).iter().map(|s| s.as_ref().and_then(Sint::as_int)).collect();
        let full = self.full_shape();
        let (gd, fu) = (self.global_dims(), self.first_upcast());
        let size = |a: usize| full[a].vmax();
        let reads = |a: &usize| strides[*a] != Some(0) && size(*a) > 1;
        let block: Vec<usize> = (gd..gd + self.local_dims).chain(fu..full.len()).filter(reads).collect();
        if block.iter().any(|&a| strides[a].is_none()) {
            return None;
        }
        // reduce (unrolled) axes outer, output axes inner, each in kernel order
        let output = self.output_shape();
        let (outputs, reduces): (Vec<usize>, Vec<usize>) = block.iter().partition(|&&a| full[a] == output[a]);
        let row: i64 = outputs.iter().map(|&a| size(a)).product();
        let row_stride = if reduces.is_empty() { row } else { row + ROW_PAD };
        let mut layout = BTreeMap::new();
        let mut step = 1;
        for &a in outputs.iter().rev() {
            layout.insert(a, step);
            step *= size(a);
        }
        step = row_stride;
        for &a in reduces.iter().rev() {
            layout.insert(a, step);
            step *= size(a);
        }
        // the copy follows the factor's memory: larger strides first
        let mut copy = block.clone();
        copy.sort_by_key(|&a| std::cmp::Reverse(strides[a].map(i64::abs)));
        let last = *copy.last()?;
        let elements: i64 = block.iter().map(|&a| size(a)).product();
        let contiguous = strides[last] == Some(1);
        let vector = [4, 2, 1]
            .into_iter()
            .find(|&v| (v == 1 || contiguous) && size(last) % v == 0 && elements % (threads * v) == 0)?;
        Some(TileStage { dtype: load.dtype(), copy, strides: layout, size: step, vector })
    }
}

/// A factor staged for the lowerer: its workgroup memory, the barrier after the step's copies
/// and each block axis's step there.
#[derive(Clone)]
pub(crate) struct Staged {
    local: UOp,
    after: UOp,
    strides: BTreeMap<usize, i64>,
}

impl Staged {
    /// The load of the lane `lane` of the factor (`idxs`: every non-upcast axis's index, `fu`
    /// the first upcast axis) from workgroup memory.
    pub(crate) fn load(&self, dtype: DType, idxs: &[UOp], fu: usize, lane: &[i64]) -> UOp {
        let position = self.strides.iter().fold(UOp::index_const(0), |acc, (&a, &step)| {
            let digit = if a < fu { idxs[a].clone() } else { UOp::index_const(lane[a - fu]) };
            acc.add(&digit.mul(&UOp::index_const(step)))
        });
        let index = UOp::new(Ops::Index, self.local.dtype(), [self.local.clone(), position], Arg::None);
        UOp::load(dtype, [index, self.after.clone()])
    }
}

/// The copies of one reduce step of both factors of the optimised AST `ast`: each factor's
/// staged form, by its load.
pub(crate) fn stage_tiles(
    k: &Kernel,
    lw: &Lowerer,
    ast: &UOp,
    stages: &[TileStage; 2],
) -> Result<HashMap<UOp, Staged>, LowerError> {
    let reduce =
        ast.toposort().into_iter().find(|u| u.op() == Ops::ReduceAxis).ok_or_else(|| unexpected(ast))?;
    let (a, b) = tc_factors(&reduce).ok_or_else(|| unexpected(&reduce))?;
    let loads = [a, b];
    let full = k.full_shape();
    let (gd, fr, fu) = (k.global_dims(), k.first_reduce(), k.first_upcast());
    let ranges: Vec<UOp> = (fr..fu).map(|a| lw.ridxs[a].clone()).collect();
    let top = UOp::new(Ops::Barrier, DType::VOID, ranges, Arg::None);
    // the thread's number in the workgroup, the first local axis fastest
    let locals = gd..gd + k.local_dims();
    let thread = locals
        .clone()
        .rev()
        .fold(UOp::index_const(0), |acc, a| acc.mul(&UOp::index_const(full[a].vmax())).add(&lw.idxs[a]));
    let threads = k.local_size();
    let mut copies = vec![];
    let mut locals_of = vec![];
    for (f, (stage, load)) in stages.iter().zip(&loads).enumerate() {
        let dtype = stage.dtype;
        let name = ["tile_a", "tile_b"][f];
        let local = UOp::new(
            Ops::DefineLocal,
            dtype.ptr_sized(AddrSpace::Local, stage.size as usize),
            [],
            Arg::Str(name.into()),
        );
        let elements: i64 = stage.copy.iter().map(|&a| full[a].vmax()).product();
        for round in 0..elements / (threads * stage.vector) {
            // the digits of this thread's vector, the last axis counted in vectors
            let mut rest = thread.add(&UOp::index_const(threads * round));
            let mut digits = HashMap::new();
            for (n, &a) in stage.copy.iter().enumerate().rev() {
                let unit = if n + 1 == stage.copy.len() { stage.vector } else { 1 };
                let extent = UOp::index_const(full[a].vmax() / unit);
                digits.insert(a, rest.rem(&extent).mul(&UOp::index_const(unit)));
                rest = rest.floordiv(&extent);
            }
            let last = stage.copy[stage.copy.len() - 1];
            for c in 0..stage.vector {
                let mut idxs = lw.idxs.clone();
                idxs.extend(lw.upcast_sizes.iter().map(|_| UOp::index_const(0)));
                let mut position = UOp::index_const(0);
                for &a in &stage.copy {
                    let digit =
                        if a == last { digits[&a].add(&UOp::index_const(c)) } else { digits[&a].clone() };
                    position = position.add(&digit.mul(&UOp::index_const(stage.strides[&a])));
                    idxs[a] = digit;
                }
                let index = lw.index(&load.src()[0], &load.src()[1], &idxs, &[], None)?;
                let value = UOp::load(dtype, [index, top.clone()]);
                let target = UOp::new(Ops::Index, local.dtype(), [local.clone(), position], Arg::None);
                copies.push(UOp::store([target, value]));
            }
        }
        locals_of.push(local);
    }
    if copies.is_empty() {
        return Err(unexpected(&top));
    }
    let after = UOp::new(Ops::Barrier, DType::VOID, copies, Arg::None);
    Ok(stages
        .iter()
        .zip(locals_of)
        .zip(loads)
        .map(|((s, local), load)| (load, Staged { local, after: after.clone(), strides: s.strides.clone() }))
        .collect())
}
