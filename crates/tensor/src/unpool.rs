//! Max pooling with the position of each maximum, and its partial inverse `max_unpool2d`
//! (each value written back at its position, zeros elsewhere), as tinygrad builds them from
//! pooled views and one-hot masks.

use wgrad_dtype::DType;

use crate::error::{Result, TensorError};
use crate::{Tensor, with_default_device};

impl Tensor {
    /// [`Tensor::max_pool2d`] and, for each output, the position (int32, flat within the
    /// last two dims of the input: `row * width + col`) of the first maximum of its window.
    pub fn max_pool2d_with_indices(
        &self,
        kernel: usize,
        stride: Option<usize>,
        padding: usize,
    ) -> Result<(Tensor, Tensor)> {
        let op = "max_pool2d";
        let windows = self.pool2d(op, kernel, stride, padding, self.dtype().min_value())?;
        let values = windows.max(&[-2, -1], false)?;
        let (h, w) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        // `h w - position` (so the first maximum is the largest), zero in the padding
        let countdown = with_default_device(self.device(), || {
            Tensor::arange_with((h * w) as f64, 0.0, -1.0, DType::I32)
        })?
        .reshape_to(&[h, w]);
        let positions = countdown.pool2d(op, kernel, stride, padding, 0.into())?;
        let is_max = windows.eq(values.unsqueeze(-1)?.unsqueeze(-1)?)?;
        let first = is_max.where_(&positions, 0)?.max(&[-2, -1], false)?;
        Ok((values, first.rsub((h * w) as i64)?))
    }

    /// The partial inverse of [`Tensor::max_pool2d_with_indices`]: each value of this
    /// tensor (the pooled `(.., h, w)`) written at its `indices` position in a zero plane of
    /// `output_size`, by default `((h - 1) stride - 2 padding + kernel, ..)` per dim.
    pub fn max_unpool2d(
        &self,
        indices: &Tensor,
        kernel: usize,
        stride: Option<usize>,
        padding: usize,
        output_size: Option<(usize, usize)>,
    ) -> Result<Tensor> {
        let op = "max_unpool2d";
        if self.ndim() < 2 || indices.shape() != self.shape() {
            let why = "indices must have the pooled tensor's shape (at least 2 dims)".to_string();
            return Err(TensorError::Shapes { op, lhs: self.operand(), rhs: indices.operand(), why });
        }
        if !indices.dtype().is_int() {
            return Err(TensorError::DType { op, lhs: self.operand(), rhs: indices.operand() });
        }
        let (h, w) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        let s = stride.unwrap_or(kernel);
        let size = |n: usize| ((n.max(1) - 1) * s + kernel).checked_sub(2 * padding);
        let (oh, ow) = match output_size {
            Some(o) => o,
            None => match (size(h), size(w)) {
                (Some(a), Some(b)) => (a, b),
                _ => {
                    let why = format!("padding {padding} is too wide for kernel {kernel}");
                    return Err(TensorError::Argument { op, why });
                }
            },
        };
        let lead = &self.shape()[..self.ndim() - 2];
        let flat = |t: &Tensor| t.reshape_to(&[lead, &[h * w]].concat());
        // (.., pooled position, output position): where each value goes
        let spread = flat(indices).one_hot_mask(op, oh * ow)?;
        let zero = Tensor::constant(&[], 0.into(), self.dtype(), self.device());
        let placed = spread.where_(flat(self).unsqueeze(-1)?, zero)?.sum(&[-2], false)?.cast(self.dtype());
        Ok(placed.reshape_to(&[lead, &[oh, ow]].concat()))
    }
}
