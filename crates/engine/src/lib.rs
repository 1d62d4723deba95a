//! Engine of wgrad: devices, scheduling lazy graphs into fused kernels, realize, memory
//! planning, the method cache, counters and DEBUG output.
//!
//! A tensor is a lazy graph of UOps ([`lazy`]). [`prepare`]/[`realize`] cut the graph into
//! kernels ([`schedule`]), compile each kernel once per device, give new buffers memory
//! (reusing scratch memory within a schedule) and launch a device's kernels together.
//! Data moves in and out through [`upload`] and [`download`]. With `BEAM=n` each kernel's
//! opts come from a search on its device, cached on disk ([`beam`]). [`capture`] records what
//! realizes run so a [`CapturedJit`] can replay it with new inputs (TinyJit's engine half).

pub mod beam;
mod buffers;
mod cache;
mod counters;
pub mod device;
mod error;
pub mod flags;
mod jit;
pub mod lazy;
mod memory;
mod realize;
mod realized;
pub mod schedule;
mod shapes;

pub use buffers::{alloc, download, is_shared, upload};
pub use cache::cached_kernels;
pub use counters::{Counters, counters, reset_counters};
pub use device::{Backend, CompiledProgram, Created, DeviceBuffer, DeviceName, Graph, Held, Launch, Swap};
pub use error::EngineError;
pub use jit::{Capture, CapturedJit, JitError, JitInput, capture};
pub use memory::MemoryPlan;
pub use realize::{Realization, prepare, realize};
pub use realized::resolve;
pub use schedule::{
    ItemKind, KernelLimits, LONG_ROW_MULTIPLE, LONG_ROWS, ROW_REDUCE, Schedule, ScheduleItem, schedule_with,
};
pub use shapes::{Shapes, numel};
