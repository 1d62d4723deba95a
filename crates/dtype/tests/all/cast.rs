//! Constant casts at the edges of every dtype: wrapping, rounding, truncation, bitcasts.

use ConstValue::{Bool, Float, Int, UInt};
use wgrad_dtype::{ConstValue, DType};

fn cast(v: impl Into<ConstValue>, d: DType) -> ConstValue {
    v.into().cast(d)
}

#[test]
fn signed_integers_wrap() {
    assert_eq!(cast(127i64, DType::I8), Int(127));
    assert_eq!(cast(128i64, DType::I8), Int(-128));
    assert_eq!(cast(-129i64, DType::I8), Int(127));
    assert_eq!(cast(255i64, DType::I8), Int(-1));
    assert_eq!(cast(32768i64, DType::I16), Int(-32768));
    assert_eq!(cast(-32769i64, DType::I16), Int(32767));
    assert_eq!(cast(2147483648i64, DType::I32), Int(-2147483648));
    assert_eq!(cast(-2147483649i64, DType::I32), Int(2147483647));
    assert_eq!(cast(u64::MAX, DType::I64), Int(-1));
    assert_eq!(cast(i64::MIN, DType::I64), Int(i64::MIN));
}

#[test]
fn unsigned_integers_wrap() {
    assert_eq!(cast(-1i64, DType::U8), UInt(255));
    assert_eq!(cast(256i64, DType::U8), UInt(0));
    assert_eq!(cast(-1i64, DType::U16), UInt(65535));
    assert_eq!(cast(65536i64, DType::U16), UInt(0));
    assert_eq!(cast(-1i64, DType::U32), UInt(4294967295));
    assert_eq!(cast(4294967296i64, DType::U32), UInt(0));
    assert_eq!(cast(-1i64, DType::U64), UInt(u64::MAX));
    assert_eq!(cast(i64::MIN, DType::U64), UInt(1 << 63));
}

#[test]
fn float_to_int_truncates_toward_zero() {
    assert_eq!(cast(2.9f64, DType::I32), Int(2));
    assert_eq!(cast(-2.9f64, DType::I32), Int(-2));
    assert_eq!(cast(-0.5f64, DType::I8), Int(0));
    assert_eq!(cast(300.7f64, DType::U8), UInt(44));
    assert_eq!(cast(-1.5f64, DType::U8), UInt(255));
    assert_eq!(cast(3e9f64, DType::U32), UInt(3_000_000_000));
    assert_eq!(cast(f64::NAN, DType::I32), Int(0));
    assert_eq!(cast(f64::INFINITY, DType::I64), Int(i64::MAX));
    assert_eq!(cast(f64::NEG_INFINITY, DType::I64), Int(i64::MIN));
}

#[test]
fn floats_round_to_nearest_even() {
    // 2049 is halfway between the f16 neighbours 2048 and 2050: ties go to the even mantissa.
    assert_eq!(cast(2049i64, DType::F16), Float(2048.0));
    assert_eq!(cast(2051i64, DType::F16), Float(2052.0));
    assert_eq!(cast(65504.0f64, DType::F16), Float(65504.0));
    assert_eq!(cast(65520.0f64, DType::F16), Float(f64::INFINITY));
    assert_eq!(cast(1e-8f64, DType::F16), Float(0.0));
    assert_eq!(cast(5.960464477539063e-8f64, DType::F16), Float(5.960464477539063e-8));
    // bf16 keeps 8 bits of mantissa: 257 ties between 256 and 258 and goes to 256.
    assert_eq!(cast(257i64, DType::BF16), Float(256.0));
    assert_eq!(cast(259i64, DType::BF16), Float(260.0));
    assert_eq!(cast(3.39e38f64, DType::BF16), Float(3.3895313892515355e38));
    assert_eq!(cast(3.4e38f64, DType::BF16), Float(f64::INFINITY));
    assert_eq!(cast(16777217i64, DType::F32), Float(16777216.0));
    assert_eq!(cast(0.1f64, DType::F32), Float(f64::from(0.1f32)));
    assert_eq!(cast(1e39f64, DType::F32), Float(f64::INFINITY));
    assert_eq!(cast(0.1f64, DType::F64), Float(0.1));
    assert!(matches!(cast(f64::NAN, DType::F16), Float(x) if x.is_nan()));
}

