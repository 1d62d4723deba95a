//! Shape and device inference over lazy graphs (and the scheduler's `VIEW` form), memoized.

use wgrad_ops::{Arg, Ops, UOp, UOpMap};

use crate::lazy::{arg_pairs, arg_usizes};
use crate::{DeviceName, EngineError};

/// The shapes and devices of graph nodes, computed once per node.
#[derive(Default)]
pub struct Shapes {
    memo: UOpMap<Vec<usize>>,
    devices: UOpMap<DeviceName>,
}

impl Shapes {
    /// An empty memo.
    pub fn new() -> Shapes {
        Shapes::default()
    }

    /// The shape of `u` (see [`crate::lazy`] for each op's rule).
    pub fn of(&mut self, u: &UOp) -> &[usize] {
        if !self.memo.contains_key(u) {
            self.fill(u);
        }
        &self.memo[u]
    }

    /// The device `u` lives on (see [`crate::lazy::device_of`]), remembering it for every
    /// node on the way to its `DEVICE`.
    pub fn device(&mut self, u: &UOp) -> Result<DeviceName, EngineError> {
        let mut path = vec![];
        let mut at = u.clone();
        let device = loop {
            if let Some(d) = self.devices.get(&at) {
                break d.clone();
            }
            let next = match (at.op(), at.arg()) {
                (Ops::Device, Arg::Str(name)) => break name.parse()?,
                (Ops::Copy, _) => at.src()[1].clone(),
                _ => at
                    .src()
                    .first()
                    .cloned()
                    .ok_or_else(|| EngineError::Unschedulable(format!("{} has no device", at.op())))?,
            };
            path.push(std::mem::replace(&mut at, next));
        };
        path.into_iter().for_each(|p| _ = self.devices.insert(p, device.clone()));
        Ok(device)
    }

    /// Computes every missing shape under `root`, sources first (iteratively: graphs may be
    /// deep chains).
    fn fill(&mut self, root: &UOp) {
        let mut stack = vec![(root.clone(), false)];
        while let Some((u, ready)) = stack.pop() {
            if self.memo.contains_key(&u) {
                continue;
            }
            if ready {
                let shape = self.rule(&u);
                self.memo.insert(u, shape);
                continue;
            }
            stack.push((u.clone(), true));
            let pending = u.src().iter().filter(|s| !self.memo.contains_key(*s));
            stack.extend(pending.map(|s| (s.clone(), false)));
        }
    }

    /// The shape of `u` from its sources' (all present).
    fn rule(&self, u: &UOp) -> Vec<usize> {
        let src = || self.memo[&u.src()[0]].clone();
        match (u.op(), u.arg()) {
            (Ops::Buffer, Arg::Buffer { size, .. }) => vec![*size],
            (Ops::Const | Ops::Device | Ops::Sink, _) => vec![],
            (Ops::Reshape | Ops::Expand, arg) => arg_usizes(arg),
            (Ops::Permute, arg) => arg_usizes(arg).iter().map(|&a| src()[a]).collect(),
            (Ops::Pad, arg) => src().iter().zip(arg_pairs(arg)).map(|(s, (b, a))| s + b + a).collect(),
            (Ops::Shrink, arg) => arg_pairs(arg).iter().map(|(b, e)| e - b).collect(),
            (Ops::ReduceAxis, Arg::ReduceAxis(_, axes)) => {
                let mut shape = src();
                axes.iter().for_each(|&a| shape[a] = 1);
                shape
            }
            (Ops::View, Arg::View(st)) => st.shape().iter().map(|s| s.vmax().max(0) as usize).collect(),
            _ => src(),
        }
    }
}

/// Number of elements of `shape`.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}
