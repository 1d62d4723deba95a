//! Grouping: which nodes get a buffer of their own (become a kernel's output), as tinygrad
//! v0.10's scheduler decides it. Everything else fuses into the kernel that reads it.
//!
//! Rules, applied until none adds anything:
//! 1. forced: the targets, `CONTIGUOUS`, `ASSIGN` and `COPY` (and a copy's source unless it
//!    is a whole buffer already);
//! 2. a view that expands a value holding a reduce realizes the value (no recomputing the
//!    reduce per broadcast element), unless that view is the value's only reader and the
//!    value is float32 and computed from its own rows' reduces over many short rows (rule 3's
//!    rows: a softmax that `P @ V` reads): then rule 3 realizes the reduces instead, and the reader computes
//!    the value from them (a staged register tile once per element of its block, codegen's
//!    `factor.rs`), so the value is never stored; a masked view (a pad) over a value holding an op with
//!    `f(0) != 0` realizes the value (padding must stay zero);
//! 3. a kernel holds one reduce, reached only through reshapes that keep its elements in
//!    place, and the reduces over the same axes of the same input shape that it reads
//!    broadcast back over those axes (a max inside a sum of `exp(x - max)`: each in its own
//!    loop, the input read twice by one kernel); an elementwise kernel holds the reduces it
//!    reads broadcast back over their input's shape, its own, where all reduce the same axis
//!    of at most `row_reduce` elements, or of a multiple of `LONG_ROW_MULTIPLE` up to
//!    `long_rows` (a softmax, a layer norm: codegen reduces each row across the threads that
//!    hold it); any other reduce it reaches, or one that two kernels
//!    reach, is realized, or rather the first value of the narrowest float dtype on the
//!    chain of elementwise ops above it that only it reads (a projection's sums plus bias,
//!    cast to half: the half); but where a reduce kernel reaches rows' reduces over other
//!    axes, the lowest value of its part computed from them all as rule 3's rows (a layer
//!    norm's output that a pooling sums over the tokens) is realized instead, its narrowest
//!    form, so that kernel computes it once and the reader loads it;
//! 4. an assign whose value reads the target buffer other than element for element
//!    realizes the value first;
//! 5. a kernel binds at most the device's number of buffers: an op whose inputs would
//!    exceed it realizes its sources.

use wgrad_dtype::DType;
use wgrad_ops::{Arg, GroupOp, OpSet, Ops, UOp, UOpMap, UOpSet};

use super::KernelLimits;
use super::kernel::{Lowered, buffer_key, lower_group, lower_kernel};
use super::views::{contiguous_st, is_identity, sints};
use crate::shapes::numel;
use crate::{EngineError, Shapes};
use wgrad_shape::{ShapeTracker, Sint};

/// The rows a value computed from its rows' reduces must have for its expanding reader to
/// compute it (`Grouper::recomputed_rows`): at least this many, of a length in this range and a
/// multiple of this. Its statistics then get a kernel of their own, a reduce over each row, which
/// is fast only under codegen's plan for many short rows (`short_rows` in its grouping
/// heuristic, on a discrete GPU); other rows leave that kernel latency-bound. On an H200 the
/// statistics and product against the stored softmax and product (us, a probe): 2048 rows of 77
/// keys 50.2 + 24.2 against 6.2 + 23.1; 1000 of 1000, 79.4 + 862.6 against 11.6 + 799.2; 96 x 77
/// of 77, 35.1 + 23.8 against 7.5 + 22.1; MiniLM's 196608 of 128, 34.6 + 75.6 against 56.0 + 71.6.
const RECOMPUTED_ROWS: (usize, std::ops::Range<usize>, usize) = (1 << 17, 64..256, 16);

/// Ops whose value at zero inputs is not zero: a pad must not be pushed through them.
const UNSAFE_PAD: OpSet = GroupOp::UNSAFE_PAD.union(OpSet::of(&[Ops::Fdiv, Ops::Threefry]));

/// Whether `u` is a whole buffer as it is: a buffer, or the identity view of one.
pub(crate) fn whole_buffer(u: &UOp, shapes: &mut Shapes) -> bool {
    match u.op() {
        Ops::Buffer => true,
        Ops::View => {
            let st = u.arg().as_view().expect("a VIEW holds a tracker");
            let base = &u.src()[0];
            base.op() == Ops::Buffer && is_identity(st) && numel(shapes.of(u)) == numel(shapes.of(base))
        }
        _ => false,
    }
}

