//! Binary ops with broadcasting and tinygrad's dtype rules, comparisons, `where`, casts,
//! and the `std::ops` operators.
//!
//! Operands broadcast numpy-style (shapes aligned on the right, size-1 dims stretched).
//! Two tensors meet at their least upper dtype. A scalar takes the tensor's dtype when the
//! tensor is float, or both are integers; otherwise its own (`bool`, `int32`, `float32`),
//! and the two meet at the least upper dtype: `int_tensor + 1.5` is float32.

use std::ops;

use wgrad_dtype::{ConstValue, DType, least_upper_dtype, least_upper_float};
use wgrad_ops::{Ops, UOp};

use crate::error::{Result, TensorError, ok};
use crate::{Element, Tensor};

/// A tensor or a scalar: the right operand of a binary op.
#[derive(Clone, Debug)]
pub enum Value {
    /// A tensor.
    Tensor(Tensor),
    /// A scalar, broadcast to the other operand.
    Scalar(ConstValue),
}

impl From<&Tensor> for Value {
    fn from(t: &Tensor) -> Value {
        Value::Tensor(t.clone())
    }
}

impl From<Tensor> for Value {
    fn from(t: Tensor) -> Value {
        Value::Tensor(t)
    }
}

macro_rules! scalar_value {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::Scalar(v.to_const())
            }
        }
    )*};
}
scalar_value!(f32, f64, i32, i64, u32, u64, bool);

impl Value {
    /// This value as a tensor next to `like` (a scalar in the dtype of the module rules).
    pub(crate) fn of(self, like: &Tensor) -> Tensor {
        like.operand_of(self)
    }
}

/// The dtype a Python-style scalar has on its own.
fn scalar_dtype(c: ConstValue) -> DType {
    match c {
        ConstValue::Bool(_) => DType::BOOL,
        ConstValue::Int(_) | ConstValue::UInt(_) => DType::default_int(),
        ConstValue::Float(_) => DType::default_float(),
    }
}

/// The numpy broadcast of two shapes, if they broadcast.
pub(crate) fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| if i + s.len() < n { 1 } else { s[i + s.len() - n] };
    (0..n)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

impl Tensor {
    /// This tensor broadcast to `shape` (which it must broadcast to).
    pub(crate) fn broadcast_to(&self, shape: &[usize]) -> Tensor {
        if self.shape() == shape {
            return self.clone();
        }
        let mut padded = vec![1; shape.len() - self.ndim()];
        padded.extend_from_slice(self.shape());
        let u = wgrad_engine::lazy::reshape(&self.uop(), &padded);
        self.with(wgrad_engine::lazy::expand(&u, shape), shape.to_vec())
    }

    /// `value` as a tensor next to this one: a tensor as is, a scalar in the dtype of the
    /// module rules, broadcast later.
    fn operand_of(&self, value: Value) -> Tensor {
        match value {
            Value::Tensor(t) => t,
            Value::Scalar(c) => {
                let dt = self.dtype();
                let keep = dt.is_float()
                    || (dt.is_int() && !matches!(c, ConstValue::Float(_) | ConstValue::Bool(_)));
                let dtype = if keep { dt } else { scalar_dtype(c) };
                Tensor::constant(&[], c, dtype, self.device())
            }
        }
    }

    /// `self` and `rhs` (swapped when `reverse`) broadcast together, cast to `dtype` (the
    /// least upper dtype when `None`).
    pub(crate) fn broadcasted(
        &self,
        rhs: impl Into<Value>,
        op: &'static str,
        reverse: bool,
        dtype: Option<DType>,
    ) -> Result<(Tensor, Tensor)> {
        let rhs = self.operand_of(rhs.into());
        let (a, b) = if reverse { (rhs, self.clone()) } else { (self.clone(), rhs) };
        if a.device() != b.device() {
            return Err(TensorError::Device { op, lhs: a.device().clone(), rhs: b.device().clone() });
        }
        let shape = broadcast_shape(a.shape(), b.shape()).ok_or_else(|| TensorError::Broadcast {
            op,
            lhs: a.operand(),
            rhs: b.operand(),
        })?;
        let dtype = dtype.unwrap_or_else(|| least_upper_dtype(&[a.dtype(), b.dtype()]));
        Ok((a.cast(dtype).broadcast_to(&shape), b.cast(dtype).broadcast_to(&shape)))
    }

