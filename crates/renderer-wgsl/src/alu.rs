//! ALU ops as WGSL expressions with `exec_alu` semantics (see `wgrad_ops::exec_alu`):
//! operators where WGSL already agrees, helpers where it does not (NaN-propagating `max`,
//! precise transcendentals, float-to-int conversions, integer powers), and re-wrapping or
//! re-rounding of narrow dtypes after every op that can leave them. Ops on known values, and
//! ops whose result is a constant (integer `sin`: |sin(x)| < 1 truncates to 0; `x % 0`), are
//! folded with `exec_alu` itself (WGSL rejects overflow and division by zero at compile time).

use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{GroupOp, OpSet, Ops, UOp, exec_alu};

use crate::RenderError;
use crate::helpers::Helper;
use crate::literal::literal;
use crate::sign;
use crate::types::Reg;
use crate::writer::Writer;

/// Float ops whose result a narrow float dtype must be rounded after (the others are exact).
const ROUNDED: OpSet = GroupOp::ALU.minus(OpSet::of(&[Ops::Max, Ops::Neg, Ops::Trunc, Ops::Where]));
/// Ops native f16 arithmetic gets right; the rest go through the f32 helpers.
const NATIVE_F16: OpSet =
    OpSet::of(&[Ops::Add, Ops::Sub, Ops::Mul, Ops::Fdiv, Ops::Neg, Ops::Trunc, Ops::CmpLt, Ops::CmpNe]);
/// Integer ops that can leave a narrow dtype's range.
const WRAPPED: OpSet = OpSet::of(&[
    Ops::Add,
    Ops::Sub,
    Ops::Mul,
    Ops::Neg,
    Ops::Shl,
    Ops::MulAcc,
    Ops::Pow,
    Ops::Idiv,
    Ops::Fdiv,
    Ops::Exp2,
]);

/// An ALU op rendered: an expression, or a value known at render time.
pub(crate) enum Value {
    Expr(String),
    Known(ConstValue),
}

