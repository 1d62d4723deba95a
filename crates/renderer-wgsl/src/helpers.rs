//! Helper functions the generated code calls, each emitted once and only when used (with the
//! helpers it calls), in a fixed order so output is deterministic. The long math helpers live
//! in [`crate::math`].

use std::collections::BTreeSet;

use crate::math;
use crate::types::Reg;

/// A WGSL helper function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Helper {
    /// `is_nan(x: f32) -> bool`, from the bits (no reliance on `x != x`).
    IsNan,
    /// `max_nan(a, b)`: `max` that returns NaN when either operand is NaN.
    MaxNan,
    /// `subgroup_max_nan(x)`: `subgroupMax` over f32 that returns NaN when any invocation's
    /// value is NaN (the builtin's result is undefined then), through the f32 order as i32.
    SubgroupMaxNan,
    /// `round_f16(x: f32) -> f32`: nearest-even f16 value (inf past the range).
    RoundF16,
    /// `round_bf16(x: f32) -> f32`: nearest-even bf16 value.
    RoundBf16,
    /// `wrap_i8`/`wrap_u8`/`wrap_i16`/`wrap_u16`: the value wrapped to the narrow width.
    Wrap { bits: u32, signed: bool },
    /// `get_byte`/`get_half(word, i)`: element `i`'s bits out of its `u32` word.
    GetLane { bits: u32 },
    /// `keep_byte`/`keep_half(i)`: the mask clearing element `i`'s lane of its word.
    KeepLane { bits: u32 },
    /// `put_byte`/`put_half(bits, i)`: the bits moved into element `i`'s lane.
    PutLane { bits: u32 },
    /// `precise_exp2`, `precise_log2`, `precise_sin` (see [`crate::math`]).
    Exp2,
    /// See [`Helper::Exp2`].
    Log2,
    /// See [`Helper::Exp2`].
    Sin,
    /// `safe_sqrt`: NaN below zero.
    Sqrt,
    /// `safe_recip`: signed inf for zeros, signed zero for infinities.
    Recip,
    /// `nonzero_recip`: `safe_recip` of a value that cannot be zero (signed zero for infinities).
    NonzeroRecip,
    /// `pow_f32`: `powf` semantics (negative bases, zeros, infinities).
    Pow,
    /// `two_prod_err(x, y, p)`: the rounding error of `p = x * y`.
    TwoProdErr,
    /// `idiv_f32`: `trunc(a / b)` of the exact quotient.
    FloatIdiv,
    /// `fmod_f32`: exact `fmod`.
    FloatMod,
    /// `low_bits(x, sat)`: the low 32 bits of the 64-bit integer a float converts to.
    FloatLowBits,
    /// `f32_to_i64` / `f32_to_u64`: saturating, NaN to 0, negatives through i64.
    FloatToWide { signed: bool },
    /// `ipow_T(a, e)`: integer power, wrapping.
    IntPow(Reg),
    /// `iexp2_T(a)`: `2^a` truncated and wrapped as `exec_alu` does it through f64.
    IntExp2(Reg),
    /// `ilog2_T(a)`: `floor(log2(a))`, 0 for `a <= 0`.
    IntLog2(Reg),
    /// `isqrt_T(a)`: `floor(sqrt(a))`, 0 for `a < 0`.
    IntSqrt(Reg),
    /// `threefry2x32(x, key)`.
    Threefry,
}

impl Helper {
    /// Whether `name` is the name of some helper (so nothing else may take it).
    pub(crate) fn is_name(name: &str) -> bool {
        let lanes = [8, 16].into_iter().flat_map(|bits| {
            [Helper::GetLane { bits }, Helper::KeepLane { bits }, Helper::PutLane { bits }]
                .into_iter()
                .chain([true, false].map(|signed| Helper::Wrap { bits, signed }))
        });
        let ints = [Reg::I32, Reg::U32, Reg::I64, Reg::U64]
            .into_iter()
            .flat_map(|r| [Helper::IntPow(r), Helper::IntExp2(r), Helper::IntLog2(r), Helper::IntSqrt(r)]);
        let fixed = [
            Helper::IsNan,
            Helper::MaxNan,
            Helper::SubgroupMaxNan,
            Helper::RoundF16,
            Helper::RoundBf16,
            Helper::Exp2,
            Helper::Log2,
            Helper::Sin,
            Helper::Sqrt,
            Helper::Recip,
            Helper::NonzeroRecip,
            Helper::Pow,
            Helper::TwoProdErr,
            Helper::FloatIdiv,
            Helper::FloatMod,
            Helper::FloatLowBits,
            Helper::FloatToWide { signed: true },
            Helper::FloatToWide { signed: false },
            Helper::Threefry,
        ];
        fixed.into_iter().chain(lanes).chain(ints).any(|h| h.name() == name)
    }

