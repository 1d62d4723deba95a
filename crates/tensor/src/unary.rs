//! Elementwise math: the primitives the IR has (`exp2`, `log2`, `sin`, `sqrt`, `recip`,
//! `trunc`) and tinygrad's compositions of them. Integer inputs compute in float32.

use std::f64::consts::{FRAC_PI_2, LN_2, LOG2_10, PI};

use wgrad_dtype::least_upper_float;
use wgrad_ops::Ops;

use crate::Tensor;
use crate::error::{Result, TensorError, ok};

/// `c0 * x^n + c1 * x^(n-1) + ... + cn` by Horner's rule.
fn poly(x: &Tensor, coeffs: &[f64]) -> Tensor {
    coeffs.iter().skip(1).fold(x.full_like(coeffs[0]), |acc, &c| &(&acc * x) + c)
}

impl Tensor {
    /// This tensor in a float dtype: itself when it is one, float32 for integers and bools
    /// (the dtype tinygrad's math computes in).
    pub(crate) fn as_float(&self) -> Tensor {
        self.cast(least_upper_float(self.dtype()))
    }

    fn unary(&self, op: Ops) -> Tensor {
        self.as_float().alu(op, &[])
    }

    /// `2^x`.
    pub fn exp2(&self) -> Tensor {
        self.unary(Ops::Exp2)
    }

    /// `log2(x)`.
    pub fn log2(&self) -> Tensor {
        self.unary(Ops::Log2)
    }

    /// `sin(x)`.
    pub fn sin(&self) -> Tensor {
        self.unary(Ops::Sin)
    }

    /// `sqrt(x)`.
    pub fn sqrt(&self) -> Tensor {
        self.unary(Ops::Sqrt)
    }

    /// `1 / x`.
    pub fn reciprocal(&self) -> Tensor {
        self.unary(Ops::Recip)
    }

    /// Rounding toward zero (integers unchanged).
    pub fn trunc(&self) -> Tensor {
        match self.dtype().is_float() {
            true => self.alu(Ops::Trunc, &[]),
            false => self.clone(),
        }
    }

    /// `e^x`.
    pub fn exp(&self) -> Tensor {
        (&self.as_float() * (1.0 / LN_2)).exp2()
    }

    /// The natural logarithm.
    pub fn log(&self) -> Tensor {
        &self.log2() * LN_2
    }

    /// The base-10 logarithm.
    pub fn log10(&self) -> Tensor {
        &self.log2() * (1.0 / LOG2_10)
    }

    /// `1 / sqrt(x)`.
    pub fn rsqrt(&self) -> Tensor {
        self.reciprocal().sqrt()
    }

    /// `cos(x)`, as `sin(pi/2 - x)`.
    pub fn cos(&self) -> Tensor {
        ok(self.as_float().rsub(FRAC_PI_2)).sin()
    }

    /// `tan(x)`.
    pub fn tan(&self) -> Tensor {
        &self.sin() / &self.cos()
    }

    /// `x * x`.
    pub fn square(&self) -> Tensor {
        self * self
    }

    /// `-1`, `0` or `1` by the sign of `x`.
    pub fn sign(&self) -> Tensor {
        let sign = ok(ok(self.lt(0)).where_(-1, 1)).cast(self.dtype());
        let nonzero = ok(ok(self.ne(0)).where_(sign, self.zeros_like()));
        // `+ x * 0` keeps a NaN a NaN, as tinygrad does
        &nonzero + &ok(self.mul(0))
    }

    /// `|x|`.
    pub fn abs(&self) -> Tensor {
        self * &self.sign()
    }

    /// `max(x, 0)`.
    pub fn relu(&self) -> Tensor {
        ok(ok(self.gt(0)).where_(self, 0))
    }

    /// `1 / (1 + e^-x)`, from `z = e^-|x|` (at most 1): `1 / (1 + z)` where `x >= 0`, else
    /// `z / (1 + z)`. Through `1 / (1 + e^-x)` alone a large negative `x` made `e^-x` infinite
    /// and the gradient `inf * 0 = NaN` (float16 from |x| > 11; PyTorch gives 0). `-|x|` is
    /// taken with `where`, so the gradient at 0 is the `x >= 0` side's.
    pub fn sigmoid(&self) -> Tensor {
        let x = self.as_float();
        let positive = ok(x.ge(0));
        let z = (&ok(positive.where_(x.neg(), &x)) * (1.0 / LN_2)).exp2();
        let r = (&z + 1.0).reciprocal();
        ok(positive.where_(&r, &(&z * &r)))
    }

    /// `tanh(x)`, as `2 sigmoid(2x) - 1`.
    pub fn tanh(&self) -> Tensor {
        &(&(&self.as_float() * 2.0).sigmoid() * 2.0) - 1.0
    }

