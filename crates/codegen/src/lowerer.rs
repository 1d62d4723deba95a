//! The lowerer's job is indexing: it turns an optimised kernel's views into index UOps over
//! `Special` (workgroup and thread ids) and `Range` (loop) indices, and its reduces into
//! `Reduce` over those ranges, producing the lowered graph of `LOWERED.md`.
//!
//! Upcast and unroll axes never become loops or arrays: every lane of them is lowered
//! separately with a constant index, so each lane is its own scalar UOp (a named register
//! once rendered). Hash-consing shares whatever the lanes have in common.
//!
//! Invariants of the output: only scalar dtypes; every `Range` has a unique axis id (kernel axes
//! `0..n`, the second stage of a grouped reduce `1000 + axis`, a nested reduce's own loops those
//! plus `10000 * k` for its `k`th set, a reduce's loop over an output axis it spans `2000 +
//! axis + 10000 * k` for the `k`th such loop); group-reduce partials go through
//! `DefineLocal` with a `Barrier` naming every lane's store. Where
//! [`Kernel::subgroup_partials`] holds, each subgroup first combines its partials
//! (`SubgroupReduce`), its lane 0 stores the result at its `subgroup_id`, and the loop reading
//! them back runs to `num_subgroups` (all three `Special`s).

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use thiserror::Error;
use wgrad_ops::{Arg, NUM_SUBGROUPS, Ops, SUBGROUP_ID, SUBGROUP_LANE, UOp};
use wgrad_shape::{IndexAlgebra, ShapeTracker, Sint};

use crate::tile_stage::{Staged, stage_tiles};
use crate::{Kernel, view_st};

/// Why a kernel cannot be lowered.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LowerError {
    /// Launch dimensions must be known integers (symbolic sizes only work as loop bounds).
    #[error("launch dimension {dim} is symbolic; only loop (reduce) axes may be symbolic")]
    SymbolicLaunch {
        /// The symbolic size.
        dim: String,
    },
    /// The launch grid does not fit the target even after merging dimensions.
    #[error("cannot fit {prefix} dims {dims:?} into the target's limits {max:?}")]
    LaunchTooLarge {
        /// `gidx` or `lidx`.
        prefix: String,
        /// The sizes asked for.
        dims: Vec<i64>,
        /// The target's maximum per dimension.
        max: Vec<usize>,
    },
    /// Upcast and unroll axes must have integer sizes.
    #[error("upcast axis {axis} has symbolic size {size}")]
    SymbolicUpcast {
        /// The axis.
        axis: usize,
        /// Its size.
        size: String,
    },
    /// The AST holds a node the lowerer does not know.
    #[error("cannot lower {op} in a kernel AST")]
    Unexpected {
        /// The op found.
        op: String,
    },
    /// An index the kernel would compute can leave `int32`, the index type of WGSL and of the
    /// interpreter (`i64` is no portable WGSL type): refused rather than wrapped.
    #[error(
        "{what} reaches {reach}, past int32's {max}: kernel indices are 32-bit, so a \
         tensor indexed past 2^31 elements must be split into smaller ones",
        max = i32::MAX
    )]
    IndexOverflow {
        /// The bound or view, with its shape.
        what: String,
        /// The largest magnitude it can reach.
        reach: i128,
    },
    /// One invocation would run more loop iterations than the target lets it (Mesa llvmpipe
    /// stops an invocation's loops after 65,535 without an error): refused rather than
    /// returning a partial result.
    #[error(
        "one thread would run {iterations} loop iterations, past the {limit} this device \
         runs before it silently stops a loop (Mesa llvmpipe); run it on a GPU, or reduce \
         a shorter or splittable (non-prime) axis"
    )]
    LoopLimit {
        /// Iterations of all loops one invocation runs, nested ones counted in full.
        iterations: u128,
        /// The target's limit.
        limit: u64,
    },
}

