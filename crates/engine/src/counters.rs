//! Global counters, as tinygrad's `GlobalCounters`: kernels run, flops, bytes moved, kernel
//! time, schedule cache hits, JIT replays and the host's time blocked on devices since the
//! last reset; device memory in use, device objects created and device objects held (which a
//! loop that allocates nothing after warm-up keeps flat), and queue submissions.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static KERNELS: AtomicU64 = AtomicU64::new(0);
static FLOPS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static NANOS: AtomicU64 = AtomicU64::new(0);
static SCHEDULE_HITS: AtomicU64 = AtomicU64::new(0);
static JIT_REPLAYS: AtomicU64 = AtomicU64::new(0);
static WAIT_NANOS: AtomicU64 = AtomicU64::new(0);

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
    /// Realizes whose schedule came from the schedule cache.
    pub schedule_cache_hits: u64,
    /// Replays of captured JITs.
    pub jit_replays: u64,
    /// Time the host spent blocked on devices: readbacks (from handing the work over to the
    /// bytes arriving), timed runs, and the CPU device's kernels. A loop's wall time less this
    /// is its host work.
    pub device_wait: Duration,
    /// Bytes of device memory allocated now, over every opened device.
    pub memory_used: usize,
    /// Buffers created on the devices so far (not reset; a pool's reuse is not counted).
    pub buffers_created: u64,
    /// Bind groups created on the devices so far (not reset).
    pub bind_groups_created: u64,
    /// Buffers alive on the devices now, in use or pooled.
    pub live_buffers: u64,
    /// Bind groups in the devices' caches now (wgpu).
    pub cached_bind_groups: u64,
    /// Compiled pipelines in the devices' caches now (wgpu).
    pub pipelines: u64,
    /// Submissions to the devices' queues so far (not reset).
    pub submits: u64,
}

/// The counters now.
pub fn counters() -> Counters {
    let (created, held) = (crate::device::created(), crate::device::held());
    Counters {
        kernels: KERNELS.load(Ordering::Relaxed),
        flops: FLOPS.load(Ordering::Relaxed),
        bytes: BYTES.load(Ordering::Relaxed),
        kernel_time: Duration::from_nanos(NANOS.load(Ordering::Relaxed)),
        schedule_cache_hits: SCHEDULE_HITS.load(Ordering::Relaxed),
        jit_replays: JIT_REPLAYS.load(Ordering::Relaxed),
        device_wait: Duration::from_nanos(WAIT_NANOS.load(Ordering::Relaxed)),
        memory_used: crate::device::memory_used(),
        buffers_created: created.buffers,
        bind_groups_created: created.bind_groups,
        live_buffers: held.buffers,
        cached_bind_groups: held.bind_groups,
        pipelines: held.pipelines,
        submits: created.submits,
    }
}

/// Zeroes the kernel, flop, byte, time, schedule cache, replay and wait counters.
pub fn reset_counters() {
    [&KERNELS, &FLOPS, &BYTES, &NANOS, &SCHEDULE_HITS, &JIT_REPLAYS, &WAIT_NANOS]
        .iter()
        .for_each(|c| c.store(0, Ordering::Relaxed));
}

/// Counts one schedule served by the schedule cache.
pub(crate) fn count_schedule_hit() {
    SCHEDULE_HITS.fetch_add(1, Ordering::Relaxed);
}

/// Counts one JIT replay.
pub(crate) fn count_replay() {
    JIT_REPLAYS.fetch_add(1, Ordering::Relaxed);
}

/// Counts `time` the host spent blocked on a device.
pub(crate) fn count_wait(time: Duration) {
    WAIT_NANOS.fetch_add(u64::try_from(time.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Counts one launched kernel.
pub(crate) fn count_kernel(flops: u64, bytes: u64, time: Option<Duration>) {
    KERNELS.fetch_add(1, Ordering::Relaxed);
    FLOPS.fetch_add(flops, Ordering::Relaxed);
    BYTES.fetch_add(bytes, Ordering::Relaxed);
    let nanos = time.map_or(0, |t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX));
    NANOS.fetch_add(nanos, Ordering::Relaxed);
}
