//! The runtime's error type and the error-scope wrapper that turns wgpu errors into it.
//!
//! Invariants:
//! - No wgpu call made through this crate can panic on a validation, out-of-memory or
//!   internal error: calls that can fail run inside [`scoped`], which pushes one error
//!   scope per [`wgpu::ErrorFilter`] and pops them (innermost first) before returning.
//! - Errors that escape every scope (there should be none) and device loss are recorded
//!   by the handlers in `device.rs` and reported by the next synchronising call.

use std::fmt::Write as _;

/// Result alias of this crate.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// Everything that can go wrong in the wgpu runtime.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No usable adapter (or none matching `WGRAD_ADAPTER`) was found.
    #[error("no wgpu adapter: {0}")]
    NoAdapter(String),
    /// The adapter refused to create a device.
    #[error("requesting a device from adapter `{adapter}` failed: {message}")]
    RequestDevice {
        /// Name of the adapter.
        adapter: String,
        /// wgpu's message.
        message: String,
    },
    /// A WGSL shader failed to parse, validate or compile.
    ///
    /// `message` is naga's full report, which quotes the offending source line;
    /// `line`/`line_text` locate it when wgpu reports a location.
    #[error("WGSL compilation of entry point `{entry}` failed{}:\n{message}", location(*.line, .line_text))]
    Compile {
        /// Entry point that was being compiled.
        entry: String,
        /// 1-based line number of the first error, when known.
        line: Option<u32>,
        /// Text of that source line, when known.
        line_text: Option<String>,
        /// The full diagnostic.
        message: String,
    },
    /// A generated kernel's shader was rejected by the device (naga, wgpu or the driver).
    #[error("kernel `{kernel}` failed to compile: {error}")]
    Kernel {
        /// The kernel's name.
        kernel: String,
        /// The WGSL it was rendered to.
        wgsl: String,
        /// What the device said.
        error: Box<RuntimeError>,
    },
    /// A kernel's file in the `WGRAD_WGSL_DIR` folder could not be read or written.
    #[error("WGRAD_WGSL_DIR: {}: {message}", .path.display())]
    WgslDir {
        /// The kernel's file.
        path: std::path::PathBuf,
        /// What the file system said.
        message: String,
    },
    /// A buffer request exceeds what the device can allocate or bind.
    #[error("buffer of {requested} bytes exceeds the device limit of {limit} bytes")]
    BufferTooLarge {
        /// Requested size in bytes.
        requested: u64,
        /// The smaller of the max buffer size and max storage binding size.
        limit: u64,
    },
    /// A read or write touches bytes outside a buffer, or is not 4-byte aligned.
    #[error(
        "{op} of bytes {start}..{end} is invalid for a buffer of {size} bytes (writes need 4-byte alignment)"
    )]
    BadRange {
        /// `"read"` or `"write"`.
        op: &'static str,
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
        /// Logical size of the buffer.
        size: u64,
    },
    /// A dispatch has more workgroups than the device allows and cannot be folded.
    #[error(
        "dispatch of {requested:?} workgroups cannot be launched (max {max} per dimension; only x is folded, and only when y = z = 1)"
    )]
    DispatchTooLarge {
        /// Requested workgroup counts.
        requested: [u32; 3],
        /// Max workgroups per dimension.
        max: u32,
    },
    /// wgpu rejected an operation (a bug in the caller or in generated code).
    #[error("wgpu validation error in {context}: {message}")]
    Validation {
        /// What the runtime was doing.
        context: &'static str,
        /// wgpu's description.
        message: String,
    },
    /// The device ran out of memory.
    #[error("out of device memory in {context}")]
    OutOfMemory {
        /// What the runtime was doing.
        context: &'static str,
    },
    /// wgpu or the driver failed internally.
    #[error("internal wgpu error in {context}: {message}")]
    Internal {
        /// What the runtime was doing.
        context: &'static str,
        /// wgpu's description.
        message: String,
    },
    /// The device was lost; every later call fails with this error.
    #[error("device lost: {0}")]
    DeviceLost(String),
    /// Waiting for the GPU or mapping a buffer failed.
    #[error("waiting for the device failed: {0}")]
    Wait(String),
    /// The program cannot be expressed in WGSL on this device (e.g. 64-bit types without
    /// `SHADER_INT64`).
    #[error(transparent)]
    Render(#[from] wgrad_renderer_wgsl::RenderError),
    /// A launch does not fit its program: wrong buffer or variable count, a buffer too
    /// small, a variable value outside i32.
    #[error("bad launch of kernel `{kernel}`: {message}")]
    BadLaunch {
        /// The program's name.
        kernel: String,
        /// What does not fit.
        message: String,
    },
}

/// `" at line N: `text`"` when the location is known.
fn location(line: Option<u32>, text: &Option<String>) -> String {
    let mut out = String::new();
    if let Some(line) = line {
        let _ = write!(out, " at line {line}");
        if let Some(text) = text {
            let _ = write!(out, ": `{}`", text.trim());
        }
    }
    out
}

impl RuntimeError {
    /// Converts a wgpu error caught while doing `context`.
    pub(crate) fn from_wgpu(error: wgpu::Error, context: &'static str) -> Self {
        match error {
            wgpu::Error::OutOfMemory { .. } => Self::OutOfMemory { context },
            wgpu::Error::Validation { description, .. } => Self::Validation { context, message: description },
            wgpu::Error::Internal { description, .. } => Self::Internal { context, message: description },
        }
    }
}

/// Runs `f` inside out-of-memory, validation and internal error scopes and returns the
/// first error caught, or `f`'s value.
///
/// On native backends the popped futures are already resolved, so blocking on them
/// never waits for the GPU.
pub(crate) fn scoped<T>(device: &wgpu::Device, f: impl FnOnce() -> T) -> std::result::Result<T, wgpu::Error> {
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let value = f();
    let internal = pollster::block_on(internal.pop());
    let validation = pollster::block_on(validation.pop());
    let oom = pollster::block_on(oom.pop());
    match oom.or(validation).or(internal) {
        Some(error) => Err(error),
        None => Ok(value),
    }
}
