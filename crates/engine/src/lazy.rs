//! The lazy graph: the UOps tensors are made of before anything runs (tinygrad >= 0.10.2's
//! tensor graph), and the builders of each node.
//!
//! Vocabulary (`shape` is what [`crate::Shapes`] infers):
//! - `DEVICE` arg `Str(name)`: where data lives (`CPU`, `WGPU:1`); a leaf.
//! - `BUFFER(DEVICE)` arg `Buffer { num, size }`, dtype the element type: device memory,
//!   shape `(size,)`. A realized tensor is `RESHAPE(BUFFER, shape)`.
//! - `CONST(DEVICE)` arg `Const(v)`: a scalar, shape `()`; broadcast by `RESHAPE`+`EXPAND`.
//! - `RESHAPE`, `EXPAND` arg `Ints(new shape)`; `PERMUTE` arg `Ints(order)`; `PAD` arg
//!   `Pairs((before, after))`; `SHRINK` arg `Pairs((begin, end))`; `FLIP` arg `Ints(0/1 per
//!   axis)`: views, never copies.
//! - ALU ops, `CAST`, `BITCAST`: elementwise over sources of one shape.
//! - `REDUCE_AXIS(x)` arg `ReduceAxis(op, axes)`: reduced axes kept with size 1.
//! - `CONTIGUOUS(x)`: `x` in a buffer of its own; `DETACH(x)`: `x`, but no gradient flows
//!   through; `CONTIGUOUS_BACKWARD(x)`: `x`, its gradient realized; `COPY(x, DEVICE)`: `x` on another device; `ASSIGN(target, value)` arg
//!   `Int(tag)`: `value` written into the realized buffer `target`, whose contents it then
//!   is; the tag (also on a `CONTIGUOUS` that must stay apart) makes each one distinct.
//!
//! The builders do not check their arguments: the tensor front end validates shapes, axes
//! and dtypes first and reports typed errors; the scheduler trusts the graph.

use std::sync::atomic::{AtomicU64, Ordering};

use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Arg, Ops, UOp};

use crate::DeviceName;

fn ints(xs: impl IntoIterator<Item = usize>) -> Arg {
    Arg::Ints(xs.into_iter().map(|x| x as i64).collect())
}

fn pairs(xs: &[(usize, usize)]) -> Arg {
    Arg::Pairs(xs.iter().map(|&(a, b)| (a as i64, b as i64)).collect())
}

/// The `DEVICE` leaf of `name`.
pub fn device(name: &DeviceName) -> UOp {
    UOp::new(Ops::Device, DType::VOID, [], Arg::Str(name.to_string().into()))
}

/// A new, unique `BUFFER` of `size` elements of `dtype` on `device` (no memory yet).
pub fn buffer(device: &DeviceName, dtype: DType, size: usize) -> UOp {
    UOp::new(Ops::Buffer, dtype, [self::device(device)], buffer_arg(size))
}

/// The argument of a new, unique `BUFFER` of `size` elements: the next buffer number.
pub(crate) fn buffer_arg(size: usize) -> Arg {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    Arg::Buffer { num: NEXT.fetch_add(1, Ordering::Relaxed), size }
}

/// The scalar `value` (cast to `dtype`) on `device`.
pub fn constant(device: &DeviceName, dtype: DType, value: impl Into<ConstValue>) -> UOp {
    UOp::new(Ops::Const, dtype, [self::device(device)], Arg::Const(value.into().cast(dtype)))
}

/// The same elements in `shape`.
pub fn reshape(x: &UOp, shape: &[usize]) -> UOp {
    UOp::new(Ops::Reshape, x.dtype(), [x.clone()], ints(shape.iter().copied()))
}

/// Axis `k` of the result is axis `order[k]` of `x`.
pub fn permute(x: &UOp, order: &[usize]) -> UOp {
    UOp::new(Ops::Permute, x.dtype(), [x.clone()], ints(order.iter().copied()))
}

/// Size-1 axes broadcast to `shape`.
pub fn expand(x: &UOp, shape: &[usize]) -> UOp {
    UOp::new(Ops::Expand, x.dtype(), [x.clone()], ints(shape.iter().copied()))
}

