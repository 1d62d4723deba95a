//! The Newton-Schulz iteration of an odd matrix polynomial: it drives a matrix's singular
//! values towards one (an approximate orthogonalization), as the Muon optimizer needs.

use crate::Tensor;
use crate::error::{Result, TensorError};

impl Tensor {
    /// tinygrad's `newton_schulz`: the last two dims of this tensor (a matrix, or a batch of
    /// them) divided by their Frobenius norm plus `eps`, then `steps` times replaced by the
    /// odd polynomial `sum_i coefficients[i] * (G Gᵀ)^i G`. A tall matrix (more rows than
    /// columns) is iterated as its transpose, so `G Gᵀ` is the smaller square. Muon uses
    /// 5 steps of `(3.4445, -4.775, 2.0315)`; `(1.5, -0.5)` is the classic cubic iteration.
    pub fn newton_schulz(&self, steps: usize, coefficients: &[f64], eps: f64) -> Result<Tensor> {
        let op = "newton_schulz";
        if self.ndim() < 2 {
            let why = format!("needs a matrix (at least two dims), got {}", self.operand());
            return Err(TensorError::Argument { op, why });
        }
        if coefficients.is_empty() {
            return Err(TensorError::Argument { op, why: "needs at least one coefficient".into() });
        }
        let n = self.ndim();
        if self.shape()[n - 2] > self.shape()[n - 1] {
            return self.t()?.newton_schulz(steps, coefficients, eps)?.t();
        }
        let norm = self.square().sum(&[-2, -1], true)?.sqrt().add(eps)?;
        let mut g = self.div(&norm)?;
        for _ in 0..steps {
            let gram = g.matmul(&g.t()?)?;
            let mut power = g.clone();
            let mut next = g.mul(coefficients[0])?;
            for &c in &coefficients[1..] {
                power = gram.matmul(&power)?;
                next = next.add(power.mul(c)?)?;
            }
            g = next;
        }
        Ok(g)
    }
}