#[test]
fn to_and_from_bool() {
    assert_eq!(cast(0i64, DType::BOOL), Bool(false));
    assert_eq!(cast(-3i64, DType::BOOL), Bool(true));
    assert_eq!(cast(0.0f64, DType::BOOL), Bool(false));
    assert_eq!(cast(-0.0f64, DType::BOOL), Bool(false));
    assert_eq!(cast(f64::NAN, DType::BOOL), Bool(true));
    assert_eq!(cast(true, DType::F32), Float(1.0));
    assert_eq!(cast(true, DType::I8), Int(1));
    assert_eq!(cast(false, DType::U64), UInt(0));
}

#[test]
fn min_and_max_of_every_type_round_trip() {
    for name in ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"] {
        let d: DType = name.parse().unwrap();
        assert_eq!(d.min_value().cast(d), d.min_value(), "{name}");
        assert_eq!(d.max_value().cast(d), d.max_value(), "{name}");
        // one past the edge wraps to the other edge
        let above = Int(d.max_value().to_i64().wrapping_add(1));
        if d != DType::U64 && d != DType::I64 {
            assert_eq!(above.cast(d), d.min_value(), "{name} max+1");
        }
    }
    assert_eq!(DType::I8.min_value(), Int(-128));
    assert_eq!(DType::I64.max_value(), Int(i64::MAX));
    assert_eq!(DType::U32.max_value(), UInt(u32::MAX as u64));
    assert_eq!(DType::F16.min_value(), Float(f64::NEG_INFINITY));
    assert_eq!(DType::BOOL.max_value(), Bool(true));
}

#[test]
fn bit_patterns() {
    assert_eq!(Float(1.0).to_bits(DType::F32), 0x3f80_0000);
    assert_eq!(Float(1.0).to_bits(DType::F16), 0x3c00);
    assert_eq!(Float(1.0).to_bits(DType::BF16), 0x3f80);
    assert_eq!(Float(-2.0).to_bits(DType::F64), 0xc000_0000_0000_0000);
    assert_eq!(Int(-1).to_bits(DType::I8), 0xff);
    assert_eq!(Int(-1).to_bits(DType::I32), 0xffff_ffff);
    assert_eq!(Bool(true).to_bits(DType::BOOL), 1);
    assert_eq!(ConstValue::from_bits(0xff, DType::I8), Int(-1));
    assert_eq!(ConstValue::from_bits(0x3c00, DType::F16), Float(1.0));
    assert_eq!(ConstValue::from_bits(0x7f80_0000, DType::F32), Float(f64::INFINITY));
    assert_eq!(ConstValue::from_bits(0x1_0000_00ff, DType::U8), UInt(255));
    for d in [DType::I8, DType::U16, DType::I32, DType::U64, DType::F16, DType::BF16, DType::F32, DType::F64]
    {
        for v in [Int(-7), Int(100), Float(0.375), Float(-1.5)] {
            let c = v.cast(d);
            assert_eq!(ConstValue::from_bits(c.to_bits(d), d), c, "{v} as {d}");
        }
    }
}

#[test]
fn conversions_and_printing() {
    assert_eq!(Float(-2.7).to_i64(), -2);
    assert_eq!(UInt(u64::MAX).to_i64(), -1);
    assert_eq!(Int(3).to_f64(), 3.0);
    assert_eq!(ConstValue::from(2.5f32), Float(2.5));
    assert_eq!(ConstValue::from(7u32), UInt(7));
    assert_eq!(Bool(true).to_string(), "True");
    assert_eq!(Float(1.0).to_string(), "1.0");
    assert_eq!(Float(f64::NEG_INFINITY).to_string(), "-inf");
    assert_eq!(Float(f64::NAN).to_string(), "nan");
    assert_eq!(Int(-3).to_string(), "-3");
}
