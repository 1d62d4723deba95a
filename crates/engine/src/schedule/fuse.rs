//! Multi-output kernels: realized nodes whose kernels share their loops become one kernel
//! with a store each (an optimizer's update of a parameter and its moments is one kernel).
//!
//! Rules (tinygrad's conditions for outputs sharing a kernel):
//! 1. both kernels are over the same index space, on one device, and either both are
//!    elementwise (no reduce) or the one read is a reduce (a layer norm's mean) that the reader
//!    reads broadcast back over the axes of its own reduce over the same input (the
//!    variance): the first reduce nests in the second, as a softmax's max does in its sum;
//! 2. one reads the other, element for element (the identity view) or so broadcast: the
//!    reader computes that value in place instead of loading it; a `CONTIGUOUS` is never read
//!    this way (the user asked for a kernel boundary there);
//! 3. the merged kernel binds at most the device's number of buffers, and no two of its
//!    outputs are one buffer (two assigns to it);
//! 4. a buffer one root stores is loaded in the kernel only element for element, by the load
//!    that root's own value reads (so every load of it comes before its store: an assign's
//!    old value is read before it is overwritten, in the same thread);
//! 5. no other kernel sits between the two (the run order of the kernels stays acyclic).
//!
//! Candidates are tried in graph order, each reader with the nodes it reads in order. Then,
//! beyond tinygrad, siblings merge under rules 3 to 5: kernels over one index space on one
//! device that do not read each other and loop alike, either elementwise or each one reduce
//! in place over the same axes of inputs of one shape (codegen groups reduces side by side
//! as it does nested ones). An optimizer's updates of equally shaped parameters, a batch
//! norm's running statistics and its gradient's sums each run as one launch instead of
//! several small ones. Each such kernel is tried against the last earlier one that loops as
//! it does.

use wgrad_ops::{Ops, UOp, UOpMap, UOpSet};

use super::group::{broadcasts_reduce, same_reduction};
use super::kernel::{Lowered, buffer_key, lower_group};
use super::order::{self, Node};
use super::views::{contiguous_st, is_identity};
use crate::{DeviceName, EngineError, Shapes};

/// The realized nodes `roots` (in graph order) grouped into kernels, each group in graph
/// order; `kernels` holds each root's own kernel (copies have none).
pub(crate) fn groups(
    roots: &[UOp],
    kernels: &UOpMap<Lowered>,
    realizes: &UOpSet,
    shapes: &mut Shapes,
    max_buffers: usize,
) -> Result<Vec<Vec<UOp>>, EngineError> {
    let position: UOpMap<usize> = roots.iter().enumerate().map(|(i, r)| (r.clone(), i)).collect();
    let mut groups: Vec<Vec<UOp>> = roots.iter().map(|r| vec![r.clone()]).collect();
    let mut group_of: Vec<usize> = (0..roots.len()).collect();
    let cx = Context { position: &position, kernels, realizes, max_buffers };
    for (b, root) in roots.iter().enumerate() {
        let Some(kb) = kernels.get(root) else { continue };
        for read in &kb.reads {
            let Some(&a) = position.get(read) else { continue };
            let (ga, gb) = (group_of[a], group_of[b]);
            let Some(ka) = kernels.get(read) else { continue };
            let boundary = read.op() == Ops::Contiguous;
            if ga == gb || boundary || ka.shape != kb.shape || !shares_loops(read, ka, kb, shapes) {
                continue;
            }
            if shapes.device(read)? != shapes.device(root)? {
                continue;
            }
            if merge(&mut groups, (ga, gb), &kb.shape, &cx, shapes)? {
                let (keep, gone) = (ga.min(gb), ga.max(gb));
                group_of.iter_mut().filter(|g| **g == gone).for_each(|g| *g = keep);
            }
        }
    }
    // siblings: kernels of one index space and device that loop alike, the last of each so far
    let mut last: Vec<(Vec<usize>, DeviceName, Option<UOp>, usize)> = vec![];
    for g in 0..groups.len() {
        let Some(first) = groups[g].first() else { continue };
        let Some(reduce) = sibling_loops(&groups[g], kernels, shapes) else { continue };
        let (shape, device) = (kernels[first].shape.clone(), shapes.device(first)?);
        let alike = |r: &Option<UOp>, shapes: &mut Shapes| match (r, &reduce) {
            (None, None) => true,
            (Some(x), Some(y)) => same_reduction(x, y, shapes),
            _ => false,
        };
        let found = last.iter().position(|(s, d, r, _)| *s == shape && *d == device && alike(r, shapes));
        let Some(i) = found else {
            last.push((shape, device, reduce, g));
            continue;
        };
        let a = last[i].3;
        let independent = !reads(&groups, kernels, a, g) && !reads(&groups, kernels, g, a);
        if !independent || !merge(&mut groups, (a, g), &shape, &cx, shapes)? {
            last[i].3 = g;
        }
    }
    Ok(groups.into_iter().filter(|g| !g.is_empty()).collect())
}

