//! Hash-consing: the global table that makes structurally equal UOps one allocation.
//!
//! The table maps a structural hash to weak references, split over shards each behind its
//! own mutex. A node removes itself when its last strong reference drops, so dropped graphs
//! free their nodes and the table shrinks back. Dropping a deep graph is iterative (a
//! per-thread queue), so long chains cannot overflow the stack.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError, Weak};

use wgrad_dtype::DType;

use crate::bounds::Bounds;
use crate::{Arg, Ops, UOp};

/// A small, fast, deterministic hasher (FxHash's multiply-rotate), so hashes (and with them
/// the canonical operand order) are the same in every run.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(buf));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    fn finish(&self) -> u64 {
        // final avalanche (splitmix64), so every bit depends on every input
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Build hasher of maps keyed by UOps or precomputed hashes.
pub type FxBuild = BuildHasherDefault<FxHasher>;

/// A node of the graph; only ever reached through [`UOp`].
pub(crate) struct Node {
    pub(crate) op: Ops,
    pub(crate) dtype: DType,
    pub(crate) src: Box<[UOp]>,
    pub(crate) arg: Arg,
    pub(crate) hash: u64,
    pub(crate) bounds: Bounds,
}

const SHARDS: usize = 32;

/// One shard: the first live node of each hash, and the rare nodes whose hash collides with
/// a live one (so most nodes cost one map entry and no extra allocation).
#[derive(Default)]
struct Shard {
    first: HashMap<u64, Weak<Node>, FxBuild>,
    collided: Vec<(u64, Weak<Node>)>,
}

impl Shard {
    fn candidates(&self, hash: u64) -> impl Iterator<Item = &Weak<Node>> {
        let rest = self.collided.iter().filter(move |(h, _)| *h == hash).map(|(_, w)| w);
        self.first.get(&hash).into_iter().chain(rest)
    }

    fn insert(&mut self, hash: u64, node: Weak<Node>) {
        match self.first.get_mut(&hash) {
            Some(slot) if slot.strong_count() > 0 => self.collided.push((hash, node)),
            Some(slot) => *slot = node,
            None => {
                self.first.insert(hash, node);
            }
        }
    }

    fn remove(&mut self, hash: u64, me: *const Node) {
        if self.first.get(&hash).is_some_and(|w| std::ptr::eq(w.as_ptr(), me)) {
            self.first.remove(&hash);
        } else {
            self.collided.retain(|(_, w)| !std::ptr::eq(w.as_ptr(), me));
        }
    }

    fn live(&self) -> usize {
        self.first
            .values()
            .chain(self.collided.iter().map(|(_, w)| w))
            .filter(|w| w.strong_count() > 0)
            .count()
    }
}

static TABLE: LazyLock<Vec<Mutex<Shard>>> = LazyLock::new(|| (0..SHARDS).map(|_| Mutex::default()).collect());

fn shard(hash: u64) -> MutexGuard<'static, Shard> {
    // a panic never happens while a shard is locked, but a poisoned lock still holds a valid map
    TABLE[(hash >> 58) as usize % SHARDS].lock().unwrap_or_else(PoisonError::into_inner)
}

fn structural_hash(op: Ops, dtype: DType, src: &[UOp], arg: &Arg) -> u64 {
    let mut h = FxHasher::default();
    h.write_u8(op as u8);
    dtype.hash(&mut h);
    for s in src {
        h.write_u64(s.0.hash);
    }
    arg.hash(&mut h);
    h.finish()
}

/// The unique node with these fields, created if none is alive.
pub(crate) fn intern(op: Ops, dtype: DType, src: Box<[UOp]>, arg: Arg) -> UOp {
    let hash = structural_hash(op, dtype, &src, &arg);
    // nodes upgraded but not matching are dropped after the lock is released: dropping the
    // last reference would re-enter the table
    let mut mismatched = Vec::new();
    let mut table = shard(hash);
    let mut found = None;
    for node in table.candidates(hash).filter_map(Weak::upgrade) {
        let same = node.op == op
            && node.dtype == dtype
            && node.arg == arg
            && node.src.len() == src.len()
            && node.src.iter().zip(src.iter()).all(|(a, b)| a == b);
        if same {
            found = Some(node);
            break;
        }
        mismatched.push(node);
    }
    if let Some(node) = found {
        drop(table);
        return UOp(node);
    }
    let bounds = Bounds::compute(op, dtype, &src, &arg);
    let node = Arc::new(Node { op, dtype, src, arg, hash, bounds });
    table.insert(hash, Arc::downgrade(&node));
    drop(table);
    drop(mismatched);
    UOp(node)
}

/// Number of live UOps in the table (all threads).
pub fn live_uops() -> usize {
    TABLE.iter().map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).live()).sum()
}

thread_local! {
    /// Sources waiting to be dropped, and whether a frame below is already draining them.
    static DROPS: RefCell<(bool, Vec<Box<[UOp]>>)> = const { RefCell::new((false, Vec::new())) };
}

impl Drop for Node {
    fn drop(&mut self) {
        let me: *const Node = self;
        shard(self.hash).remove(self.hash, me);
        let src = std::mem::take(&mut self.src);
        if !src.is_empty() {
            drop_iteratively(src);
        }
    }
}

/// Drops `src` through the thread's queue instead of recursing into every child.
fn drop_iteratively(src: Box<[UOp]>) {
    let mut src = Some(src);
    let _ = DROPS.try_with(|cell| {
        let mut queue = cell.borrow_mut();
        queue.1.extend(src.take());
        if queue.0 {
            return;
        }
        queue.0 = true;
        drop(queue);
        loop {
            let next = cell.borrow_mut().1.pop();
            match next {
                Some(batch) => drop(batch),
                None => break,
            }
        }
        cell.borrow_mut().0 = false;
    });
    // only left when the thread is shutting down: drop recursively
    drop(src);
}
