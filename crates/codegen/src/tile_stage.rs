//! Register-tiled matmuls stage their factors in workgroup memory: each step of the reduce loop,
//! the workgroup copies the block of each factor that its threads' tiles read (the local and
//! upcast axes the factor varies along, and the unrolled reduce axes) into a `DefineLocal`,
//! in the factor's own memory order so that neighbouring threads copy neighbouring elements
//! (vector loads where the factor is contiguous), between two barriers; the tiles then read
//! their lanes from there. With two blocks of each (`STAGE` arg 2) the copy of the next step
//! runs in the same barrier interval as the tiles' work on this one ([`stage_tiles`]). The
//! block is laid out reduce axes outer and output axes inner, so a thread's lanes along its
//! upcast output axis are neighbours (vector loads of workgroup memory), rows padded against
//! bank conflicts. It takes every kernel whose one reduce is a sum of the product of two
//! factors, each an unmasked load or an expression of loads with an unmasked principal load
//! (`factor.rs`: the copy computes the expression, so the tiles read its values), with a
//! workgroup and no grouped reduce, where the
//! blocks split evenly over the threads and fit the target's workgroup memory, once the STAGE
//! opt asked for it (the last opt: later ones are refused, so the kernel stays stageable).

use std::collections::{BTreeMap, HashMap};

use wgrad_dtype::{AddrSpace, DType};
use wgrad_ops::{Arg, Ops, UOp, UOpMap};
use wgrad_shape::{IndexAlgebra, Sint};

use crate::Kernel;
use crate::factor::mul_factors;
use crate::lowerer::{LowerError, Lowerer, unexpected};

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
        if self.staged == 0 || self.group_for_reduces > 0 || self.reduceops.len() != 1 {
            return None;
        }
        let reduce = &self.reduceops[0];
        if !matches!(reduce.arg(), Arg::ReduceAxis(Ops::Add, _)) {
            return None;
        }
        // two blocks copy the next step ahead, so the steps must be counted at compile time
        let (fr, fu) = (self.first_reduce(), self.first_upcast());
        if self.staged == 2 && self.full_shape()[fr..fu].iter().any(|s| s.as_int().is_none()) {
            return None;
        }
        let (a, b) = mul_factors(reduce)?;
        let threads = self.local_size();
        let stages = [self.stage_of(&a, threads)?, self.stage_of(&b, threads)?];
        let blocks = self.staged as i64;
        let bytes: i64 = stages.iter().map(|s| blocks * s.size * s.dtype.itemsize() as i64).sum();
        (bytes <= t.shared_max as i64).then_some(stages)
    }

    /// The staged block of the factor `factor` (laid out as its principal load), for a
    /// workgroup of `threads`.
    fn stage_of(&self, factor: &UOp, threads: i64) -> Option<TileStage> {
        let load = self.principal_load(factor)?;
        let i = self.bufs.iter().position(|b| *b == load)?;
        let st = &self.sts[i];
        if load.src()[0].op() != Ops::DefineGlobal || st.has_mask() {
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
        // reduce (unrolled) axes outer, output axes inner, each in the factor's memory order (a
        // warp's vector reads of an interleaved tile then touch neighbouring words)
        let output = self.output_shape();
        let mut by_memory = block.clone();
        by_memory.sort_by_key(|&a| std::cmp::Reverse(strides[a].map(i64::abs)));
        let (outputs, reduces): (Vec<usize>, Vec<usize>) =
            by_memory.iter().partition(|&&a| full[a] == output[a]);
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
        let copy = by_memory;
        let last = *copy.last()?;
        let elements: i64 = block.iter().map(|&a| size(a)).product();
        let contiguous = strides[last] == Some(1);
        let vector = [4, 2, 1]
            .into_iter()
            .find(|&v| (v == 1 || contiguous) && size(last) % v == 0 && elements % (threads * v) == 0)?;
        Some(TileStage { dtype: factor.dtype(), copy, strides: layout, size: step, vector })
    }
}

