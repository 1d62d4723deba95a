//! Casts and bitcasts between register types, following `ConstValue::cast` (integers wrap,
//! floats round to nearest even, float to int truncates with 64-bit saturation and NaN to 0,
//! anything to bool is "not zero") and `wgrad_ops::bitcast` (casts of known values are folded
//! by the writer); and the bit views of narrow
//! types that packed loads and stores share with bitcasts.

use wgrad_dtype::{DType, ScalarType};

use crate::helpers::Helper;
use crate::literal::literal;
use crate::types::Reg;
use crate::writer::Writer;

impl Writer<'_> {
    /// `x` (a value of `from`) converted into `to`.
    pub(crate) fn cast(&mut self, x: &str, from: DType, to: DType) -> String {
        let (fr, tr) = (self.reg(from), self.reg(to));
        if to.is_bool() {
            return match fr {
                Reg::Bool => x.to_string(),
                Reg::F32 | Reg::F16 => format!("!({x} == {})", literal(0.into(), fr)),
                _ => format!("{x} != {}", literal(0.into(), fr)),
            };
        }
        if fr == Reg::Bool {
            return format!("select({}, {}, {x})", literal(0.into(), tr), literal(1.into(), tr));
        }
        let as_f32 = || if fr == Reg::F32 { x.to_string() } else { format!("f32({x})") };
        if to.is_float() {
            return self.fit_float(to, as_f32());
        }
        let value = if from.is_float() {
            match tr {
                Reg::I64 | Reg::U64 => {
                    format!(
                        "{}({})",
                        self.helpers.call(Helper::FloatToWide { signed: tr == Reg::I64 }),
                        as_f32()
                    )
                }
                _ => {
                    let sat =
                        if to.is_unsigned() { "18446744073709551616.0f" } else { "9223372036854775808.0f" };
                    let bits = format!("{}({}, {sat})", self.helpers.call(Helper::FloatLowBits), as_f32());
                    if tr == Reg::I32 { format!("i32({bits})") } else { bits }
                }
            }
        } else {
            int_convert(x, fr, tr)
        };
        self.wrap(to, value)
    }

    /// `x` with `from`'s bits read as `to` (same size).
    pub(crate) fn bitcast(&mut self, x: &str, from: DType, to: DType) -> String {
        let (fr, tr) = (self.reg(from), self.reg(to));
        if from.itemsize() >= 4 {
            return if fr == tr { x.to_string() } else { format!("bitcast<{}>({x})", tr.name()) };
        }
        let bits = self.bits_of(from, x);
        self.value_from_bits(to, &bits)
    }

    /// A float value computed in f32 brought into float dtype `to`'s register: rounded to f16
    /// or bf16 when `to` is one.
    pub(crate) fn fit_float(&mut self, to: DType, f32_value: String) -> String {
        match (to.scalar(), self.reg(to)) {
            (ScalarType::Float16, Reg::F16) if self.native_f16 => {
                format!("f16({f32_value})")
            }
            (ScalarType::Float16, Reg::F16) => {
                format!("f16({}({f32_value}))", self.helpers.call(Helper::RoundF16))
            }
            (ScalarType::Float16, _) => format!("{}({f32_value})", self.helpers.call(Helper::RoundF16)),
            (ScalarType::BFloat16, _) => format!("{}({f32_value})", self.helpers.call(Helper::RoundBf16)),
            _ => f32_value,
        }
    }

    /// An integer value computed in its register type wrapped to `dtype`'s narrow width.
    pub(crate) fn wrap(&mut self, dtype: DType, value: String) -> String {
        let bits = dtype.scalar().bits();
        if !dtype.is_int() || bits >= 32 {
            return value;
        }
        let helper = self.helpers.call(Helper::Wrap { bits, signed: !dtype.is_unsigned() });
        format!("{helper}({value})")
    }

    /// The bits (in the low bits of a `u32`, the rest zero) of a value of an 8- or 16-bit dtype.
    pub(crate) fn bits_of(&self, dtype: DType, x: &str) -> String {
        match (dtype.scalar(), self.reg(dtype)) {
            (ScalarType::Bool, _) => format!("select(0u, 1u, {x})"),
            (ScalarType::BFloat16, _) => format!("(bitcast<u32>({x}) >> 16u)"),
            (ScalarType::Float16, Reg::F16) => format!("pack2x16float(vec2<f32>(f32({x}), 0.0))"),
            (ScalarType::Float16, _) => format!("pack2x16float(vec2<f32>({x}, 0.0))"),
            (s, Reg::I32) => format!("(u32({x}) & {:#x}u)", (1u64 << s.bits()) - 1),
            _ => x.to_string(),
        }
    }

    /// The value of an 8- or 16-bit dtype whose bits are `bits` (a `u32`, the rest zero).
    pub(crate) fn value_from_bits(&self, dtype: DType, bits: &str) -> String {
        match (dtype.scalar(), self.reg(dtype)) {
            (ScalarType::Bool, _) => format!("{bits} != 0u"),
            (ScalarType::BFloat16, _) => format!("bitcast<f32>({bits} << 16u)"),
            (ScalarType::Float16, Reg::F16) => format!("f16(unpack2x16float({bits}).x)"),
            (ScalarType::Float16, _) => format!("unpack2x16float({bits}).x"),
            (s, Reg::I32) => format!("i32({bits} << {shift}u) >> {shift}u", shift = 32 - s.bits()),
            _ => bits.to_string(),
        }
    }
}

/// An integer register value converted between integer register types: within 32 bits the
/// bits are reinterpreted; widening extends by the source's signedness; narrowing keeps the low
/// 32 bits.
fn int_convert(x: &str, from: Reg, to: Reg) -> String {
    match (from.is_wide(), to.is_wide()) {
        _ if from == to => x.to_string(),
        (true, false) => {
            let unsigned = if from == Reg::U64 { x.to_string() } else { format!("u64({x})") };
            let low = format!("u32({unsigned} & 0xfffffffflu)");
            if to == Reg::I32 { format!("i32({low})") } else { low }
        }
        (false, true) => {
            let wide = if from == Reg::I32 { Reg::I64 } else { Reg::U64 };
            let widened = format!("{}({x})", wide.name());
            if wide == to { widened } else { format!("{}({widened})", to.name()) }
        }
        _ => format!("{}({x})", to.name()),
    }
}
