//! A size-bucketed cache of wgpu buffers of one usage.
//!
//! Invariants:
//! - Every buffer handed out has a bucket capacity ([`bucket_size`]): a multiple of 4,
//!   at least the requested size rounded up to 4, at most 25% larger (sizes below 256
//!   bytes share the 256-byte bucket), clamped to the device's max buffer size.
//! - A released buffer goes to the free list of its capacity and is handed out again
//!   for any request of the same bucket. Reuse is safe without fences because every
//!   use goes through the one queue: work that touched the old contents was submitted
//!   before anything that can touch the new ones.
//! - `in_use + pooled` is the number of bytes of live buffers this pool created, and `live`
//!   the number of those buffers.
//! - On out-of-memory the pool drops its free buffers and retries once.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::{RuntimeError, scoped};

/// Smallest bucket: tiny buffers are not worth distinguishing.
const MIN_BUCKET: u64 = 256;

/// Rounds a request up to its bucket: quarter steps between powers of two.
///
/// `bucket_size(1000) == 1024`, `bucket_size(1100) == 1280`, `bucket_size(0) == 256`.
pub fn bucket_size(bytes: u64) -> u64 {
    let bytes = bytes.max(MIN_BUCKET);
    let step = (1u64 << (63 - bytes.leading_zeros())) / 4;
    bytes.div_ceil(step) * step
}

/// Byte counters of a buffer pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes (bucket capacities) of buffers currently handed out.
    pub in_use: u64,
    /// Bytes of free buffers kept for reuse.
    pub pooled: u64,
    /// Highest `in_use` seen.
    pub peak_in_use: u64,
    /// Buffers created on the device so far.
    pub created: u64,
    /// Requests served from the free lists.
    pub reused: u64,
    /// Buffers of this pool alive now: handed out or kept for reuse.
    pub live: u64,
}

/// Free lists and counters.
#[derive(Default)]
struct PoolState {
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    stats: MemoryStats,
}

/// A cache of buffers with one usage, keyed by bucket capacity.
pub(crate) struct BufferPool {
    device: wgpu::Device,
    usage: wgpu::BufferUsages,
    max_buffer_size: u64,
    label: &'static str,
    state: Mutex<PoolState>,
}

impl BufferPool {
    /// An empty pool creating buffers of `usage` on `device`.
    pub(crate) fn new(
        device: wgpu::Device,
        usage: wgpu::BufferUsages,
        max_buffer_size: u64,
        label: &'static str,
    ) -> Self {
        Self { device, usage, max_buffer_size, label, state: Mutex::new(PoolState::default()) }
    }

    /// Capacity a request of `bytes` gets (callers have checked it fits the device).
    pub(crate) fn capacity_for(&self, bytes: u64) -> u64 {
        let exact = bytes.max(4).next_multiple_of(4);
        bucket_size(bytes).min(self.max_buffer_size).max(exact)
    }

    /// A buffer of at least `bytes` bytes and its capacity, reused when possible.
    pub(crate) fn acquire(&self, bytes: u64) -> Result<(wgpu::Buffer, u64), RuntimeError> {
        let capacity = self.capacity_for(bytes);
        {
            let mut state = self.lock();
            if let Some(buffer) = state.free.get_mut(&capacity).and_then(Vec::pop) {
                let stats = &mut state.stats;
                stats.pooled -= capacity;
                stats.reused += 1;
                stats.in_use += capacity;
                stats.peak_in_use = stats.peak_in_use.max(stats.in_use);
                return Ok((buffer, capacity));
            }
        }
        let buffer = match self.create(capacity) {
            Err(RuntimeError::OutOfMemory { .. }) => {
                self.trim();
                self.create(capacity)?
            }
            other => other?,
        };
        let mut state = self.lock();
        let stats = &mut state.stats;
        stats.created += 1;
        stats.live += 1;
        stats.in_use += capacity;
        stats.peak_in_use = stats.peak_in_use.max(stats.in_use);
        Ok((buffer, capacity))
    }

    /// Takes back a buffer handed out by [`Self::acquire`] with `capacity`.
    pub(crate) fn release(&self, buffer: wgpu::Buffer, capacity: u64) {
        let mut state = self.lock();
        state.stats.in_use -= capacity;
        state.stats.pooled += capacity;
        state.free.entry(capacity).or_default().push(buffer);
    }

    /// Forgets a handed-out buffer that must not be reused (e.g. a failed mapping).
    pub(crate) fn discard(&self, capacity: u64) {
        let stats = &mut self.lock().stats;
        stats.in_use -= capacity;
        stats.live -= 1;
    }

    /// Drops every free buffer, returning the device memory they held.
    pub(crate) fn trim(&self) {
        let mut state = self.lock();
        let freed: usize = state.free.values().map(Vec::len).sum();
        state.free.clear();
        state.stats.pooled = 0;
        state.stats.live -= freed as u64;
    }

    /// Current counters.
    pub(crate) fn stats(&self) -> MemoryStats {
        self.lock().stats
    }

    fn create(&self, capacity: u64) -> Result<wgpu::Buffer, RuntimeError> {
        scoped(&self.device, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(self.label),
                size: capacity,
                usage: self.usage,
                mapped_at_creation: false,
            })
        })
        .map_err(|e| RuntimeError::from_wgpu(e, "buffer allocation"))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        // The state stays consistent across a panic (counters are updated last), so a
        // poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::bucket_size;

    #[test]
    fn buckets_are_quarter_steps() {
        assert_eq!(bucket_size(0), 256);
        assert_eq!(bucket_size(256), 256);
        assert_eq!(bucket_size(257), 320);
        assert_eq!(bucket_size(1000), 1024);
        assert_eq!(bucket_size(1025), 1280);
        assert_eq!(bucket_size(4 << 20), 4 << 20);
        for n in [1u64, 300, 4097, 12345, 1 << 30, (1 << 30) + 1] {
            let b = bucket_size(n);
            assert!(b >= n && b.is_multiple_of(4) && b <= n.max(256) * 5 / 4 + 4, "{n} -> {b}");
        }
    }
}