    /// The ALU op `op` over `self` and `rest` (already broadcast and typed).
    pub(crate) fn alu(&self, op: Ops, rest: &[&Tensor]) -> Tensor {
        let src: Vec<UOp> = rest.iter().map(|t| t.uop()).collect();
        let refs: Vec<&UOp> = src.iter().collect();
        self.with(self.uop().alu(op, &refs), self.shape().to_vec())
    }

    fn binary(&self, rhs: impl Into<Value>, op: Ops, name: &'static str, reverse: bool) -> Result<Tensor> {
        let (a, b) = self.broadcasted(rhs, name, reverse, None)?;
        Ok(a.alu(op, &[&b]))
    }

    /// An integer-or-bool-only binary op.
    fn bitwise(&self, rhs: impl Into<Value>, op: Ops, name: &'static str) -> Result<Tensor> {
        let (a, b) = self.broadcasted(rhs, name, false, None)?;
        if a.dtype().is_float() {
            return Err(TensorError::DType { op: name, lhs: self.operand(), rhs: b.operand() });
        }
        Ok(a.alu(op, &[&b]))
    }

    /// The value converted into `dtype` (this tensor when it has it).
    pub fn cast(&self, dtype: DType) -> Tensor {
        match self.dtype() == dtype {
            true => self.clone(),
            false => self.with(self.uop().cast(dtype), self.shape().to_vec()),
        }
    }

    /// The bits reinterpreted as `dtype`, which must have the same item size.
    pub fn bitcast(&self, dtype: DType) -> Result<Tensor> {
        if dtype.itemsize() != self.dtype().itemsize() {
            let target = Box::new(crate::error::Operand { shape: self.shape().to_vec(), dtype });
            return Err(TensorError::DType { op: "bitcast", lhs: self.operand(), rhs: target });
        }
        Ok(self.with(self.uop().bitcast(dtype), self.shape().to_vec()))
    }

    /// `self + rhs`.
    pub fn add(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        self.binary(rhs, Ops::Add, "add", false)
    }

    /// `self - rhs` (for bools, xor).
    pub fn sub(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        let (a, b) = self.broadcasted(rhs, "sub", false, None)?;
        Ok(if a.dtype().is_bool() { a.alu(Ops::Xor, &[&b]) } else { a.alu(Ops::Add, &[&b.neg()]) })
    }

    /// `lhs - self`.
    pub fn rsub(&self, lhs: impl Into<Value>) -> Result<Tensor> {
        self.neg().add(lhs)
    }

    /// `self * rhs`.
    pub fn mul(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        self.binary(rhs, Ops::Mul, "mul", false)
    }

    /// `self / rhs`, true division: integers divide as floats.
    pub fn div(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        let (a, b) = self.broadcasted(rhs, "div", false, None)?;
        let float = least_upper_float(a.dtype());
        Ok(a.cast(float).alu(Ops::Mul, &[&b.cast(float).reciprocal()]))
    }

    /// `lhs / self`.
    pub fn rdiv(&self, lhs: impl Into<Value>) -> Result<Tensor> {
        let (a, b) = self.broadcasted(lhs, "div", true, None)?;
        a.div(&b)
    }

    /// The elementwise maximum (ties split the gradient evenly).
    pub fn maximum(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        self.binary(rhs, Ops::Max, "maximum", false)
    }

    /// The elementwise minimum: the maximum of the operands in reverse order (see
    /// [`Tensor::min`]).
    pub fn minimum(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        let (a, b) = self.broadcasted(rhs, "minimum", false, None)?;
        Ok(a.inverse().alu(Ops::Max, &[&b.inverse()]).inverse())
    }

