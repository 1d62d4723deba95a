//! Matrix products as tinygrad writes them: a broadcast multiply and a sum over the shared
//! dim, which the scheduler fuses into one reduce kernel.

use wgrad_dtype::{DType, least_upper_dtype, sum_acc_dtype};
use wgrad_ops::Ops;

use crate::Tensor;
use crate::error::{Result, TensorError};

impl Tensor {
    /// The matrix product (numpy's `matmul`: vectors, matrices, batches broadcast).
    pub fn matmul(&self, w: &Tensor) -> Result<Tensor> {
        self.matmul_dtype(w, least_upper_dtype(&[self.dtype(), w.dtype()]))
    }

    /// The matrix product returned in `dtype` (tinygrad's `matmul(w, dtype=...)`): the products
    /// are summed in `dtype`'s accumulator (float32 for half types), so float16 operands with
    /// `DType::F32` give the float32 sums, never rounded to float16.
    pub fn matmul_dtype(&self, w: &Tensor, dtype: DType) -> Result<Tensor> {
        let (n1, n2) = (self.ndim(), w.ndim());
        let bad = || TensorError::Matmul { lhs: self.operand(), rhs: w.operand() };
        if n1 == 0 || n2 == 0 || self.shape()[n1 - 1] != w.shape()[n2 - n2.min(2)] {
            return Err(bad());
        }
        let k = self.shape()[n1 - 1];
        let ones = n1.min(n2).saturating_sub(1).min(1);
        let mut x_shape = self.shape()[..n1 - 1].to_vec();
        x_shape.extend(std::iter::repeat_n(1, ones));
        x_shape.push(k);
        let mut w_shape = w.shape()[..n2 - n2.min(2)].to_vec();
        w_shape.extend(std::iter::repeat_n(1, ones));
        w_shape.extend_from_slice(&w.shape()[n2 - n2.min(2)..]);
        let x = self.reshape_to(&x_shape);
        let w = w.reshape_to(&w_shape).transpose(-1, -(n2.min(2) as isize))?;
        let products =
            x.mul(&w).map_err(|e| if matches!(e, TensorError::Broadcast { .. }) { bad() } else { e })?;
        let sums = products.cast(sum_acc_dtype(products.dtype())).reduce(Ops::Add, "matmul", &[-1], false)?;
        Ok(sums.cast(dtype))
    }

    /// `x @ weight + bias` with `weight` of shape `(in, out)`. The bias joins the products'
    /// sum in its accumulator, before the one rounding to the result's dtype (PyTorch's
    /// `addmm`): float16 operands give `f16(sum + bias)`, not `f16(f16(sum) + bias)`.
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        let Some(b) = bias else { return self.matmul(weight) };
        let dtype = least_upper_dtype(&[self.dtype(), weight.dtype(), b.dtype()]);
        let acc = sum_acc_dtype(dtype);
        Ok(self.matmul_dtype(weight, acc)?.add(b.cast(acc))?.cast(dtype))
    }
}
