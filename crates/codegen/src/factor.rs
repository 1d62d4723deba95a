//! The factors of a matmul-shaped reduce (`sum(a * b)`, casts around either): each a load, or
//! an elementwise expression of loads that a register tile can stage whole (a softmax
//! recomputed where `P @ V` reads it: `exp2(s - lse)` of the scores `s` and each row's `lse`).
//! An expression stands for its principal load: the one that varies along every axis any of
//! its loads varies along, so the expression's value at an element of the principal's block
//! is known from that element's indices alone.

use wgrad_ops::{Ops, UOp};

use crate::Kernel;

/// Strips `Cast`s.
fn uncast(u: &UOp) -> &UOp {
    if u.op() == Ops::Cast { uncast(&u.src()[0]) } else { u }
}

/// The two factors a sum of products multiplies, casts around the product and each factor
/// removed: `sum(cast?(cast?(a) * cast?(b)))`.
pub(crate) fn mul_factors(reduce: &UOp) -> Option<(UOp, UOp)> {
    let mul = uncast(&reduce.src()[0]);
    (mul.op() == Ops::Mul).then(|| (uncast(&mul.src()[0]).clone(), uncast(&mul.src()[1]).clone()))
}

impl Kernel {
    /// The load the factor `f` stands for: `f` itself, or the principal load of an elementwise
    /// expression of global loads (module doc); `None` for anything else (a reduce inside).
    pub(crate) fn principal_load(&self, f: &UOp) -> Option<UOp> {
        if f.op() == Ops::Load {
            return Some(f.clone());
        }
        let topo = f.toposort();
        let elementwise = |u: &UOp| match u.op() {
            Ops::ReduceAxis | Ops::DefineLocal | Ops::Store | Ops::Barrier => false,
            Ops::Load => u.src()[0].op() == Ops::DefineGlobal,
            _ => true,
        };
        if !topo.iter().all(elementwise) {
            return None;
        }
        let loads: Vec<&UOp> = topo.iter().filter(|u| u.op() == Ops::Load).collect();
        let axes_read = |l: &UOp| -> Option<Vec<bool>> {
            let i = self.bufs.iter().position(|b| b == l)?;
            let strides = self.sts[i].real_strides(false);
            Some(strides.iter().map(|s| s.as_ref().is_none_or(|s| s.as_int() != Some(0))).collect())
        };
        let reads = loads.iter().map(|l| axes_read(l)).collect::<Option<Vec<_>>>()?;
        let covers = |p: &[bool]| reads.iter().all(|r| r.iter().zip(p).all(|(&r, &p)| p || !r));
        reads.iter().position(|p| covers(p)).map(|i| loads[i].clone())
    }
}
