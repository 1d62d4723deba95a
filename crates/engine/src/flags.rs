//! The environment flags the engine reads, as tinygrad has them: `DEBUG=0..6`, `NOOPT=1`,
//! `BEAM=n`, `CACHELEVEL` and `JIT=0` (TinyJit runs its function every call). Read once from
//! the environment; tests and tools may override them.

use std::sync::atomic::{AtomicI64, Ordering};

static DEBUG: AtomicI64 = AtomicI64::new(-1);
static NOOPT: AtomicI64 = AtomicI64::new(-1);
static BEAM: AtomicI64 = AtomicI64::new(-1);
static CACHELEVEL: AtomicI64 = AtomicI64::new(-1);
static JIT: AtomicI64 = AtomicI64::new(-1);
static TIMING: AtomicI64 = AtomicI64::new(0);

fn read(flag: &AtomicI64, name: &str, default: i64) -> i64 {
    match flag.load(Ordering::Relaxed) {
        -1 => {
            let v = std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default).max(0);
            flag.store(v, Ordering::Relaxed);
            v
        }
        v => v,
    }
}

/// The DEBUG level: 1 devices and kernel counts, 2 a line per kernel (and BEAM's rounds and
/// cache hits), 3 opts and ASTs, 4 device source, 5 lowered uops, 6 the linear program.
pub fn debug() -> i64 {
    read(&DEBUG, "DEBUG", 0)
}

/// Whether kernels skip the hand-coded optimisations (`NOOPT=1`).
pub fn noopt() -> bool {
    read(&NOOPT, "NOOPT", 0) != 0
}

/// The BEAM width: 0 for the hand-coded optimisations, `n` to search for each kernel's opts
/// keeping the `n` fastest candidates each round (`BEAM=n`).
pub fn beam() -> usize {
    read(&BEAM, "BEAM", 0) as usize
}

/// tinygrad's `CACHELEVEL`: 0 turns the on-disk cache of BEAM's results off; the default
/// is 2.
pub fn cachelevel() -> i64 {
    read(&CACHELEVEL, "CACHELEVEL", 2)
}

/// Whether every kernel is timed on the device: with DEBUG >= 2, or after [`set_timing`].
pub fn timing() -> bool {
    TIMING.load(Ordering::Relaxed) != 0 || debug() >= 2
}

/// Overrides `DEBUG` for the rest of the process.
pub fn set_debug(level: i64) {
    DEBUG.store(level.max(0), Ordering::Relaxed);
}

/// Overrides `NOOPT` for the rest of the process.
pub fn set_noopt(on: bool) {
    NOOPT.store(i64::from(on), Ordering::Relaxed);
}

/// Whether TinyJit captures and replays (`JIT`, on unless `JIT=0`).
pub fn jit() -> bool {
    read(&JIT, "JIT", 1) != 0
}

/// Overrides `JIT` for the rest of the process.
pub fn set_jit(on: bool) {
    JIT.store(i64::from(on), Ordering::Relaxed);
}

/// Overrides `BEAM` for the rest of the process (kernels compiled earlier keep their opts
/// for the width they were compiled at).
pub fn set_beam(width: usize) {
    BEAM.store(i64::try_from(width).unwrap_or(i64::MAX), Ordering::Relaxed);
}

/// Overrides `CACHELEVEL` for the rest of the process.
pub fn set_cachelevel(level: i64) {
    CACHELEVEL.store(level.max(0), Ordering::Relaxed);
}

/// Times every kernel on the device without printing (as DEBUG=2 does), so the counters'
/// kernel time adds up: for benchmarks.
pub fn set_timing(on: bool) {
    TIMING.store(i64::from(on), Ordering::Relaxed);
}
