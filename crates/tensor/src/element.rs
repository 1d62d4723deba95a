//! Host element types: the Rust types tensors are built from and read back as.

use wgrad_dtype::{ConstValue, DType};

/// A Rust type with a tensor dtype: its values convert to and from constants exactly.
pub trait Element: Copy + Send + Sync + 'static {
    /// The dtype of tensors of this element type.
    const DTYPE: DType;
    /// The value as a constant.
    fn to_const(self) -> ConstValue;
    /// The value of a constant of [`Element::DTYPE`].
    fn from_const(c: ConstValue) -> Self;
}

macro_rules! element {
    ($($t:ty => $dtype:ident, |$c:ident| $from:expr);* $(;)?) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            fn to_const(self) -> ConstValue {
                ConstValue::from(self)
            }
            fn from_const($c: ConstValue) -> Self {
                $from
            }
        }
    )*};
}

element! {
    f32 => F32, |c| c.to_f64() as f32;
    f64 => F64, |c| c.to_f64();
    i32 => I32, |c| c.to_i64() as i32;
    i64 => I64, |c| c.to_i64();
    u32 => U32, |c| c.to_i128() as u32;
    u64 => U64, |c| c.to_i128() as u64;
    bool => BOOL, |c| c.is_truthy();
}

impl Element for u8 {
    const DTYPE: DType = DType::U8;
    fn to_const(self) -> ConstValue {
        ConstValue::UInt(u64::from(self))
    }
    fn from_const(c: ConstValue) -> Self {
        c.to_i128() as u8
    }
}

/// `values` as little-endian bytes of `dtype`.
pub(crate) fn to_bytes(values: impl IntoIterator<Item = ConstValue>, dtype: DType) -> Vec<u8> {
    let size = dtype.itemsize();
    values.into_iter().flat_map(|v| v.to_bits(dtype).to_le_bytes().into_iter().take(size)).collect()
}

/// Little-endian bytes of `dtype` as constants.
pub(crate) fn from_bytes(bytes: &[u8], dtype: DType) -> Vec<ConstValue> {
    bytes
        .chunks_exact(dtype.itemsize())
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            ConstValue::from_bits(u64::from_le_bytes(b), dtype)
        })
        .collect()
}
