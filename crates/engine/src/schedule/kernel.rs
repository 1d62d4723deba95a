//! Lowering one realized node's part of the graph (or the parts of a group of them that share
//! a kernel) into a kernel AST: views are pushed down to the loads (composing ShapeTrackers),
//! realized nodes and buffers become `Load`s of numbered buffers, constants under a mask
//! become masked `Const`s, the reduces keep their full shapes.
//!
//! The kernel's index space `K` is the root's shape, or, when the kernel holds a reduce, the
//! reduce's output shape (same size: the path from the reduce up to the root only reshapes).
//! Loads above the reduce see `K`, loads under it the reduce's input shape; both have one
//! rank, as codegen requires. Slots `0..n` are the outputs of the `n` roots (an assign's
//! target buffer), in order. A root another root of the group reads is not loaded: its value
//! is computed in place (the same kernel-AST nodes as its own store's).

use std::collections::{HashMap, HashSet};

use wgrad_ops::{Arg, FxBuild, GroupOp, Ops, UOp, UOpSet};
use wgrad_shape::ShapeTracker;

use super::views::contiguous_st;
use crate::{EngineError, Shapes};

/// The kernel of a realized node (or of a group of them).
pub(crate) struct Lowered {
    /// The kernel's index space (the stored view's shape).
    pub shape: Vec<usize>,
    /// The value the kernel stores for each root, in kernel-AST form.
    pub values: Vec<UOp>,
    /// The buffer node of each slot: the roots' outputs, then each input's in order.
    pub slots: Vec<UOp>,
    /// The realized nodes and buffers the kernel reads, as the graph names them.
    pub reads: Vec<UOp>,
    /// Each reduce reached, with the tracker from the kernel's positions to its output.
    pub reduces: Vec<(UOp, ShapeTracker)>,
    /// Each buffer read, with its tracker.
    pub loads: Vec<(UOp, ShapeTracker)>,
}

/// The node naming the memory that holds a buffer's or realized node's value: an assign
/// writes its target's buffer (through a view of it, or an earlier assign); any other node
/// gets a buffer of its own.
pub(crate) fn buffer_key(u: &UOp) -> UOp {
    let mut u = u.clone();
    while u.op() == Ops::Assign {
        let target = &u.src()[0];
        u = if target.op() == Ops::View { target.src()[0].clone() } else { target.clone() };
    }
    u
}

/// The value a root stores: a contiguous's or an assign's source, else the root itself.
pub(crate) fn stored(root: &UOp) -> UOp {
    match root.op() {
        Ops::Contiguous => root.src()[0].clone(),
        Ops::Assign => root.src()[1].clone(),
        _ => root.clone(),
    }
}

struct Lowerer<'a> {
    /// The roots whose values the kernel stores.
    roots: &'a [UOp],
    realizes: &'a UOpSet,
    shapes: &'a mut Shapes,
    out: Lowered,
    memo: HashMap<(UOp, ShapeTracker), UOp, FxBuild>,
    /// The `(node, tracker)` pairs under the kernel's reduce (their constants need views:
    /// codegen finds a reduce's full shape from the views under it).
    under_reduce: HashSet<(UOp, ShapeTracker), FxBuild>,
}