impl Writer<'_> {
    /// ALU uop `u` (uop `index`): folded with `exec_alu` when its sources are known or its
    /// result does not depend on them, else its expression.
    pub(crate) fn alu(&mut self, index: usize, u: &UOp) -> Result<Value, RenderError> {
        let unsupported = |reason| RenderError::UnsupportedOp { index, op: u.op(), reason };
        let op = u.op();
        let operand = if GroupOp::COMPARISON.contains(op) { u.src()[0].dtype() } else { u.dtype() };
        let known: Option<Vec<ConstValue>> = u.src().iter().map(|s| self.known(s)).collect();
        let zero_divisor = u.src().get(1).and_then(|s| self.known(s)).is_some_and(|c| !c.is_truthy());
        let constant = (operand.is_int() && (op == Ops::Sin || (op == Ops::Mod && zero_divisor)))
            || (operand.is_bool() && matches!(op, Ops::Recip | Ops::Exp2 | Ops::Mod | Ops::Sin));
        let operands = match known {
            Some(values) => Some(values),
            // the result does not depend on the operands: evaluate it on zeros
            None if constant => Some(u.src().iter().map(|s| ConstValue::Int(0).cast(s.dtype())).collect()),
            None => None,
        };
        if let Some(values) = operands {
            let value = exec_alu(op, u.dtype(), &values).map_err(|_| unsupported("exec_alu refuses it"))?;
            return Ok(Value::Known(value));
        }
        let x = (0..u.src().len()).map(|i| self.src(index, u, i)).collect::<Result<Vec<_>, _>>()?;
        if op == Ops::Where {
            return Ok(Value::Expr(format!("select({}, {}, {})", x[2], x[1], x[0])));
        }
        if let (Some(cancel), true) = (cancellation(u), operand.is_float()) {
            let difference = self.self_difference(operand, &self.name_of(index, u, Some(&cancel.x))?);
            return Ok(Value::Expr(match &cancel.kept {
                None => difference,
                Some(kept) => format!("{} + {difference}", self.name_of(index, u, Some(kept))?),
            }));
        }
        Ok(Value::Expr(match self.reg(operand) {
            Reg::Bool => bool_alu(op, &x),
            Reg::F32 | Reg::F16 => {
                // only a min or a max needs its comparison's NaN checks (see `float_alu`)
                let chooses = op != Ops::CmpLt || self.min_max.contains(u);
                let may_be_nan: Vec<bool> = u
                    .src()
                    .iter()
                    .map(|s| chooses && self.known(s).is_none_or(|c| c.to_f64().is_nan()))
                    .collect();
                // a reciprocal of a value that cannot be zero needs no zero check
                let nonzero = op == Ops::Recip && sign::nonzero(&u.src()[0]);
                let recip = if nonzero { Helper::NonzeroRecip } else { Helper::Recip };
                self.float_alu(op, operand, &x, &may_be_nan, recip)
                    .ok_or(unsupported("not an op on floats"))?
            }
            _ => self.int_alu(op, operand, u, &x, zero_divisor),
        }))
    }

    /// `x - x` for a float `x` of `dtype`: 0, or NaN when `x` is infinite or NaN, decided from
    /// the exponent bits.
    fn self_difference(&mut self, dtype: DType, x: &str) -> String {
        let reg = self.reg(dtype);
        let wide = if reg == Reg::F16 { format!("f32({x})") } else { x.to_owned() };
        let (zero, nan) = (literal(ConstValue::Float(0.0), reg), literal(ConstValue::Float(f64::NAN), reg));
        format!("select({zero}, {nan}, (bitcast<u32>({wide}) & 0x7f800000u) == 0x7f800000u)")
    }

    /// A float op on operands of `dtype` (`may_be_nan` per operand; `recip` the reciprocal's
    /// helper), rounded back to it when it is narrow.
    fn float_alu(
        &mut self,
        op: Ops,
        dtype: DType,
        x: &[String],
        may_be_nan: &[bool],
        recip: Helper,
    ) -> Option<String> {
        let native = self.reg(dtype) == Reg::F16;
        let widened: Vec<String> =
            if native { x.iter().map(|a| format!("f32({a})")).collect() } else { x.to_vec() };
        if op == Ops::CmpNe && x[0] == x[1] {
            // `x != x` is the NaN test; from the bits, as a compiler may fold `x == x` to true
            return Some(format!("{}({})", self.helpers.call(Helper::IsNan), widened[0]));
        }
        if op == Ops::CmpLt {
            // `<` is already false with a NaN; the explicit checks keep device compilers from
            // turning `select(b, a, a < b)` into a NaN-ignoring min or max (NVIDIA's does), so
            // only comparisons that choose between their operands get them (a GELU's erf took 5
            // us more a MiniLM layer on an H200 with them on its `x < 0`)
            let is_nan = self.helpers.call(Helper::IsNan);
            let guards =
                widened.iter().zip(may_be_nan).filter(|(_, m)| **m).map(|(a, _)| format!("!{is_nan}({a})"));
            return Some(
                std::iter::once(format!("{} < {}", x[0], x[1]))
                    .chain(guards)
                    .collect::<Vec<_>>()
                    .join(" && "),
            );
        }
        if op == Ops::MulAcc && dtype != DType::F32 {
            // exec_alu rounds the product to the dtype before adding (and f32 holds a product of
            // two narrow values exactly); native f16 would fuse it
            let round =
                self.helpers.call(if dtype == DType::BF16 { Helper::RoundBf16 } else { Helper::RoundF16 });
            let sum = format!("{round}({} * {}) + {}", widened[0], widened[1], widened[2]);
            return Some(self.fit_float(dtype, sum));
        }
        if native && !NATIVE_F16.contains(op) {
            let value = self.f32_op(op, &widened, recip)?;
            return Some(if GroupOp::COMPARISON.contains(op) { value } else { self.fit_float(dtype, value) });
        }
        let value = self.f32_op(op, x, recip)?;
        if native || !ROUNDED.contains(op) || GroupOp::COMPARISON.contains(op) {
            return Some(value);
        }
        Some(self.fit_float(dtype, value))
    }

    /// A float op on f32 (or native f16) operands (`recip` the reciprocal's helper).
    fn f32_op(&mut self, op: Ops, x: &[String], recip: Helper) -> Option<String> {
        let mut call = |h: Helper| format!("{}({})", self.helpers.call(h), x.join(", "));
        Some(match op {
            Ops::Add => format!("{} + {}", x[0], x[1]),
            Ops::Sub => format!("{} - {}", x[0], x[1]),
            Ops::Mul => format!("{} * {}", x[0], x[1]),
            Ops::Fdiv => format!("{} / {}", x[0], x[1]),
            Ops::Idiv => call(Helper::FloatIdiv),
            Ops::Mod => call(Helper::FloatMod),
            Ops::MulAcc => format!("{} * {} + {}", x[0], x[1], x[2]),
            Ops::Neg => format!("-{}", x[0]),
            Ops::Trunc => format!("trunc({})", x[0]),
            // `!=` is an ordered comparison in WGSL (false with a NaN); exec_alu says true
            Ops::CmpNe => format!("!({} == {})", x[0], x[1]),
            Ops::Max => call(Helper::MaxNan),
            // the builtin: 3 ulp measured on lavapipe (Vulkan allows 3 + 2|x|), one instruction
            // where the polynomial costs ~30 (it made softmax compute-bound on an H200)
            Ops::Exp2 => format!("exp2({})", x[0]),
            Ops::Log2 => call(Helper::Log2),
            Ops::Sin => call(Helper::Sin),
            Ops::Sqrt => call(Helper::Sqrt),
            Ops::Recip => call(recip),
            Ops::Pow => call(Helper::Pow),
            _ => return None,
        })
    }

    /// An integer op on register operands of `dtype`, wrapped back to it when it is narrow.
    fn int_alu(&mut self, op: Ops, dtype: DType, u: &UOp, x: &[String], zero_divisor: bool) -> String {
        let reg = self.reg(dtype);
        let width = dtype.scalar().bits();
        let amount = u.src().get(1).and_then(|s| self.known(s)).map(ConstValue::to_i128);
        let shift = |x: &str| match amount {
            Some(c) => format!("{}u", c & i128::from(width - 1)),
            None => format!("u32({x} & {})", width - 1),
        };
        let value = match op {
            Ops::Add => format!("{} + {}", x[0], x[1]),
            Ops::Sub => format!("{} - {}", x[0], x[1]),
            Ops::Mul => format!("{} * {}", x[0], x[1]),
            // x / 0 == x in WGSL and exec_alu; a constant 0 divisor is an error in WGSL
            Ops::Idiv | Ops::Fdiv if zero_divisor => x[0].clone(),
            Ops::Idiv | Ops::Fdiv => format!("{} / {}", x[0], x[1]),
            Ops::Mod => format!("{} % {}", x[0], x[1]),
            // not the builtin over loaded values: NVIDIA's driver (580.159.04) drops an operand of
            // `max` over int32 components of one vec4 load in some orders (fuzz seed 6329,
            // bad_input's max_of_negated_ints_counts_every_element); a select of a comparison is
            // exact there. Index arithmetic (no load below) takes the builtin, which the driver
            // keeps in address computations: a prefetch's next step as a select left its loads
            // waiting (MiniLM's f16 FFN up on an H200: 717 us of six layers with `max`, 741 with
            // the select)
            Ops::Max if self.from_loads.contains(u) => {
                format!("select({1}, {0}, {0} > {1})", x[0], x[1])
            }
            Ops::Max => format!("max({}, {})", x[0], x[1]),
            Ops::And => format!("{} & {}", x[0], x[1]),
            Ops::Or => format!("{} | {}", x[0], x[1]),
            Ops::Xor => format!("{} ^ {}", x[0], x[1]),
            Ops::Shl => format!("{} << {}", x[0], shift(&x[1])),
            Ops::Shr => format!("{} >> {}", x[0], shift(&x[1])),
            Ops::CmpLt => format!("{} < {}", x[0], x[1]),
            Ops::CmpNe => format!("{} != {}", x[0], x[1]),
            Ops::Neg if reg.is_signed() => format!("-{}", x[0]),
            Ops::Neg => format!("{} - {}", literal(0.into(), reg), x[0]),
            // exec_alu: 1 / x truncated, and 1 / 0 == 1 (WGSL agrees)
            Ops::Recip => format!("{} / {}", literal(1.into(), reg), x[0]),
            Ops::Trunc => x[0].clone(),
            Ops::MulAcc => format!("{} * {} + {}", x[0], x[1], x[2]),
            Ops::Pow => format!("{}({}, {})", self.helpers.call(Helper::IntPow(reg)), x[0], x[1]),
            Ops::Exp2 => format!("{}({})", self.helpers.call(Helper::IntExp2(reg)), x[0]),
            Ops::Log2 => format!("{}({})", self.helpers.call(Helper::IntLog2(reg)), x[0]),
            Ops::Sqrt => format!("{}({})", self.helpers.call(Helper::IntSqrt(reg)), x[0]),
            Ops::Threefry => format!("{}({}, {})", self.helpers.call(Helper::Threefry), x[0], x[1]),
            // no other ALU op exists
            _ => x[0].clone(),
        };
        if WRAPPED.contains(op) { self.wrap(dtype, value) } else { value }
    }
}