/// Zeros added `(before, after)` each axis.
pub fn pad(x: &UOp, arg: &[(usize, usize)]) -> UOp {
    UOp::new(Ops::Pad, x.dtype(), [x.clone()], pairs(arg))
}

/// Positions `begin..end` of each axis.
pub fn shrink(x: &UOp, arg: &[(usize, usize)]) -> UOp {
    UOp::new(Ops::Shrink, x.dtype(), [x.clone()], pairs(arg))
}

/// The axes where `axes[k]` holds, reversed.
pub fn flip(x: &UOp, axes: &[bool]) -> UOp {
    UOp::new(Ops::Flip, x.dtype(), [x.clone()], ints(axes.iter().map(|&f| usize::from(f))))
}

/// `op` (Add, Max or Mul) over `axes`, which keep size 1.
pub fn reduce(x: &UOp, op: Ops, axes: &[usize]) -> UOp {
    x.reduce_axis(op, axes)
}

/// `x` in a buffer of its own.
pub fn contiguous(x: &UOp) -> UOp {
    UOp::new(Ops::Contiguous, x.dtype(), [x.clone()], Arg::None)
}

/// An argument no other node has: it keeps a node apart from every equal one, which
/// hash-consing would otherwise make the same node.
fn unique_tag() -> Arg {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    Arg::Int(i64::try_from(NEXT.fetch_add(1, Ordering::Relaxed)).unwrap_or(i64::MAX))
}

/// `x` in a buffer no other graph shares: every call makes a distinct node, so realizing it
/// never hands back the buffer of an equal graph realized before (what a tensor that is
/// assigned in place or trained needs: two models built from one seed must not share weights).
pub fn unique_contiguous(x: &UOp) -> UOp {
    UOp::new(Ops::Contiguous, x.dtype(), [x.clone()], unique_tag())
}

/// `x` with no gradient flowing through.
pub fn detach(x: &UOp) -> UOp {
    UOp::new(Ops::Detach, x.dtype(), [x.clone()], Arg::None)
}

/// `x`, its gradient realized into a buffer of its own.
pub fn contiguous_backward(x: &UOp) -> UOp {
    UOp::new(Ops::ContiguousBackward, x.dtype(), [x.clone()], Arg::None)
}

/// `x` on `device`.
pub fn copy(x: &UOp, device: &DeviceName) -> UOp {
    UOp::new(Ops::Copy, x.dtype(), [x.clone(), self::device(device)], Arg::None)
}

/// `value` written into the realized buffer `target`. Every call is a distinct node: a write
/// is an event, so a second assign of an equal graph (the next step of a loop, whose inputs
/// are the same buffers) must run again even while the node of the first one lives.
pub fn assign(target: &UOp, value: &UOp) -> UOp {
    UOp::new(Ops::Assign, target.dtype(), [target.clone(), value.clone()], unique_tag())
}

/// The axis flags of a `FLIP`.
pub fn flip_axes(arg: &Arg) -> Vec<bool> {
    match arg {
        Arg::Ints(v) => v.iter().map(|&f| f != 0).collect(),
        _ => vec![],
    }
}

/// The integers of an `Ints` arg (a shape or an order) as usizes.
pub fn arg_usizes(arg: &Arg) -> Vec<usize> {
    match arg {
        Arg::Ints(v) => v.iter().map(|&x| x as usize).collect(),
        _ => vec![],
    }
}

/// The pairs of a `Pairs` arg (pads or shrinks) as usizes.
pub fn arg_pairs(arg: &Arg) -> Vec<(usize, usize)> {
    match arg {
        Arg::Pairs(v) => v.iter().map(|&(a, b)| (a as usize, b as usize)).collect(),
        _ => vec![],
    }
}

/// The device `u` lives on: found by following first sources (a copy's target device) down
/// to a `DEVICE` leaf.
pub fn device_of(u: &UOp) -> Result<DeviceName, crate::EngineError> {
    crate::Shapes::new().device(u)
}
