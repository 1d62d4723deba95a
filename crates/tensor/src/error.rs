//! The tensor front end's error type: every bad argument names the shapes and dtypes
//! involved; nothing here panics on user input.

use thiserror::Error;
use wgrad_dtype::DType;
use wgrad_engine::{DeviceName, EngineError};
use wgrad_ops::Ops;

/// A shape and dtype, printed as `(2, 3) float32`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operand {
    /// The operand's shape.
    pub shape: Vec<usize>,
    /// The operand's dtype.
    pub dtype: DType,
}

impl std::fmt::Display for Operand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", dims(&self.shape), self.dtype.scalar().long_name())
    }
}

/// Dims like a Python tuple: `(2, 3)`, `(4,)`, `()`.
pub(crate) fn dims(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!("({})", shape.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// Everything that can go wrong building, moving or reading tensors.
#[derive(Debug, Error)]
pub enum TensorError {
    /// Two operands whose shapes do not broadcast.
    #[error("{op}: cannot broadcast {lhs} with {rhs}")]
    Broadcast {
        /// The op.
        op: &'static str,
        /// The left operand.
        lhs: Box<Operand>,
        /// The right operand.
        rhs: Box<Operand>,
    },
    /// An op not defined on its operands' dtypes.
    #[error("{op} is not defined on {lhs} and {rhs}")]
    DType {
        /// The op.
        op: &'static str,
        /// The left (or only) operand.
        lhs: Box<Operand>,
        /// The right operand (the left again for unary ops).
        rhs: Box<Operand>,
    },
    /// Operands on different devices.
    #[error("{op}: operands on {lhs} and {rhs}; move one with `to`")]
    Device {
        /// The op.
        op: &'static str,
        /// The left operand's device.
        lhs: DeviceName,
        /// The right operand's device.
        rhs: DeviceName,
    },
    /// An axis outside the tensor's dims.
    #[error("{op}: axis {axis} is out of range for {operand}")]
    Axis {
        /// The op.
        op: &'static str,
        /// The axis given.
        axis: isize,
        /// The tensor.
        operand: Box<Operand>,
    },
    /// A movement op whose argument does not fit the shape.
    #[error("{op}: {arg} does not fit {operand}")]
    Movement {
        /// The op.
        op: &'static str,
        /// The argument, as written.
        arg: String,
        /// The tensor.
        operand: Box<Operand>,
    },
    /// A matmul whose inner dims differ (or a scalar operand).
    #[error("matmul: cannot multiply {lhs} by {rhs}")]
    Matmul {
        /// The left operand.
        lhs: Box<Operand>,
        /// The right operand.
        rhs: Box<Operand>,
    },
    /// An assign of a value that differs from its target in shape, dtype or device.
    #[error("assign: cannot write {value} into {target}")]
    Assign {
        /// The tensor written to.
        target: Box<Operand>,
        /// The value.
        value: Box<Operand>,
    },
    /// Host data whose length is not the shape's element count.
    #[error("{len} values given for shape {}", dims(.shape))]
    DataLength {
        /// Values given.
        len: usize,
        /// The shape asked for.
        shape: Vec<usize>,
    },
    /// Reading a tensor as the wrong element type.
    #[error("reading {operand} as {asked}")]
    ElementType {
        /// The tensor.
        operand: Box<Operand>,
        /// The element type asked for.
        asked: DType,
    },
    /// An op that needs a one-element tensor (`item`, `backward`).
    #[error("{op} needs a scalar, got {operand}")]
    NotScalar {
        /// The op.
        op: &'static str,
        /// The tensor.
        operand: Box<Operand>,
    },
    /// An op over a list of tensors given none.
    #[error("{0} needs at least one tensor")]
    NoTensors(&'static str),
    /// `backward` reached an op that has no gradient rule.
    #[error("no gradient rule for {0}")]
    NoGradient(Ops),
    /// `backward` on a value that no tensor requiring a gradient contributes to.
    #[error("backward: no tensor that requires grad contributes to this value")]
    NothingRequiresGrad,
    /// The engine failed (a device, a kernel, a schedule).
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Result alias of this crate.
pub type Result<T, E = TensorError> = std::result::Result<T, E>;

/// The value of an op on operands that always combine (one shape, one device, dtypes that
/// meet): only a bug in this crate can make it fail.
pub(crate) fn ok<T>(r: Result<T>) -> T {
    r.unwrap_or_else(|e| unreachable!("operands built to combine did not: {e}"))
}
