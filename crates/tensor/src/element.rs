//! Host element types: the Rust types tensors are built from and read back as.

use std::borrow::Cow;

use wgrad_dtype::{ConstValue, DType};

/// A Rust type with a tensor dtype: its values convert to and from constants exactly, and
/// slices of them to and from the device's bytes (little-endian elements of the dtype) without
/// going through constants: an upload from a little-endian host reads the slice's own memory,
/// and a readback costs a copy.
pub trait Element: Copy + Send + Sync + 'static {
    /// The dtype of tensors of this element type.
    const DTYPE: DType;
    /// The value as a constant.
    fn to_const(self) -> ConstValue;
    /// The value of a constant of [`Element::DTYPE`].
    fn from_const(c: ConstValue) -> Self;
    /// `values` as little-endian bytes of [`Element::DTYPE`]: their own memory on a
    /// little-endian host.
    fn to_le_bytes(values: &[Self]) -> Cow<'_, [u8]>;
    /// The elements of `bytes`, little-endian elements of [`Element::DTYPE`] (a partial one at
    /// the end is ignored).
    fn from_le_bytes(bytes: &[u8]) -> Vec<Self>;
}

/// Implements [`Element`] for a primitive: `$bits` maps a value to the primitive whose
/// little-endian bytes the device holds, `$back` such a primitive back.
macro_rules! element {
    ($($t:ty => $dtype:ident as $raw:ty, |$c:ident| $from:expr, |$v:ident| $bits:expr, |$r:ident| $back:expr);* $(;)?) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            fn to_const(self) -> ConstValue {
                ConstValue::from(self)
            }
            fn from_const($c: ConstValue) -> Self {
                $from
            }
            fn to_le_bytes(values: &[Self]) -> Cow<'_, [u8]> {
                // a value's memory is its device bytes on a little-endian host (a bool is one
                // byte, 0 or 1): copying them cost MiniLM's three token uploads about 30 us
                if cfg!(target_endian = "little") {
                    return Cow::Borrowed(bytemuck::cast_slice(values));
                }
                // fixed-size chunks of a zeroed buffer, so the loop vectorizes (pushing each
                // element's bytes made three uploads of 16,384 elements take 79 us, not 32)
                const SIZE: usize = std::mem::size_of::<$raw>();
                let mut out = vec![0u8; values.len() * SIZE];
                for (chunk, &$v) in out.chunks_exact_mut(SIZE).zip(values) {
                    chunk.copy_from_slice(&<$raw>::to_le_bytes($bits));
                }
                Cow::Owned(out)
            }
            fn from_le_bytes(bytes: &[u8]) -> Vec<Self> {
                const SIZE: usize = std::mem::size_of::<$raw>();
                bytes
                    .chunks_exact(SIZE)
                    .map(|chunk| {
                        let mut raw = [0u8; SIZE];
                        raw.copy_from_slice(chunk);
                        let $r = <$raw>::from_le_bytes(raw);
                        $back
                    })
                    .collect()
            }
        }
    )*};
}

element! {
    f32 => F32 as f32, |c| c.to_f64() as f32, |v| v, |r| r;
    f64 => F64 as f64, |c| c.to_f64(), |v| v, |r| r;
    i32 => I32 as i32, |c| c.to_i64() as i32, |v| v, |r| r;
    i64 => I64 as i64, |c| c.to_i64(), |v| v, |r| r;
    u32 => U32 as u32, |c| c.to_i128() as u32, |v| v, |r| r;
    u64 => U64 as u64, |c| c.to_i128() as u64, |v| v, |r| r;
    u8 => U8 as u8, |c| c.to_i128() as u8, |v| v, |r| r;
    bool => BOOL as u8, |c| c.is_truthy(), |v| u8::from(v), |r| r != 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of `values` through constants, as the device's dtype stores them.
    fn through_constants<T: Element>(values: &[T]) -> Vec<u8> {
        let size = T::DTYPE.itemsize();
        values
            .iter()
            .flat_map(|v| v.to_const().to_bits(T::DTYPE).to_le_bytes().into_iter().take(size))
            .collect()
    }

    /// Bytes and values agree with the constants' conversion both ways.
    fn round_trip<T: Element + PartialEq + std::fmt::Debug>(values: &[T]) {
        let bytes = T::to_le_bytes(values);
        assert_eq!(bytes, through_constants(values), "{}", T::DTYPE);
        let back = T::from_le_bytes(&bytes);
        let via_constants: Vec<T> = bytes
            .chunks_exact(T::DTYPE.itemsize())
            .map(|c| {
                let mut b = [0u8; 8];
                b[..c.len()].copy_from_slice(c);
                T::from_const(ConstValue::from_bits(u64::from_le_bytes(b), T::DTYPE))
            })
            .collect();
        assert_eq!(back, via_constants, "{}", T::DTYPE);
        assert_eq!(back, values, "{}", T::DTYPE);
    }

    #[test]
    fn bytes_match_the_constants_conversion() {
        round_trip(&[0.0f32, -0.0, 1.5, -3.25e-41, f32::MAX, f32::INFINITY, f32::NEG_INFINITY]);
        round_trip(&[0.0f64, -2.5e-310, 1e300, f64::NEG_INFINITY]);
        round_trip(&[0i32, -1, i32::MIN, i32::MAX, 123_456]);
        round_trip(&[0i64, -1, i64::MIN, i64::MAX]);
        round_trip(&[0u32, 1, u32::MAX]);
        round_trip(&[0u64, u64::MAX, 1 << 40]);
        round_trip(&[0u8, 7, 255]);
        round_trip(&[true, false, true]);
    }

    #[test]
    fn a_little_endian_host_uploads_a_slice_without_copying_it() {
        let values = [1i32, -2, 3];
        let bytes = <i32 as Element>::to_le_bytes(&values);
        assert_eq!(matches!(bytes, Cow::Borrowed(_)), cfg!(target_endian = "little"));
        let flags = [true, false];
        assert_eq!(<bool as Element>::to_le_bytes(&flags).as_ref(), [1u8, 0]);
    }

    #[test]
    fn nan_bits_survive() {
        let nan = f32::from_bits(0x7fc0_1234);
        let back = <f32 as Element>::from_le_bytes(&<f32 as Element>::to_le_bytes(&[nan]));
        assert_eq!(back[0].to_bits(), nan.to_bits());
    }
}
