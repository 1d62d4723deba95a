//! The crate's integration tests in one binary: one link and one process, so the suite builds
//! and runs in less time and disk. Tests that change process-wide state (flags, counters,
//! the interned-node table) or re-run their own binary keep binaries of their own.

#[path = "../common/mod.rs"]
mod common;

mod errors;
mod index;
mod props;
mod symbolic;
mod tracker;
mod view;