/// A factor staged for the lowerer: its workgroup memory, the barrier its reads come after,
/// the element offset of the block a step reads and each block axis's step there.
#[derive(Clone)]
pub(crate) struct Staged {
    local: UOp,
    top: UOp,
    half: UOp,
    strides: BTreeMap<usize, i64>,
}

impl Staged {
    /// The load of the lane `lane` of the factor (`idxs`: every non-upcast axis's index, `fu`
    /// the first upcast axis) from workgroup memory.
    pub(crate) fn load(&self, dtype: DType, idxs: &[UOp], fu: usize, lane: &[i64]) -> UOp {
        let position = self.strides.iter().fold(self.half.clone(), |acc, (&a, &step)| {
            let digit = if a < fu { idxs[a].clone() } else { UOp::index_const(lane[a - fu]) };
            acc.add(&digit.mul(&UOp::index_const(step)))
        });
        let index = UOp::new(Ops::Index, self.local.dtype(), [self.local.clone(), position], Arg::None);
        UOp::load(dtype, [index, self.top.clone()])
    }
}

/// Both factors of the optimised AST `ast` staged: each factor's staged form, by its node, and
/// the copies the kernel's sink must hold besides its outputs.
///
/// With one block of each ([`Opt::stage`](crate::Opt::stage)), each reduce step copies its
/// blocks between two barriers, then the tiles read them. With two
/// ([`Opt::double_stage`](crate::Opt::double_stage)), the workgroup copies step 0's blocks into
/// the first half of each workgroup memory before the loop; each step starts with a barrier,
/// reads its blocks from the half of its parity and copies the next step's blocks into the
/// other half (the last step copies its own again, unread), so the next blocks' global loads
/// are in flight while the tiles compute, and the one barrier a step keeps every copy apart
/// from the reads of the same half. Those in-loop copies are what the sink holds.
pub(crate) fn stage_tiles(
    k: &Kernel,
    lw: &Lowerer,
    ast: &UOp,
    stages: &[TileStage; 2],
) -> Result<(HashMap<UOp, Staged>, Vec<UOp>), LowerError> {
    let reduce =
        ast.toposort().into_iter().find(|u| u.op() == Ops::ReduceAxis).ok_or_else(|| unexpected(ast))?;
    let (a, b) = mul_factors(&reduce).ok_or_else(|| unexpected(&reduce))?;
    let full = k.full_shape();
    let (fr, fu) = (k.first_reduce(), k.first_upcast());
    let blocks = k.staged as i64;
    let factors = [(&stages[0], a, "tile_a"), (&stages[1], b, "tile_b")].map(|(stage, load, name)| {
        let dtype = stage.dtype.ptr_sized(AddrSpace::Local, (blocks * stage.size) as usize);
        let local = UOp::new(Ops::DefineLocal, dtype, [], Arg::Str(name.into()));
        Factor { stage, node: load, local }
    });
    let staged = |top: &UOp, halves: [UOp; 2]| -> HashMap<UOp, Staged> {
        factors
            .iter()
            .zip(halves)
            .map(|(f, half)| {
                let strides = f.stage.strides.clone();
                (f.node.clone(), Staged { local: f.local.clone(), top: top.clone(), half, strides })
            })
            .collect()
    };
    let ranges = (fr..fu).map(|a| lw.ridxs[a].clone());
    let zero = UOp::index_const(0);
    if blocks == 1 {
        let top = UOp::new(Ops::Barrier, DType::VOID, ranges.collect::<Vec<_>>(), Arg::None);
        let step = copies(k, lw, &factors, &[], &[zero.clone(), zero.clone()], Some(&top))?;
        let after = UOp::new(Ops::Barrier, DType::VOID, step, Arg::None);
        return Ok((staged(&after, [zero.clone(), zero]), vec![]));
    }
    // the reduce step as one number, the next one (the last step's own again) and its digits
    let sizes: Vec<i64> = (fr..fu).map(|a| full[a].vmax()).collect();
    let steps: i64 = sizes.iter().product();
    let step = (fr..fu)
        .zip(&sizes)
        .fold(UOp::index_const(0), |acc, (a, &n)| acc.mul(&UOp::index_const(n)).add(&lw.ridxs[a]));
    let after = step.add(&UOp::index_const(1));
    let next = after.cmp_lt(steps).where_(&after, &UOp::index_const(steps - 1));
    let mut rest = next;
    let mut next_idxs = vec![];
    for (a, &n) in (fr..fu).zip(&sizes).rev() {
        next_idxs.push((a, rest.rem(&UOp::index_const(n))));
        rest = rest.floordiv(&UOp::index_const(n));
    }
    let first_idxs: Vec<(usize, UOp)> = (fr..fu).map(|a| (a, zero.clone())).collect();
    let first = copies(k, lw, &factors, &first_idxs, &[zero.clone(), zero], None)?;
    let top = UOp::new(Ops::Barrier, DType::VOID, ranges.chain(first).collect::<Vec<_>>(), Arg::None);
    // the element offset of the half a step of `parity` uses, for each factor
    let halves = |parity: &UOp| stages.each_ref().map(|s| parity.mul(&UOp::index_const(s.size)));
    let two = UOp::index_const(2);
    let next_copies = copies(k, lw, &factors, &next_idxs, &halves(&after.rem(&two)), Some(&top))?;
    Ok((staged(&top, halves(&step.rem(&two))), next_copies))
}

