//! Kernel: a kernel AST with the ShapeTrackers of its buffers in one shared axis order, and the
//! counters that say which axes are global, local, grouped, reduced and upcast.
//!
//! Invariants (tinygrad v0.10's `Kernel`):
//! - `sts` holds one tracker per buffer op (`bufs`: the stores first, then loads and masked
//!   constants), then two per reduce (its output shape, its input shape); all have the same
//!   number of dims, and every movement (`shift_to`, `reshape_and_permute`) applies to all.
//! - `sts[0]` is the first store's: the output shape, reduce axes 1. `full_shape` is the
//!   shape of the first buffer read under the first reduce: reduce axes at full size.
//! - Axes are ordered global | local | group | reduce | upcast: `global_dims()` axes, then
//!   `local_dims`, then from `first_reduce()` `group_for_reduces` grouped reduce axes, the
//!   remaining reduce axes, and from `first_upcast()` the `upcasted` axes (unrolled reduces
//!   and upcast outputs, in the order they were made).

use std::fmt::Write;

use wgrad_dtype::{AddrSpace, DType};
use wgrad_ops::{Arg, Ops, UOp, UOpMap};
use wgrad_shape::{ShapeTracker, Sint};

use crate::{Opt, OptError, Target};

/// The ShapeTracker of a kernel-AST `View` UOp; `None` for any other UOp.
pub fn view_st(view: &UOp) -> Option<&ShapeTracker> {
    match view.op() {
        Ops::View => view.arg().as_view(),
        _ => None,
    }
}

/// Position of the `View` source of a buffer op: 1 for `Load`/`Store`, 0 for a masked `Const`.
fn view_slot(u: &UOp) -> Option<usize> {
    let slot = match u.op() {
        Ops::Load | Ops::Store => 1,
        Ops::Const => 0,
        _ => return None,
    };
    u.src().get(slot).is_some_and(|v| v.op() == Ops::View).then_some(slot)
}

/// The ShapeTracker a `Load` reads, a `Store` writes or a masked `Const` is valid through.
pub fn buffer_st(u: &UOp) -> Option<&ShapeTracker> {
    view_st(&u.src()[view_slot(u)?])
}

/// `shape` with the `axes` of a reduce set to 1.
fn reduced_shape(shape: &[Sint], axes: &[usize]) -> Vec<Sint> {
    shape.iter().enumerate().map(|(i, s)| if axes.contains(&i) { Sint::int(1) } else { s.clone() }).collect()
}

/// The shape of a kernel-AST value: its view's, or its shaped sources' (a reduce's output, 1
/// along its axes, broadcast where another source is wider), reduced by a `ReduceAxis`; `None`
/// for a plain constant.
fn value_shape(u: &UOp) -> Option<Vec<Sint>> {
    let widest = |a: Vec<Sint>, b: Vec<Sint>| {
        a.into_iter().zip(b).map(|(x, y)| if x == Sint::int(1) { y } else { x }).collect()
    };
    let mut shapes: UOpMap<Option<Vec<Sint>>> = UOpMap::default();
    for n in u.toposort() {
        let shape = match buffer_st(&n) {
            Some(st) => Some(st.shape().to_vec()),
            None => {
                let below = n.src().iter().filter_map(|s| shapes.get(s).cloned().flatten()).reduce(widest);
                match n.arg() {
                    Arg::ReduceAxis(_, axes) => below.map(|b| reduced_shape(&b, axes)),
                    _ => below,
                }
            }
        };
        shapes.insert(n, shape);
    }
    shapes.remove(u).flatten()
}

pub(crate) fn int_product<'a>(xs: impl IntoIterator<Item = &'a Sint>) -> i64 {
    xs.into_iter().map(Sint::vmax).product()
}

/// A new shape computed from a tracker's current one.
pub type ShapeFn<'a> = dyn Fn(&[Sint]) -> Vec<Sint> + 'a;