/// Lowers an optimised kernel to the lowered graph: a `Sink` of `Store`s.
pub fn lower(k: &Kernel) -> Result<UOp, LowerError> {
    check_index_range(k)?;
    check_loop_limit(k)?;
    let full = k.full_shape();
    let fu = k.first_upcast();
    let upcast_sizes = full[fu..]
        .iter()
        .enumerate()
        .map(|(i, s)| s.as_int().ok_or(LowerError::SymbolicUpcast { axis: fu + i, size: s.to_string() }))
        .collect::<Result<Vec<i64>, _>>()?;
    // a grouped reduce's partials (or a row's, split over the workgroup's one local axis)
    // combined in each subgroup (`SubgroupReduce`), stored by one invocation of it at its
    // `subgroup_id`, and `num_subgroups` of them read back
    let partials = match k.group_for_reduces() {
        1 if k.subgroup_partials() => Some(k.first_reduce()),
        0 if k.row_subgroup_partials() => Some(k.global_dims()),
        _ => None,
    };
    let subgroups = partials.and_then(|axis| {
        let group = full.get(axis).and_then(Sint::as_int)?;
        Some(Subgroups {
            axis,
            id: UOp::special(SUBGROUP_ID, group),
            lane: UOp::special(SUBGROUP_LANE, group),
            count: UOp::special(NUM_SUBGROUPS, group + 1),
        })
    });
    let grouped = subgroups.as_ref().filter(|s| s.axis == k.first_reduce());
    let (idxs, ridxs) = loop_indices(k, grouped.map(|s| &s.count))?;
    let ast = k.get_optimized_ast();
    let mut lw = Lowerer {
        idxs,
        ridxs,
        subgroups,
        fu,
        upcast_sizes,
        memo: Memo::default(),
        overrides: HashMap::new(),
        nested: Rc::new(Nested {
            reduces: nested_reduces(&ast),
            loop_sets: Cell::new(0),
            spans: RefCell::new(HashMap::new()),
        }),
        own: None,
        first_reduce: k.first_reduce(),
        global_dims: k.global_dims(),
        sizes: full.to_vec(),
        unrolled: (fu..full.len()).map(|a| full[a] != k.output_shape()[a]).collect(),
        staged: HashMap::new(),
    };
    if let Some(tc) = k.tensor_core() {
        return crate::lower_tc::lower_tc(k, tc, lw, &ast);
    }
    let mut next_copies = vec![];
    if let Some(stages) = k.tile_stages() {
        (lw.staged, next_copies) = stage_tiles(k, &lw, &ast, &stages)?;
    }
    let mut stores = vec![];
    for store in ast.src() {
        stores.extend(lw.store_lanes(store)?);
    }
    // after the outputs: the linearizer then puts a step's copies after its tiles' work
    stores.extend(next_copies);
    Ok(UOp::sink(stores))
}

/// Refuses a kernel whose `int32` index arithmetic could overflow: a loop or launch bound (the
/// size of a dimension, or of the whole launch), or any partial sum of a buffer view's index (the offset plus position times stride, for
/// every view a buffer's index passes through), past `i32::MAX` in magnitude. Bounds are
/// taken over symbolic dims' ranges; masked positions count (their index is computed too).
/// Merged launch ids and the unravelled positions between views stay below these bounds.
pub(crate) fn check_index_range(k: &Kernel) -> Result<(), LowerError> {
    let max = i128::from(i32::MAX);
    let refuse = |what: String, reach: i128| Err(LowerError::IndexOverflow { what, reach });
    // a loop or launch bound is itself a value the kernel holds
    for (axis, dim) in k.full_shape().iter().enumerate() {
        if i128::from(dim.vmax()) > max {
            return refuse(format!("the bound of axis {axis}"), dim.vmax().into());
        }
    }
    let launch =
        k.full_shape()[..k.first_reduce()].iter().fold(1i128, |n, d| n.saturating_mul(d.vmax().into()));
    if launch > max {
        return refuse("the launch's thread count".into(), launch);
    }
    // the first `bufs.len()` trackers index buffers; those after them only carry reduce shapes
    for (slot, st) in k.sts()[..k.bufs().len()].iter().enumerate() {
        for view in st.views() {
            let reach = view_reach(view.shape(), view.strides(), view.offset());
            if reach > max {
                let shape: Vec<String> = view.shape().iter().map(ToString::to_string).collect();
                return refuse(format!("buffer view {slot} of shape ({})", shape.join(", ")), reach);
            }
        }
    }
    Ok(())
}

