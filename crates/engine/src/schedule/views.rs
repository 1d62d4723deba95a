//! First step of scheduling: every chain of movement ops becomes one `VIEW(base, st)` over
//! the first non-movement node below it, `DETACH` and `CONTIGUOUS_BACKWARD` disappear, large
//! reductions with small outputs are split in two (tinygrad's `split_reduceop`), and
//! reductions of nothing become their identity element.
//!
//! Invariants of the result: a `VIEW`'s source is never a `VIEW`; a `VIEW` is never the
//! identity of its source's shape; each node it keeps (or rebuilds) remembers the lazy nodes
//! it came from (`origins`), so realized results can be found again by the lazy graph.

use std::sync::Arc;

use wgrad_ops::{Arg, GroupOp, Ops, UOp, UOpMap, identity_element};
use wgrad_shape::{ShapeTracker, Sint};

use crate::lazy::{arg_pairs, arg_usizes, constant, flip_axes};
use crate::shapes::numel;
use crate::{EngineError, Shapes};

/// Reductions at least this many times larger than their output are split (tinygrad's
/// `REDUCEOP_SPLIT_THRESHOLD`).
const SPLIT_THRESHOLD: usize = 32768;
/// The split's first stage keeps at most `2^SPLIT_SIZE` outputs (`REDUCEOP_SPLIT_SIZE`).
const SPLIT_SIZE: u32 = 22;
/// A contraction (see [`contraction`]) is split from this many times its output on (split-K)
/// while its output is smaller than [`SPLIT_K_OUTPUTS`]: a big GPU needs about that many
/// threads, a register tile leaves fewer, and grouping such a reduce reads both operands across
/// threads far apart. Measured on an H100, beautiful_mnist's conv4 weight gradient at batch 512
/// (36864 outputs, each a sum of 18432 products): 5.3 ms grouped, 0.12 ms split.
const SPLIT_K_THRESHOLD: usize = 4096;
/// See [`SPLIT_K_THRESHOLD`].
const SPLIT_K_OUTPUTS: usize = 1 << 17;
/// A reduce over several axes into more than one output is split from this many times its
/// output on where grouping cannot give it [`FEW_THREADS`] threads: the codegen groups one
/// reduce axis by a power of two up to 256 that divides it. beautiful_mnist's batch-norm
/// statistics at batch 64 (32 channels of 64 x 20 x 20, 64 of 64 x 8 x 8) ran as one kernel of
/// 512 to 4096 threads, and its step on an H200 took 3.0 ms instead of 1.3; at batch 512 (64
/// channels of 512 x 6 x 6, groups of 256) splitting made the step slower. A reduce over one
/// axis (a softmax's long rows, a matrix-vector product) groups that axis whole and stays one
/// kernel.
const FEW_THREADS_THRESHOLD: usize = 4096;
/// See [`FEW_THREADS_THRESHOLD`].
const FEW_THREADS: usize = 8192;

/// The graph in `VIEW` form.
pub(crate) struct Converted {
    /// The sink of the converted graph.
    pub sink: UOp,
    /// For each kept node, the lazy nodes it computes.
    pub origins: UOpMap<Vec<UOp>>,
}

/// Dims as `Sint`s.
pub(crate) fn sints(shape: &[usize]) -> Vec<Sint> {
    shape.iter().map(|&d| Sint::int(d as i64)).collect()
}

/// The contiguous tracker of `shape`.
pub(crate) fn contiguous_st(shape: &[usize]) -> ShapeTracker {
    // non-negative integer dims always make a tracker
    ShapeTracker::from_shape(&sints(shape)).expect("usize dims are non-negative")
}

/// Whether `st` maps each position to the same linear index (every view contiguous).
pub(crate) fn is_identity(st: &ShapeTracker) -> bool {
    st.views().iter().all(|v| v.contiguous())
}

/// `VIEW(base, st)`, or `base` itself when `st` is its identity.
fn view(base: &UOp, st: ShapeTracker, shapes: &mut Shapes) -> UOp {
    if st.views().len() == 1 && st.contiguous() && sints(shapes.of(base)) == st.shape() {
        return base.clone();
    }
    UOp::new(Ops::View, base.dtype(), [base.clone()], Arg::View(Arc::new(st)))
}

