//! Constant values and their exact casts.
//!
//! A [`ConstValue`] is what a CONST micro-op holds. [`ConstValue::cast`] gives the value a
//! kernel would hold after converting into a dtype: integers wrap to the width, floats round
//! to nearest even (f16 and bf16 through `half`), float to int truncates toward zero (NaN
//! gives 0, out-of-range values saturate to 64 bits before wrapping), anything to bool is
//! "not zero".

use std::fmt;

use half::{bf16, f16};

use crate::{DType, ScalarType};

/// A constant: a bool, a signed or unsigned integer, or a float, held exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstValue {
    /// A boolean.
    Bool(bool),
    /// A signed integer (the value of any signed dtype).
    Int(i64),
    /// An unsigned integer (the value of any unsigned dtype).
    UInt(u64),
    /// A float (the value of any float dtype, rounded to its precision).
    Float(f64),
}

impl ConstValue {
    /// The value converted into `dtype`'s element type with kernel semantics (module docs).
    pub fn cast(self, dtype: DType) -> ConstValue {
        let s = dtype.scalar();
        match s {
            ScalarType::Void | ScalarType::Bool => ConstValue::Bool(self.is_truthy()),
            s if s.is_float() => ConstValue::Float(round_float(self.to_f64(), s)),
            s if s.is_unsigned() => ConstValue::UInt(self.wrapping_bits(false) & mask(s)),
            s => ConstValue::Int(sign_extend(self.wrapping_bits(true), s.bits())),
        }
    }

    /// The value as an f64 (integers beyond 2^53 round).
    pub fn to_f64(self) -> f64 {
        match self {
            ConstValue::Bool(b) => f64::from(u8::from(b)),
            ConstValue::Int(i) => i as f64,
            ConstValue::UInt(u) => u as f64,
            ConstValue::Float(f) => f,
        }
    }

    /// The value as an i64: floats truncate toward zero, u64 wraps.
    pub fn to_i64(self) -> i64 {
        self.wrapping_bits(true) as i64
    }

    /// The value as an i128, wide enough for every integer dtype exactly (floats truncate
    /// toward zero and saturate; NaN gives 0).
    pub fn to_i128(self) -> i128 {
        match self {
            ConstValue::Bool(b) => i128::from(b),
            ConstValue::Int(i) => i128::from(i),
            ConstValue::UInt(u) => i128::from(u),
            ConstValue::Float(f) => f as i128,
        }
    }

    /// Whether the value is non-zero (NaN counts as true, as in C).
    pub fn is_truthy(self) -> bool {
        match self {
            ConstValue::Bool(b) => b,
            ConstValue::Int(i) => i != 0,
            ConstValue::UInt(u) => u != 0,
            ConstValue::Float(f) => f != 0.0,
        }
    }

    /// The bit pattern of the value cast into `dtype`, in the low bits of a u64.
    pub fn to_bits(self, dtype: DType) -> u64 {
        let s = dtype.scalar();
        match self.cast(dtype) {
            ConstValue::Bool(b) => u64::from(b),
            ConstValue::Int(i) => i as u64 & mask(s),
            ConstValue::UInt(u) => u,
            ConstValue::Float(f) => match s {
                ScalarType::Float16 => u64::from(f16::from_f64(f).to_bits()),
                ScalarType::BFloat16 => u64::from(bf16::from_f64(f).to_bits()),
                ScalarType::Float32 => u64::from((f as f32).to_bits()),
                _ => f.to_bits(),
            },
        }
    }

    /// The value whose bit pattern in `dtype` is the low bits of `bits` (a bitcast).
    pub fn from_bits(bits: u64, dtype: DType) -> ConstValue {
        let s = dtype.scalar();
        let bits = bits & mask(s);
        match s {
            ScalarType::Void | ScalarType::Bool => ConstValue::Bool(bits != 0),
            ScalarType::Float16 => ConstValue::Float(f16::from_bits(bits as u16).to_f64()),
            ScalarType::BFloat16 => ConstValue::Float(bf16::from_bits(bits as u16).to_f64()),
            ScalarType::Float32 => ConstValue::Float(f64::from(f32::from_bits(bits as u32))),
            ScalarType::Float64 => ConstValue::Float(f64::from_bits(bits)),
            s if s.is_unsigned() => ConstValue::UInt(bits),
            s => ConstValue::Int(sign_extend(bits, s.bits())),
        }
    }

    /// Two's complement bits of the value as a 64-bit integer. Floats truncate toward zero,
    /// saturating at the 64-bit range of a `signed` or unsigned target (NaN gives 0).
    fn wrapping_bits(self, signed: bool) -> u64 {
        match self {
            ConstValue::Bool(b) => u64::from(b),
            ConstValue::Int(i) => i as u64,
            ConstValue::UInt(u) => u,
            ConstValue::Float(f) if signed || f < 0.0 => f as i64 as u64,
            ConstValue::Float(f) => f as u64,
        }
    }
}

/// Mask of the low `s.bits()` bits.
fn mask(s: ScalarType) -> u64 {
    u64::MAX >> (64 - s.bits().clamp(1, 64))
}

/// The low `bits` bits of `v` read as a signed integer.
fn sign_extend(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

/// `v` rounded to nearest even at the precision of float type `s`.
fn round_float(v: f64, s: ScalarType) -> f64 {
    match s {
        ScalarType::Float16 => f16::from_f64(v).to_f64(),
        ScalarType::BFloat16 => bf16::from_f64(v).to_f64(),
        ScalarType::Float32 => f64::from(v as f32),
        _ => v,
    }
}

impl fmt::Display for ConstValue {
    /// Python-like: `True`, `-3`, `1.5`, `inf`, `nan`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstValue::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            ConstValue::Int(i) => write!(f, "{i}"),
            ConstValue::UInt(u) => write!(f, "{u}"),
            ConstValue::Float(x) if x.is_nan() => f.write_str("nan"),
            ConstValue::Float(x) if x.is_infinite() => f.write_str(if *x > 0.0 { "inf" } else { "-inf" }),
            ConstValue::Float(x) => write!(f, "{x:?}"),
        }
    }
}

macro_rules! from_impls {
    ($($t:ty => $variant:ident as $as:ty),*) => {$(
        impl From<$t> for ConstValue {
            fn from(v: $t) -> Self {
                ConstValue::$variant(v as $as)
            }
        }
    )*};
}
from_impls!(i32 => Int as i64, i64 => Int as i64, u8 => UInt as u64, u32 => UInt as u64, u64 => UInt as u64, f32 => Float as f64, f64 => Float as f64);

impl From<bool> for ConstValue {
    fn from(v: bool) -> Self {
        ConstValue::Bool(v)
    }
}
