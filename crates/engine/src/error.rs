//! The engine's error type.

use std::path::PathBuf;

use thiserror::Error;
use wgrad_codegen::CodegenError;
use wgrad_dtype::DType;
use wgrad_shape::ShapeError;

/// Everything that can go wrong in the engine: opening devices, scheduling, compiling and
/// running kernels.
#[derive(Debug, Error)]
pub enum EngineError {
    /// A device backend failed (allocation, transfer, compilation or a launch); the message
    /// is the backend's.
    #[error("{0}")]
    Runtime(String),
    /// A buffer the device cannot hold: over its per-buffer limit, or no memory left. The
    /// device stays usable for smaller work.
    #[error("out of memory on {device}: {what}")]
    OutOfMemory {
        /// The device.
        device: String,
        /// What was asked for, and the limit it broke.
        what: String,
    },
    /// The device was lost (destroyed, reset, its driver failed): every later operation on it
    /// fails with this error.
    #[error("device {device} was lost: {reason}")]
    DeviceLost {
        /// The device.
        device: String,
        /// Why, as the backend reported it.
        reason: String,
    },
    /// A device rejected a generated kernel (a shader its compiler refuses). `source` is the
    /// kernel's device source (`code`), which DEBUG >= 1 prints.
    #[error("kernel {kernel} failed to compile on {device}: {message}")]
    KernelCompile {
        /// The kernel's name.
        kernel: String,
        /// The device.
        device: String,
        /// What the device's compiler said.
        message: String,
        /// The kernel's source for the device (WGSL on wgpu).
        code: String,
    },
    /// A device name that is neither `cpu` nor `wgpu[:N]`.
    #[error("unknown device `{0}` (expected cpu or wgpu[:N])")]
    UnknownDevice(String),
    /// A known device that cannot be opened here.
    #[error("device {name} is not available: {reason}")]
    DeviceUnavailable {
        /// The device asked for.
        name: String,
        /// Why it cannot be opened.
        reason: String,
    },
    /// A kernel failed to compile.
    #[error("compiling kernel {name}: {source}")]
    Codegen {
        /// The kernel's name.
        name: String,
        /// What codegen said.
        source: Box<CodegenError>,
    },
    /// Host data of the wrong size for a buffer.
    #[error("{got} bytes given for a buffer of {len} x {dtype} ({expected} bytes)")]
    DataSize {
        /// Bytes given.
        got: usize,
        /// Bytes the buffer holds.
        expected: usize,
        /// The buffer's element count.
        len: usize,
        /// The buffer's dtype.
        dtype: DType,
    },
    /// A kernel reads buffers on a device other than the one it runs on.
    #[error("a kernel on {kernel} reads a buffer on {buffer}; move it with `to` first")]
    CrossDevice {
        /// The device of the kernel's output.
        kernel: String,
        /// The device of the offending input.
        buffer: String,
    },
    /// An assign whose target is not a realized contiguous buffer.
    #[error("assign target must be a realized contiguous buffer")]
    AssignTarget,
    /// A movement op the shape algebra refused (the front end checks arguments first).
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// Capturing or replaying a jitted function failed.
    #[error(transparent)]
    Jit(#[from] crate::JitError),
    /// A lazy graph node the scheduler does not know how to realize.
    #[error("cannot schedule {0}")]
    Unschedulable(String),
    /// BEAM's on-disk cache cannot be used (searches go on without it).
    #[error("ignoring the BEAM cache {}: {reason}", path.display())]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}
