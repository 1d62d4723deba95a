//! The submit thread: a batch submit hands the stream's open command encoder to a thread of
//! the device's own, which finishes it and submits it to the queue, so the caller goes on
//! while wgpu and the driver do the submit's work (on an H100 about 25 us of a cached
//! realize's 38: the encoder's finish about 9, `queue.submit` about 15; docs/PERFORMANCE.md).
//!
//! A submit on the caller's thread (a readback, an upload, a flush) takes back the encoders
//! the thread has not started on and submits them first, in its own submit: a readback right
//! after a launch does not wait for the thread to wake. On a GPU the thread spins for a while
//! after each submit before it sleeps ([`SUBMIT_SPIN`]), so a loop's next submit finds it
//! awake.
//!
//! Invariants:
//! - Handed encoders reach the queue in the order they were handed, and before anything the
//!   caller's thread submits after handing them: [`Submitter::take_back`] (under the stream's
//!   lock) returns the ones not started and waits until the thread has submitted the ones it
//!   took.
//! - Only an encoder of launches alone is handed: the staging belt's chunks and a readback's
//!   copy are submitted on the caller's thread, which must finish or map them right after.
//! - An error wgpu finds in an encoder the thread submits (in its finish or submit) is kept and
//!   returned by the device's next call that checks ([`crate::Device`]'s `check`); nothing of
//!   that submit runs.
//! - Dropping the submitter submits what it was handed, then ends the thread.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{RuntimeError, scoped};
use crate::info::DeviceKind;
use crate::submit::{Started, note_submit};

/// How long the thread spins for the next encoders after a submit, on a GPU, before it sleeps:
/// a training loop submits a step every few milliseconds, and a thread woken for each cost an
/// H100's jitted MNIST step about 0.1 ms of its 3.3 (docs/PERFORMANCE.md).
const SUBMIT_SPIN: Duration = Duration::from_millis(5);

/// How long the thread of a device of `kind` spins after a submit: not at all on a CPU
/// adapter, whose work runs on the host's cores.
pub(crate) fn submit_spin(kind: DeviceKind) -> Duration {
    if kind == DeviceKind::Cpu { Duration::ZERO } else { SUBMIT_SPIN }
}

/// The longest a wait for the thread takes (a device that hangs in a submit must not hang its
/// callers forever); after it the caller goes on.
const WAIT_LIMIT: Duration = Duration::from_secs(10);

/// The encoders handed over, not started on, with their submit numbers; and whether no more
/// will come (the submitter was dropped, or the thread ended).
#[derive(Default)]
struct Queue {
    waiting: VecDeque<(wgpu::CommandEncoder, u64)>,
    closed: bool,
}

/// The queue of handed encoders and the thread's state, shared with the thread.
#[derive(Default)]
pub(crate) struct Handoff {
    queue: Mutex<Queue>,
    /// Signalled when encoders are handed to a sleeping thread, and on close.
    handed: Condvar,
    /// Encoders wait (the spinning thread reads it without the lock).
    pending: AtomicBool,
    /// The thread is submitting encoders it took.
    busy: AtomicBool,
    /// The thread sleeps on `handed`.
    asleep: AtomicBool,
}