    /// The name the generated code calls.
    pub(crate) fn name(self) -> String {
        let lane = |bits| if bits == 8 { "byte" } else { "half" };
        match self {
            Helper::IsNan => "is_nan".into(),
            Helper::MaxNan => "max_nan".into(),
            Helper::SubgroupMaxNan => "subgroup_max_nan".into(),
            Helper::RoundF16 => "round_f16".into(),
            Helper::RoundBf16 => "round_bf16".into(),
            Helper::Wrap { bits, signed } => format!("wrap_{}{bits}", if signed { "i" } else { "u" }),
            Helper::GetLane { bits } => format!("get_{}", lane(bits)),
            Helper::KeepLane { bits } => format!("keep_{}", lane(bits)),
            Helper::PutLane { bits } => format!("put_{}", lane(bits)),
            Helper::Exp2 => "precise_exp2".into(),
            Helper::Log2 => "precise_log2".into(),
            Helper::Sin => "precise_sin".into(),
            Helper::Sqrt => "safe_sqrt".into(),
            Helper::Recip => "safe_recip".into(),
            Helper::NonzeroRecip => "nonzero_recip".into(),
            Helper::Pow => "pow_f32".into(),
            Helper::TwoProdErr => "two_prod_err".into(),
            Helper::FloatIdiv => "idiv_f32".into(),
            Helper::FloatMod => "fmod_f32".into(),
            Helper::FloatLowBits => "low_bits".into(),
            Helper::FloatToWide { signed } => format!("f32_to_{}", if signed { "i64" } else { "u64" }),
            Helper::IntPow(r) => format!("ipow_{}", r.name()),
            Helper::IntExp2(r) => format!("iexp2_{}", r.name()),
            Helper::IntLog2(r) => format!("ilog2_{}", r.name()),
            Helper::IntSqrt(r) => format!("isqrt_{}", r.name()),
            Helper::Threefry => "threefry2x32".into(),
        }
    }

    /// The helpers this one calls.
    fn deps(self) -> Vec<Helper> {
        match self {
            Helper::MaxNan
            | Helper::SubgroupMaxNan
            | Helper::Exp2
            | Helper::Log2
            | Helper::FloatLowBits
            | Helper::FloatMod => {
                vec![Helper::IsNan]
            }
            Helper::Sin => vec![Helper::TwoProdErr],
            Helper::FloatToWide { signed: false } => {
                vec![Helper::IsNan, Helper::FloatToWide { signed: true }]
            }
            Helper::FloatToWide { signed: true } => vec![Helper::IsNan],
            Helper::Pow => vec![Helper::IsNan, Helper::Exp2, Helper::Log2],
            Helper::FloatIdiv => vec![Helper::TwoProdErr],
            Helper::IntSqrt(Reg::I32) => vec![Helper::IntSqrt(Reg::U32)],
            Helper::IntSqrt(Reg::I64) => vec![Helper::IntSqrt(Reg::U64)],
            _ => vec![],
        }
    }