/// What an axis of the kernel is used for (tinygrad's axis colours).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AxisKind {
    /// A dimension of the workgroup grid.
    Global,
    /// A dimension inside the workgroup.
    Local,
    /// A reduce axis split across the workgroup, finished through workgroup memory.
    GroupReduce,
    /// A reduce loop.
    Reduce,
    /// A reduce axis unrolled into registers.
    Unroll,
    /// An output axis upcast into registers.
    Upcast,
}

impl AxisKind {
    fn name(self) -> &'static str {
        match self {
            AxisKind::Global => "global",
            AxisKind::Local => "local",
            AxisKind::GroupReduce => "group",
            AxisKind::Reduce => "reduce",
            AxisKind::Unroll => "unroll",
            AxisKind::Upcast => "upcast",
        }
    }
}

/// A kernel AST being optimised: its buffers, their ShapeTrackers and the opt counters.
#[derive(Clone, Debug)]
pub struct Kernel {
    ast: UOp,
    pub(crate) target: Target,
    pub(crate) bufs: Vec<UOp>,
    pub(crate) reduceops: Vec<UOp>,
    pub(crate) sts: Vec<ShapeTracker>,
    full_buf_index: usize,
    pub(crate) applied_opts: Vec<Opt>,
    pub(crate) local_dims: usize,
    pub(crate) group_for_reduces: usize,
    pub(crate) upcasted: usize,
    pub(crate) dont_use_locals: bool,
    /// The tensor-core configuration once TC is applied: the last three axes are its tile.
    pub(crate) tc: Option<crate::TensorCoreShape>,
    /// Blocks of each factor STAGE keeps in workgroup memory: 0 without STAGE, 1, or 2
    /// (double-buffered).
    pub(crate) staged: usize,
}

impl Kernel {
    /// The kernel of `ast` (a `Sink` of `Store`s) for `target`, reduce axes moved last,
    /// size-1 axes dropped and adjacent axes merged where every buffer allows it.
    pub fn new(ast: &UOp, target: Target) -> Result<Kernel, OptError> {
        let bad = |why: &str| OptError::Ast(why.into());
        if ast.op() != Ops::Sink || ast.src().is_empty() || ast.src().iter().any(|s| s.op() != Ops::Store) {
            return Err(bad("a kernel AST is a Sink of Stores"));
        }
        let topo = ast.toposort();
        let reduceops: Vec<UOp> = topo.iter().filter(|u| u.op() == Ops::ReduceAxis).cloned().collect();
        let mut bufs = ast.src().to_vec();
        bufs.extend(topo.iter().filter(|u| u.op() != Ops::Store && buffer_st(u).is_some()).cloned());
        let mut sts = Vec::with_capacity(bufs.len() + 2 * reduceops.len());
        for b in &bufs {
            sts.push(buffer_st(b).ok_or_else(|| bad("a Store without a View"))?.clone());
        }
        for r in &reduceops {
            let Arg::ReduceAxis(_, axes) = r.arg() else { return Err(bad("a ReduceAxis without axes")) };
            let full = value_shape(&r.src()[0]).ok_or_else(|| bad("a reduce of no buffer"))?;
            let out = reduced_shape(&full, axes);
            for shape in [out, full] {
                sts.push(ShapeTracker::from_shape(&shape).map_err(|e| bad(&e.to_string()))?);
            }
        }
        if sts.iter().any(|st| st.shape().len() != sts[0].shape().len()) {
            return Err(bad("every view of a kernel has the same number of dims"));
        }
        let first_read =
            reduceops.first().and_then(|r| r.src()[0].toposort().into_iter().find(|u| bufs.contains(u)));
        let full_buf_index = first_read.and_then(|u| bufs.iter().position(|b| *b == u)).unwrap_or(0);
        let mut k = Kernel {
            ast: ast.clone(),
            target,
            bufs,
            reduceops,
            sts,
            full_buf_index,
            applied_opts: vec![],
            local_dims: 0,
            group_for_reduces: 0,
            upcasted: 0,
            dont_use_locals: false,
            tc: None,
            staged: 0,
        };
        let (kept, reduced): (Vec<usize>, Vec<usize>) =
            (0..k.shape_len()).partition(|&i| k.full_shape()[i] == k.output_shape()[i]);
        k.reshape_and_permute(None, Some(&[kept, reduced].concat()));
        k.simplify_ones();
        k.simplify_merge_adjacent();
        Ok(k)
    }

