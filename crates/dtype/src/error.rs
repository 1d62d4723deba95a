//! Errors of the dtype crate.

use thiserror::Error;

/// What can go wrong when naming or building a dtype.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DTypeError {
    /// The name matches no dtype (`"float32"`, `"half"`, `"int8"`, ... are known).
    #[error("unknown dtype name `{0}`")]
    UnknownName(String),
}
