//! Scalar types, address spaces and the [`DType`] value built from them.
//!
//! Invariants: `count >= 1`; a pointer's scalar is never `Void`-sized data in kernels;
//! `scalar_dtype()` of any dtype is a plain scalar (count 1, no pointer).

use std::fmt;
use std::str::FromStr;

use crate::{ConstValue, DTypeError};

/// An element type, ordered by tinygrad's promotion priority (`Void` lowest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    /// No value: the type of stores, sinks and control ops.
    Void,
    /// A boolean, stored as one byte.
    Bool,
    /// Signed 8-bit integer.
    Int8,
    /// Unsigned 8-bit integer.
    UInt8,
    /// Signed 16-bit integer.
    Int16,
    /// Unsigned 16-bit integer.
    UInt16,
    /// Signed 32-bit integer.
    Int32,
    /// Unsigned 32-bit integer.
    UInt32,
    /// Signed 64-bit integer.
    Int64,
    /// Unsigned 64-bit integer.
    UInt64,
    /// IEEE half precision.
    Float16,
    /// bfloat16: the top half of an f32.
    BFloat16,
    /// IEEE single precision.
    Float32,
    /// IEEE double precision.
    Float64,
}

impl ScalarType {
    /// Every scalar type, in priority order.
    pub const ALL: [ScalarType; 14] = [
        Self::Void,
        Self::Bool,
        Self::Int8,
        Self::UInt8,
        Self::Int16,
        Self::UInt16,
        Self::Int32,
        Self::UInt32,
        Self::Int64,
        Self::UInt64,
        Self::Float16,
        Self::BFloat16,
        Self::Float32,
        Self::Float64,
    ];

    /// Size of one element in bytes (0 for `Void`).
    pub const fn itemsize(self) -> usize {
        match self {
            Self::Void => 0,
            Self::Bool | Self::Int8 | Self::UInt8 => 1,
            Self::Int16 | Self::UInt16 | Self::Float16 | Self::BFloat16 => 2,
            Self::Int32 | Self::UInt32 | Self::Float32 => 4,
            Self::Int64 | Self::UInt64 | Self::Float64 => 8,
        }
    }

    /// tinygrad's name of the type (`"float"` for f32 as in `dtypes.float`, see [`DType::name`]).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Void => "void",
            Self::Bool => "bool",
            Self::Int8 => "char",
            Self::UInt8 => "uchar",
            Self::Int16 => "short",
            Self::UInt16 => "ushort",
            Self::Int32 => "int",
            Self::UInt32 => "uint",
            Self::Int64 => "long",
            Self::UInt64 => "ulong",
            Self::Float16 => "half",
            Self::BFloat16 => "__bf16",
            Self::Float32 => "float",
            Self::Float64 => "double",
        }
    }

    /// The PyTorch/numpy-style name (`"float32"`, `"int8"`, ...).
    pub const fn long_name(self) -> &'static str {
        match self {
            Self::Void => "void",
            Self::Bool => "bool",
            Self::Int8 => "int8",
            Self::UInt8 => "uint8",
            Self::Int16 => "int16",
            Self::UInt16 => "uint16",
            Self::Int32 => "int32",
            Self::UInt32 => "uint32",
            Self::Int64 => "int64",
            Self::UInt64 => "uint64",
            Self::Float16 => "float16",
            Self::BFloat16 => "bfloat16",
            Self::Float32 => "float32",
            Self::Float64 => "float64",
        }
    }

    /// Whether this is a floating-point type.
    pub const fn is_float(self) -> bool {
        matches!(self, Self::Float16 | Self::BFloat16 | Self::Float32 | Self::Float64)
    }

    /// Whether this is an integer type, signed or unsigned (bool is not).
    pub const fn is_int(self) -> bool {
        matches!(
            self,
            Self::Int8
                | Self::UInt8
                | Self::Int16
                | Self::UInt16
                | Self::Int32
                | Self::UInt32
                | Self::Int64
                | Self::UInt64
        )
    }

    /// Whether this is an unsigned integer type.
    pub const fn is_unsigned(self) -> bool {
        matches!(self, Self::UInt8 | Self::UInt16 | Self::UInt32 | Self::UInt64)
    }

    /// Width in bits of one element.
    pub const fn bits(self) -> u32 {
        self.itemsize() as u32 * 8
    }
}

