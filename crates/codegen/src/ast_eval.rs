//! Independent reference evaluator for tests, no codegen at all: runs a kernel AST by brute
//! force, element by element, with `exec_alu` semantics.
//!
//! Every output element of every `Store` is computed from the AST alone: a `Load` reads its
//! buffer through its ShapeTracker (an invalid position reads 0), a `Const` with a `View`
//! source is its value where the view is valid and 0 elsewhere, a `ReduceAxis` walks its axes
//! from the op's identity (`Add` 0, `Mul` 1, `Max` the dtype's minimum). All stores are
//! computed before any is written, so a kernel may read the buffer it writes.

use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Arg, GroupOp, Ops, OpsError, UOp, bitcast, exec_alu, identity_element};
use wgrad_shape::{ShapeTracker, Sint};

use crate::buffer_st;

/// Why a kernel AST could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// An op the kernel-AST form does not have.
    #[error("cannot evaluate {0} in a kernel AST")]
    UnsupportedOp(Ops),
    /// A shape, stride or index that is not a plain integer.
    #[error("symbolic shape or index: {0}")]
    Symbolic(String),
    /// A buffer op without its `DefineGlobal` or `View`.
    #[error("malformed {0}")]
    Malformed(Ops),
    /// A `DefineGlobal` slot with no buffer given.
    #[error("no buffer for slot {0}")]
    MissingBuffer(i64),
    /// A read or write outside its buffer.
    #[error("index {index} outside buffer {slot} of {len} elements")]
    OutOfBounds {
        /// The slot.
        slot: i64,
        /// The index.
        index: i64,
        /// The buffer length.
        len: usize,
    },
    /// An ALU op failed.
    #[error(transparent)]
    Alu(#[from] OpsError),
}

fn concrete(s: &Sint) -> Result<i64, EvalError> {
    s.as_int().ok_or_else(|| EvalError::Symbolic(s.to_string()))
}

/// The buffer index of position `idx` through `st`, `None` where the view is not valid.
fn locate(st: &ShapeTracker, idx: &[i64]) -> Result<Option<i64>, EvalError> {
    let idxs: Vec<Sint> = idx.iter().map(|&i| Sint::int(i)).collect();
    let (index, valid) = st.to_indexed(&idxs);
    Ok(if concrete(&valid)? != 0 { Some(concrete(&index)?) } else { None })
}

/// Every position of `shape`, row-major.
fn positions(shape: &[i64]) -> impl Iterator<Item = Vec<i64>> + '_ {
    let total: i64 = shape.iter().product();
    (0..total).map(move |mut flat| {
        let mut idx = vec![0; shape.len()];
        for (i, &d) in shape.iter().enumerate().rev() {
            idx[i] = flat % d;
            flat /= d;
        }
        idx
    })
}

fn zero(dtype: DType) -> ConstValue {
    ConstValue::Int(0).cast(dtype.scalar_dtype())
}

fn slot_of(buf: &UOp, op: Ops) -> Result<i64, EvalError> {
    match (buf.op(), buf.arg()) {
        (Ops::DefineGlobal, Arg::Int(slot)) => Ok(*slot),
        _ => Err(EvalError::Malformed(op)),
    }
}

fn st_of(u: &UOp) -> Result<&ShapeTracker, EvalError> {
    buffer_st(u).ok_or(EvalError::Malformed(u.op()))
}

/// The evaluator's view of the buffers (indexed by `DefineGlobal` slot).
struct Eval<'a> {
    bufs: &'a [Vec<ConstValue>],
}

