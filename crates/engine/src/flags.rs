//! The environment flags the engine reads, as tinygrad has them: `DEBUG=0..6` and
//! `NOOPT=1`. Read once from the environment; tests and tools may override them.

use std::sync::atomic::{AtomicI64, Ordering};

static DEBUG: AtomicI64 = AtomicI64::new(-1);
static NOOPT: AtomicI64 = AtomicI64::new(-1);

fn read(flag: &AtomicI64, name: &str) -> i64 {
    match flag.load(Ordering::Relaxed) {
        -1 => {
            let v = std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0).max(0);
            flag.store(v, Ordering::Relaxed);
            v
        }
        v => v,
    }
}

/// The DEBUG level: 1 devices and kernel counts, 2 a line per kernel, 3 opts and ASTs,
/// 4 device source, 5 lowered uops, 6 the linear program.
pub fn debug() -> i64 {
    read(&DEBUG, "DEBUG")
}

/// Whether kernels skip the hand-coded optimisations (`NOOPT=1`).
pub fn noopt() -> bool {
    read(&NOOPT, "NOOPT") != 0
}

/// Overrides `DEBUG` for the rest of the process.
pub fn set_debug(level: i64) {
    DEBUG.store(level.max(0), Ordering::Relaxed);
}

/// Overrides `NOOPT` for the rest of the process.
pub fn set_noopt(on: bool) {
    NOOPT.store(i64::from(on), Ordering::Relaxed);
}
