//! The crate's integration tests in one binary: one link and one process, so the suite builds
//! and runs in less time and disk. Tests that change process-wide state (flags, counters,
//! the interned-node table) or re-run their own binary keep binaries of their own.

#[path = "../common/mod.rs"]
mod common;

mod api;
mod bad_input;
mod gguf;
mod golden;
mod golden_spatial;
mod gradient;
mod indexing;
mod jit;
mod linalg;
mod math;
mod mnist;
mod newton_schulz;
mod nn;
mod nn_functional;
mod random;
mod scan;
mod schedule;
mod shape;
mod sort;
mod spatial;
mod state;
mod threads;
mod torch_load;
