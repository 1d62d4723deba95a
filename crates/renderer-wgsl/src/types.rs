//! How each dtype lives in WGSL: its register (value) type and its storage in a buffer.
//!
//! Registers: bool is `bool`; i8/i16 are `i32` and u8/u16 are `u32`, kept sign- or zero-extended
//! (re-wrapped after every op that can leave the range); bf16 and f16 without `caps.f16` are
//! `f32` holding a value exactly representable in the narrow format (rounded after every op);
//! f16 with `caps.f16` is `f16`; i64/u64 need `caps.int64`; f64 is never supported.
//!
//! Storage: a device buffer holds exactly the host little-endian bytes. 32-bit types, native
//! f16 and 64-bit integers are plain arrays; 8- and 16-bit types are packed into `u32` words
//! (atomic words when the kernel writes the buffer, so neighbouring lanes never race).

use wgrad_dtype::{DType, ScalarType};

use crate::{RenderError, WgslCaps};

/// A WGSL register type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Reg {
    Bool,
    I32,
    U32,
    I64,
    U64,
    F16,
    F32,
}

impl Reg {
    /// The WGSL spelling.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Reg::Bool => "bool",
            Reg::I32 => "i32",
            Reg::U32 => "u32",
            Reg::I64 => "i64",
            Reg::U64 => "u64",
            Reg::F16 => "f16",
            Reg::F32 => "f32",
        }
    }

    /// Whether this is a signed integer type.
    pub(crate) const fn is_signed(self) -> bool {
        matches!(self, Reg::I32 | Reg::I64)
    }

    /// Whether this is a 64-bit integer type.
    pub(crate) const fn is_wide(self) -> bool {
        matches!(self, Reg::I64 | Reg::U64)
    }
}

/// Refuses dtypes the target cannot hold.
pub(crate) fn check(dtype: DType, caps: &WgslCaps) -> Result<(), RenderError> {
    let refuse = |reason| Err(RenderError::Unsupported { dtype: dtype.scalar_dtype(), reason });
    match dtype.scalar() {
        ScalarType::Float64 => refuse("WGSL has no f64"),
        ScalarType::Int64 | ScalarType::UInt64 if !caps.int64 => {
            refuse("64-bit integers need the adapter's SHADER_INT64 (WgslCaps::int64)")
        }
        _ => Ok(()),
    }
}

/// The register type of a (checked) dtype; `None` for void.
pub(crate) fn reg(dtype: DType, caps: &WgslCaps) -> Option<Reg> {
    Some(match dtype.scalar() {
        ScalarType::Bool => Reg::Bool,
        ScalarType::Int8 | ScalarType::Int16 | ScalarType::Int32 => Reg::I32,
        ScalarType::UInt8 | ScalarType::UInt16 | ScalarType::UInt32 => Reg::U32,
        ScalarType::Int64 => Reg::I64,
        ScalarType::UInt64 => Reg::U64,
        ScalarType::Float16 if caps.f16 => Reg::F16,
        ScalarType::Float16 | ScalarType::BFloat16 | ScalarType::Float32 => Reg::F32,
        ScalarType::Void | ScalarType::Float64 => return None,
    })
}

/// How a buffer of a dtype is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Storage {
    /// `array<T>` of the register type.
    Native(Reg),
    /// Elements of `bits` (8 or 16) packed little-endian into `u32` words.
    Packed { bits: u32 },
}

/// The storage of a (checked) dtype.
pub(crate) fn storage(dtype: DType, caps: &WgslCaps) -> Option<Storage> {
    let reg = reg(dtype, caps)?;
    Some(match dtype.scalar().bits() {
        8 => Storage::Packed { bits: 8 },
        16 if reg != Reg::F16 => Storage::Packed { bits: 16 },
        _ => Storage::Native(reg),
    })
}

/// Bytes a device buffer of `len` elements of `dtype` takes: the host layout, rounded up to 4
/// (and at least one storage word, so an empty buffer still binds: 4 bytes, 8 for 64-bit types).
pub fn buffer_bytes(dtype: DType, len: usize) -> usize {
    let itemsize = dtype.scalar().itemsize();
    (len * itemsize).max(itemsize.max(4)).next_multiple_of(4)
}
