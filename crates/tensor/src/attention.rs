//! Scaled dot-product attention, as tinygrad composes it from a matmul, a masked softmax
//! and a second matmul.

use wgrad_dtype::{DType, least_upper_dtype, sum_acc_dtype};

use crate::Tensor;
use crate::error::{Result, TensorError};

impl Tensor {
    /// `softmax(q kᵀ / sqrt(d) + mask) v` with `self` the queries `(.., Lq, d)`, `key`
    /// `(.., Lk, d)` and `value` `(.., Lk, dv)`. A bool `mask` keeps the scores where it is
    /// true, a float one is added to them; `causal` also hides every key after the query's
    /// own position (tinygrad's `tril` mask). Half-precision inputs get their scores and
    /// softmax in float32 and the result in their own dtype, as in tinygrad and PyTorch.
    /// With heads (three dims or more) the result is a `(.., heads, Lq, dv)` view of sums
    /// stored as `(.., Lq, heads, dv)`: merging the heads after `transpose(-3, -2)` copies
    /// nothing.
    pub fn scaled_dot_product_attention(
        &self,
        key: &Tensor,
        value: &Tensor,
        mask: Option<&Tensor>,
        causal: bool,
    ) -> Result<Tensor> {
        let wide = least_upper_dtype(&[self.dtype(), key.dtype(), DType::F32]);
        self.scaled_dot_product_attention_scores_in(key, value, mask, causal, wide)
    }

    /// [`Tensor::scaled_dot_product_attention`] with the scaled scores rounded to `scores`
    /// before the mask and the softmax, which still runs in float32: half queries with
    /// `DType::F16` store their scores as halves, as PyTorch's eager half attention
    /// (`q @ k.T` in float16) does, and the softmax reads half the bytes.
    pub fn scaled_dot_product_attention_scores_in(
        &self,
        key: &Tensor,
        value: &Tensor,
        mask: Option<&Tensor>,
        causal: bool,
        scores: DType,
    ) -> Result<Tensor> {
        if !scores.is_float() {
            let why = format!("the scores' dtype must be a float, got {scores}");
            return Err(TensorError::Argument { op: "scaled_dot_product_attention", why });
        }
        let depth = self.shape().last().copied().unwrap_or(1);
        // products summed in float32 at least (tinygrad's and PyTorch's half attention), the
        // weights back in the query's dtype for the product with the values
        let wide = least_upper_dtype(&[self.dtype(), key.dtype(), DType::F32]);
        let product = self.matmul_dtype(&key.transpose(-2, -1)?, wide)?;
        let mut scores = product.div((depth as f64).sqrt())?.cast(scores);
        scores = match mask {
            Some(m) if m.dtype() == DType::BOOL => m.where_(&scores, f64::NEG_INFINITY)?,
            Some(m) => scores.add(m)?,
            None => scores,
        };
        if causal {
            let queries = self.shape()[self.axis("scaled_dot_product_attention", -2, self.ndim())?];
            let keys = key.shape()[key.ndim() - 2];
            let all = Tensor::constant(&[queries, keys], 1.into(), DType::BOOL, self.device());
            let visible = all.tril(0)?;
            scores = visible.where_(&scores, f64::NEG_INFINITY)?;
        }
        let weights = scores.cast(wide).softmax(-1)?.cast(self.dtype());
        let (n, m) = (weights.ndim(), value.ndim());
        if n < 3 || m < 3 || value.shape()[m - 2] != weights.shape()[n - 1] {
            return weights.matmul(value);
        }
        // out[.., s, h, d] = sum_k w[.., h, s, k] v[.., h, k, d]: the sums in (.., Lq, heads,
        // dv) order, returned as their (.., heads, Lq, dv) view, so that merging the heads
        // (`transpose(1, 2)` and a reshape) is no copy
        let dtype = least_upper_dtype(&[weights.dtype(), value.dtype()]);
        let w = weights.transpose(-3, -2)?.unsqueeze(-2)?;
        let v = value.transpose(-2, -1)?.unsqueeze(-4)?;
        let sums = w.mul(&v)?.cast(sum_acc_dtype(dtype)).sum(&[-1], false)?.cast(dtype);
        sums.transpose(-3, -2)
    }
}