impl Lowerer<'_> {
    /// Whether `u` is read from a buffer: a buffer, or a node another kernel computes.
    fn is_load(&self, u: &UOp) -> bool {
        u.op() == Ops::Buffer || (self.realizes.contains(u) && !self.roots.contains(u))
    }

    /// Whether `u` is a root of the kernel seen from another root: its stored value.
    fn is_root_value(&self, u: &UOp) -> bool {
        matches!(u.op(), Ops::Assign | Ops::Contiguous) && self.roots.contains(u)
    }

    /// The sources of `(u, st)` to lower first, each with its tracker.
    fn children(&mut self, u: &UOp, st: &ShapeTracker) -> Result<Vec<(UOp, ShapeTracker)>, EngineError> {
        if self.is_load(u) {
            return Ok(vec![]);
        }
        if self.is_root_value(u) {
            return Ok(vec![(stored(u), st.clone())]);
        }
        Ok(match (u.op(), u.arg()) {
            (Ops::View, Arg::View(vst)) => vec![(u.src()[0].clone(), vst.compose(st))],
            (Ops::ReduceAxis, _) => {
                let src = &u.src()[0];
                vec![(src.clone(), contiguous_st(self.shapes.of(src)))]
            }
            (Ops::Const, _) => vec![],
            (op, _) if GroupOp::ALU.contains(op) || matches!(op, Ops::Cast | Ops::Bitcast) => {
                u.src().iter().map(|s| (s.clone(), st.clone())).collect()
            }
            (op, _) => return Err(EngineError::Unschedulable(format!("{op} inside a kernel"))),
        })
    }

    fn slot(&mut self, u: &UOp) -> i64 {
        let key = buffer_key(u);
        let slot = self.out.slots.iter().position(|s| *s == key).unwrap_or_else(|| {
            self.out.slots.push(key);
            self.out.slots.len() - 1
        });
        slot as i64
    }

    /// `(u, st)` in kernel-AST form, its children already lowered.
    fn build(&mut self, u: &UOp, st: &ShapeTracker, kids: &[(UOp, ShapeTracker)]) -> UOp {
        let lowered = |l: &Self, k: &(UOp, ShapeTracker)| l.memo[k].clone();
        if self.is_load(u) {
            if !self.out.reads.contains(u) {
                self.out.reads.push(u.clone());
            }
            self.out.loads.push((u.clone(), st.clone()));
            let slot = self.slot(u);
            return UOp::load(u.dtype(), [UOp::define_global(u.dtype(), slot), UOp::view(st.clone())]);
        }
        match u.op() {
            _ if self.is_root_value(u) => lowered(self, &kids[0]),
            Ops::View => lowered(self, &kids[0]),
            Ops::Const if self.needs_view(u, st) => u.with_src([UOp::view(st.clone())]),
            Ops::Const => u.with_src([]),
            Ops::ReduceAxis => {
                self.out.reduces.push((u.clone(), st.clone()));
                u.with_src([lowered(self, &kids[0])])
            }
            _ => u.with_src(kids.iter().map(|k| lowered(self, k)).collect::<Vec<_>>()),
        }
    }

    /// Whether the constant `(u, st)` carries its view: where it is masked, or under the
    /// reduce.
    fn needs_view(&self, u: &UOp, st: &ShapeTracker) -> bool {
        st.views().iter().any(|v| v.mask().is_some()) || self.under_reduce.contains(&(u.clone(), st.clone()))
    }

    /// Marks every `(node, tracker)` pair under a reduce of `(root, st)`, wherever else the
    /// pair is also read (a constant there carries its view either way).
    fn mark_under_reduce(&mut self, root: &UOp, st: &ShapeTracker) -> Result<(), EngineError> {
        let mut stack = vec![(root.clone(), st.clone(), false)];
        let mut seen: HashSet<(UOp, ShapeTracker, bool), FxBuild> = HashSet::default();
        while let Some((u, st, under)) = stack.pop() {
            if !seen.insert((u.clone(), st.clone(), under)) {
                continue;
            }
            if under {
                self.under_reduce.insert((u.clone(), st.clone()));
            }
            let below = under || u.op() == Ops::ReduceAxis;
            stack.extend(self.children(&u, &st)?.into_iter().map(|(c, s)| (c, s, below)));
        }
        Ok(())
    }

    /// Lowers `(root, st)` iteratively (kernels may hold long chains), sources first.
    fn lower(&mut self, root: &UOp, st: ShapeTracker) -> Result<UOp, EngineError> {
        type Kids = Option<Vec<(UOp, ShapeTracker)>>;
        let mut stack: Vec<(UOp, ShapeTracker, Kids)> = vec![(root.clone(), st.clone(), None)];
        while let Some((u, st, kids)) = stack.pop() {
            let key = (u.clone(), st.clone());
            if self.memo.contains_key(&key) {
                continue;
            }
            match kids {
                Some(kids) => {
                    let built = self.build(&u, &st, &kids);
                    self.memo.insert(key, built);
                }
                None => {
                    let kids = self.children(&u, &st)?;
                    let pending: Vec<_> =
                        kids.iter().filter(|k| !self.memo.contains_key(*k)).cloned().collect();
                    stack.push((u, st, Some(kids)));
                    stack.extend(pending.into_iter().rev().map(|(c, s)| (c, s, None)));
                }
            }
        }
        Ok(self.memo[&(root.clone(), st)].clone())
    }
}

/// Lowers the kernel storing the realized nodes `roots` over the index space `kernel_shape`;
/// `realizes` are the nodes kernels compute (read here as buffers, except the roots).
fn lower(
    roots: &[UOp],
    kernel_shape: &[usize],
    realizes: &UOpSet,
    shapes: &mut Shapes,
) -> Result<Lowered, EngineError> {
    let out = Lowered {
        shape: kernel_shape.to_vec(),
        values: vec![],
        slots: roots.iter().map(buffer_key).collect(),
        reads: vec![],
        reduces: vec![],
        loads: vec![],
    };
    let mut l =
        Lowerer { roots, realizes, shapes, out, memo: HashMap::default(), under_reduce: HashSet::default() };
    for root in roots {
        l.mark_under_reduce(&stored(root), &contiguous_st(kernel_shape))?;
    }
    for root in roots {
        let value = l.lower(&stored(root), contiguous_st(kernel_shape))?;
        l.out.values.push(value);
    }
    Ok(l.out)
}

/// Lowers the kernel of `root` over its own shape, then, when a reduce it holds in place has
/// another output shape (the root reshapes it), again over that reduce's output shape.
pub(crate) fn lower_kernel(
    root: &UOp,
    realizes: &UOpSet,
    shapes: &mut Shapes,
) -> Result<Lowered, EngineError> {
    let shape = shapes.of(root).to_vec();
    let roots = std::slice::from_ref(root);
    let lowered = lower(roots, &shape, realizes, shapes)?;
    let reshaped = lowered.reduces.iter().find(|(r, st)| {
        super::views::is_identity(st) && crate::shapes::numel(shapes.of(r)) == crate::shapes::numel(&shape)
    });
    match reshaped {
        Some((r, _)) if shapes.of(r) != shape.as_slice() => {
            let reduced = shapes.of(r).to_vec();
            lower(roots, &reduced, realizes, shapes)
        }
        _ => Ok(lowered),
    }
}

/// Lowers one kernel storing every root of `group` over `shape` (the kernels of its roots
/// each have that index space and no reduce).
pub(crate) fn lower_group(
    group: &[UOp],
    shape: &[usize],
    realizes: &UOpSet,
    shapes: &mut Shapes,
) -> Result<Lowered, EngineError> {
    lower(group, shape, realizes, shapes)
}