    /// `sinh(x)`.
    pub fn sinh(&self) -> Tensor {
        &(&self.exp() - &self.neg().exp()) / 2.0
    }

    /// `cosh(x)`.
    pub fn cosh(&self) -> Tensor {
        &(&self.exp() + &self.neg().exp()) / 2.0
    }

    /// `atanh(x)`.
    pub fn atanh(&self) -> Tensor {
        &(&(&self.as_float() + 1.0) / &ok(self.as_float().rsub(1.0))).log() / 2.0
    }

    /// `asinh(x)`.
    pub fn asinh(&self) -> Tensor {
        (self + &(&self.square() + 1.0).sqrt()).log()
    }

    /// `acosh(x)`.
    pub fn acosh(&self) -> Tensor {
        (self + &(&self.square() - 1.0).sqrt()).log()
    }

    /// `asin(x)` (Abramowitz and Stegun 4.4.46, error below 2e-8).
    pub fn asin(&self) -> Tensor {
        let coeffs = [
            -0.0012624911,
            0.0066700901,
            -0.0170881256,
            0.0308918810,
            -0.0501743046,
            0.0889789874,
            -0.2145988016,
            1.5707963050,
        ];
        let a = self.as_float().abs();
        let x = ok((&ok(a.rsub(1.0)).sqrt() * &poly(&a, &coeffs)).rsub(FRAC_PI_2));
        &self.sign() * &x
    }

    /// `acos(x)`.
    pub fn acos(&self) -> Tensor {
        ok(self.asin().rsub(FRAC_PI_2))
    }

    /// `atan(x)`, as `asin(x / sqrt(1 + x^2))`.
    pub fn atan(&self) -> Tensor {
        (self / &(&self.square() + 1.0).sqrt()).asin()
    }

    /// The error function (Abramowitz and Stegun 7.1.26, error below 1.5e-7): `erf(|x|)`
    /// with the sign of `x` chosen by one comparison (with `sign`'s three-way select, an
    /// H200 took 511 us for MiniLM's f32 FFN up with its GELU, against 506.5).
    pub fn erf(&self) -> Tensor {
        let x = self.as_float();
        let negative = ok(x.lt(0));
        let magnitude = ok(negative.where_(x.neg(), &x));
        let t = (&(&magnitude * 0.3275911) + 1.0).reciprocal();
        let p = poly(&t, &[1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592]);
        let positive = ok((&(&t * &p) * &x.square().neg().exp()).rsub(1.0));
        ok(negative.where_(positive.neg(), positive))
    }

    /// Rounding up.
    pub fn ceil(&self) -> Tensor {
        let b = self.trunc();
        ok(ok(self.gt(&b)).where_(&b + 1.0, &b))
    }

    /// Rounding down.
    pub fn floor(&self) -> Tensor {
        let b = self.trunc();
        ok(ok(self.lt(&b)).where_(&b - 1.0, &b))
    }

    /// Rounding to nearest, ties to even.
    pub fn round(&self) -> Tensor {
        let half = &self.trunc() / 2.0;
        let even = ok(half.trunc().eq(&half));
        let up = ok(ok(self.gt(0)).eq(even));
        ok(up.where_((self - 0.5).ceil(), (self + 0.5).floor()))
    }

    /// Whether each element is NaN.
    pub fn isnan(&self) -> Tensor {
        ok(self.ne(self))
    }

    /// Whether each element is `+inf` (when `positive`) or `-inf` (when `negative`).
    pub fn isinf(&self, positive: bool, negative: bool) -> Tensor {
        let pos = ok(self.eq(f64::INFINITY)).bitwise_and(positive);
        let neg = ok(self.eq(f64::NEG_INFINITY)).bitwise_and(negative);
        ok(ok(pos).bitwise_or(ok(neg)))
    }

    /// Whether each element is neither infinite nor NaN.
    pub fn isfinite(&self) -> Tensor {
        ok(self.isinf(true, true).bitwise_or(self.isnan())).logical_not()
    }

    /// `x` where positive, `slope * x` elsewhere.
    pub fn leaky_relu(&self, slope: f64) -> Tensor {
        ok(ok(self.lt(0)).where_(self * slope, self))
    }

    /// `max(x, 0) + min(0, alpha (e^(x/alpha) - 1))`.
    pub fn celu(&self, alpha: f64) -> Tensor {
        let neg = &(&(self / alpha).exp() - 1.0) * alpha;
        &self.relu() + &ok(neg.minimum(0.0))
    }

