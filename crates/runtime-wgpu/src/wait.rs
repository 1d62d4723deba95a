//! Waiting for the GPU: the host spins on non-blocking polls for up to the device's spin time
//! ([`SPIN_WAIT`] on a GPU), then blocks.
//!
//! A blocking wait sleeps in the driver and is woken when the work is done; on an H200 a
//! one-op graph with a scalar readback took 87-114 us that way and 53-66 us spinning, on an
//! H100 a median 76.6 against 59.6 us (docs/PERFORMANCE.md). Spinning sees the work finish
//! within a poll's time. A CPU adapter (lavapipe) blocks at once: its work runs on the host's
//! cores, which a spinning caller would take from it.
//!
//! Invariants: a wait returns once its condition holds or, after the spin, once all submitted
//! work has finished; a map callback another thread's poll runs still reaches its waiter
//! (`transfer.rs` receives it after the wait).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::device::Device;
use crate::error::{Result, RuntimeError};
use crate::info::DeviceKind;

/// How long a wait on a GPU spins on non-blocking polls before it blocks.
pub const SPIN_WAIT: Duration = Duration::from_millis(1);

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
        let spin_until = Instant::now() + self.spin_wait();
        loop {
            let spinning = Instant::now() < spin_until;
            let poll = if spinning { wgpu::PollType::Poll } else { wgpu::PollType::wait_indefinitely() };
            let status = self.device.poll(poll).map_err(|e| RuntimeError::Wait(e.to_string()))?;
            if status.is_queue_empty() {
                self.settled();
            }
            if !spinning || done(&status) {
                return Ok(());
            }
            std::hint::spin_loop();
        }
    }
}