    /// `self ^ exponent` as `2^(e log2|b|)`, the sign fixed for negative bases with odd
    /// exponents, NaN for negative bases with fractional ones, and `0^0 = 1`.
    pub fn pow(&self, exponent: impl Into<Value>) -> Result<Tensor> {
        let (b, e) = self.broadcasted(exponent, "pow", false, None)?;
        let (b, e) = (b.as_float(), e.as_float());
        let magnitude = (&e * &b.abs().log2()).exp2();
        let negative = b.lt(0.0)?.detach().where_(1.0, 0.0)?;
        let sign = &(&negative * &(&(&e * std::f64::consts::PI).cos() - 1.0)) + 1.0;
        let fractional = e.ne(e.trunc())?.cast(negative.dtype());
        let nan = (&negative * &fractional).detach().where_(f64::NAN, 1.0)?;
        let zero_zero = b.eq(0.0)?.bitwise_and(&e.eq(0.0)?)?.detach();
        zero_zero.where_(1.0, &(&magnitude * &sign) * &nan)
    }

    /// Truncating integer division (C-style).
    pub fn idiv(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        self.bitwise(rhs, Ops::Idiv, "idiv")
    }

    /// Flooring division of integers (Python's `//`).
    pub fn floordiv(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        let (a, b) = self.broadcasted(rhs, "floordiv", false, None)?;
        let q = a.idiv(&b)?;
        // truncation rounds toward zero: one less when the signs differ and it was inexact
        let inexact = q.mul(&b)?.ne(&a)?;
        let signs_differ = a.lt(0)?.ne(&b.lt(0)?)?;
        let fix = inexact.bitwise_and(&signs_differ)?;
        q.sub(fix.cast(q.dtype()))
    }

    /// The remainder with the sign of the divisor (Python's `%`).
    pub fn modulo(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        let (a, b) = self.broadcasted(rhs, "mod", false, None)?;
        a.sub(&a.floordiv(&b)?.mul(&b)?)
    }

    /// The remainder with the sign of the dividend (C's `fmod`, PyTorch's `fmod`): `%` of
    /// integers truncating toward zero, `a - trunc(a / b) * b` for floats.
    pub fn fmod(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        let (a, b) = self.broadcasted(rhs, "fmod", false, None)?;
        match a.dtype().is_float() {
            true => a.sub(a.div(&b)?.trunc().mul(&b)?),
            false => Ok(a.alu(Ops::Mod, &[&b])),
        }
    }

    /// `self + (end - self) * weight`: linear interpolation towards `end`.
    pub fn lerp(&self, end: impl Into<Value>, weight: impl Into<Value>) -> Result<Tensor> {
        self.add(end.into().of(self).sub(self)?.mul(weight)?)
    }

    /// `log(e^self + e^other)`, computed stably around the larger of the two.
    pub fn logaddexp(&self, other: impl Into<Value>) -> Result<Tensor> {
        let (a, b) = self.broadcasted(other, "logaddexp", false, None)?;
        let m = a.maximum(&b)?.detach();
        a.sub(&m)?.exp().add(b.sub(&m)?.exp())?.log().add(&m)
    }

    /// `|self|` with the sign of `other` (negative zero counts as negative). The dtype
    /// follows the broadcasting rules (PyTorch always returns a float).
    pub fn copysign(&self, other: impl Into<Value>) -> Result<Tensor> {
        let (a, b) = self.broadcasted(other, "copysign", false, None)?;
        let negative = b.lt(0)?.bitwise_or(b.reciprocal().lt(0)?)?;
        let magnitude = a.abs();
        negative.where_(magnitude.neg(), &magnitude)
    }

    /// Where `mask` holds, `value`; elsewhere this tensor (all broadcast together).
    pub fn masked_fill(&self, mask: &Tensor, value: impl Into<Value>) -> Result<Tensor> {
        if !mask.dtype().is_bool() {
            return Err(TensorError::DType { op: "masked_fill", lhs: self.operand(), rhs: mask.operand() });
        }
        mask.where_(value, self)
    }

