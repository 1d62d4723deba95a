//! Resampling the last dims to a new size (tinygrad's `interpolate`): for each resized dim,
//! the source positions of every output as integer arithmetic on an `arange`, the values
//! picked with `gather`, and for linear modes the two neighbours blended with `lerp`.

use wgrad_dtype::DType;

use crate::error::{Result, TensorError};
use crate::{Tensor, with_default_device};

/// How [`Tensor::interpolate`] finds each output's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// The input at `floor(i * in / out)` (PyTorch's `nearest`).
    Nearest,
    /// The input at `floor((i + 0.5) * in / out)` (PyTorch's `nearest-exact`).
    NearestExact,
    /// The two nearest inputs blended linearly, in every resized dim (so over two dims it
    /// is bilinear, over three trilinear, as tinygrad's `linear`).
    Linear,
    /// [`Interpolation::Linear`] over exactly two dims (PyTorch's `bilinear`).
    Bilinear,
    /// [`Interpolation::Linear`] over exactly three dims (PyTorch's `trilinear`).
    Trilinear,
}

impl Tensor {
    /// The last `size.len()` dims resampled to `size` by `mode` (any dims before them are
    /// batch dims). With `align_corners` (linear modes only) the first and last outputs sit
    /// on the first and last inputs; without, the outputs are centred on equal spans of the
    /// input (PyTorch's default). Integer inputs are computed in float32 and cast back.
    pub fn interpolate(&self, size: &[usize], mode: Interpolation, align_corners: bool) -> Result<Tensor> {
        let bad = |why: String| TensorError::Argument { op: "interpolate", why };
        let linear =
            matches!(mode, Interpolation::Linear | Interpolation::Bilinear | Interpolation::Trilinear);
        let dims = match mode {
            Interpolation::Bilinear => Some(2),
            Interpolation::Trilinear => Some(3),
            _ => None,
        };
        if size.is_empty() || size.len() > self.ndim() || dims.is_some_and(|d| d != size.len()) {
            return Err(bad(format!("size {size:?} ({mode:?}) does not fit {}", self.operand())));
        }
        if align_corners && !linear {
            return Err(bad("align_corners needs a linear mode".into()));
        }
        let skip = self.ndim() - size.len();
        if size.iter().zip(&self.shape()[skip..]).any(|(&o, &i)| o == 0 || i == 0) {
            return Err(bad(format!("size {size:?} and {} must not be empty", self.operand())));
        }
        let mut x = self.as_float();
        for (k, &out) in size.iter().enumerate().rev() {
            let axis = skip + k;
            let input = self.shape()[axis];
            let mut along = vec![1; self.ndim()];
            along[axis] = out;
            let mut target = x.shape().to_vec();
            target[axis] = out;
            let index = |t: Tensor| -> Result<Tensor> { t.reshape_to(&along).expand(&target) };
            let i = with_default_device(self.device(), || Tensor::arange(out))?;
            x = match linear {
                true => {
                    // the source position num / den of each output, in integers
                    let (num, den) = match (align_corners, out) {
                        (true, 1) => (i.mul(0)?, 1),
                        (true, _) => (i.mul((input - 1) as i64)?, out - 1),
                        (false, _) => (i.mul(2)?.add(1)?.mul(input as i64)?.sub(out as i64)?, 2 * out),
                    };
                    let num = num.maximum(0)?.minimum(((input - 1) * den) as i64)?;
                    let low = num.idiv(den as i64)?;
                    let high = num.add((den - 1) as i64)?.idiv(den as i64)?;
                    let weight = num.modulo(den as i64)?.cast(DType::F32).div(den as f64)?;
                    let below = x.gather(axis as isize, &index(low)?)?;
                    below.lerp(x.gather(axis as isize, &index(high)?)?, index(weight)?)?
                }
                false => {
                    let shift = if mode == Interpolation::NearestExact { 0.5 } else { 0.0 };
                    let at = i.cast(DType::F32).add(shift)?.mul(input as f64 / out as f64)?.cast(DType::I32);
                    x.gather(axis as isize, &index(at.minimum(input as i64 - 1)?)?)?
                }
            };
        }
        Ok(x.cast(self.dtype()))
    }
}