/// Where a pointer points: device memory, workgroup memory or registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AddrSpace {
    /// A device buffer, visible to every invocation.
    Global,
    /// Workgroup-shared memory.
    Local,
    /// Private registers of one invocation (accumulators).
    Reg,
}

/// A pointer part of a dtype: address space and, when known, the element count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Pointer {
    space: AddrSpace,
    size: Option<usize>,
}

/// A data type: a scalar type, a vector width (`count`) and optionally a pointer to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DType {
    scalar: ScalarType,
    count: u32,
    ptr: Option<Pointer>,
}

impl DType {
    /// No value.
    pub const VOID: Self = Self::new(ScalarType::Void);
    /// Boolean.
    pub const BOOL: Self = Self::new(ScalarType::Bool);
    /// Signed 8-bit integer.
    pub const I8: Self = Self::new(ScalarType::Int8);
    /// Unsigned 8-bit integer.
    pub const U8: Self = Self::new(ScalarType::UInt8);
    /// Signed 16-bit integer.
    pub const I16: Self = Self::new(ScalarType::Int16);
    /// Unsigned 16-bit integer.
    pub const U16: Self = Self::new(ScalarType::UInt16);
    /// Signed 32-bit integer.
    pub const I32: Self = Self::new(ScalarType::Int32);
    /// Unsigned 32-bit integer.
    pub const U32: Self = Self::new(ScalarType::UInt32);
    /// Signed 64-bit integer.
    pub const I64: Self = Self::new(ScalarType::Int64);
    /// Unsigned 64-bit integer.
    pub const U64: Self = Self::new(ScalarType::UInt64);
    /// IEEE half.
    pub const F16: Self = Self::new(ScalarType::Float16);
    /// bfloat16.
    pub const BF16: Self = Self::new(ScalarType::BFloat16);
    /// IEEE single.
    pub const F32: Self = Self::new(ScalarType::Float32);
    /// IEEE double.
    pub const F64: Self = Self::new(ScalarType::Float64);

    /// The scalar dtype of `scalar`.
    pub const fn new(scalar: ScalarType) -> Self {
        Self { scalar, count: 1, ptr: None }
    }

    /// The default float dtype (float32), as `dtypes.default_float`.
    pub const fn default_float() -> Self {
        Self::F32
    }

    /// The default int dtype (int32), as `dtypes.default_int`.
    pub const fn default_int() -> Self {
        Self::I32
    }

    /// The element type.
    pub const fn scalar(self) -> ScalarType {
        self.scalar
    }

    /// Vector width: 1 for scalars.
    pub const fn count(self) -> u32 {
        self.count
    }

    /// A vector of `n` of this dtype's scalar (keeping a pointer, if any). `vec(1)` is the scalar.
    pub const fn vec(self, n: u32) -> Self {
        assert!(n >= 1, "vector width must be at least 1");
        Self { count: n, ..self }
    }

    /// The plain scalar: no vector, no pointer.
    pub const fn scalar_dtype(self) -> Self {
        Self::new(self.scalar)
    }

    /// Whether this is a vector (count > 1).
    pub const fn is_vector(self) -> bool {
        self.count > 1
    }

    /// A pointer to this dtype in `space`, size unknown.
    pub const fn ptr(self, space: AddrSpace) -> Self {
        Self { ptr: Some(Pointer { space, size: None }), ..self }
    }

    /// A pointer to `size` elements of this dtype in `space`.
    pub const fn ptr_sized(self, space: AddrSpace, size: usize) -> Self {
        Self { ptr: Some(Pointer { space, size: Some(size) }), ..self }
    }

    /// Whether this is a pointer dtype.
    pub const fn is_ptr(self) -> bool {
        self.ptr.is_some()
    }

    /// The address space of a pointer dtype.
    pub fn addr_space(self) -> Option<AddrSpace> {
        self.ptr.map(|p| p.space)
    }