/// Whether a kernel of group `x` reads a root of group `y`.
fn reads(groups: &[Vec<UOp>], kernels: &UOpMap<Lowered>, x: usize, y: usize) -> bool {
    groups[x].iter().any(|r| kernels[r].reads.iter().any(|read| groups[y].contains(read)))
}

/// How the kernel of `group` loops besides its index space, if its roots may merge with
/// siblings: `Some(None)` when none reduces, `Some(reduce)` when each root's kernel holds one
/// reduce in place, all of the same axes of inputs of one shape.
fn sibling_loops(group: &[UOp], kernels: &UOpMap<Lowered>, shapes: &mut Shapes) -> Option<Option<UOp>> {
    let mut reduces = vec![];
    for root in group {
        match kernels.get(root)?.reduces.as_slice() {
            [] => {}
            [(r, st)] if is_identity(st) => reduces.push(r.clone()),
            _ => return None,
        }
    }
    match reduces.split_first() {
        None => Some(None),
        Some((first, rest)) if reduces.len() == group.len() => {
            rest.iter().all(|r| same_reduction(first, r, shapes)).then(|| Some(first.clone()))
        }
        Some(_) => None,
    }
}

/// What a merge of two groups is checked against.
struct Context<'a> {
    position: &'a UOpMap<usize>,
    kernels: &'a UOpMap<Lowered>,
    realizes: &'a UOpSet,
    max_buffers: usize,
}

/// Groups `a` and `b` as one kernel over `shape`, kept at the earlier of the two, where rules
/// 3 to 5 allow it; whether they merged.
fn merge(
    groups: &mut [Vec<UOp>],
    (a, b): (usize, usize),
    shape: &[usize],
    cx: &Context,
    shapes: &mut Shapes,
) -> Result<bool, EngineError> {
    let mut merged: Vec<UOp> = groups[a].iter().chain(&groups[b]).cloned().collect();
    merged.sort_by_key(|r| cx.position[r]);
    if !reduces_read_in_place(groups, (a, b), cx.kernels, shapes)
        || !fits(&merged, shape, cx.realizes, shapes, cx.max_buffers)?
        || !acyclic(groups, a, b, cx.kernels)
    {
        return Ok(false);
    }
    let (keep, gone) = (a.min(b), a.max(b));
    groups[keep] = merged;
    groups[gone].clear();
    Ok(true)
}

/// Whether every reduce root of one of groups `a` and `b` that a kernel of the other reads,
/// that kernel reads in place or broadcast back over its axes: a merged kernel computes such a
/// reduce itself and reads its value whatever the view (a pad's mask would be lost: the
/// gradient of a softmax's shrunk element, fuzz seed 481930).
fn reduces_read_in_place(
    groups: &[Vec<UOp>],
    (a, b): (usize, usize),
    kernels: &UOpMap<Lowered>,
    shapes: &mut Shapes,
) -> bool {
    [(a, b), (b, a)].into_iter().all(|(x, y)| {
        groups[x].iter().filter_map(|root| kernels.get(root)).all(|k| {
            k.loads
                .iter()
                .filter(|(l, _)| l.op() == Ops::ReduceAxis && groups[y].contains(l))
                .all(|(l, st)| is_identity(st) || broadcasts_reduce(l, st, shapes))
        })
    })
}