    /// The kernel AST as given.
    pub fn ast(&self) -> &UOp {
        &self.ast
    }

    /// The target the opts are checked against.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The buffer ops: stores first, then loads and masked constants.
    pub fn bufs(&self) -> &[UOp] {
        &self.bufs
    }

    /// The `ReduceAxis` ops, sources first.
    pub fn reduceops(&self) -> &[UOp] {
        &self.reduceops
    }

    /// The distinct buffers (`DefineGlobal`s) the kernel loads from or stores to, in `bufs` order.
    pub fn membufs(&self) -> Vec<UOp> {
        let mut out: Vec<UOp> = vec![];
        for b in self.bufs.iter().filter(|b| b.op() != Ops::Const) {
            if !out.contains(&b.src()[0]) {
                out.push(b.src()[0].clone());
            }
        }
        out
    }

    /// The first reduce, if any.
    pub fn reduceop(&self) -> Option<&UOp> {
        self.reduceops.first()
    }

    /// The trackers: one per buffer (as `bufs`), then (output, input) per reduce.
    pub fn sts(&self) -> &[ShapeTracker] {
        &self.sts
    }

    /// The opts applied so far, in order.
    pub fn applied_opts(&self) -> &[Opt] {
        &self.applied_opts
    }

    /// Number of local (workgroup) axes, just before `first_reduce()`.
    pub fn local_dims(&self) -> usize {
        self.local_dims
    }

    /// Number of grouped reduce axes, from `first_reduce()` on.
    pub fn group_for_reduces(&self) -> usize {
        self.group_for_reduces
    }

    /// Number of upcast (and unrolled) axes at the end.
    pub fn upcasted(&self) -> usize {
        self.upcasted
    }

    /// Whether NOLOCALS was applied: global axes are not split into workgroups.
    pub fn dont_use_locals(&self) -> bool {
        self.dont_use_locals
    }

    /// Whether the partials of this kernel's reduces, grouped on one axis (GROUP, GROUPTOP),
    /// are combined in subgroups first: the target has subgroup ops, the workgroup is the
    /// grouped axis alone (no LOCAL axes, so a subgroup only holds invocations of the same
    /// outputs whatever its size) and a whole number of the target's subgroups (llvmpipe
    /// counts a workgroup of 125 as 15 subgroups of 8 and loses the last 5 partials), and every
    /// reduce is an `Add`, `Max` or `Mul` of 32-bit values.
    pub fn subgroup_partials(&self) -> bool {
        let whole_subgroups = match (self.group_for_reduces, self.target.subgroup_size) {
            (0, Some(_)) => true,
            (1, Some(size)) => self.full_shape()[self.first_reduce()]
                .as_int()
                .is_some_and(|g| (g as usize).is_multiple_of(size)),
            _ => false,
        };
        self.partials_fit_subgroups() && whole_subgroups && self.local_dims == 0
    }

    /// Whether the partials of reduces that span the kernel's one local axis (a row split over
    /// a workgroup's threads, as `heuristic/rows.rs` plans it) are combined in subgroups first,
    /// as [`Kernel::subgroup_partials`] does for a grouped reduce: the workgroup is that axis
    /// alone and a whole number of subgroups, and every reduce spans it. A row of 8192 then
    /// reads 8 partials back per reduce instead of 256.
    pub fn row_subgroup_partials(&self) -> bool {
        let gd = self.global_dims();
        let whole_subgroups = |size: usize| {
            self.full_shape()
                .get(gd)
                .and_then(Sint::as_int)
                .is_some_and(|n| (n as usize).is_multiple_of(size))
        };
        self.partials_fit_subgroups()
            && self.group_for_reduces == 0
            && self.local_dims == 1
            && self.target.subgroup_size.is_some_and(whole_subgroups)
            && !self.rows_in_subgroups()
            && self.reduces_span_only(gd)
    }

