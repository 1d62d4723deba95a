//! Constants as WGSL expressions: typed literals, and bit patterns for the floats WGSL has no
//! literal for (inf, nan, subnormals).

use wgrad_dtype::ConstValue;

use crate::types::Reg;

/// `value` (already cast to its dtype) as an expression of register type `reg`. Negative
/// values are parenthesised so they can stand anywhere.
pub(crate) fn literal(value: ConstValue, reg: Reg) -> String {
    let text = match reg {
        Reg::Bool => return value.is_truthy().to_string(),
        Reg::I32 => value.to_i128().to_string(),
        Reg::U32 => format!("{}u", value.to_i128()),
        Reg::I64 if value.to_i128() == i128::from(i64::MIN) => return format!("({}li - 1li)", i64::MIN + 1),
        Reg::I64 => format!("{}li", value.to_i128()),
        Reg::U64 => format!("{}lu", value.to_i128()),
        Reg::F32 => f32_literal(value.to_f64() as f32),
        Reg::F16 => f16_literal(value.to_f64()),
    };
    if text.starts_with('-') { format!("({text})") } else { text }
}

/// An f32 literal that round-trips, or a bitcast where WGSL has no literal.
pub(crate) fn f32_literal(v: f32) -> String {
    if v.is_normal() || v == 0.0 {
        format!("{v:?}f")
    } else {
        format!("bitcast<f32>({:#010x}u)", v.to_bits())
    }
}

/// An f16 literal that round-trips (`v` is exactly an f16), or the exact conversion of the
/// f32 holding it where WGSL has no literal.
fn f16_literal(v: f64) -> String {
    if half::f16::from_f64(v).is_normal() || v == 0.0 {
        format!("{:?}h", v as f32)
    } else {
        format!("f16({})", f32_literal(v as f32))
    }
}