/// `x`'s base and the tracker from `x`'s positions to the base's linear index.
fn base_and_st(x: &UOp, shapes: &mut Shapes) -> (UOp, ShapeTracker) {
    match x.arg() {
        Arg::View(st) if x.op() == Ops::View => (x.src()[0].clone(), (**st).clone()),
        _ => (x.clone(), contiguous_st(shapes.of(x))),
    }
}

/// `st` moved by the movement op `op` with argument `arg`.
fn apply_movement(st: &ShapeTracker, op: Ops, arg: &Arg) -> Result<ShapeTracker, EngineError> {
    let pairs = || -> Vec<(Sint, Sint)> {
        arg_pairs(arg).iter().map(|&(a, b)| (Sint::int(a as i64), Sint::int(b as i64))).collect()
    };
    Ok(match op {
        Ops::Reshape => st.reshape(&sints(&arg_usizes(arg)))?,
        Ops::Expand => st.expand(&sints(&arg_usizes(arg)))?,
        Ops::Permute => st.permute(&arg_usizes(arg))?,
        Ops::Pad => st.pad(&pairs())?,
        Ops::Shrink => st.shrink(&pairs())?,
        Ops::Flip => st.flip(&flip_axes(arg))?,
        _ => return Err(EngineError::Unschedulable(format!("{op} is not a movement op"))),
    })
}

/// `x` moved by the movement op `u`.
fn movement(u: &UOp, x: &UOp, shapes: &mut Shapes) -> Result<UOp, EngineError> {
    let (base, st) = base_and_st(x, shapes);
    let st = apply_movement(&st, u.op(), u.arg())?;
    Ok(view(&base, st, shapes))
}

/// A reduce `r` of a large input into a small output as two reduces: the first over the
/// original axes of the input with one of them split into `(divisor, rest)` and the divisor
/// moved last, the second over that last axis; `None` when `r` is not worth splitting.
fn split_reduce(r: &UOp, shapes: &mut Shapes) -> Option<UOp> {
    let Arg::ReduceAxis(op, axes) = r.arg() else { return None };
    let x = &r.src()[0];
    let shape = shapes.of(x).to_vec();
    let out = shapes.of(r).to_vec();
    let ratio = numel(&shape) / numel(&out).max(1);
    let split_k = ratio >= SPLIT_K_THRESHOLD && numel(&out) < SPLIT_K_OUTPUTS && contraction(r, shapes);
    let few = ratio >= FEW_THREADS_THRESHOLD && numel(&out) > 1 && few_threads(&shape, axes, numel(&out));
    if numel(&shape) == 0 || (ratio < SPLIT_THRESHOLD && !split_k && !few) {
        return None;
    }
    let (base, st) = base_and_st(x, shapes);
    let strides = st.real_strides(true);
    let cap = 256.min((1usize << SPLIT_SIZE) / numel(&out).max(1));
    let (axis, divisor) = axes.iter().find_map(|&a| {
        let broadcast = strides[a].as_ref().is_some_and(|s| *s == 0);
        (8..=cap).rev().find(|d| shape[a].is_multiple_of(*d) && !broadcast).map(|d| (a, d))
    })?;
    let mut split = shape.clone();
    split.splice(axis..=axis, [divisor, shape[axis] / divisor]);
    let order: Vec<usize> = (0..split.len()).filter(|&i| i != axis).chain([axis]).collect();
    let st = st.reshape(&sints(&split)).ok()?.permute(&order).ok()?;
    let first = view(&base, st, shapes).reduce_axis(*op, axes);
    let second = first.reduce_axis(*op, &[out.len()]);
    let mut second_shape = out.clone();
    second_shape.push(1);
    let back = contiguous_st(&second_shape).reshape(&sints(&out)).ok()?;
    Some(view(&second, back, shapes))
}

/// Whether a reduce of `shape` over several of its `axes` into `outputs` outputs gets fewer than
/// [`FEW_THREADS`] threads from grouping: the codegen groups one reduce axis, by a power of two
/// up to 256 that divides it.
fn few_threads(shape: &[usize], axes: &[usize], outputs: usize) -> bool {
    let several_axes = axes.iter().filter(|&&a| shape[a] > 1).count() > 1;
    let widest_group = |a: usize| (0..=8).rev().map(|p| 1usize << p).find(|g| shape[a].is_multiple_of(*g));
    several_axes && outputs * axes.iter().filter_map(|&a| widest_group(a)).max().unwrap_or(1) < FEW_THREADS
}