    /// Whether each element is within `atol + rtol * |other|` of `other` (numpy's and
    /// PyTorch's `isclose`): infinities only match themselves, NaNs match NaNs when
    /// `equal_nan`.
    pub fn isclose(&self, other: impl Into<Value>, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
        let (a, b) = self.broadcasted(other, "isclose", false, None)?;
        let near = a.sub(&b)?.abs().le(b.abs().mul(rtol)?.add(atol)?)?;
        let finite = a.isfinite().bitwise_and(b.isfinite())?.bitwise_and(&near)?;
        let infinite = a.isinf(true, true).bitwise_or(b.isinf(true, true))?.bitwise_and(a.eq(&b)?)?;
        let nans = a.isnan().bitwise_and(b.isnan())?.bitwise_and(equal_nan)?;
        finite.bitwise_or(&infinite)?.bitwise_or(&nans)
    }

    /// Whether every element is [`Tensor::isclose`] to `other`: a bool scalar tensor, as in
    /// tinygrad (PyTorch returns a Python bool; read it with `item::<bool>()`).
    pub fn allclose(&self, other: impl Into<Value>, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
        self.isclose(other, rtol, atol, equal_nan)?.all(&[], false)
    }

    /// `self ^ rhs`, bitwise (for bools, logical xor).
    pub fn bitwise_xor(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        self.bitwise(rhs, Ops::Xor, "bitwise_xor")
    }

    /// `self & rhs`, bitwise (for bools, logical and).
    pub fn bitwise_and(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        self.bitwise(rhs, Ops::And, "bitwise_and")
    }

    /// `self | rhs`, bitwise (for bools, logical or).
    pub fn bitwise_or(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        self.bitwise(rhs, Ops::Or, "bitwise_or")
    }

    /// `!self`, bitwise: every bit flipped (for bools, logical not). Integers and bools only.
    pub fn bitwise_not(&self) -> Result<Tensor> {
        match self.dtype() {
            d if d.is_bool() => Ok(self.logical_not()),
            d if d.is_unsigned() => self.bitwise_xor(Value::Scalar(d.max_value())),
            _ => self.bitwise_xor(-1),
        }
    }

    /// `self << bits` (integers; `bits` a tensor or a scalar).
    pub fn lshift(&self, bits: impl Into<Value>) -> Result<Tensor> {
        self.bitwise(bits, Ops::Shl, "lshift")
    }

    /// `self >> bits` (integers; arithmetic for signed types).
    pub fn rshift(&self, bits: impl Into<Value>) -> Result<Tensor> {
        self.bitwise(bits, Ops::Shr, "rshift")
    }

    /// Threefry-2x32 of the u64 counters `self` under the u64 keys `key`.
    pub fn threefry(&self, key: &Tensor) -> Result<Tensor> {
        let (a, b) = self.broadcasted(key, "threefry", false, Some(DType::U64))?;
        Ok(a.alu(Ops::Threefry, &[&b]))
    }

    /// `self < rhs`.
    pub fn lt(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        self.binary(rhs, Ops::CmpLt, "lt", false)
    }

    /// `self > rhs`.
    pub fn gt(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        self.binary(rhs, Ops::CmpLt, "gt", true)
    }

    /// `self <= rhs`.
    pub fn le(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        Ok(self.gt(rhs)?.logical_not())
    }

    /// `self >= rhs`.
    pub fn ge(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        Ok(self.lt(rhs)?.logical_not())
    }

    /// `self != rhs`.
    pub fn ne(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        self.binary(rhs, Ops::CmpNe, "ne", false)
    }

    /// `self == rhs`.
    pub fn eq(&self, rhs: impl Into<Value>) -> Result<Tensor> {
        Ok(self.ne(rhs)?.logical_not())
    }

    /// Where `self` (as bool) holds, `x`, else `y`; all three broadcast together.
    pub fn where_(&self, x: impl Into<Value>, y: impl Into<Value>) -> Result<Tensor> {
        let (x, y) = (x.into(), y.into());
        let (x, y) = match (&x, &y) {
            (Value::Scalar(a), Value::Scalar(_)) => {
                let like = Tensor::constant(&[], *a, scalar_dtype(*a), self.device());
                like.broadcasted(y, "where", false, None)?
            }
            (Value::Tensor(t), _) => t.broadcasted(y, "where", false, None)?,
            (_, Value::Tensor(t)) => t.broadcasted(x, "where", true, None)?,
        };
        let cond = self.cast(DType::BOOL);
        let shape = broadcast_shape(cond.shape(), x.shape()).ok_or_else(|| TensorError::Broadcast {
            op: "where",
            lhs: cond.operand(),
            rhs: x.operand(),
        })?;
        let (c, x, y) = (cond.broadcast_to(&shape), x.broadcast_to(&shape), y.broadcast_to(&shape));
        Ok(c.alu(Ops::Where, &[&x, &y]))
    }