/// Refuses a kernel whose invocations would run more loop iterations than the target's
/// `max_loop_iterations`: the reduce loops one thread runs (nested loops counted in full:
/// `n1 + n1*n2 + ...`), plus the loop over a grouped reduce's partials. Symbolic sizes count
/// at their largest.
pub(crate) fn check_loop_limit(k: &Kernel) -> Result<(), LowerError> {
    let Some(limit) = k.target().max_loop_iterations else { return Ok(()) };
    let full = k.full_shape();
    let (fr, gfr, fu) = (k.first_reduce(), k.group_for_reduces(), k.first_upcast());
    let partials: u128 = full[fr..fr + gfr].iter().map(dim_max).product();
    let (mut nest, mut iterations) = (1u128, if gfr > 0 { partials } else { 0 });
    for d in &full[fr + gfr..fu] {
        nest = nest.saturating_mul(dim_max(d));
        iterations = iterations.saturating_add(nest);
    }
    match iterations > u128::from(limit) {
        true => Err(LowerError::LoopLimit { iterations, limit }),
        false => Ok(()),
    }
}

fn dim_max(d: &Sint) -> u128 {
    u128::try_from(d.vmax()).unwrap_or(0)
}

/// The largest magnitude any partial sum of `offset + sum(position_i * stride_i)` reaches for
/// positions in `shape`, summed in any order: every such sum lies between the sum of the
/// terms' negative extremes and the sum of their positive ones.
fn view_reach(shape: &[Sint], strides: &[Sint], offset: &Sint) -> i128 {
    let (mut lo, mut hi) = (i128::from(offset.vmin()).min(0), i128::from(offset.vmax()).max(0));
    for (dim, stride) in shape.iter().zip(strides) {
        let last = (i128::from(dim.vmax()) - 1).max(0);
        lo = lo.saturating_add(last.saturating_mul(stride.vmin().into()).min(0));
        hi = hi.saturating_add(last.saturating_mul(stride.vmax().into()).max(0));
    }
    hi.max(lo.saturating_neg())
}

/// The reduces that another reduce's source holds (a max inside a sum of `exp(x - max)`):
/// each needs loops of its own, finished before the loops of the reduce that reads it. A
/// grouped reduce's first stage (the value it stores to workgroup memory) is part of it.
fn nested_reduces(ast: &UOp) -> HashSet<UOp> {
    let topo = ast.toposort();
    let staged: HashSet<&UOp> = topo
        .iter()
        .filter(|u| u.op() == Ops::Store && u.src()[0].op() == Ops::DefineLocal)
        .map(|u| &u.src()[2])
        .collect();
    let finals: Vec<&UOp> =
        topo.iter().filter(|u| u.op() == Ops::ReduceAxis && !staged.contains(u)).collect();
    finals
        .iter()
        .flat_map(|f| f.src()[0].toposort())
        .filter(|u| u.op() == Ops::ReduceAxis && !staged.contains(u))
        .collect()
}

/// The index of every non-upcast axis: `(idxs, ridxs)`. They differ only on grouped-reduce
/// axes, which are thread ids in `idxs` and loops (for reading the partials back) in `ridxs`:
/// over the group, or over the subgroups when `subgroups` is given (its `num_subgroups`).
fn loop_indices(k: &Kernel, subgroups: Option<&UOp>) -> Result<(Vec<UOp>, Vec<UOp>), LowerError> {
    let full = k.full_shape();
    let (gd, fr, gfr, fu) = (k.global_dims(), k.first_reduce(), k.group_for_reduces(), k.first_upcast());
    let t = k.target();
    let mut idxs = if !t.has_local {
        (0..fr).map(|i| range(&full[i], i)).collect()
    } else if k.dont_use_locals() {
        grouped_dims("gidx", &full[..gd], &t.max_global_size, true)?
    } else {
        let mut v = grouped_dims("gidx", &full[..gd], &t.max_global_size, true)?;
        v.extend(grouped_dims("lidx", &full[gd..fr + gfr], &t.max_local_size, false)?);
        v
    };
    idxs.extend((fr + gfr..fu).map(|i| range(&full[i], i)));
    let mut ridxs = idxs.clone();
    for a in fr..fr + gfr {
        ridxs[a] = match subgroups {
            Some(n) => UOp::range(n, 1000 + a as i64),
            None => range(&full[a], 1000 + a),
        };
    }
    Ok((idxs, ridxs))
}

