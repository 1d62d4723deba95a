//! Walking graphs: topological order and substitution.

use std::collections::{HashMap, HashSet};

use crate::UOp;
use crate::intern::FxBuild;

/// A map keyed by UOps (O(1) hashing through the stored hash).
pub type UOpMap<V> = HashMap<UOp, V, FxBuild>;

/// A set of UOps.
pub type UOpSet = HashSet<UOp, FxBuild>;

impl UOp {
    /// Every node reachable from `self`, sources before users, `self` last. Iterative.
    pub fn toposort(&self) -> Vec<UOp> {
        let mut seen = UOpSet::default();
        let mut order = Vec::new();
        let mut stack: Vec<(UOp, bool)> = vec![(self.clone(), false)];
        while let Some((u, expanded)) = stack.pop() {
            if expanded {
                order.push(u);
                continue;
            }
            if !seen.insert(u.clone()) {
                continue;
            }
            stack.push((u.clone(), true));
            for s in u.src().iter().rev() {
                if !seen.contains(s) {
                    stack.push((s.clone(), false));
                }
            }
        }
        order
    }

    /// `self` with every key of `map` replaced by its value (replacements are not visited).
    pub fn substitute(&self, map: &UOpMap<UOp>) -> UOp {
        if let Some(root) = map.get(self) {
            return root.clone(); // nothing under a replacement is visited
        }
        let mut done = self.substitute_all(map);
        done.remove(self).unwrap_or_else(|| self.clone())
    }

    /// [`UOp::substitute`] for every node of the graph: each node's image under `map`.
    pub fn substitute_all(&self, map: &UOpMap<UOp>) -> UOpMap<UOp> {
        let mut done: UOpMap<UOp> = UOpMap::default();
        for u in self.toposort() {
            let new = match map.get(&u) {
                Some(r) => r.clone(),
                None => {
                    let src: Vec<UOp> = u.src().iter().map(|s| done[s].clone()).collect();
                    if src.iter().zip(u.src()).all(|(a, b)| a == b) { u.clone() } else { u.with_src(src) }
                }
            };
            done.insert(u, new);
        }
        done
    }
}
