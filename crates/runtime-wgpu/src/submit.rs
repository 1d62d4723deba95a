//! Submission: what the device is asked to do goes into one stream of command buffers in the
//! order it was asked (uploads staged through the belt, batches of launches, readback copies),
//! and the stream goes to the queue in as few submits as keep the device busy.
//!
//! A batch handed to [`Device::submit`] is submitted at once when nothing submitted before is
//! still running, when [`QUEUED_LAUNCHES`] launches wait and fewer than [`MAX_IN_FLIGHT`]
//! submits are unfinished, or when [`MAX_PENDING`] launches wait; otherwise it stays in the
//! stream, and the next submit that finds room, a readback, a timed run, [`Device::flush`] or
//! [`Device::sync`] submits it with everything recorded after it. A loop whose host outruns the
//! device so sends its work in a few large submits instead of one per step (each submit costs
//! host time: wgpu's bookkeeping, the driver), and one of them waits queued behind the running
//! one, so the device does not idle until the host notices it finished. [`Device::record`]
//! leaves a batch for the next submit whatever the device is doing, so a schedule and the
//! readback of its result are one submit. A batch submit of launches alone goes to the queue
//! through the device's submit thread (`submitter.rs`): the caller goes on while the encoder
//! is finished and submitted.
//!
//! Batches and the readback or timed work after them are recorded as compute passes (and
//! copies) into one open command encoder, finished only when the stream is submitted or an
//! upload must come between a pass and what follows it; uploads staged while no pass is open
//! go into that encoder too, so an idle device's uploads and first launches are one command
//! buffer (`embed_tokens` of MiniLM on an H200: 10-25 us less before the device starts,
//! docs/PERFORMANCE.md): a command encoder costs the driver a command buffer (on NVIDIA's
//! Vulkan driver an allocation through the kernel, about half of an eager loop's host time
//! when every realize had its own), while a pass in an open encoder costs a few pushes.
//! Batches recorded one after another go into one open compute pass, ended when a copy, a
//! timed run, an upload or the submit comes between: each pass boundary cost an H200 about 5
//! us of device time between two kernels (`back_to_back` example: 100 launches of a 65 us
//! kernel, 69.9 us each as a pass each, 65.2 us in one pass), an eager `x*2+1` loop x1.12 of
//! its kernel time. wgpu orders the dispatches within a pass as it orders passes.
//!
//! Invariants:
//! - Command buffers reach the queue in the order they were recorded, the belt's uploads
//!   among them; a write through `queue.write_buffer` first submits the stream. So memory the
//!   pool hands out again is only touched after everything recorded before it. An upload
//!   staged while no pass is open is recorded into the open encoder in order; one staged while
//!   a pass is open goes into the belt's encoder, and what the open encoder holds was recorded
//!   before anything there (a batch recorded after such an upload first closes both), so
//!   closing the open encoder first keeps the order. An open encoder holding uploads is
//!   submitted on the caller's thread, after the belt's chunks are unmapped.
//!   A submit on the caller's thread first waits for the submit thread to submit what it was
//!   handed.
//! - A batch whose bind groups cannot be made (a binding the pipeline does not declare, a
//!   destroyed buffer) is refused before anything of it is recorded, and what was recorded
//!   before it still runs. An error wgpu finds only when the encoder is finished (a launch the
//!   runtime's own checks let through) fails every batch in that encoder, reported by the
//!   call that finished it, or, for an encoder the submit thread finished, by the next call
//!   that checks the device.
//! - Work left in the stream runs at the latest with the next submit, readback, timed run,
//!   flush or sync (the device never waits for work it was not given: a host that records
//!   work while the device is busy and then computes for long without calling the device
//!   leaves it idle meanwhile; `flush` hands the work over).
//! - The belt's chunks are unmapped right before the submit that reads them and recalled right
//!   after it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::batch::{Batch, record};
use crate::device::Device;
use crate::error::{Result, RuntimeError, scoped};
use crate::submitter::finish;

/// Launches that may wait in the stream for the device to finish earlier work; more are
/// submitted at once (they queue on the device behind it).
pub const MAX_PENDING: usize = 64;

