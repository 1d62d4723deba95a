//! Random numbers: Threefry-2x32 (tinygrad's generator) of a counter per element under a key,
//! either a fixed key ([`Seed::Key`]) or the next numbers of a per-device stream
//! ([`Seed::Stream`], which [`Tensor::manual_seed`] restarts). From those bits: uniform
//! floats, normals, exact integers, the standard initializers, dropout masks, permutations
//! and multinomial samples.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use wgrad_dtype::{ConstValue, DType};
use wgrad_engine::{DeviceName, numel};

use crate::error::{Result, TensorError};
use crate::mode::is_training;
use crate::{Tensor, with_default_device};

/// Where a random op takes its numbers from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seed {
    /// A fixed key: the same key gives the same numbers, on every device, every time.
    Key(u64),
    /// The next numbers of the device's stream (tinygrad's global generator): the streams
    /// restart at [`Tensor::manual_seed`], each device's on its own, so a seeded program
    /// draws the same numbers on a device whatever it draws on others.
    Stream,
}

impl From<u64> for Seed {
    fn from(key: u64) -> Seed {
        Seed::Key(key)
    }
}

/// The global seed and each device's stream position: a uint64 tensor of one element on
/// the device, advanced in place by every draw (tinygrad's counters), so the draws of a
/// replayed [`crate::TinyJit`] advance it too.
struct Streams {
    seed: u64,
    positions: HashMap<DeviceName, Tensor>,
}

/// The streams; the seed is 0 until [`Tensor::manual_seed`] (tinygrad seeds from the clock).
static STREAMS: LazyLock<Mutex<Streams>> =
    LazyLock::new(|| Mutex::new(Streams { seed: 0, positions: HashMap::new() }));