    /// Whether each row is one subgroup: the reduces span the kernel's first local axis (the
    /// fastest-varying invocation id) alone of its local axes, and that axis is one subgroup
    /// wide, so a subgroup's combine (`SubgroupReduce`) finishes them, with no workgroup memory
    /// or barrier; the workgroup's other local axes hold more rows. The subgroups must all have
    /// the target's size (`Target::fixed_subgroup_size`). On an H200 MiniLM's layer norms take
    /// a row of 384 as 32 invocations of 12 values.
    pub fn rows_in_subgroups(&self) -> bool {
        let gd = self.global_dims();
        let one_subgroup =
            |size: usize| self.full_shape().get(gd).and_then(Sint::as_int) == Some(size as i64);
        self.partials_fit_subgroups()
            && self.group_for_reduces == 0
            && self.local_dims >= 1
            && self.target.fixed_subgroup_size
            && self.target.subgroup_size.is_some_and(one_subgroup)
            && self.reduces_span_only(gd)
    }

    /// Whether every reduce (there is one at least) spans the local axis `axis` and no other
    /// local axis.
    fn reduces_span_only(&self, axis: usize) -> bool {
        let locals = self.global_dims()..self.global_dims() + self.local_dims;
        !self.reduceops.is_empty()
            && (0..self.reduceops.len()).all(|r| self.reduced_axes(r, locals.clone()) == [axis])
    }

    /// What subgroup partials need of the target and the reduces: subgroup ops and workgroups,
    /// and every reduce an `Add`, `Max` or `Mul` of 32-bit values.
    pub(crate) fn partials_fit_subgroups(&self) -> bool {
        let fits = |r: &UOp| {
            matches!(r.arg(), Arg::ReduceAxis(Ops::Add | Ops::Max | Ops::Mul, _))
                && [DType::F32, DType::I32, DType::U32].contains(&r.dtype())
        };
        self.target.subgroup_ops
            && self.target.has_local
            && !self.dont_use_locals
            && self.reduceops.iter().all(fits)
    }

    /// Number of axes.
    pub fn shape_len(&self) -> usize {
        self.sts[0].shape().len()
    }

    /// The shape of the output: reduce axes 1.
    pub fn output_shape(&self) -> &[Sint] {
        self.sts[0].shape()
    }

    /// The largest shape: reduce axes at full size.
    pub fn full_shape(&self) -> &[Sint] {
        self.sts[self.full_buf_index].shape()
    }

    /// `full_shape()` without the upcast axes.
    pub fn full_unupcasted_shape(&self) -> &[Sint] {
        &self.full_shape()[..self.first_upcast()]
    }

    /// The first upcast axis (`shape_len()` when none is).
    pub fn first_upcast(&self) -> usize {
        self.shape_len() - self.upcasted
    }

    /// The first reduce axis before the upcasts (`first_upcast()` when there is none).
    pub fn first_reduce(&self) -> usize {
        let (out, full) = (self.output_shape(), self.full_shape());
        (0..self.first_upcast()).find(|&i| out[i] != full[i]).unwrap_or(self.first_upcast())
    }

    /// Number of global axes.
    pub fn global_dims(&self) -> usize {
        self.first_reduce() - self.local_dims
    }

    /// The number of workgroup invocations: the product of the local and group axes.
    pub fn local_size(&self) -> i64 {
        let fr = self.first_reduce();
        int_product(&self.full_shape()[fr - self.local_dims..fr + self.group_for_reduces])
    }

    /// For tracker `i`, each upcast axis as (size, real stride, whether it is a reduce axis).
    pub fn upcasted_axis(&self, i: usize) -> Vec<(Sint, Option<Sint>, bool)> {
        let fu = self.first_upcast();
        let st = &self.sts[i];
        let strides = st.real_strides(false);
        (fu..self.shape_len())
            .map(|a| {
                (st.shape()[a].clone(), strides[a].clone(), self.output_shape()[a] != self.full_shape()[a])
            })
            .collect()
    }

