//! The crate's error type.

use wgrad_dtype::DType;

use crate::{Ops, SpecViolation, UOp};

/// Everything that can go wrong in `wgrad-ops`.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// `exec_alu` got an op that is not ALU, or the wrong number of operands.
    #[error("{op} does not take {got} operands in exec_alu")]
    AluArity {
        /// The op.
        op: Ops,
        /// Operands given.
        got: usize,
    },
    /// `exec_alu` got an op undefined on the dtype (bitwise ops on floats).
    #[error("{op} is not defined on {dtype}")]
    AluDType {
        /// The op.
        op: Ops,
        /// The dtype.
        dtype: DType,
    },
    /// The verifier rejected a node.
    #[error("uop {index} ({op} {dtype}) is invalid: {violation}", op = node.op(), dtype = node.dtype())]
    Spec {
        /// Position of the node in the checked list (topological order).
        index: usize,
        /// The offending node.
        node: UOp,
        /// The rule it breaks.
        violation: SpecViolation,
    },
}
