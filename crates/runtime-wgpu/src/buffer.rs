//! `Buffer`: a handle to pooled device memory that goes back to its pool when the last
//! clone is dropped.
//!
//! Invariants:
//! - `size` is the size the caller asked for (possibly 0); `capacity` is the pooled
//!   allocation's size, a multiple of 4 and at least `max(size, 4)`.
//! - Kernels see `size` bytes rounded up to 4 (the bound range), so `arrayLength` in WGSL
//!   reflects the requested size, not the bucket; but at least 16 bytes, so a buffer smaller
//!   than one `vec4` still binds to a kernel that declares it an array of them (its vector
//!   accesses are then gated off).
//! - Clones share the allocation; a [`crate::Batch`] keeps clones of the buffers it
//!   binds, so memory cannot be recycled while a recorded dispatch still refers to it.

use std::fmt;
use std::sync::Arc;

use crate::pool::BufferPool;

/// Device memory usable as a storage buffer, a copy source and a copy destination.
#[derive(Clone)]
pub struct Buffer {
    inner: Arc<Allocation>,
}

/// The pooled allocation behind a [`Buffer`].
struct Allocation {
    raw: wgpu::Buffer,
    size: u64,
    capacity: u64,
    pool: Arc<BufferPool>,
}

impl Drop for Allocation {
    fn drop(&mut self) {
        self.pool.release(self.raw.clone(), self.capacity);
    }
}

impl Buffer {
    /// Wraps a buffer acquired from `pool` for a request of `size` bytes.
    pub(crate) fn new(raw: wgpu::Buffer, size: u64, capacity: u64, pool: Arc<BufferPool>) -> Self {
        Self { inner: Arc::new(Allocation { raw, size, capacity, pool }) }
    }

    /// Size in bytes that was requested.
    pub fn size(&self) -> u64 {
        self.inner.size
    }

    /// Bytes actually reserved (the pool bucket).
    pub fn capacity(&self) -> u64 {
        self.inner.capacity
    }

    /// Bytes the host may read and write: `size` rounded up to 4, at least 4.
    pub(crate) fn bound_size(&self) -> u64 {
        self.inner.size.max(4).next_multiple_of(4)
    }

    /// Bytes bound to a kernel: [`Buffer::bound_size`], at least one 16-byte vector (within the
    /// allocation, which is never smaller).
    pub(crate) fn binding_size(&self) -> u64 {
        self.bound_size().max(16).min(self.inner.capacity)
    }

    /// The underlying wgpu buffer (for callers that encode their own commands).
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.inner.raw
    }

    /// Whether two handles share one allocation.
    pub fn same_allocation(&self, other: &Buffer) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("size", &self.inner.size)
            .field("capacity", &self.inner.capacity)
            .finish()
    }
}
