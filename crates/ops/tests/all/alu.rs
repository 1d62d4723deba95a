//! exec_alu at the edges of every dtype, and Threefry known-answer vectors.

use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Ops, OpsError, exec_alu, threefry2x32};

fn run(op: Ops, dt: DType, args: &[ConstValue]) -> ConstValue {
    exec_alu(op, dt, args).unwrap()
}

fn i(v: i64) -> ConstValue {
    ConstValue::Int(v)
}

fn u(v: u64) -> ConstValue {
    ConstValue::UInt(v)
}

fn f(v: f64) -> ConstValue {
    ConstValue::Float(v)
}

fn b(v: bool) -> ConstValue {
    ConstValue::Bool(v)
}

#[test]
fn signed_integers_wrap_and_truncate() {
    assert_eq!(run(Ops::Add, DType::I8, &[i(127), i(1)]), i(-128));
    assert_eq!(run(Ops::Idiv, DType::I8, &[i(-128), i(-1)]), i(-128));
    assert_eq!(run(Ops::Mod, DType::I8, &[i(-128), i(-1)]), i(0));
    assert_eq!(run(Ops::Mul, DType::I16, &[i(300), i(300)]), i(i64::from(300i16.wrapping_mul(300))));
    assert_eq!(run(Ops::Shl, DType::I16, &[i(1), i(17)]), i(2));
    assert_eq!(run(Ops::Idiv, DType::I32, &[i(i64::from(i32::MIN)), i(-1)]), i(i64::from(i32::MIN)));
    assert_eq!(run(Ops::Idiv, DType::I32, &[i(-7), i(2)]), i(-3));
    assert_eq!(run(Ops::Mod, DType::I32, &[i(-7), i(2)]), i(-1));
    assert_eq!(run(Ops::Mod, DType::I32, &[i(7), i(-2)]), i(1));
    assert_eq!(run(Ops::Shr, DType::I32, &[i(-8), i(1)]), i(-4));
    assert_eq!(run(Ops::Shr, DType::I32, &[i(-1), i(31)]), i(-1));
    assert_eq!(run(Ops::Add, DType::I64, &[i(i64::MAX), i(1)]), i(i64::MIN));
    assert_eq!(run(Ops::Mul, DType::I64, &[i(i64::MIN), i(-1)]), i(i64::MIN));
    assert_eq!(run(Ops::Neg, DType::I32, &[i(i64::from(i32::MIN))]), i(i64::from(i32::MIN)));
    assert_eq!(run(Ops::Max, DType::I32, &[i(-3), i(2)]), i(2));
    assert_eq!(run(Ops::Xor, DType::I32, &[i(-1), i(5)]), i(-6));
    assert_eq!(run(Ops::Sub, DType::I32, &[i(i64::from(i32::MIN)), i(1)]), i(i64::from(i32::MAX)));
    assert_eq!(run(Ops::MulAcc, DType::I32, &[i(3), i(4), i(5)]), i(17));
}

#[test]
fn division_by_zero_is_defined() {
    for dt in [DType::I8, DType::U8, DType::I32, DType::U32, DType::I64, DType::U64] {
        assert_eq!(run(Ops::Idiv, dt, &[i(7), i(0)]).to_i64(), 7, "{dt}");
        assert_eq!(run(Ops::Mod, dt, &[i(7), i(0)]).to_i64(), 0, "{dt}");
    }
}

#[test]
fn unsigned_integers_wrap() {
    assert_eq!(run(Ops::Sub, DType::U8, &[u(0), u(1)]), u(255));
    assert_eq!(run(Ops::Mul, DType::U8, &[u(255), u(255)]), u(1));
    assert_eq!(run(Ops::Shr, DType::U8, &[u(200), u(1)]), u(100));
    assert_eq!(run(Ops::Add, DType::U16, &[u(65535), u(2)]), u(1));
    assert_eq!(run(Ops::Add, DType::U32, &[u(u64::from(u32::MAX)), u(1)]), u(0));
    assert_eq!(run(Ops::Shr, DType::U32, &[u(0x8000_0000), u(31)]), u(1));
    assert_eq!(run(Ops::Shl, DType::U32, &[u(3), u(32)]), u(3));
    assert_eq!(run(Ops::Mul, DType::U64, &[u(u64::MAX), u(u64::MAX)]), u(1));
    assert_eq!(run(Ops::Idiv, DType::U64, &[u(u64::MAX), u(2)]), u(u64::MAX / 2));
    assert_eq!(run(Ops::CmpLt, DType::BOOL, &[u(u64::MAX), u(1)]), b(false));
    assert_eq!(run(Ops::Neg, DType::U32, &[u(1)]), u(u64::from(u32::MAX)));
}

#[test]
fn integer_pow() {
    assert_eq!(run(Ops::Pow, DType::I32, &[i(2), i(10)]), i(1024));
    assert_eq!(run(Ops::Pow, DType::I32, &[i(2), i(-1)]), i(0));
    assert_eq!(run(Ops::Pow, DType::I32, &[i(-1), i(-3)]), i(-1));
    assert_eq!(run(Ops::Pow, DType::I32, &[i(3), i(40)]), i(i64::from(3i32.wrapping_pow(40))));
}

