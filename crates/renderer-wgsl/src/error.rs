//! [`RenderError`]: why a program cannot be rendered, or why WGSL is invalid.

use thiserror::Error;
use wgrad_dtype::DType;
use wgrad_ops::Ops;

/// Why a program cannot be rendered to WGSL, or why WGSL does not validate.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RenderError {
    /// A dtype the target's WGSL cannot hold (f64 always; i64/u64 without `int64`).
    #[error("{name} is not supported: {reason}", name = .dtype.scalar().long_name())]
    Unsupported {
        /// The dtype.
        dtype: DType,
        /// Why, and what would make it work.
        reason: &'static str,
    },
    /// A uop the renderer does not know, or one in a place it cannot be.
    #[error("uop {index} ({op}) cannot be rendered: {reason}")]
    UnsupportedOp {
        /// Its position in `program.uops`.
        index: usize,
        /// The op.
        op: Ops,
        /// What is wrong.
        reason: &'static str,
    },
    /// A launch size that does not fit a dispatch (more than `u32::MAX` workgroups in all, or
    /// a workgroup dimension over `u32::MAX`).
    #[error("{what} {size:?} does not fit a WGSL dispatch")]
    Launch {
        /// `global size` or `local size`.
        what: &'static str,
        /// The sizes.
        size: [usize; 3],
    },
    /// naga rejected the WGSL; the message is naga's, with the offending line.
    #[error("invalid WGSL:\n{0}")]
    Invalid(String),
}
