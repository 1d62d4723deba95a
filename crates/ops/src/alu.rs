//! `exec_alu`: the reference semantics of every ALU op on constants, used by constant folding
//! and the CPU interpreter.
//!
//! - Integers wrap to the dtype's width. `Idiv` truncates toward zero and `Mod` takes the sign
//!   of the dividend (C). Division by zero does not trap; it follows WGSL: `x / 0 == x` and
//!   `x % 0 == 0` (so `MIN / -1 == MIN`, `MIN % -1 == 0`). Shift amounts are masked to the
//!   bit width; `>>` is arithmetic on signed and logical on unsigned types.
//! - Floats compute in f64 and round to the dtype (f16/bf16/f32 round to nearest even).
//!   `Max` propagates NaN; `CmpLt` with a NaN is false, `CmpNe` with a NaN is true.
//!   `Idiv` on floats truncates `x / y`; `Mod` is `fmod`. `MulAcc` rounds the product before
//!   the add (unfused).
//! - Bools: `Add`/`Or`/`Max` are or, `Mul`/`And` are and, `Xor`/`Sub`/`CmpNe` are xor.
//! - Integer `Pow` with a negative exponent truncates `1 / x^-e` (so `0 ** -1 == 0`).
//! - `Threefry` is Threefry-2x32 with 20 rounds on (counter, key) packed into u64s.
//! - `Where` picks by truthiness; `Cast` and `Bitcast` are not ALU (see [`ConstValue::cast`]
//!   and [`bitcast`]).

use wgrad_dtype::{ConstValue, DType};

use crate::{Ops, OpsError};

/// The result of `op` on `operands` with result dtype `dtype` (operands are values in the
/// operand dtype; for comparisons `dtype` is bool, for `Where` the branches' dtype).
pub fn exec_alu(op: Ops, dtype: DType, operands: &[ConstValue]) -> Result<ConstValue, OpsError> {
    if op.arity() != Some(operands.len()) {
        return Err(OpsError::AluArity { op, got: operands.len() });
    }
    let dt = dtype.scalar_dtype();
    let v = operands;
    Ok(match op {
        Ops::CmpLt => ConstValue::Bool(compare(v[0], v[1]).is_some_and(|o| o.is_lt())),
        Ops::CmpNe => ConstValue::Bool(compare(v[0], v[1]).is_none_or(|o| o.is_ne())),
        Ops::Where => if v[0].is_truthy() { v[1] } else { v[2] }.cast(dt),
        Ops::Threefry => {
            ConstValue::UInt(threefry2x32(v[0].to_bits(DType::U64), v[1].to_bits(DType::U64))).cast(dt)
        }
        _ if dt.is_float() => ConstValue::Float(float_alu(op, dt, v)?).cast(dt),
        _ if dt.is_bool() => ConstValue::Bool(bool_alu(op, v)),
        _ => wrap(int_alu(op, dt, v), dt),
    })
}

/// The value a reduction with `op` starts from, and the result of reducing nothing:
/// 0 for `Add`, 1 for `Mul`, the dtype's smallest value (`-inf`, `false`) for `Max`.
pub fn identity_element(op: Ops, dtype: DType) -> ConstValue {
    let dt = dtype.scalar_dtype();
    match op {
        Ops::Mul => ConstValue::Int(1).cast(dt),
        Ops::Max => dt.min_value(),
        _ => ConstValue::Int(0).cast(dt),
    }
}

/// The value whose bits in `to` are the bits of `v` in `from`.
pub fn bitcast(v: ConstValue, from: DType, to: DType) -> ConstValue {
    ConstValue::from_bits(v.to_bits(from), to)
}

fn is_float(c: ConstValue) -> bool {
    matches!(c, ConstValue::Float(_))
}

/// Ordering of two values; `None` when a NaN is involved.
fn compare(a: ConstValue, b: ConstValue) -> Option<std::cmp::Ordering> {
    if is_float(a) || is_float(b) {
        a.to_f64().partial_cmp(&b.to_f64())
    } else {
        Some(a.to_i128().cmp(&b.to_i128()))
    }
}

fn wrap(v: i128, dt: DType) -> ConstValue {
    ConstValue::Int(v as i64).cast(dt)
}