fn range(size: &Sint, axis: usize) -> UOp {
    UOp::range(&size.to_algebra::<UOp>(), axis as i64)
}

/// One `Special` per launch dimension named `{prefix}{i}`, fitting the dims into `max`
/// (tinygrad's `get_grouped_dims`): neighbours are merged while there are too many dims or one
/// is too large, then a dim still too large is split by an exact divisor into a spare launch
/// dimension. Merged dims are recovered with `%` and `//`, split ones as `hi * lo_size + lo`.
/// With `reverse` the last axis becomes dimension 0 (the fastest-varying id).
fn grouped_dims(prefix: &str, dims: &[Sint], max: &[usize], reverse: bool) -> Result<Vec<UOp>, LowerError> {
    let mut sizes = dims
        .iter()
        .map(|d| d.as_int().ok_or(LowerError::SymbolicLaunch { dim: d.to_string() }))
        .collect::<Result<Vec<i64>, _>>()?;
    if reverse {
        sizes.reverse();
    }
    let too_large =
        || LowerError::LaunchTooLarge { prefix: prefix.into(), dims: sizes.clone(), max: max.to_vec() };
    let launch = fit_dims(&sizes, max).ok_or_else(too_large)?;
    let mut out = vec![];
    let mut slot = 0;
    for (group, split) in &launch {
        let special = |slot: usize, size: i64| UOp::special(&format!("{prefix}{slot}"), size);
        let total: i64 = group.iter().map(|&j| sizes[j]).product();
        let mut id = match split {
            None => special(slot, total),
            Some(lo) => {
                slot += 1;
                special(slot - 1, total / lo).mul(&UOp::index_const(*lo)).add(&special(slot, *lo))
            }
        };
        slot += 1;
        for (n, &j) in group.iter().enumerate() {
            out.push(if n + 1 == group.len() { id.clone() } else { id.rem(&UOp::index_const(sizes[j])) });
            id = id.floordiv(&UOp::index_const(sizes[j]));
        }
    }
    if reverse {
        out.reverse();
    }
    Ok(out)
}

/// How `sizes` map onto launch dimensions: each entry is a group of merged dims and, when the
/// group is split over two launch dimensions, the size of the second. `None` when impossible.
fn fit_dims(sizes: &[i64], max: &[usize]) -> Option<Vec<(Vec<usize>, Option<i64>)>> {
    let size = |g: &Vec<usize>| g.iter().map(|&j| sizes[j]).product::<i64>();
    let mut groups: Vec<Vec<usize>> = (0..sizes.len()).map(|i| vec![i]).collect();
    let fits =
        |g: &[Vec<usize>]| g.len() <= max.len() && g.iter().zip(max).all(|(g, &m)| size(g) <= m as i64);
    while !fits(&groups) {
        let Some(i) = (0..groups.len().saturating_sub(1))
            .find(|&i| max.get(i).is_some_and(|&m| size(&groups[i]) * size(&groups[i + 1]) <= m as i64))
        else {
            break;
        };
        let merged = groups.remove(i + 1);
        groups[i].extend(merged);
    }
    let mut launch = vec![];
    let mut slot = 0;
    for g in groups {
        let total = size(&g);
        let m = *max.get(slot)? as i64;
        let split = if total <= m {
            None
        } else {
            let next = *max.get(slot + 1)? as i64;
            let lo = (2..=next.min(total)).find(|lo| total % lo == 0 && total / lo <= m)?;
            slot += 1;
            Some(lo)
        };
        slot += 1;
        launch.push((g, split));
    }
    (slot <= max.len()).then_some(launch)
}

