//! `Adam`: Adam, AdamW and LAMB (Adam with a layer-wise trust ratio), as tinygrad's LAMB.

use crate::Tensor;
use crate::error::Result;
use crate::optim::{Optimizer, ParamGroup, scalar, state};

/// The Adam family. With moments `m <- b1 m + (1 - b1) g` and `v <- b2 v + (1 - b2) g²`,
/// bias-corrected to `m̂ = m / (1 - b1^t)` and `v̂ = v / (1 - b2^t)`, the update is
/// `u = m̂ / (sqrt(v̂) + eps) + weight_decay * p` and the step `p <- p - lr * r * u`, where
/// the trust ratio `r` is `|p| / |u|` for LAMB (1 when either norm is 0) and 1 for Adam and
/// AdamW (whose weight decay is thereby decoupled from the moments).
#[derive(Debug)]
pub struct Adam {
    group: ParamGroup,
    /// Decay of the first moment.
    pub b1: f64,
    /// Decay of the second moment.
    pub b2: f64,
    /// Added to `sqrt(v̂)`.
    pub eps: f64,
    /// Decoupled weight decay.
    pub weight_decay: f64,
    /// Whether each parameter's step is scaled by its trust ratio (LAMB).
    pub trust_ratio: bool,
    /// `b1^t` and `b2^t`, float32 scalars.
    powers: [Tensor; 2],
    /// First moments, one per parameter.
    m: Vec<Tensor>,
    /// Second moments, one per parameter.
    v: Vec<Tensor>,
}

impl Adam {
    /// Adam over `tensors` (see [`ParamGroup::new`]) with learning rate `lr`, `b1 = 0.9`,
    /// `b2 = 0.999`, `eps = 1e-8`, no weight decay.
    pub fn new(tensors: Vec<Tensor>, lr: f64) -> Result<Adam> {
        Adam::with(tensors, lr, 0.0, 1e-8, false)
    }

    /// AdamW: Adam with decoupled `weight_decay` (tinygrad's default is 0.01).
    pub fn adamw(tensors: Vec<Tensor>, lr: f64, weight_decay: f64) -> Result<Adam> {
        Adam::with(tensors, lr, weight_decay, 1e-8, false)
    }

    /// LAMB: AdamW scaled per parameter by its trust ratio, `eps = 1e-6`.
    pub fn lamb(tensors: Vec<Tensor>, lr: f64, weight_decay: f64) -> Result<Adam> {
        Adam::with(tensors, lr, weight_decay, 1e-6, true)
    }

    /// The Adam family member of these settings, `b1 = 0.9`, `b2 = 0.999`.
    fn with(tensors: Vec<Tensor>, lr: f64, weight_decay: f64, eps: f64, trust_ratio: bool) -> Result<Adam> {
        let group = ParamGroup::new(tensors, lr)?;
        let (m, v) = (group.zeros_like_params()?, group.zeros_like_params()?);
        let device = group.params[0].device();
        let powers = [state(scalar(1.0, device))?, state(scalar(1.0, device))?];
        Ok(Adam { group, b1: 0.9, b2: 0.999, eps, weight_decay, trust_ratio, powers, m, v })
    }
}

/// LAMB's trust ratio of parameter `p` and update `u`: `|p| / |u|`, or 1 when either is 0.
fn trust_ratio(p: &Tensor, u: &Tensor) -> Result<Tensor> {
    let norm = |t: &Tensor| t.square().sum(&[], false).map(|s| s.sqrt());
    let (r1, r2) = (norm(p)?, norm(u)?);
    r1.gt(0.0)?.where_(r2.gt(0.0)?.where_(r1.div(&r2)?, 1.0)?, 1.0)
}

impl Optimizer for Adam {
    fn group(&self) -> &ParamGroup {
        &self.group
    }

    fn update(&mut self, grads: &[Tensor]) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
        let [p1, p2] = &self.powers;
        p1.assign(&p1.mul(self.b1)?)?;
        p2.assign(&p2.mul(self.b2)?)?;
        let mut values = vec![];
        for (((p, g), m), v) in self.group.params.iter().zip(grads).zip(&self.m).zip(&self.v) {
            m.assign(&m.mul(self.b1)?.add(g.mul(1.0 - self.b1)?)?.cast(m.dtype()))?;
            v.assign(&v.mul(self.b2)?.add(g.square().mul(1.0 - self.b2)?)?.cast(v.dtype()))?;
            let m_hat = m.div(p1.rsub(1.0)?)?;
            let v_hat = v.div(p2.rsub(1.0)?)?;
            let mut u = m_hat.div(v_hat.sqrt().add(self.eps)?)?;
            if self.weight_decay != 0.0 {
                u = u.add(p.mul(self.weight_decay)?)?;
            }
            let lr = match self.trust_ratio {
                true => self.group.lr.mul(trust_ratio(p, &u)?)?,
                false => self.group.lr.clone(),
            };
            values.push(p.sub(u.mul(&lr)?)?.cast(p.dtype()));
        }
        let state = self.powers.iter().chain(&self.m).chain(&self.v).cloned().collect();
        Ok((values, state))
    }
}