impl Handoff {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // the queue's fields are each consistent on their own
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the thread has submitted everything handed to it (the exit handler's wait).
    pub(crate) fn settle(&self) {
        yield_until(|| {
            let queue = self.lock();
            queue.closed || (queue.waiting.is_empty() && !self.busy.load(Ordering::Acquire))
        });
    }

    /// The encoders handed next, once some are (spinning for up to `spin` before it sleeps);
    /// `None` once the queue is closed and empty.
    fn next(&self, spin: Duration) -> Option<Vec<(wgpu::CommandEncoder, u64)>> {
        let until = Instant::now() + spin;
        while !self.pending.load(Ordering::Acquire) && Instant::now() < until {
            std::hint::spin_loop();
        }
        let mut queue = self.lock();
        while queue.waiting.is_empty() && !queue.closed {
            self.asleep.store(true, Ordering::Relaxed);
            queue = self.handed.wait(queue).unwrap_or_else(|p| p.into_inner());
            self.asleep.store(false, Ordering::Relaxed);
        }
        if queue.waiting.is_empty() {
            return None;
        }
        self.busy.store(true, Ordering::Release);
        self.pending.store(false, Ordering::Release);
        Some(queue.waiting.drain(..).collect())
    }

    /// Closes the queue: the thread submits what waits and ends.
    fn close(&self) {
        self.lock().closed = true;
        self.pending.store(true, Ordering::Release);
        self.handed.notify_all();
    }
}

/// The device's submit thread.
pub(crate) struct Submitter {
    handoff: Arc<Handoff>,
    thread: Option<JoinHandle<()>>,
}

impl Submitter {
    /// Starts the thread for `device`, spinning for up to `spin` after each submit: a submit it
    /// makes raises `finished` to the submit's number once the device has run it, and notes in
    /// `started` when it reached an idle device; a failure goes to `failed`.
    pub(crate) fn start(
        device: wgpu::Device,
        queue: wgpu::Queue,
        spin: Duration,
        finished: Arc<AtomicU64>,
        started: Started,
        failed: impl Fn(RuntimeError) + Send + 'static,
    ) -> std::io::Result<Self> {
        let handoff = Arc::new(Handoff::default());
        let shared = Arc::clone(&handoff);
        let thread = std::thread::Builder::new().name("wgrad submit".into()).spawn(move || {
            // closes the queue however the thread ends (a panic in wgpu included)
            let _closed = Closed(Arc::clone(&shared));
            while let Some(taken) = shared.next(spin) {
                let (first, number) =
                    (taken.first().map_or(0, |(_, n)| *n), taken.last().map_or(0, |(_, n)| *n));
                let result = submit(&device, &queue, taken.into_iter().map(|(encoder, _)| encoder));
                if result.is_ok() {
                    note_submit(first, &finished, &started);
                }
                let done = Arc::clone(&finished);
                queue.on_submitted_work_done(move || {
                    done.fetch_max(number, Ordering::Relaxed);
                });
                if let Err(error) = result {
                    failed(error);
                }
                shared.busy.store(false, Ordering::Release);
            }
        })?;
        Ok(Self { handoff, thread: Some(thread) })
    }

    /// The queue of handed encoders (for the exit handler, which waits for it).
    pub(crate) fn handoff(&self) -> Arc<Handoff> {
        Arc::clone(&self.handoff)
    }

    /// Hands `encoder`, submit number `number`, to the thread; returns it if the thread has
    /// ended (the caller submits it itself).
    pub(crate) fn hand(&self, encoder: wgpu::CommandEncoder, number: u64) -> Option<wgpu::CommandEncoder> {
        let mut queue = self.handoff.lock();
        if queue.closed {
            return Some(encoder);
        }
        queue.waiting.push_back((encoder, number));
        self.handoff.pending.store(true, Ordering::Release);
        let asleep = self.handoff.asleep.load(Ordering::Relaxed);
        drop(queue);
        if asleep {
            self.handoff.handed.notify_one();
        }
        None
    }

    /// Takes back the encoders the thread has not started on, in the order they were handed,
    /// once the thread has submitted the ones it took: the caller submits them before
    /// anything else.
    pub(crate) fn take_back(&self) -> Vec<wgpu::CommandEncoder> {
        let taken: Vec<_> = {
            let mut queue = self.handoff.lock();
            self.handoff.pending.store(queue.closed, Ordering::Release);
            queue.waiting.drain(..).map(|(encoder, _)| encoder).collect()
        };
        yield_until(|| !self.handoff.busy.load(Ordering::Acquire));
        taken
    }
}

/// Yields until `done` holds (at most [`WAIT_LIMIT`]): the thread's submits take tens of
/// microseconds, less than a sleep and a wake-up would.
fn yield_until(mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() && start.elapsed() < WAIT_LIMIT {
        std::thread::yield_now();
    }
}

/// Finishes `encoders` into command buffers; one that fails is left out, and the first
/// failure is returned with them.
pub(crate) fn finish(
    device: &wgpu::Device,
    encoders: impl IntoIterator<Item = wgpu::CommandEncoder>,
    context: &'static str,
) -> (Vec<wgpu::CommandBuffer>, Result<(), RuntimeError>) {
    let mut failed = Ok(());
    let mut commands = vec![];
    for encoder in encoders {
        match scoped(device, || encoder.finish()) {
            Ok(buffer) => commands.push(buffer),
            Err(e) => failed = failed.and(Err(RuntimeError::from_wgpu(e, context))),
        }
    }
    (commands, failed)
}

/// Finishes `encoders` and submits them in one submit (those that finish).
fn submit(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    encoders: impl Iterator<Item = wgpu::CommandEncoder>,
) -> Result<(), RuntimeError> {
    let context = "batch submit (submit thread)";
    let (commands, finished) = finish(device, encoders, context);
    let submitted =
        scoped(device, || queue.submit(commands)).map_err(|e| RuntimeError::from_wgpu(e, context));
    finished.and(submitted.map(drop))
}

/// Closes the handoff when dropped (the thread's end).
struct Closed(Arc<Handoff>);

impl Drop for Closed {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
        self.0.close();
    }
}

impl Drop for Submitter {
    fn drop(&mut self) {
        self.handoff.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