/// Rules 1 and 2: whether the kernel `kb` can compute `read` (whose own kernel is `ka`, over
/// the same index space) in place of loading it. Either neither holds a reduce and `kb` reads
/// it element for element, or `ka` is one reduce in place and `kb` reads it broadcast back
/// over the axes of a reduce of its own over the same input: the reduce nests in `kb`'s, as a
/// softmax's max does in its sum.
fn shares_loops(read: &UOp, ka: &Lowered, kb: &Lowered, shapes: &mut Shapes) -> bool {
    let mut reads = kb.loads.iter().filter(|(l, _)| l == read).map(|(_, st)| st);
    match (ka.reduces.as_slice(), kb.reduces.is_empty()) {
        ([], true) => reads.all(|st| *st == contiguous_st(&kb.shape)),
        ([(inner, inner_st)], false) => {
            let outer = kb.reduces.iter().any(|(r, st)| is_identity(st) && same_reduction(inner, r, shapes));
            is_identity(inner_st) && outer && reads.all(|st| broadcasts_reduce(inner, st, shapes))
        }
        _ => false,
    }
}

/// Rules 3 and 4 for the kernel of `group` over `shape`.
fn fits(
    group: &[UOp],
    shape: &[usize],
    realizes: &UOpSet,
    shapes: &mut Shapes,
    max_buffers: usize,
) -> Result<bool, EngineError> {
    let lowered = lower_group(group, shape, realizes, shapes)?;
    let outputs = &lowered.slots[..group.len()];
    let distinct = outputs.iter().enumerate().all(|(i, o)| !outputs[..i].contains(o));
    if lowered.slots.len() > max_buffers || !distinct {
        return Ok(false);
    }
    let identity = contiguous_st(shape);
    for (slot, root) in group.iter().enumerate() {
        let target = buffer_key(root);
        let loads: Vec<_> = lowered.loads.iter().filter(|(l, _)| buffer_key(l) == target).collect();
        if loads.is_empty() {
            continue;
        }
        // the one load of the target a store may come after: its own value's
        let own = UOp::load(
            root.dtype(),
            [UOp::define_global(root.dtype(), slot as i64), UOp::view(identity.clone())],
        );
        let read_first = lowered.values[slot].toposort().contains(&own);
        if !read_first || loads.iter().any(|(_, st)| *st != identity) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Rule 5: whether the kernels still have a run order once groups `a` and `b` are one.
fn acyclic(groups: &[Vec<UOp>], a: usize, b: usize, kernels: &UOpMap<Lowered>) -> bool {
    let nodes: Vec<Node> = groups
        .iter()
        .enumerate()
        .filter(|(i, g)| *i != b && !g.is_empty())
        .map(|(i, g)| {
            let roots: Vec<UOp> =
                if i == a { g.iter().chain(&groups[b]).cloned().collect() } else { g.clone() };
            node(roots, kernels)
        })
        .collect();
    order::order(&nodes).is_ok()
}

/// The order node of a group of roots: what its kernel (or copy) reads, less what it
/// computes itself.
pub(crate) fn node(roots: Vec<UOp>, kernels: &UOpMap<Lowered>) -> Node {
    let mut reads: Vec<UOp> = vec![];
    let copied = |r: &UOp| (r.op() == Ops::Copy).then(|| r.src()[0].clone());
    let all = roots
        .iter()
        .flat_map(|r| kernels.get(r).map_or_else(|| copied(r).into_iter().collect(), |k| k.reads.clone()));
    for r in &all.collect::<Vec<_>>() {
        if !roots.contains(r) && !reads.contains(r) {
            reads.push(r.clone());
        }
    }
    Node { roots, reads }
}