#[test]
fn floats_round_to_their_dtype() {
    assert_eq!(run(Ops::Add, DType::F16, &[f(65504.0), f(8.0)]), f(65504.0));
    assert_eq!(run(Ops::Add, DType::F16, &[f(65504.0), f(16.0)]), f(f64::INFINITY));
    assert_eq!(run(Ops::Add, DType::F16, &[f(1.0), f(0.0001)]), f(1.0));
    assert_eq!(run(Ops::Add, DType::BF16, &[f(1.0), f(1.0 / 256.0)]), f(1.0));
    assert_eq!(run(Ops::Add, DType::BF16, &[f(1.0), f(3.0 / 256.0)]), f(1.015625));
    assert_eq!(run(Ops::Add, DType::F32, &[f(16_777_216.0), f(1.0)]), f(16_777_216.0));
    assert_eq!(run(Ops::Add, DType::F64, &[f(16_777_216.0), f(1.0)]), f(16_777_217.0));
    assert_eq!(run(Ops::Fdiv, DType::F32, &[f(1.0), f(3.0)]), f(f64::from(1.0f32 / 3.0)));
    assert_eq!(run(Ops::Recip, DType::F32, &[f(0.0)]), f(f64::INFINITY));
    assert_eq!(run(Ops::Log2, DType::F32, &[f(0.0)]), f(f64::NEG_INFINITY));
    assert_eq!(run(Ops::Exp2, DType::F32, &[f(1000.0)]), f(f64::INFINITY));
    assert_eq!(run(Ops::Exp2, DType::F16, &[f(3.0)]), f(8.0));
    assert_eq!(run(Ops::Trunc, DType::F32, &[f(-2.7)]), f(-2.0));
    assert_eq!(run(Ops::Idiv, DType::F32, &[f(-7.0), f(2.0)]), f(-3.0));
    assert_eq!(run(Ops::Mod, DType::F32, &[f(-7.0), f(2.0)]), f(-1.0));
    assert!(run(Ops::Sqrt, DType::F32, &[f(-1.0)]).to_f64().is_nan());
}

#[test]
fn nan_semantics() {
    let nan = f(f64::NAN);
    assert!(run(Ops::Max, DType::F32, &[nan, f(1.0)]).to_f64().is_nan());
    assert!(run(Ops::Max, DType::F32, &[f(1.0), nan]).to_f64().is_nan());
    assert_eq!(run(Ops::CmpLt, DType::BOOL, &[nan, f(1.0)]), b(false));
    assert_eq!(run(Ops::CmpLt, DType::BOOL, &[f(1.0), nan]), b(false));
    assert_eq!(run(Ops::CmpNe, DType::BOOL, &[nan, nan]), b(true));
    assert_eq!(run(Ops::CmpNe, DType::BOOL, &[f(1.0), f(1.0)]), b(false));
    assert_eq!(run(Ops::Max, DType::F32, &[f(-0.0), f(-1.0)]), f(-0.0));
}

#[test]
fn bools_and_where() {
    assert_eq!(run(Ops::Add, DType::BOOL, &[b(true), b(true)]), b(true));
    assert_eq!(run(Ops::Mul, DType::BOOL, &[b(true), b(false)]), b(false));
    assert_eq!(run(Ops::Xor, DType::BOOL, &[b(true), b(true)]), b(false));
    assert_eq!(run(Ops::Max, DType::BOOL, &[b(false), b(true)]), b(true));
    assert_eq!(run(Ops::CmpLt, DType::BOOL, &[b(false), b(true)]), b(true));
    assert_eq!(run(Ops::Where, DType::F32, &[b(true), f(1.0), f(2.0)]), f(1.0));
    assert_eq!(run(Ops::Where, DType::I32, &[b(false), i(1), i(2)]), i(2));
}

#[test]
fn errors() {
    assert!(matches!(exec_alu(Ops::Load, DType::F32, &[f(1.0)]), Err(OpsError::AluArity { .. })));
    assert!(matches!(exec_alu(Ops::Add, DType::F32, &[f(1.0)]), Err(OpsError::AluArity { .. })));
    assert!(matches!(exec_alu(Ops::Xor, DType::F32, &[f(1.0), f(2.0)]), Err(OpsError::AluDType { .. })));
}

/// Packs a (low, high) pair of 32-bit words.
fn pack(lo: u32, hi: u32) -> u64 {
    (u64::from(hi) << 32) | u64::from(lo)
}

#[test]
fn threefry_known_answers() {
    // Random123 kat_vectors, threefry2x32_20: counter, key -> output (word 0, word 1)
    let cases = [
        ((0, 0), (0, 0), (0x6b20_0159, 0x99ba_4efe)),
        ((0xffff_ffff, 0xffff_ffff), (0xffff_ffff, 0xffff_ffff), (0x1cb9_96fc, 0xbb00_2be7)),
        ((0x243f_6a88, 0x85a3_08d3), (0x1319_8a2e, 0x0370_7344), (0xc492_3a9c, 0x483d_f7a0)),
    ];
    for (ctr, key, out) in cases {
        assert_eq!(threefry2x32(pack(ctr.0, ctr.1), pack(key.0, key.1)), pack(out.0, out.1));
        let via_alu = run(Ops::Threefry, DType::U64, &[u(pack(ctr.0, ctr.1)), u(pack(key.0, key.1))]);
        assert_eq!(via_alu, u(pack(out.0, out.1)));
    }
}