/// The reduces of a kernel nested in another's source, and how many sets of loops of their
/// own they have taken so far.
pub(crate) struct Nested {
    reduces: HashSet<UOp>,
    loop_sets: Cell<i64>,
    /// The loops of reduces over output axes, by reduce and axis ([`Lowerer::span`]).
    spans: RefCell<HashMap<(UOp, usize), UOp>>,
}

/// Lowered values by node, lane and the loops they were lowered in, shared by a lowerer and
/// those derived from it (for nested reduces and reduces over output axes): a reduce met
/// again in the same loops, from another lane of its consumer, is the value lowered before
/// instead of its whole source lowered again (an unrolled layer norm's nested mean was
/// lowered once per lane of each reduce around it: 1.5M lowerings for 2.5k nodes).
type Memo = Rc<RefCell<HashMap<MemoKey, UOp>>>;

/// What a lowered value depends on besides the kernel: the node, its lane, and the lowerer's
/// loops and own reduce.
#[derive(PartialEq, Eq, Hash)]
struct MemoKey {
    node: UOp,
    lane: Vec<i64>,
    idxs: Vec<UOp>,
    ridxs: Vec<UOp>,
    own: Option<UOp>,
}

/// The subgroup builtins of a kernel whose grouped-reduce partials go through subgroups.
#[derive(Clone)]
pub(crate) struct Subgroups {
    /// The axis whose partials they combine: the grouped reduce axis, or the local axis a
    /// row's reduces span.
    axis: usize,
    /// `subgroup_id`: where the subgroup's partial goes in workgroup memory.
    id: UOp,
    /// `subgroup_invocation_id`: lane 0 stores the subgroup's partial.
    lane: UOp,
    /// `num_subgroups`: how many partials are read back.
    count: UOp,
}

/// The state of lowering one kernel.
pub(crate) struct Lowerer {
    /// The index of every non-upcast axis (thread ids on grouped axes).
    pub(crate) idxs: Vec<UOp>,
    /// Like `idxs`, with loops on grouped axes.
    pub(crate) ridxs: Vec<UOp>,
    /// The subgroup builtins, when grouped-reduce partials go through subgroups.
    subgroups: Option<Subgroups>,
    /// The first upcast axis.
    pub(crate) fu: usize,
    /// The size of every upcast axis.
    pub(crate) upcast_sizes: Vec<i64>,
    /// Lowered values, shared with the lowerers derived from this one.
    memo: Memo,
    /// Kernel-AST nodes lowered to a given value instead (a tensor-core reduce's result).
    pub(crate) overrides: HashMap<UOp, UOp>,
    /// The kernel's nested reduces, shared by the lowerers of their loops.
    nested: Rc<Nested>,
    /// The nested reduce this lowerer's loops are for (its loops are its own).
    own: Option<UOp>,
    /// The first reduce axis (axes before it are outputs).
    first_reduce: usize,
    /// The number of global axes (local ones follow, up to `first_reduce`).
    global_dims: usize,
    /// The size of every axis.
    sizes: Vec<Sint>,
    /// Per upcast axis, whether it is an unrolled reduce axis.
    unrolled: Vec<bool>,
    /// The factors (loads or expressions) a register tile reads from workgroup memory
    /// (`tile_stage.rs`).
    staged: HashMap<UOp, Staged>,
}

impl Lowerer {
    /// Every lane of the upcast axes that `st` does not collapse to size 1 (others stay 0).
    fn lanes_of(&self, st: &ShapeTracker) -> Vec<Vec<i64>> {
        let mut lanes = vec![vec![0; self.upcast_sizes.len()]];
        for (i, &n) in self.upcast_sizes.iter().enumerate() {
            if st.shape()[self.fu + i] != 1 {
                lanes = lanes.into_iter().flat_map(|l| (0..n).map(move |v| with(&l, i, v))).collect();
            }
        }
        lanes
    }

    /// The lowered stores of a kernel-AST store, one per lane it writes.
    fn store_lanes(&mut self, store: &UOp) -> Result<Vec<UOp>, LowerError> {
        let st = view_st(&store.src()[1]).ok_or_else(|| unexpected(store))?;
        self.lanes_of(st).iter().map(|l| self.lower(store, l)).collect()
    }

