//! Cost estimate of a kernel: flops and bytes moved (tinygrad's `flops_mem` / `Estimates`),
//! from which DEBUG=2 prints GFLOP/s and GB/s.
//!
//! Every node runs some number of times:
//! - kernel-AST form: the product of its shape, taken from the `View`s under it (a
//!   `ReduceAxis` output has its reduced axes set to 1);
//! - lowered form: the product of the sizes of the `Range`s and `Special`s it depends on
//!   (a `Reduce` closes its ranges).
//!
//! Flops: each ALU node counts its run count times its vector width (`MulAcc` twice); a
//! reduction counts one op per input element; integer math feeding only `Index`
//! addresses is not counted. Bytes: a `Load`/`Store` through a `View` moves the distinct
//! elements the view addresses (broadcast axes count once); through an `Index`, every access.

use std::collections::BTreeMap;

use wgrad_dtype::DType;
use wgrad_shape::Sint;

use crate::graph::{UOpMap, UOpSet};
use crate::{Arg, GroupOp, Ops, UOp};

/// Flops and bytes of a kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Estimate {
    /// Arithmetic operations.
    pub flops: u64,
    /// Flops split by the dtype they compute in.
    pub flops_by_dtype: BTreeMap<DType, u64>,
    /// Bytes loaded.
    pub bytes_read: u64,
    /// Bytes stored.
    pub bytes_written: u64,
}

/// How often a node runs: a shape (AST form) or the loops it sits in (lowered form).
#[derive(Clone, Default)]
struct Extent {
    shape: Option<Vec<i64>>,
    loops: Vec<UOp>,
}

impl Extent {
    fn count(&self) -> u64 {
        match &self.shape {
            Some(s) => s.iter().map(|&d| d.max(0) as u64).product(),
            None => self.loops.iter().map(loop_size).product(),
        }
    }
}

fn loop_size(r: &UOp) -> u64 {
    match (r.op(), r.arg()) {
        (Ops::Special, Arg::Special(_, n)) => (*n).max(0) as u64,
        _ => r.int_bounds().map_or(1, |(_, hi)| (hi + 1).max(0) as u64),
    }
}

fn view_footprint(view: &UOp) -> Option<u64> {
    let last = view.arg().as_view()?.views().last()?;
    Some(
        last.shape()
            .iter()
            .zip(last.strides())
            .filter(|(_, s)| s.as_int() != Some(0))
            .map(|(d, _)| d.vmax().max(0) as u64)
            .product(),
    )
}

fn extent_of(u: &UOp, ext: &UOpMap<Extent>) -> Extent {
    match (u.op(), u.arg()) {
        (Ops::View, Arg::View(st)) => {
            Extent { shape: Some(st.shape().iter().map(Sint::vmax).collect()), loops: vec![] }
        }
        (Ops::Range | Ops::Special, _) => Extent { shape: None, loops: vec![u.clone()] },
        (Ops::ReduceAxis, Arg::ReduceAxis(_, axes)) => {
            let mut e = ext[&u.src()[0]].clone();
            if let Some(s) = e.shape.as_mut() {
                for &a in axes.iter() {
                    if let Some(d) = s.get_mut(a) {
                        *d = 1;
                    }
                }
            }
            e
        }
        (Ops::Reduce, _) => {
            let (values, ranges) = u.reduce_parts();
            let mut e = merged(values, ext);
            e.loops.retain(|l| !ranges.contains(l));
            e
        }
        _ => merged(u.src(), ext),
    }
}

/// The extent of an op over `src`: the first known shape, every loop of any source.
fn merged(src: &[UOp], ext: &UOpMap<Extent>) -> Extent {
    let mut e = Extent::default();
    for s in src {
        let se = &ext[s];
        if e.shape.is_none() {
            e.shape.clone_from(&se.shape);
        }
        for l in &se.loops {
            if !e.loops.contains(l) {
                e.loops.push(l.clone());
            }
        }
    }
    e
}

/// Integer nodes that only compute addresses (under an `Index`'s index and gate).
fn address_math(order: &[UOp]) -> UOpSet {
    let mut set = UOpSet::default();
    for u in order.iter().filter(|u| u.op() == Ops::Index) {
        for s in &u.src()[1..] {
            set.extend(s.toposort());
        }
    }
    set
}

/// The flops and bytes of the kernel under `ast` (see the module docs for both forms).
pub fn estimate(ast: &UOp) -> Estimate {
    let order = ast.toposort();
    let skip = address_math(&order);
    let mut ext: UOpMap<Extent> = UOpMap::default();
    let mut est = Estimate::default();
    for u in &order {
        let e = extent_of(u, &ext);
        let runs = e.count();
        let mut flops = 0;
        match u.op() {
            op if GroupOp::ALU.contains(op) && !skip.contains(u) => {
                flops = runs * u64::from(u.dtype().count()) * if op == Ops::MulAcc { 2 } else { 1 };
            }
            Ops::ReduceAxis | Ops::Reduce => flops = ext[&u.src()[0]].count(),
            Ops::Load => {
                let elems = u.src().get(1).and_then(view_footprint).unwrap_or(runs);
                est.bytes_read += elems * u.dtype().itemsize() as u64;
            }
            Ops::Store => {
                let value = u.src().last().map_or(DType::VOID, UOp::dtype);
                let elems = u.src().get(1).and_then(view_footprint).unwrap_or(runs);
                est.bytes_written += elems * value.itemsize() as u64;
            }
            _ => {}
        }
        if flops > 0 {
            est.flops += flops;
            *est.flops_by_dtype.entry(u.dtype().scalar_dtype()).or_default() += flops;
        }
        ext.insert(u.clone(), e);
    }
    est
}
