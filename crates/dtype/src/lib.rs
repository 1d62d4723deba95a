//! Data types of wgrad: scalar, vector and pointer dtypes, promotion, constants and exact casts.
//!
//! - [`DType`] is a small `Copy` value: a [`ScalarType`], a vector width and, for codegen,
//!   an optional pointer (address space and element count).
//! - [`least_upper_dtype`] follows tinygrad's promotion lattice, so `int8 + uint8 -> int16`
//!   and `int64 + float16 -> float16`.
//! - [`ConstValue`] holds a constant exactly and casts it into any dtype with the semantics
//!   the kernels have: integers wrap, floats round to nearest even, float to int truncates.

mod constant;
mod dtype;
mod error;
mod promotion;

pub use constant::ConstValue;
pub use dtype::{AddrSpace, DType, ScalarType};
pub use error::DTypeError;
pub use promotion::{least_upper_dtype, least_upper_float, sum_acc_dtype};
