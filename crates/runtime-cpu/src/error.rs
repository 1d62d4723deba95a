//! The crate's error type.

use std::fmt;

use wgrad_dtype::DType;
use wgrad_ops::{Ops, OpsError};

/// A memory an access went to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Memory {
    /// The kernel buffer argument in this slot.
    Global(usize),
    /// The workgroup memory of this name.
    Local(String),
}

impl fmt::Display for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Memory::Global(slot) => write!(f, "buffer {slot}"),
            Memory::Local(name) => write!(f, "local {name}"),
        }
    }
}

/// Everything that can go wrong running a program on the CPU.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    /// The program uses a uop the interpreter does not run (vectors, tensor cores...).
    #[error("uop {index} ({op}) is not supported by the CPU interpreter")]
    Unsupported {
        /// Position in the program.
        index: usize,
        /// The op.
        op: Ops,
    },
    /// A source of a uop is not earlier in the program.
    #[error("uop {index} reads a value not computed before it")]
    Order {
        /// Position in the program.
        index: usize,
    },
    /// Fewer buffers than the highest slot the program uses needs.
    #[error("the program takes at least {expected} buffers, got {got}")]
    BufferCount {
        /// One more than the highest slot the program uses.
        expected: usize,
        /// Buffers given.
        got: usize,
    },
    /// A buffer of the wrong dtype.
    #[error("buffer {slot} holds {got}, the program expects {expected}")]
    BufferDType {
        /// The argument slot.
        slot: usize,
        /// The program's element dtype.
        expected: DType,
        /// The buffer's.
        got: DType,
    },
    /// A buffer of the wrong length.
    #[error("buffer {slot} has {got} elements, the program expects {expected}")]
    BufferSize {
        /// The argument slot.
        slot: usize,
        /// The program's element count.
        expected: usize,
        /// The buffer's.
        got: usize,
    },
    /// No value given for a variable of the program.
    #[error("no value for variable {name}")]
    MissingVariable {
        /// The variable's name.
        name: String,
    },
    /// A variable's value outside its bounds.
    #[error("variable {name} = {value} is outside [{min}, {max}]")]
    VariableRange {
        /// The variable's name.
        name: String,
        /// The value given.
        value: i64,
        /// Its lower bound.
        min: i64,
        /// Its upper bound.
        max: i64,
    },
    /// A valid load or store outside its memory.
    #[error("index {index} is out of bounds of {buffer} ({size} elements)")]
    OutOfBounds {
        /// The memory accessed.
        buffer: Memory,
        /// The element index.
        index: i64,
        /// The memory's element count.
        size: usize,
    },
    /// Threads of one workgroup stopped at different barriers (or some finished).
    #[error("the threads of workgroup {group} diverge at a barrier")]
    BarrierDivergence {
        /// The linear workgroup number.
        group: usize,
    },
    /// An ALU op failed (an op undefined on its dtype).
    #[error(transparent)]
    Alu(#[from] OpsError),
}
