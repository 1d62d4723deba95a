//! The crate's integration tests in one binary: one link and one process, so the suite builds
//! and runs in less time and disk. Tests that change process-wide state (flags, counters,
//! the interned-node table) or re-run their own binary keep binaries of their own.

#[path = "../common/mod.rs"]
mod common;

mod add;
mod batch;
mod device;
mod errors;
mod folding;
mod pool;
mod program;
mod readback;
mod reuse;
mod submit;
mod timing;
