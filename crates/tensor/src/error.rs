//! The tensor front end's error type: every bad argument names the shapes and dtypes
//! involved; nothing here panics on user input.

use thiserror::Error;
use wgrad_dtype::DType;
use wgrad_engine::{DeviceName, EngineError, JitError};
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
    /// An axis named twice in one op's axis list.
    #[error("{op}: axis {axis} is repeated for {operand}")]
    RepeatedAxis {
        /// The op.
        op: &'static str,
        /// The axis given the second time.
        axis: isize,
        /// The tensor.
        operand: Box<Operand>,
    },
    /// An op that needs at least one element along an axis given an empty one (`argmax`).
    #[error("{op}: axis {axis} of {operand} is empty")]
    EmptyAxis {
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
    /// Operands whose shapes do not fit one op together (a conv's weight, gather's index).
    #[error("{op}: {lhs} and {rhs} do not fit: {why}")]
    Shapes {
        /// The op.
        op: &'static str,
        /// The left (or indexed) operand.
        lhs: Box<Operand>,
        /// The right operand (weight, index).
        rhs: Box<Operand>,
        /// What does not fit.
        why: String,
    },
    /// A formula or index string that does not parse (einsum, `Index::parse`).
    #[error("{op}: cannot parse {text:?}: {why}")]
    Parse {
        /// The op.
        op: &'static str,
        /// The text given.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// A number outside the values an op accepts (a probability, a range, a group count).
    #[error("{op}: {why}")]
    Argument {
        /// The op.
        op: &'static str,
        /// Which argument, its value, and what it must be.
        why: String,
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
    /// `load_state_dict` given no tensor for one of the model's state names.
    #[error("load_state_dict: no tensor named `{key}` in the state dict")]
    MissingState {
        /// The state name.
        key: String,
    },
    /// `load_state_dict` given a tensor whose shape differs from the model's.
    #[error("load_state_dict: `{key}` is {} in the model but {} in the state dict", dims(.expected), dims(.given))]
    StateShape {
        /// The state name.
        key: String,
        /// The model's shape.
        expected: Vec<usize>,
        /// The state dict's shape.
        given: Vec<usize>,
    },
    /// A file that cannot be opened, mapped or written.
    #[error("{}: {source}", .path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A file that is not valid safetensors (header, offsets, sizes).
    #[error("{}: not a valid safetensors file: {source}", .path.display())]
    Safetensors {
        /// The file.
        path: std::path::PathBuf,
        /// What the safetensors crate found.
        source: safetensors::SafeTensorError,
    },
    /// A safetensors tensor of a dtype wgrad has no counterpart for (fp8, complex, ...).
    #[error("{}: tensor `{key}` has dtype {dtype}, which wgrad cannot hold", .path.display())]
    FileDType {
        /// The file.
        path: std::path::PathBuf,
        /// The tensor's name.
        key: String,
        /// The file's dtype name.
        dtype: String,
    },
    /// A file that is not a valid PyTorch checkpoint (or one that names code to run).
    #[error("{}: not a valid PyTorch checkpoint: {source}", .path.display())]
    Torch {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        source: crate::nn::state::TorchError,
    },
    /// A file that is not a valid GGUF file.
    #[error("{}: not a valid GGUF file: {source}", .path.display())]
    Gguf {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        source: crate::nn::state::GgufError,
    },
    /// A jitted function called with the wrong inputs, or that cannot be captured.
    #[error(transparent)]
    Jit(#[from] JitError),
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