    /// All indices of one lane: the loop/thread indices, then the lane's constants.
    fn indices(&self, base: &[UOp], lane: &[i64]) -> Vec<UOp> {
        base.iter().cloned().chain(lane.iter().map(|&v| UOp::index_const(v))).collect()
    }

    /// A lowerer over the same kernel with the indices `idxs` for every axis (no upcast lanes)
    /// and the given overrides.
    pub(crate) fn with_indices(&self, idxs: Vec<UOp>, overrides: HashMap<UOp, UOp>) -> Lowerer {
        let fu = idxs.len();
        Lowerer {
            ridxs: idxs.clone(),
            idxs,
            subgroups: None,
            fu,
            upcast_sizes: vec![],
            memo: Memo::default(),
            overrides,
            nested: self.nested.clone(),
            own: None,
            first_reduce: fu,
            global_dims: self.global_dims.min(fu),
            sizes: self.sizes.clone(),
            unrolled: vec![],
            staged: HashMap::new(),
        }
    }

    /// A lowerer for the nested reduce `r`: the loop index (`Range`) of every reduce axis
    /// replaced by a new one, so `r`'s loops are its own; output loops, thread ids and upcast
    /// lanes stay.
    fn for_nested(&self, r: &UOp) -> Lowerer {
        let sets = &self.nested.loop_sets;
        sets.set(sets.get() + 1);
        let offset = 10_000 * sets.get();
        let renamed = |idxs: &[UOp]| -> Vec<UOp> {
            let fresh = |(a, i): (usize, &UOp)| match (i.op(), i.arg().as_int()) {
                (Ops::Range, Some(axis)) if a >= self.first_reduce => UOp::range(&i.src()[0], axis + offset),
                _ => i.clone(),
            };
            idxs.iter().enumerate().map(fresh).collect()
        };
        self.derived(renamed(&self.idxs), renamed(&self.ridxs), Some(r.clone()))
    }

    /// A lowerer over the same kernel and lanes with these indices and this reduce of its own,
    /// sharing this one's memo.
    fn derived(&self, idxs: Vec<UOp>, ridxs: Vec<UOp>, own: Option<UOp>) -> Lowerer {
        Lowerer {
            idxs,
            ridxs,
            subgroups: self.subgroups.clone(),
            fu: self.fu,
            upcast_sizes: self.upcast_sizes.clone(),
            memo: self.memo.clone(),
            overrides: self.overrides.clone(),
            nested: self.nested.clone(),
            own,
            first_reduce: self.first_reduce,
            global_dims: self.global_dims,
            sizes: self.sizes.clone(),
            unrolled: self.unrolled.clone(),
            staged: self.staged.clone(),
        }
    }

    /// A lowerer for the source of a reduce over output axes (one an elementwise kernel
    /// reads broadcast back over its rows); [`Lowerer::span`] gives it a loop per axis.
    fn for_spans(&self) -> Lowerer {
        self.derived(self.idxs.clone(), self.ridxs.clone(), self.own.clone())
    }

    /// The loop of the reduce `r` over the output axis `a`, one per reduce and axis: a
    /// `Range` over the whole axis where `a` is a global axis (each thread walks its whole
    /// extent, in place of its launch index), over the workgroup's extent where it is a local
    /// one (the reduce's second stage reading every thread's partial back; the partials stay
    /// stored at each thread's own index).
    fn span(&mut self, r: &UOp, a: usize) -> UOp {
        let mut spans = self.nested.spans.borrow_mut();
        let count = spans.len();
        // a local axis whose partials were combined in subgroups reads back one per subgroup
        let partials = self.subgroups.as_ref().filter(|s| s.axis == a).map(|s| s.count.clone());
        let range = spans
            .entry((r.clone(), a))
            .or_insert_with(|| {
                let id = 10_000 * (count + 1) + 2000 + a;
                match partials {
                    Some(n) => UOp::range(&n, id as i64),
                    None => range(&self.sizes[a], id),
                }
            })
            .clone();
        drop(spans);
        if a < self.global_dims {
            self.idxs[a] = range.clone();
        }
        self.ridxs[a] = range.clone();
        range
    }

