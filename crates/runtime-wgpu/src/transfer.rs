//! Moving bytes between host and device: uploads through a staging belt into the encoder of
//! the next submit, readback through a pooled `MAP_READ` staging buffer.
//!
//! Invariants:
//! - A write up to [`BELT_WRITE_MAX`] bytes is copied into a chunk of the staging belt (chunks
//!   are reused once the GPU has read them, so a loop of uploads allocates nothing after its
//!   first steps) and its copy recorded in the pending upload encoder; every submit (a
//!   batch, a readback, a sync) submits that encoder's commands first, in the same submit.
//!   A larger write goes through `queue.write_buffer` after the pending uploads are
//!   submitted. Either way writes land after every batch submitted earlier and before the
//!   next one, in the order they were made.
//! - Writes need 4-byte aligned offsets and lengths (a wgpu rule); reads take any byte
//!   range inside the buffer's requested size and copy the enclosing aligned range.
//! - A readback waits for all previously submitted work, then for its own copy.

use std::ops::Range;
use std::sync::{MutexGuard, mpsc};

use crate::buffer::Buffer;
use crate::device::Device;
use crate::error::{Result, RuntimeError, scoped};

/// Largest write staged in the belt; larger ones go through the queue's own staging.
pub(crate) const BELT_WRITE_MAX: u64 = 16 << 20;

/// Bytes of one belt chunk (writes share chunks; a chunk serves one submit at a time).
const BELT_CHUNK: u64 = 1 << 20;

/// Uploads staged since the last submit.
pub(crate) struct Uploads {
    belt: wgpu::util::StagingBelt,
    /// The encoder holding their copies, created by the first write after a submit.
    encoder: Option<wgpu::CommandEncoder>,
}

impl Uploads {
    /// An empty belt for `device`.
    pub(crate) fn new(device: &wgpu::Device) -> Self {
        Self { belt: wgpu::util::StagingBelt::new(device.clone(), BELT_CHUNK), encoder: None }
    }
}

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
            self.flush_uploads()?;
            return scoped(&self.device, || self.queue.write_buffer(buffer.raw(), offset, data))
                .map_err(|e| RuntimeError::from_wgpu(e, "buffer write"));
        }
        let mut uploads = self.lock_uploads();
        let Uploads { belt, encoder } = &mut *uploads;
        scoped(&self.device, || {
            let encoder = encoder.get_or_insert_with(|| {
                self.device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("wgrad uploads") })
            });
            belt.write_buffer(encoder, buffer.raw(), offset, size).copy_from_slice(data);
        })
        .map_err(|e| RuntimeError::from_wgpu(e, "buffer write"))
    }

    fn lock_uploads(&self) -> MutexGuard<'_, Uploads> {
        // a panic cannot leave the belt half-updated in a way later calls would trip over
        self.uploads.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `work` into a command buffer and submits it in one submit after the pending
    /// uploads' command buffer. If recording fails only the uploads are submitted.
    pub(crate) fn submit_recorded(
        &self,
        context: &'static str,
        work: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        let mut uploads = self.lock_uploads();
        let Uploads { belt, encoder } = &mut *uploads;
        let staged = encoder.take().map(wgpu::CommandEncoder::finish);
        let commands = scoped(&self.device, || {
            let mut encoder =
                self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(context) });
            work(&mut encoder);
            encoder.finish()
        })
        .map_err(|e| RuntimeError::from_wgpu(e, context));
        belt.finish();
        let (commands, failed) = match commands {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(e)),
        };
        let submitted = self.submit_commands(staged.into_iter().chain(commands), context);
        belt.recall();
        match failed {
            Some(e) => Err(e),
            None => submitted,
        }
    }

    /// Submits the pending uploads, if any.
    pub(crate) fn flush_uploads(&self) -> Result<()> {
        if self.lock_uploads().encoder.is_none() {
            return Ok(());
        }
        self.submit_recorded("upload submit", |_| {})
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
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RuntimeError::Wait(e.to_string()))?;
        self.check()?;
        wait.recv()
            .map_err(|_| RuntimeError::Wait("map callback never ran".to_owned()))?
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