impl Eval<'_> {
    fn read(&self, slot: i64, index: i64) -> Result<ConstValue, EvalError> {
        let buf = usize::try_from(slot)
            .ok()
            .and_then(|s| self.bufs.get(s))
            .ok_or(EvalError::MissingBuffer(slot))?;
        let out_of_bounds = EvalError::OutOfBounds { slot, index, len: buf.len() };
        usize::try_from(index).ok().and_then(|i| buf.get(i).copied()).ok_or(out_of_bounds)
    }

    /// The value of `u` at position `idx` (one entry per kernel dim).
    fn value(&self, u: &UOp, idx: &mut [i64]) -> Result<ConstValue, EvalError> {
        let dtype = u.dtype();
        match u.op() {
            Ops::Const => {
                let c = u.const_value().ok_or(EvalError::Malformed(Ops::Const))?;
                match u.src().is_empty() {
                    true => Ok(c),
                    false => Ok(if locate(st_of(u)?, idx)?.is_some() { c } else { zero(dtype) }),
                }
            }
            Ops::Load => match locate(st_of(u)?, idx)? {
                Some(i) => Ok(self.read(slot_of(&u.src()[0], Ops::Load)?, i)?.cast(dtype.scalar_dtype())),
                None => Ok(zero(dtype)),
            },
            Ops::ReduceAxis => self.reduce(u, idx),
            Ops::Cast => Ok(self.value(&u.src()[0], idx)?.cast(dtype.scalar_dtype())),
            Ops::Bitcast => {
                let src = &u.src()[0];
                Ok(bitcast(self.value(src, idx)?, src.dtype().scalar_dtype(), dtype.scalar_dtype()))
            }
            op if GroupOp::ALU.contains(op) => {
                let operands = u.src().iter().map(|s| self.value(s, idx)).collect::<Result<Vec<_>, _>>()?;
                Ok(exec_alu(op, dtype, &operands)?)
            }
            op => Err(EvalError::UnsupportedOp(op)),
        }
    }

    /// The reduction of `u`'s source over its axes at the other positions of `idx`.
    fn reduce(&self, u: &UOp, idx: &mut [i64]) -> Result<ConstValue, EvalError> {
        let Arg::ReduceAxis(op, axes) = u.arg() else { return Err(EvalError::Malformed(Ops::ReduceAxis)) };
        let src = &u.src()[0];
        let shape = src
            .toposort()
            .iter()
            .find_map(|x| buffer_st(x).map(|st| st.shape().to_vec()))
            .ok_or(EvalError::Malformed(Ops::ReduceAxis))?;
        let extents = axes.iter().map(|&a| concrete(&shape[a])).collect::<Result<Vec<_>, _>>()?;
        let saved: Vec<i64> = axes.iter().map(|&a| idx[a]).collect();
        let mut acc = identity_element(*op, u.dtype());
        for pos in positions(&extents) {
            for (&a, p) in axes.iter().zip(pos) {
                idx[a] = p;
            }
            acc = exec_alu(*op, u.dtype(), &[acc, self.value(src, idx)?])?;
        }
        for (&a, s) in axes.iter().zip(saved) {
            idx[a] = s;
        }
        Ok(acc)
    }
}

/// Runs the kernel AST `ast` (a `Sink` of `Store`s) on `bufs`, indexed by `DefineGlobal` slot:
/// computes every stored element, then writes them (cast to the stored buffer's dtype).
/// Output buffers must already have their full length.
pub fn eval_ast(ast: &UOp, bufs: &mut [Vec<ConstValue>]) -> Result<(), EvalError> {
    let mut writes: Vec<(i64, i64, ConstValue)> = vec![];
    for store in ast.src() {
        let (buf, value) = match store.src() {
            [buf, _, value] if store.op() == Ops::Store => (buf, value),
            _ => return Err(EvalError::Malformed(store.op())),
        };
        let slot = slot_of(buf, Ops::Store)?;
        let st = st_of(store)?;
        let shape = st.shape().iter().map(concrete).collect::<Result<Vec<_>, _>>()?;
        let eval = Eval { bufs };
        for mut idx in positions(&shape) {
            if let Some(i) = locate(st, &idx)? {
                let v = eval.value(value, &mut idx)?;
                writes.push((slot, i, v.cast(buf.dtype().base().scalar_dtype())));
            }
        }
    }
    for (slot, index, v) in writes {
        let buf =
            usize::try_from(slot).ok().and_then(|s| bufs.get_mut(s)).ok_or(EvalError::MissingBuffer(slot))?;
        let len = buf.len();
        let cell = usize::try_from(index).ok().and_then(|i| buf.get_mut(i));
        *cell.ok_or(EvalError::OutOfBounds { slot, index, len })? = v;
    }
    Ok(())
}