    /// What each axis is used for.
    pub fn axis_kinds(&self) -> Vec<AxisKind> {
        let (fr, fu) = (self.first_reduce(), self.first_upcast());
        let mut kinds = vec![AxisKind::Global; self.global_dims()];
        kinds.extend([AxisKind::Local].repeat(self.local_dims));
        kinds.extend([AxisKind::GroupReduce].repeat(self.group_for_reduces));
        kinds.extend([AxisKind::Reduce].repeat(fu - fr - self.group_for_reduces));
        let upcast = |a: usize| match self.output_shape()[a] != self.full_shape()[a] {
            true => AxisKind::Unroll,
            false => AxisKind::Upcast,
        };
        kinds.extend((fu..self.shape_len()).map(upcast));
        kinds
    }

    /// The axes in plain text, runs of one kind between bars and the kinds named after:
    /// `(4, 16 | 8 | 32 | 4) global/local/reduce/upcast`.
    pub fn describe(&self) -> String {
        let mut runs: Vec<(AxisKind, Vec<String>)> = vec![];
        for (kind, size) in self.axis_kinds().into_iter().zip(self.full_shape()) {
            match runs.last_mut() {
                Some((k, sizes)) if *k == kind => sizes.push(size.to_string()),
                _ => runs.push((kind, vec![size.to_string()])),
            }
        }
        let sizes: Vec<String> = runs.iter().map(|(_, s)| s.join(", ")).collect();
        let names: Vec<&str> = runs.iter().map(|(k, _)| k.name()).collect();
        let mut out = format!("({}) {}", sizes.join(" | "), names.join("/"));
        if self.dont_use_locals {
            out.push_str(" nolocals");
        }
        out
    }

