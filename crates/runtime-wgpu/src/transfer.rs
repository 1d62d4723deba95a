//! Moving bytes between host and device: uploads through a staging belt into the command
//! stream (`submit.rs`), readback through a pooled `MAP_READ` staging buffer.
//!
//! Invariants:
//! - A write up to [`BELT_WRITE_MAX`] bytes is copied into a chunk of the staging belt (chunks
//!   are reused once the GPU has read them, so a loop of uploads allocates nothing after its
//!   first steps) and its copy recorded at the end of the command stream, which the next
//!   submit carries. A larger write goes through `queue.write_buffer` after the stream is
//!   submitted. Either way writes land after every batch recorded earlier and before every
//!   later one, in the order they were made.
//! - Writes need 4-byte aligned offsets and lengths (a wgpu rule); reads take any byte
//!   range inside the buffer's requested size and copy the enclosing aligned range.
//! - A readback waits for all previously submitted work, then for its own copy (`wait.rs`).

use std::ops::Range;
use std::sync::mpsc;

use crate::buffer::Buffer;
use crate::device::Device;
use crate::error::{Result, RuntimeError, scoped};

/// Largest write staged in the belt; larger ones go through the queue's own staging.
pub(crate) const BELT_WRITE_MAX: u64 = 16 << 20;

/// Bytes of one belt chunk (writes share chunks; a chunk serves one submit at a time).
pub(crate) const BELT_CHUNK: u64 = 1 << 20;

impl Device {
    /// Writes `data` into `buffer` at byte `offset` (both multiples of 4).
    pub fn write(&self, buffer: &Buffer, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset.saturating_add(data.len() as u64);
        if end > buffer.bound_size() || !offset.is_multiple_of(4) || !data.len().is_multiple_of(4) {
            return Err(RuntimeError::BadRange { op: "write", start: offset, end, size: buffer.size() });
        }
        self.check()?;
        let Some(size) = std::num::NonZeroU64::new(data.len() as u64) else { return Ok(()) };
        if size.get() > BELT_WRITE_MAX {
            self.flush_stream()?;
            return scoped(&self.device, || self.queue.write_buffer(buffer.raw(), offset, data))
                .map_err(|e| RuntimeError::from_wgpu(e, "buffer write"));
        }
        let mut stream = self.lock_stream();
        scoped(&self.device, || stream.stage(&self.device, (buffer.raw(), offset), size, data))
            .map_err(|e| RuntimeError::from_wgpu(e, "buffer write"))
    }

    /// A new buffer holding `data`.
    pub fn upload<T: bytemuck::Pod>(&self, data: &[T]) -> Result<Buffer> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let buffer = self.alloc(bytes.len() as u64)?;
        if bytes.len().is_multiple_of(4) {
            self.write(&buffer, 0, bytes)?;
        } else {
            let mut padded = bytes.to_vec();
            padded.resize(bytes.len().next_multiple_of(4), 0);
            self.write(&buffer, 0, &padded)?;
        }
        Ok(buffer)
    }

    /// The whole buffer's bytes (its requested size).
    pub fn read(&self, buffer: &Buffer) -> Result<Vec<u8>> {
        self.read_range(buffer, 0..buffer.size())
    }

    /// The whole buffer as values of `T` (trailing bytes that do not fill a `T` are
    /// dropped).
    pub fn read_as<T: bytemuck::Pod>(&self, buffer: &Buffer) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>() as u64;
        let whole = buffer.size() / size * size;
        let bytes = self.read_range(buffer, 0..whole)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Bytes `range` of the buffer. Waits for all submitted work first.
    pub fn read_range(&self, buffer: &Buffer, range: Range<u64>) -> Result<Vec<u8>> {
        if range.start > range.end || range.end > buffer.size() {
            return Err(RuntimeError::BadRange {
                op: "read",
                start: range.start,
                end: range.end,
                size: buffer.size(),
            });
        }
        self.check()?;
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let start = range.start / 4 * 4;
        let len = range.end.next_multiple_of(4) - start;
        let (staging, capacity) = self.staging.acquire(len)?;
        let mapped = self
            .submit_recorded("readback submit", |encoder| {
                encoder.copy_buffer_to_buffer(buffer.raw(), start, &staging, 0, len);
            })
            .and_then(|()| self.map_and_copy(&staging, len, range.start - start, range.end - start));
        match mapped {
            Ok(bytes) => {
                self.staging.release(staging, capacity);
                Ok(bytes)
            }
            Err(error) => {
                self.staging.discard(capacity);
                Err(error)
            }
        }
    }

    /// Maps the first `len` bytes of `staging`, copies out `[from, to)` and unmaps.
    pub(crate) fn map_and_copy(
        &self,
        staging: &wgpu::Buffer,
        len: u64,
        from: u64,
        to: u64,
    ) -> Result<Vec<u8>> {
        let slice = staging.slice(0..len);
        let (done, wait) = mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |result| {
            // The receiver only disappears if the caller already failed.
            let _ = done.send(result);
        });
        let mut mapped = None;
        self.wait_until(|_| {
            mapped = wait.try_recv().ok();
            mapped.is_some()
        })?;
        self.check()?;
        // after a blocking wait the callback may still be on its way: another thread's poll
        // can be the one that runs it
        match mapped {
            Some(mapped) => mapped,
            None => wait.recv().map_err(|_| RuntimeError::Wait("map callback never ran".to_owned()))?,
        }
        .map_err(|e| RuntimeError::Wait(format!("mapping the staging buffer: {e}")))?;
        let bytes = {
            let view = slice
                .get_mapped_range()
                .map_err(|e| RuntimeError::Wait(format!("reading the mapped range: {e}")))?;
            view[from as usize..to as usize].to_vec()
        };
        staging.unmap();
        Ok(bytes)
    }
}