fn float_alu(op: Ops, dt: DType, v: &[ConstValue]) -> Result<f64, OpsError> {
    let a = v[0].to_f64();
    let b = v.get(1).map_or(0.0, |c| c.to_f64());
    Ok(match op {
        Ops::Add => a + b,
        Ops::Sub => a - b,
        Ops::Mul => a * b,
        Ops::Fdiv => a / b,
        Ops::Idiv => (a / b).trunc(),
        Ops::Mod => a % b,
        Ops::Max if a.is_nan() || b.is_nan() => f64::NAN,
        Ops::Max => a.max(b),
        Ops::Pow => a.powf(b),
        Ops::Exp2 => a.exp2(),
        Ops::Log2 => a.log2(),
        Ops::Sin => a.sin(),
        Ops::Sqrt => a.sqrt(),
        Ops::Recip => 1.0 / a,
        Ops::Neg => -a,
        Ops::Trunc => a.trunc(),
        Ops::MulAcc => ConstValue::Float(a * b).cast(dt).to_f64() + v[2].to_f64(),
        _ => return Err(OpsError::AluDType { op, dtype: dt }),
    })
}

fn bool_alu(op: Ops, v: &[ConstValue]) -> bool {
    let a = v[0].is_truthy();
    let b = v.get(1).is_some_and(|c| c.is_truthy());
    match op {
        Ops::Add | Ops::Or | Ops::Max => a | b,
        Ops::Mul | Ops::And => a & b,
        Ops::Xor | Ops::Sub => a ^ b,
        Ops::Neg => !a,
        Ops::MulAcc => (a & b) | v[2].is_truthy(),
        _ => int_alu(op, DType::U8, v) != 0,
    }
}

/// Integer ops on exact values; the caller wraps the result to the dtype.
fn int_alu(op: Ops, dt: DType, v: &[ConstValue]) -> i128 {
    let a = v[0].to_i128();
    let b = v.get(1).map_or(0, |&c| c.to_i128());
    let shift = (b & (dt.itemsize() as i128 * 8 - 1)) as u32;
    match op {
        Ops::Add => a.wrapping_add(b),
        Ops::Sub => a.wrapping_sub(b),
        Ops::Mul => a.wrapping_mul(b),
        Ops::Idiv | Ops::Fdiv => {
            if b == 0 {
                a
            } else {
                a / b
            }
        }
        Ops::Mod => {
            if b == 0 {
                0
            } else {
                a % b
            }
        }
        Ops::Max => a.max(b),
        Ops::Xor => a ^ b,
        Ops::Or => a | b,
        Ops::And => a & b,
        Ops::Shl => a.wrapping_shl(shift),
        Ops::Shr => a >> shift,
        Ops::Pow => int_pow(a, b),
        Ops::Neg => a.wrapping_neg(),
        Ops::Recip => {
            if a == 0 {
                1
            } else {
                1 / a
            }
        }
        Ops::Trunc => a,
        Ops::MulAcc => a.wrapping_mul(b).wrapping_add(v[2].to_i128()),
        // transcendental ops on integers go through f64 and truncate
        _ => float_alu(op, DType::F64, v).map_or(0, |f| f as i128),
    }
}

/// `a ** e` with wrapping (exact modulo 2^64, which is all the caller keeps).
fn int_pow(a: i128, e: i128) -> i128 {
    if e < 0 {
        return match a {
            1 => 1,
            -1 if e % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        };
    }
    let (mut base, mut e, mut acc) = (a, e, 1i128);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(base) & u64::MAX as i128;
        }
        base = base.wrapping_mul(base) & u64::MAX as i128;
        e >>= 1;
    }
    acc
}

/// Threefry-2x32 with 20 rounds (Salmon et al., Random123): the counter is `x` (low word
/// first), the key is `key` (low word first); the result packs the two output words the
/// same way.
pub fn threefry2x32(x: u64, key: u64) -> u64 {
    const ROTATIONS: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];
    const PARITY: u32 = 0x1BD1_1BDA;
    let k = [key as u32, (key >> 32) as u32];
    let ks = [k[0], k[1], k[0] ^ k[1] ^ PARITY];
    let mut x0 = (x as u32).wrapping_add(ks[0]);
    let mut x1 = ((x >> 32) as u32).wrapping_add(ks[1]);
    for group in 0..5usize {
        for &r in &ROTATIONS[(group % 2) * 4..(group % 2) * 4 + 4] {
            x0 = x0.wrapping_add(x1);
            x1 = x1.rotate_left(r) ^ x0;
        }
        // key injection after every four rounds
        x0 = x0.wrapping_add(ks[(group + 1) % 3]);
        x1 = x1.wrapping_add(ks[(group + 2) % 3]).wrapping_add(group as u32 + 1);
    }
    (u64::from(x1) << 32) | u64::from(x0)
}