    pub(crate) fn lower(&mut self, u: &UOp, lane: &[i64]) -> Result<UOp, LowerError> {
        if let Some(v) = self.overrides.get(u) {
            return Ok(v.clone());
        }
        let key = MemoKey {
            node: u.clone(),
            lane: lane.to_vec(),
            idxs: self.idxs.clone(),
            ridxs: self.ridxs.clone(),
            own: self.own.clone(),
        };
        if let Some(done) = self.memo.borrow().get(&key) {
            return Ok(done.clone());
        }
        if let Some(staged) = self.staged.get(u) {
            return Ok(staged.load(u.dtype(), &self.idxs, self.fu, lane));
        }
        let ret = match u.op() {
            Ops::Load => self.lower_load(u, lane)?,
            Ops::Store => self.lower_store(u, lane)?,
            Ops::ReduceAxis => self.lower_reduce(u, lane)?,
            Ops::Const if !u.src().is_empty() => {
                let st = view_st(&u.src()[0]).ok_or_else(|| unexpected(u))?;
                let (_, valid) = st.to_indexed::<UOp>(&self.indices(&self.idxs, lane));
                let bare = UOp::constant(u.dtype(), u.const_value().ok_or_else(|| unexpected(u))?);
                if valid.const_value().is_some_and(|v| v.is_truthy()) {
                    bare
                } else {
                    valid.where_(&bare, &bare.const_like(0))
                }
            }
            Ops::View | Ops::Sink | Ops::Range | Ops::Special | Ops::Reduce | Ops::Index => {
                return Err(unexpected(u));
            }
            _ => {
                let src = u.src().iter().map(|s| self.lower(s, lane)).collect::<Result<Vec<_>, _>>()?;
                u.with_src(src)
            }
        };
        self.memo.borrow_mut().insert(key, ret.clone());
        Ok(ret)
    }

    /// `Index(buf, idx[, valid])` of a buffer op through its view.
    pub(crate) fn index(
        &self,
        buf: &UOp,
        view: &UOp,
        base: &[UOp],
        lane: &[i64],
        extra_valid: Option<UOp>,
    ) -> Result<UOp, LowerError> {
        let st = view_st(view).ok_or_else(|| unexpected(view))?;
        let (idx, mut valid) = st.to_indexed::<UOp>(&self.indices(base, lane));
        if let Some(v) = extra_valid {
            valid = valid.and(&v);
        }
        let always = valid.const_value().is_some_and(|v| v.is_truthy());
        let src = if always { vec![buf.clone(), idx] } else { vec![buf.clone(), idx, valid] };
        Ok(UOp::new(Ops::Index, buf.dtype(), src, Arg::None))
    }

    fn lower_load(&mut self, u: &UOp, lane: &[i64]) -> Result<UOp, LowerError> {
        let (buf, view) = (&u.src()[0], &u.src()[1]);
        if buf.op() != Ops::DefineLocal {
            let index = self.index(buf, view, &self.idxs, lane, None)?;
            return Ok(UOp::load(u.dtype(), [index]));
        }
        // a load of workgroup memory waits for every lane's store of it
        let store = u.src().get(2).ok_or_else(|| unexpected(u))?;
        let stores = self.store_lanes(store)?;
        let barrier = UOp::new(Ops::Barrier, wgrad_dtype::DType::VOID, stores, Arg::None);
        let index = self.index(buf, view, &self.ridxs.clone(), lane, None)?;
        Ok(UOp::load(u.dtype(), [index, barrier]))
    }

    /// A store; where its view collapses a grouped axis, only thread 0 of that axis writes.
    fn lower_store(&mut self, u: &UOp, lane: &[i64]) -> Result<UOp, LowerError> {
        let (buf, view) = (&u.src()[0], &u.src()[1]);
        let st = view_st(view).ok_or_else(|| unexpected(view))?;
        let value = self.lower(&u.src()[2], lane)?;
        if let (Ops::DefineLocal, Some(sg)) = (buf.op(), self.subgroups.clone()) {
            return self.store_subgroup_partial(u, &sg, value, lane);
        }
        let gate = (0..self.idxs.len())
            .filter(|&a| self.idxs[a] != self.ridxs[a] && st.shape()[a] == 1)
            .map(|a| self.idxs[a].cmp_eq(0))
            .reduce(|a, b| a.and(&b));
        let index = self.index(buf, view, &self.idxs.clone(), lane, gate)?;
        Ok(UOp::store([index, value]))
    }