/// A sum in which a value `x` cancels: `x - x` (`kept` none) or `(a + x) - x` (`kept` is `a`),
/// `-x` spelled as `x * -1` or `Neg`, in any order.
struct Cancellation {
    x: UOp,
    kept: Option<UOp>,
}

/// Where `u` cancels a value. IEEE makes `x - x` 0 for a finite `x` and NaN otherwise, and
/// `(a + x) - x` `a` up to rounding, or NaN when `x` is not finite. WGSL lets a device compiler
/// assume values are finite and fold both (lavapipe's and NVIDIA's do), which turns the NaN
/// gradient of `sqrt(|x - x|)` (seed 885) or of `sqrt(|max(x, x - x)|)` (seed 11010) into 0;
/// the caller renders the cancelled part from `x`'s bits instead.
fn cancellation(u: &UOp) -> Option<Cancellation> {
    let cancels = |sum: &UOp, x: UOp| {
        if *sum == x {
            return Some(Cancellation { x, kept: None });
        }
        let [a, b] = sum.src() else { return None };
        let kept = match sum.op() {
            Ops::Add if *b == x => a.clone(),
            Ops::Add if *a == x => b.clone(),
            _ => return None,
        };
        Some(Cancellation { x, kept: Some(kept) })
    };
    let [a, b] = u.src() else { return None };
    match u.op() {
        Ops::Sub => cancels(a, b.clone()),
        Ops::Add => sign::negated(b)
            .and_then(|x| cancels(a, x))
            .or_else(|| sign::negated(a).and_then(|x| cancels(b, x))),
        _ => None,
    }
}

/// A bool op: `exec_alu` treats bools as 0/1 integers (`+` is or, `*` is and, ...).
fn bool_alu(op: Ops, x: &[String]) -> String {
    let (a, b) = (&x[0], x.get(1).map_or("", String::as_str));
    match op {
        // `x != true` is how the IR spells not
        Ops::Xor | Ops::Sub | Ops::CmpNe if b == "true" => format!("!{a}"),
        Ops::Add | Ops::Or | Ops::Max => format!("{a} | {b}"),
        Ops::Mul | Ops::And => format!("{a} & {b}"),
        Ops::Xor | Ops::Sub | Ops::CmpNe => format!("{a} != {b}"),
        Ops::CmpLt => format!("!{a} & {b}"),
        Ops::MulAcc => format!("({a} & {b}) | {}", x[2]),
        Ops::Neg | Ops::Log2 => format!("!{a}"),
        Ops::Shr => format!("{a} & !{b}"),
        Ops::Pow => format!("{a} | !{b}"),
        // Idiv, Fdiv, Shl, Trunc, Sqrt: a / 1, a << 1 and sqrt keep 0 and 1 truthy as they were
        // (Recip, Exp2, Mod and Sin are constants, folded by the caller)
        _ => a.clone(),
    }
}