/// SplitMix64's finalizer: a well-mixed 64-bit value.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The key of `device`'s stream and the first of the next `count` counters, which it takes:
/// the position advances on the device and the counters are read after it (position minus
/// `count`), so the draw depends on the advance and never sees a stale position.
fn take(device: &DeviceName, count: usize) -> Result<(u64, Tensor)> {
    let mut streams = STREAMS.lock().unwrap_or_else(PoisonError::into_inner);
    let name = device
        .to_string()
        .bytes()
        .fold(0xCBF2_9CE4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3));
    let key = mix(streams.seed ^ mix(name));
    let position = match streams.positions.get(device) {
        Some(position) => position.clone(),
        None => {
            let position = with_default_device(device, || Tensor::zeros(&[1], DType::U64))?;
            position.own_buffer()?;
            streams.positions.insert(device.clone(), position.clone());
            position
        }
    };
    position.assign(&position.add(count as u64)?)?;
    Ok((key, position.sub(count as u64)?))
}

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
    /// Sets the seed of the random streams and restarts every device's ([`Seed::Stream`]).
    pub fn manual_seed(seed: u64) {
        let mut streams = STREAMS.lock().unwrap_or_else(PoisonError::into_inner);
        streams.seed = seed;
        streams.positions.clear();
    }

    /// Random uint32 words of `shape`: the low word of Threefry-2x32 of each element's
    /// counter (its index, plus the stream's position for [`Seed::Stream`]) under the key.
    pub fn random_bits(shape: &[usize], seed: impl Into<Seed>) -> Result<Tensor> {
        let (device, n) = (Tensor::default_device()?, numel(shape));
        let index = Tensor::arange(n)?.cast(DType::U64);
        let (key, counters) = match seed.into() {
            Seed::Key(key) => (key, index),
            Seed::Stream => {
                // the stream's position as data (not a constant): every draw is one kernel
                let (key, first) = take(&device, n)?;
                (key, index.add(first)?)
            }
        };
        let key = Tensor::constant(&[n], ConstValue::UInt(key), DType::U64, &device);
        counters.threefry(&key)?.cast(DType::U32).reshape(&signed(shape))
    }

    /// Uniform random float32s in `[0, 1)`: the top 23 bits of [`Tensor::random_bits`] as
    /// the mantissa of a float in `[1, 2)`, minus one.
    pub fn rand(shape: &[usize], seed: impl Into<Seed>) -> Result<Tensor> {
        let mantissa = Tensor::random_bits(shape, seed)?.rshift(9)?.bitwise_or(0x3F80_0000u32)?;
        mantissa.bitcast(DType::F32)?.sub(1.0)
    }

    /// Standard normal float32s (Box-Muller on two uniform draws).
    pub fn randn(shape: &[usize], seed: impl Into<Seed>) -> Result<Tensor> {
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

    /// Normal float32s of mean `mean` and standard deviation `std` (at least 0).
    pub fn normal(shape: &[usize], mean: f64, std: f64, seed: impl Into<Seed>) -> Result<Tensor> {
        if std.is_nan() || std < 0.0 {
            return Err(TensorError::Argument {
                op: "normal",
                why: format!("std = {std} must be at least 0"),
            });
        }
        Tensor::randn(shape, seed)?.mul(std)?.add(mean)
    }

    /// Uniform random float32s in `[low, high)`.
    pub fn uniform(shape: &[usize], low: f64, high: f64, seed: impl Into<Seed>) -> Result<Tensor> {
        if high < low || !(high - low).is_finite() {
            let why = format!("the range [{low}, {high}) must be finite and not reversed");
            return Err(TensorError::Argument { op: "uniform", why });
        }
        Tensor::rand(shape, seed)?.mul(high - low)?.add(low)
    }

    /// Uniform random float32s in `[-1, 1)` scaled by `1 / sqrt(numel)`.
    pub fn scaled_uniform(shape: &[usize], seed: impl Into<Seed>) -> Result<Tensor> {
        Tensor::uniform(shape, -1.0, 1.0, seed)?.mul((numel(shape).max(1) as f64).sqrt().recip())
    }

    /// Uniform random int32s in `[low, high)`, every value reachable: the 32 random bits of
    /// each element times the range's width, the top 32 bits of the product (exact in
    /// integers; the bias is below `width / 2^32`).
    pub fn randint(shape: &[usize], low: i64, high: i64, seed: impl Into<Seed>) -> Result<Tensor> {
        let fits = |v: i64| i32::try_from(v).is_ok();
        if low >= high || !fits(low) || !fits(high - 1) {
            let why = format!("the range [{low}, {high}) must be non-empty and within int32");
            return Err(TensorError::Argument { op: "randint", why });
        }
        let width = ConstValue::UInt((high - low) as u64);
        let bits = Tensor::random_bits(shape, seed)?.cast(DType::U64);
        let offset = bits.mul(crate::Value::Scalar(width))?.rshift(32)?.cast(DType::I64);
        Ok(offset.add(low)?.cast(DType::I32))
    }

    /// Uniform random values in `[0, 1)` shaped like this (float) tensor, in its dtype and on
    /// its device.
    pub fn rand_like(&self, seed: impl Into<Seed>) -> Result<Tensor> {
        self.float_like("rand_like", |shape| Tensor::rand(shape, seed))
    }

    /// Standard normal values shaped like this (float) tensor, in its dtype and on its
    /// device.
    pub fn randn_like(&self, seed: impl Into<Seed>) -> Result<Tensor> {
        self.float_like("randn_like", |shape| Tensor::randn(shape, seed))
    }

    /// `make(shape)` on this tensor's device, cast to its dtype, which must be a float.
    fn float_like(&self, op: &'static str, make: impl FnOnce(&[usize]) -> Result<Tensor>) -> Result<Tensor> {
        if !self.is_floating_point() {
            return Err(TensorError::DType { op, lhs: self.operand(), rhs: self.operand() });
        }
        Ok(with_default_device(self.device(), || make(self.shape()))?.cast(self.dtype()))
    }

    /// Kaiming (He) uniform initial weights for a leaky ReLU of negative slope `a`: uniform
    /// in `±sqrt(6 / ((1 + a²) fan_in))`, `fan_in` the product of the dims after the first.
    pub fn kaiming_uniform(shape: &[usize], a: f64, seed: impl Into<Seed>) -> Result<Tensor> {
        let (fan_in, _) = fans("kaiming_uniform", shape)?;
        let bound = (6.0 / ((1.0 + a * a) * fan_in.max(1) as f64)).sqrt();
        Tensor::uniform(shape, -bound, bound, seed)
    }

    /// Kaiming (He) normal initial weights for a leaky ReLU of negative slope `a`: normal with
    /// standard deviation `sqrt(2 / ((1 + a²) fan_in))`.
    pub fn kaiming_normal(shape: &[usize], a: f64, seed: impl Into<Seed>) -> Result<Tensor> {
        let (fan_in, _) = fans("kaiming_normal", shape)?;
        Tensor::normal(shape, 0.0, (2.0 / ((1.0 + a * a) * fan_in.max(1) as f64)).sqrt(), seed)
    }

    /// Glorot (Xavier) uniform initial weights: uniform in `±sqrt(6 / (fan_in + fan_out))`,
    /// `fan_out` the first dim and `fan_in` the product of the others.
    pub fn glorot_uniform(shape: &[usize], seed: impl Into<Seed>) -> Result<Tensor> {
        let (fan_in, fan_out) = fans("glorot_uniform", shape)?;
        let bound = (6.0 / (fan_in + fan_out).max(1) as f64).sqrt();
        Tensor::uniform(shape, -bound, bound, seed)
    }

    /// A random permutation of `0..n` (int32): the order that sorts `n` uniform draws.
    pub fn randperm(n: usize, seed: impl Into<Seed>) -> Result<Tensor> {
        Tensor::rand(&[n], seed)?.argsort(0, false)
    }

    /// `samples` category indices (int32) drawn with probabilities proportional to the
    /// weights along the last dim of this 1-d or 2-d tensor (one row of samples per row of
    /// weights). With `replacement` each draw inverts the cumulative distribution;
    /// without, the categories are ranked by `log(u) / w` (Efraimidis-Spirakis), so no
    /// category comes twice and `samples` is at most their number.
    pub fn multinomial(&self, samples: usize, replacement: bool, seed: impl Into<Seed>) -> Result<Tensor> {
        let op = "multinomial";
        if !(1..=2).contains(&self.ndim()) || samples == 0 {
            let why = format!(
                "needs 1-d or 2-d weights and at least one sample, got {} and {samples}",
                self.operand()
            );
            return Err(TensorError::Argument { op, why });
        }
        let w = if self.ndim() == 1 { self.unsqueeze(0)? } else { self.clone() }.as_float();
        let (rows, n) = (w.shape()[0], w.shape()[1]);
        if !replacement && samples > n {
            let why = format!("{samples} samples without replacement from {n} categories");
            return Err(TensorError::Argument { op, why });
        }
        let device = self.device().clone();
        let picked = if replacement || samples == 1 {
            let cdf = w.cumsum(1)?;
            let cdf = cdf.div(cdf.shrink(&[(0, rows), (n - 1, n)])?)?;
            let u = with_default_device(&device, || Tensor::rand(&[samples, rows, 1], seed))?;
            // the first category whose cumulative weight passes the draw
            let below = u.ge(&cdf)?.sum(&[2], false)?.minimum(n as i64 - 1)?;
            below.permute(&[1, 0])?
        } else {
            let u = with_default_device(&device, || Tensor::rand(w.shape(), seed))?;
            u.log2().div(&w)?.topk(samples, 1, true)?.1
        };
        let picked = picked.cast(DType::I32);
        if self.ndim() == 1 { picked.squeeze(0) } else { Ok(picked) }
    }

    /// In training mode ([`crate::training`]), each element zeroed with probability `p`
    /// (the mask drawn from `seed`) and the rest scaled by `1 / (1 - p)`; otherwise the
    /// tensor itself.
    pub fn dropout(&self, p: f64, seed: impl Into<Seed>) -> Result<Tensor> {
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
