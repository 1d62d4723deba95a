//! wgpu runtime of wgrad: runs generated kernels (codegen `Program`s rendered to WGSL) and
//! hand-written WGSL on a GPU (or Mesa lavapipe) through wgpu.
//!
//! - [`Device`]: adapter choice (`WGRAD_ADAPTER` or the best kind), the adapter's own
//!   limits ([`DeviceLimits`]) and optional features ([`DeviceFeatures`]).
//! - [`Buffer`]: storage memory from a size-bucketed pool ([`bucket_size`],
//!   [`MemoryStats`]); dropping the last handle returns it to the pool.
//! - [`Pipeline`]: a compiled entry point, cached by (source, entry point).
//! - [`Batch`]: many launches recorded into the stream's open compute pass, which batches
//!   share until a copy, upload or submit comes between; [`Device::submit`] puts it in
//!   the device's command stream (after the uploads staged before it) and submits the stream
//!   when the device is idle, coalescing batches while it is busy, through a submit thread
//!   of the device's own ([`Device::record`] leaves it for the next submit, [`Device::flush`]
//!   submits now); [`fold_workgroups`] documents
//!   how launches over 65535 workgroups are folded; bind groups are cached by (pipeline,
//!   buffers), and a [`Prepared`] launch carries its own.
//! - [`GpuProgram`]: a codegen `Program` rendered to WGSL for this device
//!   ([`Device::compile`], [`Device::target`]) and launched with [`Device::launch`].
//! - [`Device::run_timed`]: per-launch GPU times from timestamp queries.
//! - [`WGSL_DIR_ENV`] ([`Device::set_wgsl_dir`]): each kernel's WGSL written to a folder, and
//!   an edited copy there compiled in its place.
//! - Waits ([`Device::sync`], readbacks) poll without blocking for [`SPIN_WAIT`] on a GPU
//!   (yielding between polls after the first millisecond) before they block
//!   ([`Device::set_spin_wait`]); a CPU adapter blocks at once.
//! - [`RuntimeError`]: every failure, including WGSL errors with their line, out of
//!   memory and device loss; nothing in this crate lets wgpu panic.
//!
//! ```no_run
//! # fn main() -> Result<(), wgrad_runtime_wgpu::RuntimeError> {
//! use wgrad_runtime_wgpu::Device;
//! let device = Device::new()?;
//! let src = "@group(0) @binding(0) var<storage, read_write> x: array<f32>;
//! @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
//!     if (id.x < arrayLength(&x)) { x[id.x] = x[id.x] * 2.0; }
//! }";
//! let x = device.upload(&[1.0f32, 2.0, 3.0])?;
//! let mut batch = device.batch();
//! batch.dispatch(&device.pipeline(src, "main")?, &[&x], [1, 1, 1])?;
//! device.submit(batch)?;
//! assert_eq!(device.read_as::<f32>(&x)?, [2.0, 4.0, 6.0]);
//! # Ok(()) }
//! ```

mod batch;
mod bind;
mod buffer;
mod clocks;
mod device;
mod error;
mod exit;
mod info;
mod pipeline;
mod pool;
mod probe;
mod program;
mod submit;
mod submitter;
mod timing;
mod transfer;
mod wait;
mod wgsl_dir;

pub use batch::{Batch, Prepared, fold_workgroups};
pub use buffer::Buffer;
pub use clocks::{FIRST_WARM_UP, WARM};
pub use device::{ADAPTER_ENV, COOP_ENV, Device, SHADER_CHECKS_ENV, adapters};
pub use error::{Result, RuntimeError};
pub use info::{AdapterSummary, DeviceFeatures, DeviceKind, DeviceLimits};
pub use pipeline::Pipeline;
pub use pool::{MemoryStats, bucket_size};
pub use program::GpuProgram;
pub use submit::MAX_PENDING;
pub use wait::SPIN_WAIT;
pub use wgpu;
pub use wgrad_renderer_wgsl::F16Rounding;
pub use wgsl_dir::WGSL_DIR_ENV;