/// Submits that may run or wait on the device before a batch waits in the stream: one running
/// and one queued behind it.
const MAX_IN_FLIGHT: u64 = 2;

/// Launches that wait in the stream before they are queued behind a running submit (fewer
/// would cost a submit per launch where the device finishes each before the next).
const QUEUED_LAUNCHES: usize = 4;

/// When a submit first found the device done with every submit before it (an idle device got
/// work) since [`Device::take_start`] last looked. Shared with the submit thread.
pub(crate) type Started = Arc<Mutex<Option<Instant>>>;

/// Notes that submit `number` was just made, if the device had finished the ones before it
/// (as far as `finished`, raised by the queue's callbacks when a poll runs them, knows) and no
/// start is noted yet.
pub(crate) fn note_submit(number: u64, finished: &AtomicU64, started: &Started) {
    if finished.load(Ordering::Relaxed) + 1 >= number {
        started.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(Instant::now);
    }
}

/// The command stream not submitted yet.
pub(crate) struct Stream {
    pub(crate) belt: wgpu::util::StagingBelt,
    /// The encoder of the belt's copies staged while a pass was open in `open`.
    uploads: Option<wgpu::CommandEncoder>,
    /// Whether `open` holds copies out of the belt (staged while no pass was open in it): it is
    /// then submitted on this thread, after the belt's chunks are unmapped.
    staged: bool,
    /// The open compute pass of `open`, holding the batches recorded since its last copy or
    /// timed run (ended before anything else is recorded into `open`, and before it finishes).
    pass: Option<wgpu::ComputePass<'static>>,
    /// The open encoder of the batches, readback copies and timed runs recorded since.
    open: Option<wgpu::CommandEncoder>,
    /// Recorded command buffers, in order.
    commands: Vec<wgpu::CommandBuffer>,
    /// Launches among them.
    launches: usize,
    /// Submits so far.
    submits: u64,
    /// Submits the device has finished, as its callbacks report them.
    pub(crate) finished: Arc<AtomicU64>,
    /// When a submit first reached an idle device since `take_start`.
    pub(crate) started: Started,
    /// Command buffers submitted so far.
    command_buffers: u64,
    /// Compute passes of batches begun so far.
    passes: u64,
}

impl Stream {
    /// An empty stream for `device`, with a belt of `chunk`-byte chunks.
    pub(crate) fn new(device: &wgpu::Device, chunk: u64) -> Self {
        Self {
            belt: wgpu::util::StagingBelt::new(device.clone(), chunk),
            uploads: None,
            staged: false,
            pass: None,
            open: None,
            commands: vec![],
            launches: 0,
            submits: 0,
            finished: Arc::new(AtomicU64::new(0)),
            started: Started::default(),
            command_buffers: 0,
            passes: 0,
        }
    }

