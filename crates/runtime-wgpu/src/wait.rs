//! Waiting for the GPU: the host spins on non-blocking polls for up to the device's spin time
//! ([`SPIN_WAIT`] on a GPU), giving its core to other threads between polls after the first
//! [`BUSY_SPIN`], then blocks.
//!
//! A blocking wait sleeps in the driver and is woken when the work is done; on an H200 a
//! one-op graph with a scalar readback took 87-114 us that way and 53-66 us spinning, on an
//! H100 a median 76.6 against 59.6 us, and a MiniLM f32 batch (10.7 ms of kernels) took
//! 10.86-11.19 ms of wall time where its wait blocked after 1 ms and 10.69-10.81 ms where it
//! polled for 30 ms (docs/PERFORMANCE.md). Polling sees the work finish within a poll's time
//! (as CUDA's default wait spins or yields). A CPU adapter (lavapipe) blocks at once: its work
//! runs on the host's cores, which a polling caller would take from it.
//!
//! Invariants: a wait returns once its condition holds or, after the spin, once all submitted
//! work has finished; a map callback another thread's poll runs still reaches its waiter
//! (`transfer.rs` receives it after the wait).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::device::Device;
use crate::error::{Result, RuntimeError};
use crate::info::DeviceKind;

/// How long a wait on a GPU polls without blocking before it blocks: a model's forward or a
/// training step of tens of milliseconds is waited for without the driver's sleep and wake-up.
pub const SPIN_WAIT: Duration = Duration::from_millis(50);

/// How long a wait polls back to back before it yields its thread between polls (a readback
/// of a short kernel is seen within a poll's time).
const BUSY_SPIN: Duration = Duration::from_millis(1);

/// The spin time of a new device of `kind`, in nanoseconds: none for a CPU adapter.
pub(crate) fn default_spin_wait(kind: DeviceKind) -> u64 {
    if kind == DeviceKind::Cpu { 0 } else { SPIN_WAIT.as_nanos() as u64 }
}

impl Device {
    /// How long a wait for the device spins on non-blocking polls before it blocks.
    pub fn spin_wait(&self) -> Duration {
        Duration::from_nanos(self.spin_wait.load(Ordering::Relaxed))
    }

    /// Sets how long a wait spins before it blocks (zero: block at once).
    pub fn set_spin_wait(&self, spin: Duration) {
        self.spin_wait.store(u64::try_from(spin.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Polls the device until `done` holds for a poll's status or, once the spin is over,
    /// until all submitted work has finished. Notes a finished queue for the stream's
    /// bookkeeping.
    pub(crate) fn wait_until(&self, mut done: impl FnMut(&wgpu::PollStatus) -> bool) -> Result<()> {
        let start = Instant::now();
        let (spin_until, busy_until) = (start + self.spin_wait(), start + BUSY_SPIN);
        loop {
            let now = Instant::now();
            let spinning = now < spin_until;
            let poll = if spinning { wgpu::PollType::Poll } else { wgpu::PollType::wait_indefinitely() };
            let status = self.device.poll(poll).map_err(|e| RuntimeError::Wait(e.to_string()))?;
            if status.is_queue_empty() {
                self.settled();
            }
            if !spinning || done(&status) {
                return Ok(());
            }
            if now < busy_until {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}
