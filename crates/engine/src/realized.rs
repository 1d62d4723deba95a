//! Results computed before: a table from lazy nodes (held weakly) to the `RESHAPE(BUFFER)`
//! holding their value, so a graph that still contains a realized node reads its buffer
//! instead of computing it again (tinygrad's `becomes_map`, applied when scheduling).
//!
//! Invariants: an entry lives exactly as long as its key node; the value keeps the buffer
//! (and so its memory) alive that long.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use wgrad_ops::{FxBuild, Ops, UOp, UOpMap, WeakUOp};

#[derive(Default)]
struct Table {
    entries: HashMap<u64, Vec<(WeakUOp, UOp)>, FxBuild>,
}

impl Table {
    fn get(&self, key: &UOp) -> Option<UOp> {
        let same = |(k, _): &&(WeakUOp, UOp)| k.upgrade().is_some_and(|k| k == *key);
        self.entries.get(&key.structural_hash())?.iter().find(same).map(|(_, v)| v.clone())
    }
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(Mutex::default);

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Records that `key`'s value is `value` (a `RESHAPE(BUFFER)`) for as long as `key` lives.
pub(crate) fn register(key: &UOp, value: UOp) {
    let mut t = table();
    let entries = t.entries.entry(key.structural_hash()).or_default();
    entries.retain(|(k, _)| k.upgrade().is_some_and(|k| k != *key));
    entries.push((key.downgrade(), value));
}

/// Drops the entries whose key died (releasing their buffers).
pub(crate) fn sweep() {
    table().entries.retain(|_, v| {
        v.retain(|(k, _)| k.is_alive());
        !v.is_empty()
    });
}

/// `root` with every node realized before replaced by its buffer.
pub fn resolve(root: &UOp) -> UOp {
    resolve_all(root).remove(root).unwrap_or_else(|| root.clone())
}

/// The image of every node of `root`'s graph once the nodes realized before are replaced by
/// their buffers (empty when nothing was realized before).
pub(crate) fn resolve_all(root: &UOp) -> UOpMap<UOp> {
    let t = table();
    if t.entries.is_empty() {
        return UOpMap::default();
    }
    let leaf = |u: &UOp| matches!(u.op(), Ops::Buffer | Ops::Const | Ops::Device);
    let hits: UOpMap<UOp> =
        root.toposort().into_iter().filter(|u| !leaf(u)).filter_map(|u| t.get(&u).map(|v| (u, v))).collect();
    drop(t);
    if hits.is_empty() { UOpMap::default() } else { root.substitute_all(&hits) }
}