    /// Copies `data` (`size` bytes) into a chunk of the belt and records its copy into `target`
    /// at `offset` after everything recorded so far: into the open encoder when no pass is open
    /// in it, else into the belt's own encoder, which goes after the open one.
    pub(crate) fn stage(
        &mut self,
        device: &wgpu::Device,
        (target, offset): (&wgpu::Buffer, u64),
        size: std::num::NonZeroU64,
        data: &[u8],
    ) {
        let create =
            |label| device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        let encoder = if self.pass.is_none() && self.uploads.is_none() {
            self.staged = true;
            self.open.get_or_insert_with(|| create("wgrad stream"))
        } else {
            self.uploads.get_or_insert_with(|| create("wgrad uploads"))
        };
        self.belt.write_buffer(encoder, target, offset, size).copy_from_slice(data);
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

    /// Records every launch of `batch` in the open compute pass at the end of the stream and
    /// submits the stream now if the device is idle (or many launches wait), else leaves it
    /// for a later submit (see the module docs). If its bind groups fail nothing of the batch
    /// runs.
    pub fn submit(&self, batch: Batch) -> Result<()> {
        self.check()?;
        if batch.is_empty() {
            return Ok(());
        }
        let mut stream = self.lock_stream();
        self.record_batch(&mut stream, &batch)?;
        let in_flight = self.in_flight(&stream);
        if in_flight == 0
            || stream.launches >= MAX_PENDING
            || (in_flight < MAX_IN_FLIGHT && stream.launches >= QUEUED_LAUNCHES)
        {
            self.submit_or_hand(&mut stream)?;
        }
        Ok(())
    }

    /// Records `batch` at the end of the stream without submitting it: it runs with the next
    /// submit, readback, timed run, [`Device::flush`] or [`Device::sync`] (a readback of its
    /// results is then one submit with it). If its bind groups fail nothing of the batch runs.
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

    /// When the device first went from idle to work (a submit that found everything submitted
    /// before it finished, as far as the last poll saw) since the last call, which forgets it.
    /// A caller that takes it before its work and again after sees how long the host took
    /// before the device started on that work.
    pub fn take_start(&self) -> Option<Instant> {
        self.lock_stream().started.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Submits so far (each a `queue.submit` of one or more command buffers).
    pub fn submits(&self) -> u64 {
        self.lock_stream().submits
    }

    /// Command buffers submitted so far: one a submit, plus one for each run of uploads staged
    /// between recorded work.
    pub fn command_buffers(&self) -> u64 {
        self.lock_stream().command_buffers
    }

    /// Compute passes begun for batches so far: batches recorded one after another share one,
    /// until a copy, an upload, a timed run or a submit comes between.
    pub fn compute_passes(&self) -> u64 {
        self.lock_stream().passes
    }

    /// Records `work` at the end of the stream and submits the stream (readbacks, timed runs).
    /// An error wgpu finds in it is returned, and nothing of the open encoder runs.
    pub(crate) fn submit_recorded(
        &self,
        context: &'static str,
        work: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        let mut stream = self.lock_stream();
        self.record_commands(&mut stream, work)?;
        self.submit_stream(&mut stream, context)
    }

    /// Submits the stream if anything is in it (before a write that bypasses it).
    pub(crate) fn flush_stream(&self) -> Result<()> {
        self.submit_stream(&mut self.lock_stream(), "flush")
    }

    /// Notes that the device finished everything submitted (after a wait that said so).
    pub(crate) fn settled(&self) {
        let stream = self.lock_stream();
        stream.finished.fetch_max(stream.submits, Ordering::Relaxed);
    }

    /// Records `batch`'s launches, with their bind groups, into the open compute pass (begun if
    /// none is open). The bind groups are made first: if one fails nothing of the batch is
    /// recorded.
    fn record_batch(&self, stream: &mut Stream, batch: &Batch) -> Result<()> {
        let groups = scoped(&self.device, || {
            batch.dispatches().iter().map(|d| self.bind_group(d)).collect::<Vec<_>>()
        })
        .map_err(|e| RuntimeError::from_wgpu(e, "batch submit"))?;
        let mut encoder = self.open_encoder(stream)?;
        if stream.pass.is_none() {
            let descriptor =
                wgpu::ComputePassDescriptor { label: Some("wgrad batches"), timestamp_writes: None };
            stream.pass = Some(encoder.begin_compute_pass(&descriptor).forget_lifetime());
            stream.passes += 1;
        }
        stream.open = Some(encoder);
        let pass = stream.pass.as_mut().expect("a pass is open");
        for (dispatch, group) in batch.dispatches().iter().zip(&groups) {
            record(pass, dispatch, group);
        }
        stream.launches += batch.len();
        Ok(())
    }

    /// Records `work` into the open encoder, after the open pass and the uploads staged so far.
    fn record_commands(
        &self,
        stream: &mut Stream,
        work: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        stream.pass = None;
        let mut encoder = self.open_encoder(stream)?;
        work(&mut encoder);
        stream.open = Some(encoder);
        Ok(())
    }

    /// The open encoder, taken out of the stream (begun if none is open); an upload staged since
    /// it began first closes both, so the upload runs before what is recorded next.
    fn open_encoder(&self, stream: &mut Stream) -> Result<wgpu::CommandEncoder> {
        if stream.uploads.is_some() {
            self.close_open(stream)?;
            stream.close_uploads();
        }
        Ok(stream.open.take().unwrap_or_else(|| {
            self.device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("wgrad stream") })
        }))
    }

