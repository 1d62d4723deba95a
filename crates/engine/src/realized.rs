//! Results computed before: a table from lazy nodes (held weakly) to the `RESHAPE(BUFFER)`
//! holding their value, so a graph that still contains a realized node reads its buffer
//! instead of computing it again (tinygrad's `becomes_map`, applied when scheduling).
//!
//! Invariants: an entry lives as long as its key node, and no longer than the contents of the
//! buffers the key's graph reads: an assign to one of them forgets it (the same expression
//! built again reads the new contents); the value keeps the buffer (and so its memory) alive
//! that long. An assign's entry is the exception: it lives as long as its node, whatever is
//! written later (its holders read the target buffer as it is, as tinygrad's `becomes_map`
//! leaves them; forgetting it would run the write again). Assigns are distinct nodes
//! (`lazy::assign`), so a later assign never finds an earlier one's entry.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use wgrad_ops::{FxBuild, Ops, UOp, UOpMap, WeakUOp};

/// One result: the key node (weakly), its value, and the buffers its graph reads (none for an
/// assign: its entry outlives every write).
struct Entry {
    key: WeakUOp,
    value: UOp,
    reads: Vec<UOp>,
    write: bool,
}

#[derive(Default)]
struct Table {
    entries: HashMap<u64, Vec<Entry>, FxBuild>,
}

impl Table {
    fn get(&self, key: &UOp) -> Option<UOp> {
        let same = |e: &&Entry| e.key.upgrade().is_some_and(|k| k == *key);
        self.entries.get(&key.structural_hash())?.iter().find(same).map(|e| e.value.clone())
    }
}

/// The `BUFFER`s `u`'s graph reads.
pub(crate) fn buffers_read(u: &UOp) -> Vec<UOp> {
    u.toposort().into_iter().filter(|b| b.op() == Ops::Buffer).collect()
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(Mutex::default);

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Records that `key`'s value is `value` (a `RESHAPE(BUFFER)`) for as long as `key` lives
/// and the buffers it reads keep their contents.
pub(crate) fn register(key: &UOp, value: UOp) {
    let write = key.op() == Ops::Assign;
    let reads = if write { vec![] } else { buffers_read(key) };
    let mut t = table();
    let entries = t.entries.entry(key.structural_hash()).or_default();
    entries.retain(|e| e.key.upgrade().is_some_and(|k| k != *key));
    entries.push(Entry { key: key.downgrade(), value, reads, write });
}

/// Forgets every result computed from the old contents of `written` (buffers an assign just
/// wrote), and every result held in one of them (it holds the assigned value now); assigns'
/// results stay.
pub(crate) fn forget_readers(written: &[UOp]) {
    if written.is_empty() {
        return;
    }
    table().entries.retain(|_, v| {
        v.retain(|e| e.write || !e.reads.iter().chain(&buffers_read(&e.value)).any(|b| written.contains(b)));
        !v.is_empty()
    });
}

/// Drops the entries whose key died (releasing their buffers).
pub(crate) fn sweep() {
    table().entries.retain(|_, v| {
        v.retain(|e| e.key.is_alive());
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
    resolve_walked(root, &root.toposort())
}

/// [`resolve_all`] of `root`, whose nodes are `topo`.
pub(crate) fn resolve_walked(root: &UOp, topo: &[UOp]) -> UOpMap<UOp> {
    let t = table();
    if t.entries.is_empty() {
        return UOpMap::default();
    }
    let leaf = |u: &UOp| matches!(u.op(), Ops::Buffer | Ops::Const | Ops::Device);
    let hits: UOpMap<UOp> =
        topo.iter().filter(|u| !leaf(u)).filter_map(|u| t.get(u).map(|v| (u.clone(), v))).collect();
    drop(t);
    if hits.is_empty() { UOpMap::default() } else { root.substitute_all(&hits) }
}