    /// The element count of a sized pointer dtype.
    pub fn ptr_size(self) -> Option<usize> {
        self.ptr.and_then(|p| p.size)
    }

    /// The pointee: drops the pointer, keeps the vector width.
    pub const fn base(self) -> Self {
        Self { ptr: None, ..self }
    }

    /// Bytes of one value (pointers are 8 bytes).
    pub const fn itemsize(self) -> usize {
        if self.ptr.is_some() { 8 } else { self.scalar.itemsize() * self.count as usize }
    }

    /// Whether the element type is floating point.
    pub const fn is_float(self) -> bool {
        self.scalar.is_float()
    }

    /// Whether the element type is an integer (signed or unsigned).
    pub const fn is_int(self) -> bool {
        self.scalar.is_int()
    }

    /// Whether the element type is an unsigned integer.
    pub const fn is_unsigned(self) -> bool {
        self.scalar.is_unsigned()
    }

    /// Whether the element type is bool.
    pub const fn is_bool(self) -> bool {
        matches!(self.scalar, ScalarType::Bool)
    }

    /// tinygrad's short name of the element type (`float`, `half`, `uchar`, ...).
    pub const fn name(self) -> &'static str {
        self.scalar.name()
    }

    /// Smallest value of the element type (`-inf` for floats, `false` for bool).
    pub fn min_value(self) -> ConstValue {
        match self.scalar {
            s if s.is_float() => ConstValue::Float(f64::NEG_INFINITY),
            s if s.is_unsigned() => ConstValue::UInt(0),
            s if s.is_int() => ConstValue::Int(i64::MIN >> (64 - s.bits())),
            _ => ConstValue::Bool(false),
        }
    }

    /// Largest value of the element type (`inf` for floats, `true` for bool).
    pub fn max_value(self) -> ConstValue {
        match self.scalar {
            s if s.is_float() => ConstValue::Float(f64::INFINITY),
            s if s.is_unsigned() => ConstValue::UInt(u64::MAX >> (64 - s.bits())),
            s if s.is_int() => ConstValue::Int(i64::MAX >> (64 - s.bits())),
            _ => ConstValue::Bool(true),
        }
    }
}

impl fmt::Display for DType {
    /// `dtypes.float`, `dtypes.float.vec(4)`, `dtypes.float.ptr()` / `.ptr(local=True)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dtypes.{}", self.scalar.name())?;
        if self.count > 1 {
            write!(f, ".vec({})", self.count)?;
        }
        match self.ptr {
            None => Ok(()),
            Some(Pointer { space, size }) => {
                let size = size.map_or(String::new(), |s| s.to_string());
                match space {
                    AddrSpace::Global => write!(f, ".ptr({size})"),
                    AddrSpace::Local => write!(f, ".ptr({size}, local)"),
                    AddrSpace::Reg => write!(f, ".ptr({size}, reg)"),
                }
            }
        }
    }
}

impl FromStr for DType {
    type Err = DTypeError;

    /// Parses a scalar dtype by its long (`float32`), short (`float`, `half`) or torch alias.
    fn from_str(s: &str) -> Result<Self, DTypeError> {
        let scalar = match s {
            "bfloat16" | "bf16" | "__bf16" => ScalarType::BFloat16,
            "float16" | "half" | "f16" => ScalarType::Float16,
            "float32" | "float" | "f32" => ScalarType::Float32,
            "float64" | "double" | "f64" => ScalarType::Float64,
            "int8" | "char" | "i8" => ScalarType::Int8,
            "int16" | "short" | "i16" => ScalarType::Int16,
            "int32" | "int" | "i32" => ScalarType::Int32,
            "int64" | "long" | "i64" => ScalarType::Int64,
            "uint8" | "uchar" | "u8" => ScalarType::UInt8,
            "uint16" | "ushort" | "u16" => ScalarType::UInt16,
            "uint32" | "uint" | "u32" => ScalarType::UInt32,
            "uint64" | "ulong" | "u64" => ScalarType::UInt64,
            "bool" => ScalarType::Bool,
            "void" => ScalarType::Void,
            _ => return Err(DTypeError::UnknownName(s.to_string())),
        };
        Ok(Self::new(scalar))
    }
}