    /// `x` where positive, `alpha (e^x - 1)` elsewhere.
    pub fn elu(&self, alpha: f64) -> Tensor {
        &self.relu() - &(&ok(self.exp().rsub(1.0)).relu() * alpha)
    }

    /// The scaled ELU of Klambauer et al.
    pub fn selu(&self) -> Tensor {
        let (alpha, gamma) = (1.673_263_242_354_377_3, 1.050_700_987_355_480_5);
        let neg = &(&self.exp() - 1.0) * alpha;
        &ok(ok(self.ge(0)).where_(self, neg)) * gamma
    }

    /// `x * sigmoid(x)` (also called swish).
    pub fn silu(&self) -> Tensor {
        self * &self.sigmoid()
    }

    /// `x * sigmoid(x)`: [`Tensor::silu`].
    pub fn swish(&self) -> Tensor {
        self.silu()
    }

    /// `log(1 + e^x)`, as `logaddexp(x, 0)` so that it neither overflows nor underflows.
    pub fn softplus(&self) -> Tensor {
        ok(self.as_float().logaddexp(0.0))
    }

    /// `log(sigmoid(x)) = -softplus(-x)`.
    pub fn logsigmoid(&self) -> Tensor {
        self.neg().softplus().neg()
    }

    /// `x / (1 + |x|)`.
    pub fn softsign(&self) -> Tensor {
        self / &(&self.abs() + 1.0)
    }

    /// `max(0, min(1, alpha x + beta))` (tinygrad's and PyTorch's defaults: `alpha = 1/6`,
    /// `beta = 0.5`).
    pub fn hardsigmoid(&self, alpha: f64, beta: f64) -> Tensor {
        let y = &(self * alpha) + beta;
        &y.relu() - &(&y - 1.0).relu()
    }

    /// `x * tanh(softplus(x))`.
    pub fn mish(&self) -> Tensor {
        self * &self.softplus().tanh()
    }

    /// `x * sigmoid(1.702 x)`.
    pub fn quick_gelu(&self) -> Tensor {
        self * &(self * 1.702).sigmoid()
    }

    /// The exact GELU, `x Φ(x)` (PyTorch's default `gelu`), through erf's approximation:
    /// `Φ(x)` is `q` for `x < 0` and `1 - q` otherwise, with `q = erfc(|x| / √2) / 2` (Abramowitz
    /// and Stegun 7.1.26, with the halving and the `1 / √2` in its constants): fewer ops an
    /// element than `x (1 + erf(x / √2)) / 2`, and the same values at ±inf (inf, NaN).
    pub fn gelu_erf(&self) -> Tensor {
        let x = self.as_float();
        let negative = ok(x.lt(0));
        let magnitude = ok(negative.where_(x.neg(), &x));
        let t = (&(&magnitude * (0.3275911 * std::f64::consts::FRAC_1_SQRT_2)) + 1.0).reciprocal();
        let halved = [1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592].map(|c| c / 2.0);
        let q = &(&t * &poly(&t, &halved)) * &(&x.square() * -0.5).exp();
        &x * &ok(negative.where_(&q, ok(q.rsub(1.0))))
    }

    /// The tanh approximation of GELU.
    pub fn gelu(&self) -> Tensor {
        let inner = &(self + &(&(&(self * self) * self) * 0.044715)) * (2.0 / PI).sqrt();
        &(self * 0.5) * &(&inner.tanh() + 1.0)
    }

    /// `x` clamped below by `min` and above by `max`, either optional (tinygrad's `clamp`:
    /// where `x` is out of range the bound is taken, so a bound gets no gradient; NaN stays
    /// NaN). Errors when both bounds are `None`.
    pub fn clamp(&self, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(TensorError::Argument {
                op: "clamp",
                why: "at least one of min and max must be given".into(),
            });
        }
        let low = match min {
            Some(m) => self.lt(m)?.where_(m, self)?,
            None => self.clone(),
        };
        match max {
            Some(m) => low.gt(m)?.where_(m, &low),
            None => Ok(low),
        }
    }

    /// `x` clamped to `[min, max]` ([`Tensor::clamp`] with both bounds).
    pub fn clip(&self, min: f64, max: f64) -> Tensor {
        ok(self.clamp(Some(min), Some(max)))
    }

    /// `x` clamped to `[min, max]` (for floats, `clip`).
    pub fn hardtanh(&self, min: f64, max: f64) -> Tensor {
        self.clip(min, max)
    }

    /// `min(max(x, 0), 6)`.
    pub fn relu6(&self) -> Tensor {
        &self.relu() - &(self - 6.0).relu()
    }

    /// `x * relu6(x + 3) / 6`.
    pub fn hardswish(&self) -> Tensor {
        &(self * &(self + 3.0).relu6()) * (1.0 / 6.0)
    }
}