    /// The values in reverse order, exactly: `-x` for floats, `!x` (bitwise) for integers
    /// and bools, so the largest becomes the smallest (tinygrad's `_inverse`).
    pub(crate) fn inverse(&self) -> Tensor {
        match self.dtype().is_float() {
            true => self.neg(),
            false => ok(self.bitwise_not()),
        }
    }

    /// Truthiness negated: `x == 0` (for bools, `!x`).
    pub fn logical_not(&self) -> Tensor {
        let b = self.cast(DType::BOOL);
        b.alu(Ops::CmpNe, &[&b.full_like(true)])
    }

    /// `-self` (for bools, `!self`).
    pub fn neg(&self) -> Tensor {
        match self.dtype().is_bool() {
            true => self.logical_not(),
            false => self.alu(Ops::Mul, &[&self.full_like(-1)]),
        }
    }
}

macro_rules! std_binary {
    ($trait:ident, $method:ident, $fallible:ident, $reverse:expr) => {
        impl<R: Into<Value>> ops::$trait<R> for &Tensor {
            type Output = Tensor;
            /// # Panics
            /// When the operands do not broadcast or their dtypes do not combine; the
            /// method of the same name returns a `Result` instead.
            fn $method(self, rhs: R) -> Tensor {
                Tensor::$fallible(self, rhs).unwrap_or_else(|e| panic!("{e}"))
            }
        }
        impl<R: Into<Value>> ops::$trait<R> for Tensor {
            type Output = Tensor;
            /// # Panics
            /// As for `&Tensor`.
            fn $method(self, rhs: R) -> Tensor {
                ops::$trait::$method(&self, rhs)
            }
        }
        std_binary!(@scalar $trait, $method, $reverse, f32, f64, i32, i64);
    };
    (@scalar $trait:ident, $method:ident, $reverse:expr, $($t:ty),*) => {$(
        impl ops::$trait<&Tensor> for $t {
            type Output = Tensor;
            /// # Panics
            /// When the scalar's dtype does not combine with the tensor's.
            fn $method(self, rhs: &Tensor) -> Tensor {
                $reverse(rhs, self).unwrap_or_else(|e: TensorError| panic!("{e}"))
            }
        }
        impl ops::$trait<Tensor> for $t {
            type Output = Tensor;
            /// # Panics
            /// As for `&Tensor`.
            fn $method(self, rhs: Tensor) -> Tensor {
                ops::$trait::$method(self, &rhs)
            }
        }
    )*};
}

std_binary!(Add, add, add, |t: &Tensor, s| t.add(s));
std_binary!(Sub, sub, sub, |t: &Tensor, s| t.rsub(s));
std_binary!(Mul, mul, mul, |t: &Tensor, s| t.mul(s));
std_binary!(Div, div, div, |t: &Tensor, s| t.rdiv(s));
std_binary!(BitAnd, bitand, bitwise_and, |t: &Tensor, s| t.bitwise_and(s));
std_binary!(BitOr, bitor, bitwise_or, |t: &Tensor, s| t.bitwise_or(s));
std_binary!(BitXor, bitxor, bitwise_xor, |t: &Tensor, s| t.bitwise_xor(s));

impl ops::Not for &Tensor {
    type Output = Tensor;
    /// # Panics
    /// On float tensors; [`Tensor::bitwise_not`] returns a `Result` instead.
    fn not(self) -> Tensor {
        self.bitwise_not().unwrap_or_else(|e| panic!("{e}"))
    }
}

impl ops::Neg for &Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        Tensor::neg(self)
    }
}

impl ops::Neg for Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        Tensor::neg(&self)
    }
}