/// The node a target realizes: `None` for a buffer or constant, the source of a view that
/// only reshapes, else the target itself.
pub(crate) fn realized_target(target: &UOp, shapes: &mut Shapes) -> Option<UOp> {
    match target.op() {
        Ops::Buffer | Ops::Const => None,
        Ops::View => {
            let base = &target.src()[0];
            let st = target.arg().as_view().expect("a VIEW holds a tracker");
            match is_identity(st) && numel(shapes.of(target)) == numel(shapes.of(base)) {
                true => realized_target(base, shapes),
                false => Some(target.clone()),
            }
        }
        _ => Some(target.clone()),
    }
}

struct Grouper<'a> {
    topo: Vec<UOp>,
    /// The nodes that read each node (its sources' inverse), for the whole graph.
    consumers: UOpMap<Vec<UOp>>,
    shapes: &'a mut Shapes,
    realizes: UOpSet,
    limits: KernelLimits,
}

impl Grouper<'_> {
    /// Whether walking down from a consumer stops at `u` (it is read from a buffer).
    fn stops(&self, u: &UOp) -> bool {
        u.op() == Ops::Buffer || self.realizes.contains(u)
    }

    fn realize(&mut self, u: &UOp) -> bool {
        !matches!(u.op(), Ops::Buffer | Ops::Const | Ops::Device) && self.realizes.insert(u.clone())
    }

    /// Rule 1.
    fn forced(&mut self, sink: &UOp) {
        for t in sink.src() {
            if let Some(r) = realized_target(t, self.shapes) {
                self.realize(&r);
            }
        }
        for u in self.topo.clone() {
            match u.op() {
                Ops::Contiguous | Ops::Assign => _ = self.realize(&u),
                Ops::Copy => {
                    self.realize(&u);
                    // a copy moves whole buffers: anything else (a constant too) is computed first
                    if !whole_buffer(&u.src()[0], self.shapes) {
                        self.realizes.insert(u.src()[0].clone());
                    }
                }
                _ => {}
            }
        }
    }

    /// For each node, whether the part of the graph fused into it holds an op of `ops`.
    fn holds(&self, ops: OpSet) -> UOpMap<bool> {
        let mut flags = UOpMap::default();
        for u in &self.topo {
            let below = u.src().iter().any(|s| !self.stops(s) && flags.get(s) == Some(&true));
            flags.insert(u.clone(), ops.contains(u.op()) || below);
        }
        flags
    }

    /// Rule 2.
    fn views(&mut self) -> bool {
        let reduces = self.holds(OpSet::of(&[Ops::ReduceAxis]));
        let unsafe_ops = self.holds(UNSAFE_PAD);
        let mut changed = false;
        for u in self.topo.clone().iter().filter(|u| u.op() == Ops::View) {
            let src = &u.src()[0];
            if self.stops(src) {
                continue;
            }
            let st = u.arg().as_view().expect("a VIEW holds a tracker");
            let expands = numel(self.shapes.of(u)) > numel(self.shapes.of(src));
            let masked = st.views().iter().any(|v| v.mask().is_some());
            let nested = broadcasts_reduce(src, st, self.shapes) || self.broadcasts_row(src, st);
            let realized = expands && reduces[src] && !nested && !self.recomputed_rows(src);
            if realized || (masked && unsafe_ops[src]) {
                changed |= self.realize(src);
            }
        }
        changed
    }

    /// Whether the reader that expands `src` (its only reader) computes it itself rather than
    /// loading it: `src` is float32 (a half factor goes to tensor cores, which read memory
    /// as it is) and an elementwise value of its own rows' reduces only (a softmax read by
    /// `P @ V`), over many short rows ([`RECOMPUTED_ROWS`]). The reduces are realized instead,
    /// so the reader recomputes each element from them, once per element of a block its
    /// workgroup stages, rather than one kernel storing every element and the reader loading
    /// it back.
    fn recomputed_rows(&mut self, src: &UOp) -> bool {
        let single = self.consumers.get(src).is_some_and(|c| c.len() == 1);
        if !single || src.dtype() != DType::F32 || src.op() == Ops::ReduceAxis {
            return false;
        }
        let shape = self.shapes.of(src).to_vec();
        let Ok(k) = lower_group(std::slice::from_ref(src), &shape, &self.realizes, self.shapes) else {
            return false;
        };
        let placed = self.placed(&k);
        let row = self.row_length(&k, &placed);
        let (min_rows, lengths, multiple) = RECOMPUTED_ROWS;
        let many_short = row.is_some_and(|n| {
            lengths.contains(&n) && n.is_multiple_of(multiple) && numel(&shape) / n >= min_rows
        });
        many_short && self.row_reduces(&k, &placed)
    }

    /// Whether `st` (a view of `src`) broadcasts `src` along one axis of at most `row_reduce`
    /// elements and no other: how an elementwise kernel reads its rows' reduces (through
    /// elementwise ops of them, as a softmax's `log(sum) + max`); rule 3 decides whether the
    /// reduces stay in the kernel.
    fn broadcasts_row(&mut self, src: &UOp, st: &ShapeTracker) -> bool {
        let from = sints(self.shapes.of(src));
        let to = st.shape();
        if to.len() != from.len() {
            return false;
        }
        let mut grown = (0..from.len()).filter(|&a| to[a] != from[a]);
        let short = match (grown.next(), grown.next()) {
            (Some(a), None) => {
                from[a] == Sint::int(1)
                    && to[a].as_int().is_some_and(|n| self.limits.reduces_rows_of(n as usize))
            }
            _ => false,
        };
        short && ShapeTracker::from_shape(&from).and_then(|c| c.expand(to)).is_ok_and(|b| b == *st)
    }

    /// What to realize of a reduce `r` a kernel may not hold: walking up through the
    /// elementwise ops each of which is the only reader of the value below it (and reshapes
    /// that keep its elements in place), the first of the narrowest float dtype; `r` when none
    /// is narrower. (Not a bool, a byte or a bfloat16: WGSL has no such storage type, so wgpu
    /// stores them into shared words with atomics.) A half layer's projection (float32 sums, a
    /// bias, a cast to half) then stores its halves, rounded where it stores them, instead of
    /// the sums, which the layer norm reading them would read at twice the bytes and round
    /// itself.
    fn narrowest_form(&mut self, r: &UOp) -> UOp {
        let elements = numel(self.shapes.of(r));
        let (mut at, mut best) = (r.clone(), r.clone());
        while let Some([next]) = self.consumers.get(&at).map(Vec::as_slice) {
            let keeps_elements = match next.op() {
                Ops::View => next.arg().as_view().is_some_and(is_identity),
                op => GroupOp::ALU.contains(op) || op == Ops::Cast,
            };
            if !keeps_elements || self.stops(next) || numel(self.shapes.of(next)) != elements {
                break;
            }
            let dtype = next.dtype();
            let stored_whole = dtype.is_float() && dtype.scalar() != DType::BF16.scalar();
            if next.op() != Ops::View && stored_whole && dtype.itemsize() < best.dtype().itemsize() {
                best = next.clone();
            }
            at = next.clone();
        }
        best
    }

    /// The reduces kernel `k` reads in place.
    fn placed(&mut self, k: &Lowered) -> Vec<UOp> {
        k.reduces.iter().filter(|(r, st)| in_place(r, st, k, self.shapes)).map(|(r, _)| r.clone()).collect()
    }

    /// Rule 3's rows: whether every reduce the elementwise kernel `k` reaches, but those it
    /// reads in place (`placed`), is read broadcast back over its own input, the kernel's
    /// index space, all reduce one axis of that shape, and that axis is at most `row_reduce`
    /// long.
    fn row_reduces(&mut self, k: &Lowered, placed: &[UOp]) -> bool {
        let rows: Vec<&(UOp, ShapeTracker)> = k.reduces.iter().filter(|(r, _)| !placed.contains(r)).collect();
        let Some((first, _)) = rows.first() else { return false };
        if self.shapes.of(&first.src()[0]) != k.shape.as_slice() {
            return false;
        }
        let short = self.row_length(k, placed).is_some_and(|n| self.limits.reduces_rows_of(n));
        short
            && rows
                .iter()
                .all(|(r, st)| broadcasts_reduce(r, st, self.shapes) && same_reduction(first, r, self.shapes))
    }

    /// The length of the row the first reduce kernel `k` reaches (but those it reads in place,
    /// `placed`) reduces, when it reduces one axis.
    fn row_length(&mut self, k: &Lowered, placed: &[UOp]) -> Option<usize> {
        let (first, _) = k.reduces.iter().find(|(r, _)| !placed.contains(r))?;
        match first.arg() {
            Arg::ReduceAxis(_, axes) if axes.len() == 1 => {
                self.shapes.of(&first.src()[0]).get(axes[0]).copied()
            }
            _ => None,
        }
    }

    /// For a kernel `k` (of `root`) holding a reduce that reaches `r` and cannot hold it: the
    /// value its region computes from `r` and the reduces like it (same axes, same input) as a
    /// kernel of rule 3's rows would (a layer norm's output, read by a pooling sum over the
    /// tokens), the lowest that holds them all. Realizing it makes that kernel, and the reader
    /// loads each element once, where realizing the reduces would have the reader recompute
    /// the rows' values from them, every element's statistics loaded and combined in its loop
    /// (on an H200, MiniLM's f16 pooling over the last layer norm took 34.7 us).
    fn normalized_rows(&mut self, root: &UOp, r: &UOp, k: &Lowered) -> Result<Option<UOp>, EngineError> {
        let siblings: Vec<UOp> = k
            .reduces
            .iter()
            .filter(|(o, _)| same_reduction(o, r, self.shapes))
            .map(|(o, _)| o.clone())
            .collect();
        let row_shape = self.shapes.of(&r.src()[0]).to_vec();
        let mut region = UOpSet::default();
        let mut stack = vec![root.clone()];
        while let Some(u) = stack.pop() {
            for s in u.src() {
                if !self.stops(s) && region.insert(s.clone()) {
                    stack.push(s.clone());
                }
            }
        }
        let elementwise = |u: &UOp| GroupOp::ALU.contains(u.op()) || u.op() == Ops::Cast;
        let candidates: Vec<UOp> =
            self.topo.iter().filter(|u| region.contains(*u) && elementwise(u)).cloned().collect();
        for u in &candidates {
            if self.shapes.of(u) != row_shape.as_slice() {
                continue;
            }
            let v = lower_group(std::slice::from_ref(u), &row_shape, &self.realizes, self.shapes)?;
            let holds = siblings.iter().all(|s| v.reduces.iter().any(|(o, _)| o == s));
            let placed = self.placed(&v);
            // rule 2's exception stands: a reader that recomputes its softmax keeps doing so
            if holds && self.row_reduces(&v, &placed) && !self.recomputed_rows(u) {
                return Ok(Some(u.clone()));
            }
        }
        Ok(None)
    }

    /// Rule 5: bottom up, the buffers each node's fused part reads.
    fn buffer_limit(&mut self) -> bool {
        let mut reads: UOpMap<Vec<UOp>> = UOpMap::default();
        let mut changed = false;
        for u in self.topo.clone() {
            let mut set = self.read_set(&u, &reads);
            if set.len() + 1 > self.limits.max_buffers {
                for s in u.src() {
                    if !self.stops(s) && reads.get(s).is_some_and(|r| !r.is_empty()) {
                        changed |= self.realize(s);
                    }
                }
                set = self.read_set(&u, &reads);
            }
            reads.insert(u, set);
        }
        changed
    }

    fn read_set(&self, u: &UOp, reads: &UOpMap<Vec<UOp>>) -> Vec<UOp> {
        let mut set: Vec<UOp> = vec![];
        for s in u.src().iter().filter(|s| s.op() != Ops::Device) {
            let add =
                if self.stops(s) { vec![buffer_key(s)] } else { reads.get(s).cloned().unwrap_or_default() };
            for b in add {
                if !set.contains(&b) {
                    set.push(b);
                }
            }
        }
        set
    }

    /// Rules 3 and 4, from each kernel's view of its part of the graph; the kernels as they
    /// stand (each over its final index space).
    fn kernels(&mut self) -> Result<(bool, UOpMap<Lowered>), EngineError> {
        let mut kernels: UOpMap<Lowered> = UOpMap::default();
        let mut owner: UOpMap<UOp> = UOpMap::default();
        let mut add: Vec<UOp> = vec![];
        let roots: Vec<UOp> =
            self.topo.iter().filter(|u| self.realizes.contains(*u) && u.op() != Ops::Copy).cloned().collect();
        for root in roots {
            let mut lowered = lower_kernel(&root, &self.realizes, self.shapes)?;
            let own = self.shapes.of(&root).to_vec();
            if root.op() != Ops::ReduceAxis && lowered.shape != own {
                // a kernel reducing its rows itself keeps its own index space, not that of a
                // reduce it reads in place (which it realizes)
                let over_own = lower_group(std::slice::from_ref(&root), &own, &self.realizes, self.shapes)?;
                let placed = self.placed(&over_own);
                if self.row_reduces(&over_own, &placed) {
                    lowered = over_own;
                }
            }
            // a reduce root is its own kernel's reduce, else one in place, the outermost first
            // (one no reduce of the kernel reads broadcast)
            let read_broadcast: Vec<UOp> = lowered
                .reduces
                .iter()
                .filter(|(r, st)| broadcasts_reduce(r, st, self.shapes))
                .map(|(r, _)| r.clone())
                .collect();
            let mut placed = self.placed(&lowered);
            placed.sort_by_key(|r| read_broadcast.contains(r));
            // an elementwise kernel reducing short rows itself realizes what it reads in place
            let rows = root.op() != Ops::ReduceAxis && self.row_reduces(&lowered, &placed);
            let main = match root.op() {
                Ops::ReduceAxis => Some(root.clone()),
                _ if rows => None,
                _ => placed.first().cloned(),
            };
            // reduces over the main one's axes and input that the kernel reads broadcast; in
            // an elementwise kernel, short rows' reduces over one axis of one input
            let nested: Vec<UOp> = read_broadcast
                .into_iter()
                .filter(|r| rows || main.as_ref().is_some_and(|m| same_reduction(m, r, self.shapes)))
                .collect();
            for (r, st) in &lowered.reduces {
                let claimed = owner.get(r).is_some_and(|o| *o != root);
                if *r == root {
                    continue;
                }
                let keep = if main.as_ref() == Some(r) {
                    in_place(r, st, &lowered, self.shapes)
                } else {
                    nested.contains(r)
                        && (in_place(r, st, &lowered, self.shapes) || broadcasts_reduce(r, st, self.shapes))
                };
                if !keep || claimed {
                    let rows = match main.is_some() && !claimed {
                        true => self.normalized_rows(&root, r, &lowered)?,
                        false => None,
                    };
                    add.push(self.narrowest_form(rows.as_ref().unwrap_or(r)));
                } else {
                    owner.insert(r.clone(), root.clone());
                }
            }
            if root.op() == Ops::Assign {
                let target = buffer_key(&root);
                let hazard = lowered.loads.iter().any(|(l, st)| buffer_key(l) == target && !is_identity(st));
                if hazard {
                    add.push(root.src()[1].clone());
                }
            }
            kernels.insert(root, lowered);
        }
        let changed = add.iter().fold(false, |changed, u| self.realize(u) | changed);
        Ok((changed, kernels))
    }
}

