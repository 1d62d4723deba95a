//! What the heuristics look for in a kernel: the buffers a reduce reads and how each of them
//! moves along the kernel's axes.

use wgrad_ops::{Ops, UOp};
use wgrad_shape::Sint;

use crate::Kernel;
use crate::factor::mul_factors;

/// The real stride of every axis for the tracker of buffer op `i` (`None`: not a plain stride).
pub(super) fn strides(k: &Kernel, i: usize) -> Vec<Option<i64>> {
    k.sts()[i].real_strides(false).into_iter().map(|s| s.as_ref().and_then(Sint::as_int)).collect()
}

/// The index in `k.bufs()` of a buffer op.
fn buf_index(k: &Kernel, u: &UOp) -> Option<usize> {
    k.bufs().iter().position(|b| b == u)
}

/// For a kernel whose one reduce is a sum of a product of two loads (through casts), the
/// indices in `k.bufs()` of the two loads.
pub(super) fn mul_operands(k: &Kernel) -> Option<(usize, usize)> {
    let [r] = k.reduceops() else { return None };
    let wgrad_ops::Arg::ReduceAxis(Ops::Add, _) = r.arg() else { return None };
    let (a, b) = mul_factors(r)?;
    if a.op() != Ops::Load || b.op() != Ops::Load {
        return None;
    }
    Some((buf_index(k, &a)?, buf_index(k, &b)?))
}

/// For a kernel whose one reduce is a sum of a product of two factors, each a load or an
/// expression of loads (`factor.rs`), the indices in `k.bufs()` of the loads they stand for,
/// and whether either is an expression (which only a staged register tile computes once per
/// element: unstaged, every thread would compute it again for each of its lanes).
pub(super) fn factor_operands(k: &Kernel) -> Option<(usize, usize, bool)> {
    let [r] = k.reduceops() else { return None };
    let wgrad_ops::Arg::ReduceAxis(Ops::Add, _) = r.arg() else { return None };
    let (a, b) = mul_factors(r)?;
    let (pa, pb) = (k.principal_load(&a)?, k.principal_load(&b)?);
    let expression = pa != a || pb != b;
    Some((buf_index(k, &pa)?, buf_index(k, &pb)?, expression))
}

/// The real strides ([`strides`]) of every load under the first reduce.
pub(super) fn reduce_load_strides(k: &Kernel) -> Vec<Vec<Option<i64>>> {
    reduce_loads(k).into_iter().map(|i| strides(k, i)).collect()
}

/// The indices in `k.bufs()` of the loads under the first reduce.
fn reduce_loads(k: &Kernel) -> Vec<usize> {
    let Some(r) = k.reduceop() else { return vec![] };
    r.toposort().iter().filter(|u| u.op() == Ops::Load).filter_map(|u| buf_index(k, u)).collect()
}
