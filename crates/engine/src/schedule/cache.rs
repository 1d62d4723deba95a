//! The schedule cache (tinygrad's `schedule_cache`): graphs equal up to their buffers share
//! one schedule. A graph's key lists its nodes in walk order, each as (op, dtype, argument,
//! positions of its sources), a `BUFFER`'s number replaced by its position among the graph's
//! buffers and the tag that keeps an `ASSIGN` or `CONTIGUOUS` apart by [`TAG`] (distinct nodes
//! stay distinct positions); a cached [`Template`] names buffers and lazy nodes by those
//! positions, so it is instantiated for any graph with the same key.
//!
//! Invariants:
//! - Scheduling reads nothing but the graph's structure (the realized table is applied
//!   before the key is taken), so a template is valid for every graph of its key.
//! - Neither keys nor templates hold lazy nodes or buffers: a cached schedule keeps no graph
//!   alive (the realized table forgets nodes nothing else holds) and no memory.
//! - The cache keeps at most [`CAPACITY`] templates, then starts over.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use wgrad_dtype::DType;
use wgrad_ops::{Arg, FxBuild, Ops, UOp, UOpMap};

use super::{KernelLimits, Template};
use crate::counters::count_schedule_hit;

/// Templates kept before the cache starts over.
const CAPACITY: usize = 512;

/// What a node's unique tag is in a key: every step of a loop assigns with a new tag, and
/// scheduling never reads it.
const TAG: Arg = Arg::Int(-1);

/// One node of a key.
#[derive(PartialEq, Eq, Hash)]
struct Node {
    op: Ops,
    dtype: DType,
    /// The argument; a buffer's number is its position among the graph's buffers.
    arg: Arg,
    /// Positions of the sources in the walk.
    src: Box<[u32]>,
}

/// A graph's structure up to its buffers, and the kernel limits it was scheduled for.
#[derive(PartialEq, Eq)]
pub(crate) struct Key {
    hash: u64,
    nodes: Vec<Node>,
    limits: KernelLimits,
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// A graph walked for its key.
pub(crate) struct Normalized {
    /// The key.
    pub key: Key,
    /// The graph's nodes in walk order (sources first).
    pub topo: Vec<UOp>,
    /// The graph's buffers, by position.
    pub buffers: Vec<UOp>,
}

impl Normalized {
    /// The position of every node in the walk.
    pub(crate) fn positions(&self) -> UOpMap<usize> {
        self.topo.iter().enumerate().map(|(i, u)| (u.clone(), i)).collect()
    }
}

/// The key of the graph whose nodes are `topo` (a sink's walk, sources first) for kernels
/// within `limits`.
pub(crate) fn normalize(topo: Vec<UOp>, limits: KernelLimits) -> Normalized {
    let mut position: UOpMap<u32> = UOpMap::with_capacity_and_hasher(topo.len(), Default::default());
    let mut buffers = vec![];
    let mut nodes = Vec::with_capacity(topo.len());
    for (i, u) in topo.iter().enumerate() {
        let arg = match u.arg() {
            Arg::Buffer { size, .. } => {
                buffers.push(u.clone());
                Arg::Buffer { num: buffers.len() as u64 - 1, size: *size }
            }
            Arg::Int(_) if matches!(u.op(), Ops::Assign | Ops::Contiguous) => TAG,
            arg => arg.clone(),
        };
        let src = u.src().iter().map(|s| position[s]).collect();
        nodes.push(Node { op: u.op(), dtype: u.dtype(), arg, src });
        position.insert(u.clone(), i as u32);
    }
    let hash = FxBuild::default().hash_one((&nodes, limits));
    Normalized { key: Key { hash, nodes, limits }, topo, buffers }
}

static CACHE: LazyLock<Mutex<HashMap<Key, Arc<Template>, FxBuild>>> = LazyLock::new(Mutex::default);

/// The template of `key`, if cached (counted as a hit).
pub(crate) fn get(key: &Key) -> Option<Arc<Template>> {
    let hit = CACHE.lock().unwrap_or_else(PoisonError::into_inner).get(key).cloned();
    if hit.is_some() {
        count_schedule_hit();
    }
    hit
}

/// Caches `template` under `key`.
pub(crate) fn put(key: Key, template: Arc<Template>) {
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= CAPACITY {
        cache.clear();
    }
    cache.insert(key, template);
}
