//! Seedable random numbers: Threefry-2x32 of each element's index under the key `seed`
//! (tinygrad's generator), as uniform floats, normals, integers, the Kaiming and Glorot
//! initializers, and dropout masks.

use wgrad_dtype::{ConstValue, DType};
use wgrad_engine::numel;

use crate::error::{Result, TensorError};
use crate::mode::is_training;
use crate::{Tensor, with_default_device};

/// `shape` as the signed dims `reshape` takes.
fn signed(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// The `(fan_in, fan_out)` of a weight of `shape`: its trailing dims and its first.
fn fans(op: &'static str, shape: &[usize]) -> Result<(usize, usize)> {
    match shape {
        [] => Err(TensorError::Argument { op, why: "needs a shape of at least one dim, got ()".into() }),
        [out, rest @ ..] => Ok((rest.iter().product(), *out)),
    }
}

impl Tensor {
    /// Uniform random float32s in `[0, 1)`: Threefry-2x32 of each element's index under
    /// the key `seed`, the top 23 bits of the low word as the mantissa of a float in `[1, 2)`.
    pub fn rand(shape: &[usize], seed: u64) -> Result<Tensor> {
        let device = Tensor::default_device()?;
        let count = Tensor::arange(numel(shape))?.cast(DType::U64);
        let key = Tensor::constant(&[numel(shape)], ConstValue::UInt(seed), DType::U64, &device);
        let bits = count.threefry(&key)?.cast(DType::U32);
        let mantissa = bits.rshift(9)?.bitwise_or(0x3F80_0000u32)?;
        mantissa.bitcast(DType::F32)?.sub(1.0)?.reshape(&signed(shape))
    }

    /// Standard normal float32s (Box-Muller on two uniform draws from `seed`).
    pub fn randn(shape: &[usize], seed: u64) -> Result<Tensor> {
        let mut both = vec![2];
        both.extend_from_slice(shape);
        let u = Tensor::rand(&both, seed)?;
        let rest: Vec<(usize, usize)> = shape.iter().map(|&d| (0, d)).collect();
        let pick = |i: usize| -> Result<Tensor> {
            let mut arg = vec![(i, i + 1)];
            arg.extend_from_slice(&rest);
            u.shrink(&arg)?.reshape(&signed(shape))
        };
        let (u0, u1) = (pick(0)?, pick(1)?);
        let radius = u1.neg().add(1.0)?.log().mul(-2.0)?.sqrt();
        u0.mul(2.0 * std::f64::consts::PI)?.cos().mul(radius)
    }

    /// Uniform random float32s in `[low, high)`.
    pub fn uniform(shape: &[usize], low: f64, high: f64, seed: u64) -> Result<Tensor> {
        if high < low || !(high - low).is_finite() {
            let why = format!("the range [{low}, {high}) must be finite and not reversed");
            return Err(TensorError::Argument { op: "uniform", why });
        }
        Tensor::rand(shape, seed)?.mul(high - low)?.add(low)
    }

    /// Uniform random int32s in `[low, high)`.
    pub fn randint(shape: &[usize], low: i64, high: i64, seed: u64) -> Result<Tensor> {
        let fits = |v: i64| i32::try_from(v).is_ok();
        if low >= high || !fits(low) || !fits(high) || !fits(high - low) {
            let why =
                format!("the range [{low}, {high}) must be non-empty, within int32 and no wider than it");
            return Err(TensorError::Argument { op: "randint", why });
        }
        let span = (high - low) as f64;
        // floored in f32, which rounds a draw just below 1 up to `span` when it is large
        let offset = Tensor::rand(shape, seed)?.mul(span)?.cast(DType::I32).minimum(high - low - 1)?;
        offset.add(low)
    }

    /// Kaiming (He) uniform initial weights for a leaky ReLU of negative slope `a`: uniform
    /// in `±sqrt(6 / ((1 + a²) fan_in))`, `fan_in` the product of the dims after the first.
    pub fn kaiming_uniform(shape: &[usize], a: f64, seed: u64) -> Result<Tensor> {
        let (fan_in, _) = fans("kaiming_uniform", shape)?;
        let bound = (6.0 / ((1.0 + a * a) * fan_in.max(1) as f64)).sqrt();
        Tensor::uniform(shape, -bound, bound, seed)
    }

    /// Glorot (Xavier) uniform initial weights: uniform in `±sqrt(6 / (fan_in + fan_out))`,
    /// `fan_out` the first dim and `fan_in` the product of the others.
    pub fn glorot_uniform(shape: &[usize], seed: u64) -> Result<Tensor> {
        let (fan_in, fan_out) = fans("glorot_uniform", shape)?;
        let bound = (6.0 / (fan_in + fan_out).max(1) as f64).sqrt();
        Tensor::uniform(shape, -bound, bound, seed)
    }

    /// In training mode ([`crate::training`]), each element zeroed with probability `p`
    /// (the mask drawn from `seed`) and the rest scaled by `1 / (1 - p)`; otherwise the
    /// tensor itself.
    pub fn dropout(&self, p: f64, seed: u64) -> Result<Tensor> {
        if !(0.0..1.0).contains(&p) {
            return Err(TensorError::Argument { op: "dropout", why: format!("p = {p} must be in [0, 1)") });
        }
        if !is_training() || p == 0.0 {
            return Ok(self.clone());
        }
        let keep = with_default_device(self.device(), || Tensor::rand(self.shape(), seed))?.ge(p)?;
        keep.where_(self, 0)?.div(1.0 - p)
    }
}