/// One factor being staged: its block, its node (a load or an expression of loads) and its
/// workgroup memory.
struct Factor<'a> {
    stage: &'a TileStage,
    node: UOp,
    local: UOp,
}

/// The stores that copy both factors' blocks of the reduce step whose reduce axes' indices are
/// `reduce_idxs` into their workgroup memories from element `halves[f]` on, each thread its
/// share (the first local axis fastest), their global loads after `gate`. An expression factor
/// is computed there, from its loads at the element's indices.
fn copies(
    k: &Kernel,
    lw: &Lowerer,
    factors: &[Factor<'_>; 2],
    reduce_idxs: &[(usize, UOp)],
    halves: &[UOp; 2],
    gate: Option<&UOp>,
) -> Result<Vec<UOp>, LowerError> {
    let full = k.full_shape();
    let gd = k.global_dims();
    let thread = (gd..gd + k.local_dims())
        .rev()
        .fold(UOp::index_const(0), |acc, a| acc.mul(&UOp::index_const(full[a].vmax())).add(&lw.idxs[a]));
    let threads = k.local_size();
    let mut stores = vec![];
    for (Factor { stage, node, local }, half) in factors.iter().zip(halves) {
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
                for (a, i) in reduce_idxs {
                    idxs[*a] = i.clone();
                }
                let mut position = half.clone();
                for &a in &stage.copy {
                    let digit =
                        if a == last { digits[&a].add(&UOp::index_const(c)) } else { digits[&a].clone() };
                    position = position.add(&digit.mul(&UOp::index_const(stage.strides[&a])));
                    idxs[a] = digit;
                }
                let value = lw.with_indices(idxs, HashMap::new()).lower(node, &[])?;
                let value = match gate {
                    Some(g) => after(&value, g),
                    None => value,
                };
                let target = UOp::new(Ops::Index, local.dtype(), [local.clone(), position], Arg::None);
                stores.push(UOp::store([target, value]));
            }
        }
    }
    if stores.is_empty() {
        return Err(unexpected(&factors[0].node));
    }
    Ok(stores)
}

/// The lowered `value` with each of its global loads that moves with the reduce loop ordered
/// after `gate`; the others (an expression's per-row values) stay out of the loop.
fn after(value: &UOp, gate: &UOp) -> UOp {
    let in_loop = |u: &UOp| u.toposort().iter().any(|x| x.op() == Ops::Range);
    let gated: UOpMap<UOp> = value
        .toposort()
        .into_iter()
        .filter(|u| u.op() == Ops::Load && u.src().len() == 1 && in_loop(u))
        .map(|u| (u.clone(), u.with_src([u.src()[0].clone(), gate.clone()])))
        .collect();
    value.substitute(&gated)
}