/// Whether `r` sums a product whose two sides are each broadcast along an output axis of more
/// than one element, as a matmul with more than one row and column, or a convolution's weight
/// gradient (a matrix-vector product is not: its matrix is broadcast along nothing).
fn contraction(r: &UOp, shapes: &mut Shapes) -> bool {
    let Arg::ReduceAxis(Ops::Add, axes) = r.arg() else { return false };
    let mut x = &r.src()[0];
    while x.op() == Ops::Cast {
        x = &x.src()[0];
    }
    if x.op() != Ops::Mul {
        return false;
    }
    let out = shapes.of(r).to_vec();
    let outputs: Vec<usize> = (0..out.len()).filter(|a| out[*a] > 1 && !axes.contains(a)).collect();
    x.src().iter().all(|side| outputs.iter().any(|&a| broadcast_along(side, a)))
}

/// Whether every value `u` reads is the same along `axis`: each buffer or computed node it
/// reads is read through a view with stride 0 there (constants read nothing).
fn broadcast_along(u: &UOp, axis: usize) -> bool {
    match u.op() {
        Ops::Const => true,
        Ops::View => {
            let Arg::View(st) = u.arg() else { return false };
            st.real_strides(true).get(axis).is_some_and(|s| s.as_ref().is_some_and(|s| *s == 0))
        }
        op if GroupOp::ALU.contains(op) || op == Ops::Cast => {
            u.src().iter().all(|s| broadcast_along(s, axis))
        }
        _ => false,
    }
}

/// A reduce of no elements into some outputs as its identity element broadcast to the output
/// shape (tinygrad: "reduce of size 0 is the identity"): `sum` of an empty axis is 0, `max`
/// is `-inf`; no kernel loops over nothing.
fn empty_reduce(r: &UOp, shapes: &mut Shapes) -> Result<Option<UOp>, EngineError> {
    let Arg::ReduceAxis(op, _) = r.arg() else { return Ok(None) };
    let out = shapes.of(r).to_vec();
    if numel(shapes.of(&r.src()[0])) != 0 || numel(&out) == 0 {
        return Ok(None);
    }
    let value = constant(&shapes.device(r)?, r.dtype(), identity_element(*op, r.dtype()));
    let st = contiguous_st(&[]).reshape(&sints(&vec![1; out.len()]))?.expand(&sints(&out))?;
    Ok(Some(view(&value, st, shapes)))
}

/// Whether a node of this op can be a kernel's output (and so have lazy origins).
fn computes(op: Ops) -> bool {
    !GroupOp::MOVEMENT.contains(op)
        && !matches!(
            op,
            Ops::Detach
                | Ops::ContiguousBackward
                | Ops::Sink
                | Ops::Device
                | Ops::Buffer
                | Ops::Const
                | Ops::View
        )
}

/// The graph under `sink` in `VIEW` form (see the module docs).
pub(crate) fn to_views(sink: &UOp, shapes: &mut Shapes) -> Result<Converted, EngineError> {
    let mut done: UOpMap<UOp> = UOpMap::default();
    let mut origins: UOpMap<Vec<UOp>> = UOpMap::default();
    for u in sink.toposort() {
        let src: Vec<UOp> = u.src().iter().map(|s| done[s].clone()).collect();
        let new = match u.op() {
            op if GroupOp::MOVEMENT.contains(op) => movement(&u, &src[0], shapes)?,
            Ops::Detach | Ops::ContiguousBackward => src[0].clone(),
            _ => {
                let rebuilt =
                    if src.iter().zip(u.src()).all(|(a, b)| a == b) { u.clone() } else { u.with_src(src) };
                match rebuilt.op() {
                    Ops::ReduceAxis => match empty_reduce(&rebuilt, shapes)? {
                        Some(identity) => identity,
                        None => split_reduce(&rebuilt, shapes).unwrap_or(rebuilt),
                    },
                    _ => rebuilt,
                }
            }
        };
        if computes(u.op()) {
            let node = if new.op() == Ops::View { new.src()[0].clone() } else { new.clone() };
            origins.entry(node).or_default().push(u.clone());
        }
        done.insert(u, new);
    }
    Ok(Converted { sink: done[sink].clone(), origins })
}