    /// The WGSL text of the function.
    fn source(self) -> String {
        let name = self.name();
        match self {
            Helper::IsNan => format!(
                "fn {name}(x: f32) -> bool {{\n  return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;\n}}\n"
            ),
            Helper::MaxNan => format!(
                "fn {name}(a: f32, b: f32) -> f32 {{\n  \
                 if (is_nan(a) || is_nan(b)) {{ return bitcast<f32>(0x7fc00000u); }}\n  \
                 return max(a, b);\n}}\n"
            ),
            Helper::SubgroupMaxNan => SUBGROUP_MAX_NAN.replace("NAME", &name),
            Helper::RoundF16 => ROUND_F16.replace("NAME", &name),
            Helper::RoundBf16 => ROUND_BF16.replace("NAME", &name),
            Helper::Wrap { bits, signed: true } => {
                format!("fn {name}(x: i32) -> i32 {{\n  return (x << {s}u) >> {s}u;\n}}\n", s = 32 - bits)
            }
            Helper::Wrap { bits, signed: false } => {
                format!("fn {name}(x: u32) -> u32 {{\n  return x & {:#x}u;\n}}\n", lane_mask(bits))
            }
            Helper::GetLane { bits } => format!(
                "fn {name}(word: u32, i: i32) -> u32 {{\n  return (word >> {}) & {:#x}u;\n}}\n",
                lane_shift(bits),
                lane_mask(bits)
            ),
            Helper::KeepLane { bits } => format!(
                "fn {name}(i: i32) -> u32 {{\n  return ~({:#x}u << {});\n}}\n",
                lane_mask(bits),
                lane_shift(bits)
            ),
            Helper::PutLane { bits } => format!(
                "fn {name}(bits: u32, i: i32) -> u32 {{\n  return (bits & {:#x}u) << {};\n}}\n",
                lane_mask(bits),
                lane_shift(bits)
            ),
            Helper::Exp2 => math::EXP2.replace("NAME", &name),
            Helper::Log2 => math::LOG2.replace("NAME", &name),
            Helper::Sin => math::SIN.replace("NAME", &name),
            Helper::Sqrt => format!(
                "fn {name}(x: f32) -> f32 {{\n  \
                 if (x < 0.0) {{ return bitcast<f32>(0x7fc00000u); }}\n  \
                 return sqrt(x);\n}}\n"
            ),
            Helper::Recip => RECIP.replace("NAME", &name),
            Helper::NonzeroRecip => NONZERO_RECIP.replace("NAME", &name),
            Helper::Pow => math::POW.replace("NAME", &name),
            Helper::TwoProdErr => math::TWO_PROD_ERR.replace("NAME", &name),
            Helper::FloatIdiv => math::IDIV.replace("NAME", &name),
            Helper::FloatMod => math::FMOD.replace("NAME", &name),
            Helper::FloatLowBits => LOW_BITS.replace("NAME", &name),
            Helper::FloatToWide { signed: true } => F32_TO_I64.replace("NAME", &name),
            Helper::FloatToWide { signed: false } => F32_TO_U64.replace("NAME", &name),
            Helper::IntPow(r) => int_pow(&name, r),
            Helper::IntExp2(r) => int_exp2(&name, r),
            Helper::IntLog2(r) => int_log2(&name, r),
            Helper::IntSqrt(r) => int_sqrt(&name, r),
            Helper::Threefry => THREEFRY.replace("NAME", &name),
        }
    }
}

/// The helpers used by a kernel; renders them with their dependencies.
#[derive(Default)]
pub(crate) struct Helpers(BTreeSet<Helper>);

impl Helpers {
    /// Marks `h` used and returns its name.
    pub(crate) fn call(&mut self, h: Helper) -> String {
        let mut todo = vec![h];
        while let Some(next) = todo.pop() {
            if self.0.insert(next) {
                todo.extend(next.deps());
            }
        }
        h.name()
    }

    /// Every used helper's source, in a fixed order, each followed by a blank line.
    pub(crate) fn render(&self) -> String {
        self.0.iter().map(|h| h.source() + "\n").collect()
    }
}

/// Mask of one lane of `bits`.
fn lane_mask(bits: u32) -> u32 {
    (1 << bits) - 1
}

/// The shift of element `i`'s lane inside its word.
fn lane_shift(bits: u32) -> String {
    let per_word = 32 / bits;
    format!("(u32(i & {}) * {bits}u)", per_word - 1)
}

/// `ipow_T`: square and multiply on the register type (wrapping); a negative exponent
/// truncates `1 / a^-e` as `exec_alu` does.
fn int_pow(name: &str, r: Reg) -> String {
    let t = r.name();
    let negative = if r.is_signed() {
        format!(
            "  if (e < {t}(0)) {{\n    \
             if (a == {t}(1)) {{ return {t}(1); }}\n    \
             if (a == {t}(-1)) {{ return select({t}(-1), {t}(1), (e & {t}(1)) == {t}(0)); }}\n    \
             return {t}(0);\n  }}\n"
        )
    } else {
        String::new()
    };
    format!(
        "fn {name}(a: {t}, e: {t}) -> {t} {{\n{negative}  \
         var base = a;\n  var n = e;\n  var acc = {t}(1);\n  \
         while (n != {t}(0)) {{\n    \
         if ((n & {t}(1)) == {t}(1)) {{ acc *= base; }}\n    \
         base *= base;\n    n = n >> 1u;\n  }}\n  return acc;\n}}\n"
    )
}

