//! The order kernels run in: producers before consumers, and every reader of an assign's
//! target before the assign overwrites it; otherwise the graph's order. A node is a kernel
//! (or copy) with the realized nodes it computes (several for a multi-output kernel).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use wgrad_ops::{Ops, UOp, UOpMap};

use crate::EngineError;

/// One kernel or copy to order: the realized nodes it computes, and the realized nodes and
/// buffers it reads.
pub(crate) struct Node {
    /// The realized nodes.
    pub roots: Vec<UOp>,
    /// What its kernel (or copy) reads (none of its own roots).
    pub reads: Vec<UOp>,
}

/// Positions of `nodes` in a valid run order (stable: ties keep the given order).
pub(crate) fn order(nodes: &[Node]) -> Result<Vec<usize>, EngineError> {
    let index: UOpMap<usize> =
        nodes.iter().enumerate().flat_map(|(i, n)| n.roots.iter().map(move |r| (r.clone(), i))).collect();
    let mut after: Vec<Vec<usize>> = vec![vec![]; nodes.len()];
    let mut edge = |from: usize, to: usize| {
        if from != to {
            after[from].push(to);
        }
    };
    for (i, n) in nodes.iter().enumerate() {
        n.reads.iter().filter_map(|r| index.get(r)).for_each(|&p| edge(p, i));
        for assign in n.roots.iter().filter(|r| r.op() == Ops::Assign) {
            let target = &assign.src()[0];
            let target = if target.op() == Ops::View { &target.src()[0] } else { target };
            if let Some(&p) = index.get(target) {
                edge(p, i);
            }
            for (j, m) in nodes.iter().enumerate() {
                if m.reads.contains(target) {
                    edge(j, i);
                }
            }
        }
    }
    let mut waiting: Vec<usize> = vec![0; nodes.len()];
    after.iter().flatten().for_each(|&t| waiting[t] += 1);
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..nodes.len()).filter(|&i| waiting[i] == 0).map(Reverse).collect();
    let mut out = Vec::with_capacity(nodes.len());
    while let Some(Reverse(i)) = ready.pop() {
        out.push(i);
        for &t in &after[i] {
            waiting[t] -= 1;
            if waiting[t] == 0 {
                ready.push(Reverse(t));
            }
        }
    }
    match out.len() == nodes.len() {
        true => Ok(out),
        false => {
            Err(EngineError::Unschedulable("an assign whose old and new values one kernel both needs".into()))
        }
    }
}