    /// The applied opts, one `Opt(...)` after another: `[Opt(op=UPCAST, axis=0, arg=4)]`.
    pub fn describe_opts(&self) -> String {
        let mut out = String::from("[");
        for (i, o) in self.applied_opts.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(out, "{sep}{o}").expect("writing to a String cannot fail");
        }
        out + "]"
    }

    /// Reshapes every tracker with `new_shape` (given its current shape), then permutes
    /// every tracker by `axis`.
    ///
    /// # Panics
    /// When the reshape or permutation is invalid for a tracker: callers only split,
    /// merge and reorder axes in ways every tracker takes.
    pub fn reshape_and_permute(&mut self, new_shape: Option<&ShapeFn<'_>>, axis: Option<&[usize]>) {
        for st in &mut self.sts {
            if let Some(f) = new_shape {
                *st = st.reshape(&f(st.shape())).expect("a kernel reshape keeps the element count");
            }
            if let Some(p) = axis {
                *st = st.permute(p).expect("a kernel permutation is valid");
            }
        }
    }

    /// Splits `axis` into `(size / amount, amount)` (`(amount, size / amount)` if `top`) and
    /// moves the `amount` part before axis `insert_before` (default: last). A tracker whose
    /// `axis` has size 1 gets `(1, 1)`. `amount` must divide the axis.
    pub fn shift_to(&mut self, axis: usize, amount: usize, top: bool, insert_before: Option<usize>) {
        let amt = i64::try_from(amount).expect("an axis split fits in i64");
        let mut insert_before = insert_before.unwrap_or(self.shape_len());
        let move_axis = if top { axis } else { axis + 1 };
        if move_axis < insert_before {
            insert_before += 1;
        }
        let split = |shape: &[Sint]| {
            let s = &shape[axis];
            let parts = match (s.vmin() > 1, top) {
                (false, _) => [Sint::int(1), Sint::int(1)],
                (true, true) => [Sint::int(amt), s / amt],
                (true, false) => [s / amt, Sint::int(amt)],
            };
            [&shape[..axis], &parts, &shape[axis + 1..]].concat()
        };
        let perm: Vec<usize> = (0..insert_before)
            .filter(|&i| i != move_axis)
            .chain([move_axis])
            .chain((insert_before..=self.shape_len()).filter(|&i| i != move_axis))
            .collect();
        self.reshape_and_permute(Some(&split), Some(&perm));
    }

    /// Drops the axes whose full size is 1, keeping the local and upcast counts right.
    /// Returns whether any axis was dropped.
    pub fn simplify_ones(&mut self) -> bool {
        if self.shape_len() == 0 {
            return false;
        }
        let ones: Vec<bool> = self.full_shape().iter().map(|s| *s == 1).collect();
        let (fr, fu) = (self.first_reduce(), self.first_upcast());
        self.local_dims -= ones[fr - self.local_dims..fr].iter().filter(|&&o| o).count();
        self.upcasted -= ones[fu..].iter().filter(|&&o| o).count();
        let keep =
            |shape: &[Sint]| shape.iter().zip(&ones).filter(|(_, o)| !**o).map(|(s, _)| s.clone()).collect();
        self.reshape_and_permute(Some(&keep), None);
        ones.contains(&true)
    }

    /// Merges each axis into the one before it when every tracker reads the two as one
    /// (contiguously, or both broadcast); never across the reduce boundary, never a masked
    /// axis (tinygrad's `simplify_merge_adjacent`).
    pub fn simplify_merge_adjacent(&mut self) {
        if self.shape_len() == 0 {
            return;
        }
        let fr = self.first_reduce();
        let strides: Vec<Vec<Option<Sint>>> = self.sts.iter().map(|st| st.real_strides(false)).collect();
        let mut merged: Vec<Vec<(Sint, Option<Sint>)>> = self
            .sts
            .iter()
            .zip(&strides)
            .map(|(st, s)| vec![(st.shape()[0].clone(), s[0].clone())])
            .collect();
        for i in 1..self.shape_len() {
            let can_merge =
                |(st, s): (&ShapeTracker, &Vec<Option<Sint>>), last: &Option<Sint>| match (&s[i], last) {
                    (Some(si), Some(l)) if *si != 0 => *l == &st.shape()[i] * si,
                    (Some(si), Some(l)) => *si == 0 && *l == 0,
                    _ => false,
                };
            let mergeable = i != fr
                && self
                    .sts
                    .iter()
                    .zip(&strides)
                    .zip(&merged)
                    .all(|(x, m)| can_merge(x, &m.last().expect("non-empty").1));
            for ((st, s), m) in self.sts.iter().zip(&strides).zip(&mut merged) {
                let entry = (st.shape()[i].clone(), s[i].clone());
                match (mergeable, m.last_mut()) {
                    (true, Some(last)) => *last = (&last.0 * &entry.0, entry.1),
                    _ => m.push(entry),
                }
            }
        }
        for (st, m) in self.sts.iter_mut().zip(&merged) {
            let shape: Vec<Sint> = m.iter().map(|(s, _)| s.clone()).collect();
            *st = st.reshape(&shape).expect("merging contiguous axes is a valid reshape");
        }
    }

    /// The axes in `range` along which reduce `i` (of [`Kernel::reduceops`]) reduces: its
    /// output is narrower than its input there (output axes too, where an elementwise kernel
    /// reads a reduce of its own rows back over them).
    pub(crate) fn reduced_axes(&self, i: usize, range: std::ops::Range<usize>) -> Vec<usize> {
        let (out, inp) = (&self.sts[self.bufs.len() + 2 * i], &self.sts[self.bufs.len() + 2 * i + 1]);
        range.filter(|&a| out.shape()[a] != inp.shape()[a]).collect()
    }

    /// The kernel AST with every view replaced by its optimised tracker, each reduce over its
    /// remaining (ungrouped) axes, and grouped reduces finished through workgroup memory.
    pub fn get_optimized_ast(&self) -> UOp {
        let index: UOpMap<usize> = self.bufs.iter().enumerate().map(|(i, b)| (b.clone(), i)).collect();
        let mut memo = UOpMap::default();
        self.fixup(&self.ast, &index, &mut memo)
    }

    fn fixup(&self, u: &UOp, index: &UOpMap<usize>, memo: &mut UOpMap<UOp>) -> UOp {
        if let Some(done) = memo.get(u) {
            return done.clone();
        }
        let mut src: Vec<UOp> = u.src().iter().map(|s| self.fixup(s, index, memo)).collect();
        let ret = if let (Some(&i), Some(slot)) = (index.get(u), view_slot(u)) {
            src[slot] = with_st(&u.src()[slot], self.sts[i].clone());
            u.with_src(src)
        } else if u.op() == Ops::ReduceAxis {
            self.fixup_reduce(u, &src[0])
        } else {
            u.with_src(src)
        };
        memo.insert(u.clone(), ret.clone());
        ret
    }

    /// A reduce of `src` over the axes it still reduces; when grouped, the partial results go
    /// through workgroup memory and a second reduce over the grouped axes finishes them.
    fn fixup_reduce(&self, op: &UOp, src: &UOp) -> UOp {
        let Arg::ReduceAxis(rop, _) = op.arg() else { unreachable!("a ReduceAxis has a ReduceAxis arg") };
        let ri = self.reduceops.iter().position(|r| r == op).expect("every reduce is collected");
        let out = &self.sts[self.bufs.len() + 2 * ri];
        let reduced = |r: std::ops::Range<usize>| self.reduced_axes(ri, r);
        let (fr, gfr) = (self.first_reduce(), self.group_for_reduces);
        let (gd, ld) = (self.global_dims(), self.local_dims);
        // a reduce an elementwise kernel reads broadcast back over its own rows spans output
        // axes: its global ones are looped over in the first stage, its local ones finish
        // through workgroup memory as grouped axes do
        let axes = [reduced(0..gd), reduced(fr + gfr..self.shape_len())].concat();
        let grouped = [reduced(gd..gd + ld), reduced(fr..fr + gfr)].concat();
        let ret = UOp::new(Ops::ReduceAxis, op.dtype(), [src.clone()], Arg::ReduceAxis(*rop, axes.into()));
        if grouped.is_empty() {
            return ret;
        }
        if self.rows_in_subgroups() {
            return UOp::new(Ops::SubgroupReduce, op.dtype(), [ret], Arg::Op(*rop));
        }
        let full = self.full_shape();
        let mut local_shape = vec![Sint::int(1); gd];
        local_shape.extend_from_slice(&full[gd..gd + ld]);
        local_shape.extend(
            (fr..fr + gfr).map(|i| if grouped.contains(&i) { full[i].clone() } else { Sint::int(1) }),
        );
        local_shape.extend(vec![Sint::int(1); self.shape_len() - self.upcasted - gfr - fr]);
        local_shape.extend(out.shape()[self.first_upcast()..].iter().cloned());
        let size = usize::try_from(int_product(&local_shape)).expect("a workgroup buffer size is positive");
        let dtype = op.dtype();
        let buffer = UOp::new(
            Ops::DefineLocal,
            dtype.ptr_sized(AddrSpace::Local, size),
            [],
            Arg::Str(format!("temp{ri}").into()),
        );
        let through_local = |shape: &[Sint], value: UOp| {
            let view =
                UOp::view(ShapeTracker::from_shape(shape).expect("workgroup buffer shapes are positive"));
            let store = UOp::store([buffer.clone(), view.clone(), value]);
            UOp::load(dtype, [buffer.clone(), view, store])
        };
        // every thread reads all partials back, so each has the result (a reduce nested in
        // another's source needs it in every thread)
        UOp::new(
            Ops::ReduceAxis,
            dtype,
            [through_local(&local_shape, ret)],
            Arg::ReduceAxis(*rop, grouped.into()),
        )
    }
}

/// `view` with its tracker replaced by `st`.
fn with_st(view: &UOp, st: ShapeTracker) -> UOp {
    UOp::new(Ops::View, view.dtype(), view.src(), Arg::View(st.into()))
}