/// `iexp2_T`: `exec_alu` computes `2^a` in f64 and truncates into i128 (saturating), then wraps:
/// 0 for `a < 0`, a shift below the width, all ones from `a >= 127` (saturation), else 0.
fn int_exp2(name: &str, r: Reg) -> String {
    let t = r.name();
    let width = if r.is_wide() { 64 } else { 32 };
    format!(
        "fn {name}(a: {t}) -> {t} {{\n  \
         if (a >= {t}(0) && a < {t}({width})) {{ return {t}(1) << u32(a); }}\n  \
         return select({t}(0), ~{t}(0), a >= {t}(127));\n}}\n"
    )
}

/// `ilog2_T`: `floor(log2(a))` from the highest set bit (0 for `a <= 0`, as `exec_alu`'s
/// `-inf`/NaN truncate to 0).
fn int_log2(name: &str, r: Reg) -> String {
    let t = r.name();
    if r.is_wide() {
        format!(
            "fn {name}(a: {t}) -> {t} {{\n  \
             if (a <= {t}(0)) {{ return {t}(0); }}\n  \
             let hi = u32(u64(a) >> 32u);\n  \
             if (hi != 0u) {{ return {t}(32u + firstLeadingBit(hi)); }}\n  \
             return {t}(firstLeadingBit(u32(u64(a) & 0xfffffffflu)));\n}}\n"
        )
    } else {
        format!(
            "fn {name}(a: {t}) -> {t} {{\n  \
             if (a <= {t}(0)) {{ return {t}(0); }}\n  \
             return {t}(firstLeadingBit(u32(a)));\n}}\n"
        )
    }
}

/// `isqrt_T`: `floor(sqrt(a))` from an f32 estimate, corrected to the exact integer (Newton
/// steps first for 64 bits); 0 for negative `a`.
fn int_sqrt(name: &str, r: Reg) -> String {
    match r {
        Reg::U32 => format!(
            "fn {name}(a: u32) -> u32 {{\n  \
             var r = min(u32(sqrt(f32(a))), 65535u);\n  \
             if (r * r > a) {{ r -= 1u; }}\n  \
             if (r < 65535u && (r + 1u) * (r + 1u) <= a) {{ r += 1u; }}\n  \
             return r;\n}}\n"
        ),
        Reg::U64 => format!(
            "fn {name}(a: u64) -> u64 {{\n  \
             if (a == 0lu) {{ return 0lu; }}\n  \
             var r = max(u64(sqrt(f32(a))), 1lu);\n  \
             r = (r + a / r) / 2lu;\n  \
             r = min((r + a / r) / 2lu, 0xfffffffflu);\n  \
             while (r * r > a) {{ r -= 1lu; }}\n  \
             while (r < 0xfffffffflu && (r + 1lu) * (r + 1lu) <= a) {{ r += 1lu; }}\n  \
             return r;\n}}\n"
        ),
        _ => {
            let (t, u) = (r.name(), if r.is_wide() { "u64" } else { "u32" });
            format!(
                "fn {name}(a: {t}) -> {t} {{\n  \
                 if (a < {t}(0)) {{ return {t}(0); }}\n  \
                 return {t}(isqrt_{u}({u}(a)));\n}}\n"
            )
        }
    }
}

/// The subgroup's largest f32, NaN when any is NaN: each float becomes an i32 of the same order
/// (the magnitude bits of negatives flipped, so -0 sorts below +0; NaN above everything), the
/// builtin takes the largest, and it is turned back.
const SUBGROUP_MAX_NAN: &str = "fn NAME(x: f32) -> f32 {
  let bits = bitcast<i32>(x);
  let key = select(select(bits, bits ^ 0x7fffffff, bits < 0), 0x7fffffff, is_nan(x));
  let top = subgroupMax(key);
  if (top == 0x7fffffff) { return bitcast<f32>(0x7fc00000u); }
  return bitcast<f32>(select(top, top ^ 0x7fffffff, top < 0));
}
";