    /// Finishes the open encoder (its open pass ended) into a command buffer at the end of the
    /// stream. If wgpu finds an error in it, nothing of it runs and the error is returned.
    fn close_open(&self, stream: &mut Stream) -> Result<()> {
        stream.pass = None;
        stream.staged = false;
        let (commands, finished) = finish(&self.device, stream.open.take(), "batch submit");
        stream.commands.extend(commands);
        finished
    }

    /// Submits the stream: through the submit thread when it is the open encoder's launches
    /// alone (see `submitter.rs`), else on this thread.
    fn submit_or_hand(&self, stream: &mut Stream) -> Result<()> {
        let launches_alone = stream.commands.is_empty() && stream.uploads.is_none() && !stream.staged;
        let (Some(submitter), true) = (&self.submitter, launches_alone) else {
            return self.submit_stream(stream, "batch submit");
        };
        stream.pass = None;
        let Some(encoder) = stream.open.take() else { return Ok(()) };
        crate::exit::wait_when_thread_ends();
        match submitter.hand(encoder, stream.submits + 1) {
            None => {
                stream.launches = 0;
                stream.submits += 1;
                stream.command_buffers += 1;
                Ok(())
            }
            Some(encoder) => {
                stream.open = Some(encoder);
                self.submit_stream(stream, "batch submit")
            }
        }
    }

    /// Submits every command buffer of the stream in one submit (the open encoder's too: if
    /// finishing it fails, the rest is submitted and its error returned).
    fn submit_stream(&self, stream: &mut Stream, context: &'static str) -> Result<()> {
        let taken_back = self.take_back(stream);
        let closed = self.close_open(stream).and(taken_back);
        stream.close_uploads();
        stream.launches = 0;
        if stream.commands.is_empty() {
            return closed;
        }
        crate::exit::wait_when_thread_ends();
        stream.belt.finish();
        let commands = std::mem::take(&mut stream.commands);
        stream.command_buffers += commands.len() as u64;
        let submitted = self.submit_commands(commands, context);
        stream.belt.recall();
        stream.submits += 1;
        if submitted.is_ok() {
            note_submit(stream.submits, &stream.finished, &stream.started);
        }
        let (finished, number) = (Arc::clone(&stream.finished), stream.submits);
        self.queue.on_submitted_work_done(move || {
            finished.fetch_max(number, Ordering::Relaxed);
        });
        closed.and(submitted)
    }

    /// Puts the encoders the submit thread has not started on back at the front of the stream,
    /// finished (once the thread has submitted the ones it took). They count as part of the
    /// submit that takes them. A failure to finish one leaves it out and is returned.
    fn take_back(&self, stream: &mut Stream) -> Result<()> {
        let Some(submitter) = &self.submitter else { return Ok(()) };
        let encoders = submitter.take_back();
        if encoders.is_empty() {
            return Ok(());
        }
        stream.submits -= encoders.len() as u64;
        stream.command_buffers -= encoders.len() as u64;
        let (commands, failed) = finish(&self.device, encoders, "batch submit");
        stream.commands.splice(0..0, commands);
        failed
    }

    /// How many submits the device has not finished (after a poll that does not wait). A
    /// failing poll counts as none: the submit that follows reports the trouble.
    fn in_flight(&self, stream: &Stream) -> u64 {
        match self.device.poll(wgpu::PollType::Poll) {
            Ok(_) => stream.submits.saturating_sub(stream.finished.load(Ordering::Relaxed)),
            Err(_) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submit_is_a_start_only_when_the_device_had_finished_the_ones_before_it() {
        let (finished, started) = (AtomicU64::new(2), Started::default());
        note_submit(4, &finished, &started);
        assert!(started.lock().unwrap().is_none(), "submit 3 still running");
        note_submit(3, &finished, &started);
        let first = started.lock().unwrap().expect("submits 1 and 2 done");
        // the first start is kept until it is taken
        finished.store(3, Ordering::Relaxed);
        note_submit(4, &finished, &started);
        assert_eq!(started.lock().unwrap().take(), Some(first));
        note_submit(4, &finished, &started);
        assert!(started.lock().unwrap().is_some_and(|t| t >= first));
    }
}
