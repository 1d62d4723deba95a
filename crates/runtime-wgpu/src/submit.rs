//! Submission: what the device is asked to do goes into one stream of command buffers in the
//! order it was asked (uploads staged through the belt, batches of launches, readback copies),
//! and the stream goes to the queue in as few submits as keep the device busy.
//!
//! A batch handed to [`Device::submit`] is submitted at once when nothing submitted before is
//! still running (or [`MAX_PENDING`] launches wait); while the device is busy it stays in the
//! stream, and the next submit that finds the device idle, a readback, a timed run,
//! [`Device::flush`] or [`Device::sync`] submits it with everything recorded after it. A loop
//! whose host outruns the device so sends its work in a few large submits instead of one per
//! step: each submit costs host time (wgpu's bookkeeping, the driver) and a gap on the device
//! (it waits for the submit before it). [`Device::record`] leaves a batch for the next submit
//! whatever the device is doing, so a schedule and the readback of its result are one submit.
//!
//! Invariants:
//! - Command buffers reach the queue in the order they were recorded, the belt's uploads
//!   among them; a write through `queue.write_buffer` first submits the stream. So memory the
//!   pool hands out again is only touched after everything recorded before it.
//! - A batch whose encoding fails is left out of the stream alone (its error is returned);
//!   what was recorded before it still runs.
//! - Work left in the stream runs at the latest with the next submit, readback, timed run,
//!   flush or sync (the device never waits for work it was not given: a host that records
//!   work while the device is busy and then computes for long without calling the device
//!   leaves it idle meanwhile; `flush` hands the work over).
//! - The belt's chunks are unmapped right before the submit that reads them and recalled right
//!   after it.

use std::sync::MutexGuard;

use crate::batch::{Batch, record};
use crate::device::Device;
use crate::error::{Result, RuntimeError, scoped};

/// Launches that may wait in the stream for the device to finish earlier work; more are
/// submitted at once (they queue on the device behind it).
pub const MAX_PENDING: usize = 64;

/// The command stream not submitted yet.
pub(crate) struct Stream {
    pub(crate) belt: wgpu::util::StagingBelt,
    /// The encoder of the belt's copies staged since the last command buffer was recorded.
    pub(crate) uploads: Option<wgpu::CommandEncoder>,
    /// Recorded command buffers, in order.
    commands: Vec<wgpu::CommandBuffer>,
    /// Launches among them.
    launches: usize,
    /// Whether a submit may still be running on the device.
    in_flight: bool,
    /// Submits so far.
    submits: u64,
}

impl Stream {
    /// An empty stream for `device`, with a belt of `chunk`-byte chunks.
    pub(crate) fn new(device: &wgpu::Device, chunk: u64) -> Self {
        Self {
            belt: wgpu::util::StagingBelt::new(device.clone(), chunk),
            uploads: None,
            commands: vec![],
            launches: 0,
            in_flight: false,
            submits: 0,
        }
    }

    /// Ends the belt's open encoder: its copies go before anything recorded next.
    fn close_uploads(&mut self) {
        if let Some(encoder) = self.uploads.take() {
            self.commands.push(encoder.finish());
        }
    }
}

impl Device {
    pub(crate) fn lock_stream(&self) -> MutexGuard<'_, Stream> {
        // a panic cannot leave the stream half-updated in a way later calls would trip over
        self.stream.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Encodes every launch of `batch` into one command buffer at the end of the stream and
    /// submits the stream now if the device is idle (or many launches wait), else leaves it
    /// for a later submit (see the module docs). If encoding fails nothing of the batch runs.
    pub fn submit(&self, batch: Batch) -> Result<()> {
        self.check()?;
        if batch.is_empty() {
            return Ok(());
        }
        let mut stream = self.lock_stream();
        self.record_batch(&mut stream, &batch)?;
        if !stream.in_flight || stream.launches >= MAX_PENDING || self.idle(&mut stream) {
            self.submit_stream(&mut stream, "batch submit")?;
        }
        Ok(())
    }

    /// Encodes `batch` at the end of the stream without submitting it: it runs with the next
    /// submit, readback, timed run, [`Device::flush`] or [`Device::sync`] (a readback of its
    /// results is then one submit with it). If encoding fails nothing of the batch runs.
    pub fn record(&self, batch: Batch) -> Result<()> {
        self.check()?;
        if batch.is_empty() {
            return Ok(());
        }
        self.record_batch(&mut self.lock_stream(), &batch)
    }

    /// Submits everything recorded so far, without waiting for it.
    pub fn flush(&self) -> Result<()> {
        self.check()?;
        self.submit_stream(&mut self.lock_stream(), "flush")
    }

    /// Submits so far (each a `queue.submit` of one or more command buffers).
    pub fn submits(&self) -> u64 {
        self.lock_stream().submits
    }

    /// Records `work` into a command buffer at the end of the stream and submits the stream
    /// (readbacks, timed runs). If recording fails nothing of `work` runs.
    pub(crate) fn submit_recorded(
        &self,
        context: &'static str,
        work: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        let mut stream = self.lock_stream();
        self.record_commands(&mut stream, context, 0, work)?;
        self.submit_stream(&mut stream, context)
    }

    /// Submits the stream if anything is in it (before a write that bypasses it).
    pub(crate) fn flush_stream(&self) -> Result<()> {
        self.submit_stream(&mut self.lock_stream(), "flush")
    }

    /// Notes that the device finished everything submitted (after a wait that said so).
    pub(crate) fn settled(&self) {
        self.lock_stream().in_flight = false;
    }

    /// Records `batch`'s launches, with their bind groups, as one compute pass.
    fn record_batch(&self, stream: &mut Stream, batch: &Batch) -> Result<()> {
        self.record_commands(stream, "batch submit", batch.len(), |encoder| {
            let groups: Vec<_> = batch.dispatches().iter().map(|d| self.bind_group(d)).collect();
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgrad batch"),
                timestamp_writes: None,
            });
            for (dispatch, group) in batch.dispatches().iter().zip(&groups) {
                record(&mut pass, dispatch, group);
            }
        })
    }

    /// Records `work` (holding `launches` launches) into a command buffer at the end of the
    /// stream, after the uploads staged so far. If recording fails nothing of it is kept.
    fn record_commands(
        &self,
        stream: &mut Stream,
        context: &'static str,
        launches: usize,
        work: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        stream.close_uploads();
        let commands = scoped(&self.device, || {
            let mut encoder =
                self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(context) });
            work(&mut encoder);
            encoder.finish()
        })
        .map_err(|e| RuntimeError::from_wgpu(e, context))?;
        stream.commands.push(commands);
        stream.launches += launches;
        Ok(())
    }

    /// Submits every command buffer of the stream in one submit.
    fn submit_stream(&self, stream: &mut Stream, context: &'static str) -> Result<()> {
        stream.close_uploads();
        if stream.commands.is_empty() {
            return Ok(());
        }
        stream.belt.finish();
        let commands = std::mem::take(&mut stream.commands);
        stream.launches = 0;
        let submitted = self.submit_commands(commands, context);
        stream.belt.recall();
        stream.in_flight = true;
        stream.submits += 1;
        submitted
    }

    /// Whether the device has finished everything submitted (a poll that does not wait). A
    /// failing poll counts as idle: the submit that follows reports the trouble.
    fn idle(&self, stream: &mut Stream) -> bool {
        let idle = !matches!(self.device.poll(wgpu::PollType::Poll), Ok(s) if !s.is_queue_empty());
        stream.in_flight = !idle;
        idle
    }
}