/// Nearest-even rounding of an f32 to the f16 grid, on the bits: overflow gives inf, NaN and inf
/// pass through, the subnormal range rounds to multiples of 2^-24.
const ROUND_F16: &str = "fn NAME(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  let sign = bits & 0x80000000u;
  let a = bits & 0x7fffffffu;
  if (a >= 0x7f800000u) { return x; }
  if (a >= 0x477ff000u) { return bitcast<f32>(sign | 0x7f800000u); }
  if (a >= 0x38800000u) {
    let r = a + 0xfffu + ((a >> 13u) & 1u);
    return bitcast<f32>(sign | (r & 0xffffe000u));
  }
  let m = round(bitcast<f32>(a) * 16777216.0) * 5.9604644775390625e-8;
  return bitcast<f32>(sign | bitcast<u32>(m));
}
";

/// Nearest-even rounding of an f32 to bf16 (its top 16 bits); NaN stays a (quiet) NaN.
const ROUND_BF16: &str = "fn NAME(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>(bits | 0x00400000u); }
  let r = bits + 0x7fffu + ((bits >> 16u) & 1u);
  return bitcast<f32>(r & 0xffff0000u);
}
";

/// `1 / x` with the special values of IEEE division, which device division need not give.
const RECIP: &str = "fn NAME(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  let sign = bits & 0x80000000u;
  if ((bits & 0x7fffffffu) == 0u) { return bitcast<f32>(sign | 0x7f800000u); }
  if ((bits & 0x7fffffffu) == 0x7f800000u) { return bitcast<f32>(sign); }
  return 1.0 / x;
}
";

const NONZERO_RECIP: &str = "fn NAME(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  if ((bits & 0x7fffffffu) == 0x7f800000u) { return bitcast<f32>(bits & 0x80000000u); }
  return 1.0 / x;
}
";

/// The low 32 bits of the i64 (or, for `x >= 0` when `sat` is 2^64, u64) that `x` truncates
/// to, saturating at `sat` and at -2^63 (`ConstValue::cast` of a float to an integer).
const LOW_BITS: &str = "fn NAME(x: f32, sat: f32) -> u32 {
  if (is_nan(x)) { return 0u; }
  if (x >= sat) { return 0xffffffffu; }
  if (x <= -9223372036854775808.0) { return 0u; }
  let a = abs(x);
  var m = 0u;
  if (a < 4294967296.0) {
    m = u32(a);
  } else {
    let bits = bitcast<u32>(a);
    let shift = (bits >> 23u) - 150u;
    m = select(0u, ((bits & 0x7fffffu) | 0x800000u) << shift, shift < 32u);
  }
  return select(m, 0u - m, x < 0.0);
}
";

/// Float to i64 as `ConstValue::cast`: truncation, saturating, NaN to 0.
const F32_TO_I64: &str = "fn NAME(x: f32) -> i64 {
  if (is_nan(x)) { return 0li; }
  if (x >= 9223372036854775808.0) { return 9223372036854775807li; }
  if (x <= -9223372036854775808.0) { return -9223372036854775807li - 1li; }
  return i64(x);
}
";

/// Float to u64 as `ConstValue::cast`: negatives go through i64, saturating at 2^64, NaN to 0.
const F32_TO_U64: &str = "fn NAME(x: f32) -> u64 {
  if (is_nan(x)) { return 0lu; }
  if (x < 0.0) { return u64(f32_to_i64(x)); }
  if (x >= 18446744073709551616.0) { return 0xfffffffffffffffflu; }
  return u64(x);
}
";

/// Threefry-2x32 with 20 rounds (Salmon et al.) on 32-bit halves, as `threefry2x32` in
/// `wgrad-ops`: counter and key low word first.
const THREEFRY: &str = "fn NAME(x: u64, key: u64) -> u64 {
  let rotations = array<u32, 8>(13u, 15u, 26u, 6u, 17u, 29u, 16u, 24u);
  let k0 = u32(key & 0xfffffffflu);
  let k1 = u32(key >> 32u);
  let ks = array<u32, 3>(k0, k1, k0 ^ k1 ^ 0x1bd11bdau);
  var x0 = u32(x & 0xfffffffflu) + ks[0];
  var x1 = u32(x >> 32u) + ks[1];
  for (var group = 0u; group < 5u; group++) {
    for (var i = 0u; i < 4u; i++) {
      let r = rotations[(group % 2u) * 4u + i];
      x0 += x1;
      x1 = ((x1 << r) | (x1 >> (32u - r))) ^ x0;
    }
    x0 += ks[(group + 1u) % 3u];
    x1 += ks[(group + 2u) % 3u] + group + 1u;
  }
  return (u64(x1) << 32u) | u64(x0);
}
";
