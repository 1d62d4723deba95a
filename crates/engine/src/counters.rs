//! Global counters, as tinygrad's `GlobalCounters`: kernels run, flops, bytes moved and
//! kernel time since the last reset, and device memory in use.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static KERNELS: AtomicU64 = AtomicU64::new(0);
static FLOPS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static NANOS: AtomicU64 = AtomicU64::new(0);

/// A snapshot of the counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Kernels launched.
    pub kernels: u64,
    /// Arithmetic operations of those kernels (estimated from their ASTs).
    pub flops: u64,
    /// Bytes those kernels read and wrote.
    pub bytes: u64,
    /// Time they took on the device (measured only while `flags::timing()`: DEBUG >= 2 or
    /// `set_timing`).
    pub kernel_time: Duration,
    /// Bytes of device memory allocated now, over every opened device.
    pub memory_used: usize,
}

/// The counters now.
pub fn counters() -> Counters {
    Counters {
        kernels: KERNELS.load(Ordering::Relaxed),
        flops: FLOPS.load(Ordering::Relaxed),
        bytes: BYTES.load(Ordering::Relaxed),
        kernel_time: Duration::from_nanos(NANOS.load(Ordering::Relaxed)),
        memory_used: crate::device::memory_used(),
    }
}

/// Zeroes the kernel, flop, byte and time counters.
pub fn reset_counters() {
    [&KERNELS, &FLOPS, &BYTES, &NANOS].iter().for_each(|c| c.store(0, Ordering::Relaxed));
}

/// Counts one launched kernel.
pub(crate) fn count_kernel(flops: u64, bytes: u64, time: Option<Duration>) {
    KERNELS.fetch_add(1, Ordering::Relaxed);
    FLOPS.fetch_add(flops, Ordering::Relaxed);
    BYTES.fetch_add(bytes, Ordering::Relaxed);
    let nanos = time.map_or(0, |t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX));
    NANOS.fetch_add(nanos, Ordering::Relaxed);
}