/// Whether kernel `k` reads the reduce `r` through `st` in place: every element where the
/// kernel stores it (a prefix is not).
fn in_place(r: &UOp, st: &ShapeTracker, k: &Lowered, shapes: &mut Shapes) -> bool {
    is_identity(st) && numel(shapes.of(r)) == numel(&k.shape)
}

/// Whether `st` (a view of `src`) broadcasts a reduce's result back over the axes it reduced,
/// onto the reduce's input shape: how a reduce nested in another over the same axes reads it.
pub(crate) fn broadcasts_reduce(src: &UOp, st: &ShapeTracker, shapes: &mut Shapes) -> bool {
    if src.op() != Ops::ReduceAxis {
        return false;
    }
    let input = shapes.of(&src.src()[0]).to_vec();
    let broadcast = contiguous_st(shapes.of(src)).expand(&sints(&input));
    st.shape() == sints(&input).as_slice() && broadcast.is_ok_and(|b| b == *st)
}

/// Whether two reduces reduce the same axes of inputs of the same shape.
pub(crate) fn same_reduction(a: &UOp, b: &UOp, shapes: &mut Shapes) -> bool {
    let axes = |u: &UOp| match u.arg() {
        Arg::ReduceAxis(_, axes) => Some(axes.clone()),
        _ => None,
    };
    axes(a) == axes(b) && shapes.of(&a.src()[0]).to_vec() == shapes.of(&b.src()[0])
}

/// The nodes of the `VIEW`-form graph under `sink` that get a buffer of their own, and the
/// kernel of each (over its root's shape).
pub(crate) fn group(
    sink: &UOp,
    shapes: &mut Shapes,
    limits: KernelLimits,
) -> Result<(UOpSet, UOpMap<Lowered>), EngineError> {
    let topo = sink.toposort();
    let mut consumers: UOpMap<Vec<UOp>> = UOpMap::default();
    for u in &topo {
        for s in u.src() {
            consumers.entry(s.clone()).or_default().push(u.clone());
        }
    }
    let mut g = Grouper { topo, consumers, shapes, realizes: UOpSet::default(), limits };
    g.forced(sink);
    loop {
        let changed = g.views() | g.buffer_limit();
        let (grew, kernels) = g.kernels()?;
        if !(grew || changed) {
            return Ok((g.realizes, kernels));
        }
    }
}
