//! tinygrad's type promotion lattice.
//!
//! Each dtype lists the dtypes it may promote to directly; the least upper bound of a set is
//! the lowest-priority dtype reachable from all of them. Signed and unsigned 64-bit integers
//! meet only at the floats, so `int64 + uint64 -> float16`, as tinygrad has it.

use crate::{DType, ScalarType};
use ScalarType::*;

/// Direct parents of `s` in the lattice.
const fn parents(s: ScalarType) -> &'static [ScalarType] {
    match s {
        Bool => &[Int8, UInt8],
        Int8 => &[Int16],
        Int16 => &[Int32],
        Int32 => &[Int64],
        Int64 | UInt64 => &[Float16, BFloat16],
        UInt8 => &[Int16, UInt16],
        UInt16 => &[Int32, UInt32],
        UInt32 => &[Int64, UInt64],
        Float16 | BFloat16 => &[Float32],
        Float32 => &[Float64],
        Float64 | Void => &[],
    }
}

/// Bit set (indexed by priority) of `s` and everything above it.
fn ancestors(s: ScalarType) -> u32 {
    parents(s).iter().fold(1 << s as u32, |acc, &p| acc | ancestors(p))
}

/// The least upper bound of `dtypes` in the promotion lattice (scalars; vectors and pointers
/// are reduced to their scalar). The empty set gives `bool`, the lattice's bottom; `void`
/// joins nothing, so a set mixing it with other types gives `void`.
pub fn least_upper_dtype(dtypes: &[DType]) -> DType {
    if dtypes.is_empty() {
        return DType::BOOL;
    }
    let common = dtypes.iter().fold(u32::MAX, |acc, d| acc & ancestors(d.scalar()));
    let lowest = ScalarType::ALL.into_iter().find(|&s| common & (1 << s as u32) != 0);
    DType::new(lowest.unwrap_or(Void))
}

/// `dt` if it is a float, else the float it promotes to with float32.
pub fn least_upper_float(dt: DType) -> DType {
    if dt.is_float() { dt.scalar_dtype() } else { least_upper_dtype(&[dt, DType::F32]) }
}

/// The dtype a sum of `dt` accumulates in: uint32+ for unsigned, int32+ for signed and bool,
/// float32+ for floats (so f16/bf16 sums accumulate in f32).
pub fn sum_acc_dtype(dt: DType) -> DType {
    let floor = if dt.is_unsigned() {
        DType::U32
    } else if dt.is_int() || dt.is_bool() {
        DType::I32
    } else {
        DType::F32
    };
    least_upper_dtype(&[dt, floor])
}