    /// The store of a grouped reduce's partial `value` through subgroups: combined over the
    /// subgroup, stored by its lane 0 at the subgroup's index on the grouped axis.
    fn store_subgroup_partial(
        &mut self,
        u: &UOp,
        sg: &Subgroups,
        value: UOp,
        lane: &[i64],
    ) -> Result<UOp, LowerError> {
        let Arg::ReduceAxis(op, _) = u.src()[2].arg() else { return Err(unexpected(u)) };
        let combined = UOp::new(Ops::SubgroupReduce, value.dtype(), [value], Arg::Op(*op));
        let mut idxs = self.idxs.clone();
        idxs[sg.axis] = sg.id.clone();
        let index = self.index(&u.src()[0], &u.src()[1], &idxs, lane, Some(sg.lane.cmp_eq(0)))?;
        Ok(UOp::store([index, combined]))
    }

    /// `Reduce` over the loop axes; unrolled axes are combined lane by lane first.
    fn lower_reduce(&mut self, u: &UOp, lane: &[i64]) -> Result<UOp, LowerError> {
        let Arg::ReduceAxis(op, axes) = u.arg() else { return Err(unexpected(u)) };
        // every reduce of a kernel is constant along the kernel's unrolled reduce axes: lowered
        // once, at lane 0 of them
        // and along the upcast axes it reduces (output axes, where it spans them)
        let canonical: Vec<i64> = (0..lane.len())
            .map(|i| if self.unrolled[i] || axes.contains(&(self.fu + i)) { 0 } else { lane[i] })
            .collect();
        if canonical != lane {
            return self.lower(u, &canonical);
        }
        if self.nested.reduces.contains(u) && self.own.as_ref() != Some(u) {
            return self.for_nested(u).lower(u, lane);
        }
        let mut lanes = vec![lane.to_vec()];
        let mut ranges = vec![];
        let mut spans: Option<Lowerer> = None;
        for &a in axes.iter() {
            if a >= self.fu {
                let (i, n) = (a - self.fu, self.upcast_sizes[a - self.fu]);
                lanes = lanes.into_iter().flat_map(|l| (0..n).map(move |v| with(&l, i, v))).collect();
            } else if a < self.first_reduce {
                ranges.push(spans.get_or_insert_with(|| self.for_spans()).span(u, a));
            } else {
                ranges.push(self.ridxs[a].clone());
            }
        }
        let source = spans.as_mut().unwrap_or(self);
        let values = lanes.iter().map(|l| source.lower(&u.src()[0], l)).collect::<Result<Vec<_>, _>>()?;
        // a sum of products over loops keeps its lanes apart: each is added to the accumulator
        // in turn, so each product contracts into a fused multiply-add
        if !ranges.is_empty() && *op == Ops::Add && values.iter().all(|v| v.op() == Ops::Mul) {
            return Ok(UOp::new(Ops::Reduce, u.dtype(), [values, ranges].concat(), Arg::Op(*op)));
        }
        let value = values.into_iter().reduce(|a, v| a.alu(*op, &[&v])).ok_or_else(|| unexpected(u))?;
        if ranges.is_empty() {
            return Ok(value);
        }
        let src: Vec<UOp> = std::iter::once(value).chain(ranges).collect();
        Ok(UOp::new(Ops::Reduce, u.dtype(), src, Arg::Op(*op)))
    }
}

/// `lane` with position `i` set to `v`.
pub(crate) fn with(lane: &[i64], i: usize, v: i64) -> Vec<i64> {
    let mut l = lane.to_vec();
    l[i] = v;
    l
}

pub(crate) fn unexpected(u: &UOp) -> LowerError {
    LowerError::Unexpected { op: format!("{:?}", u.op()) }
}
