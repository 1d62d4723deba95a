//! `Sgd`: stochastic gradient descent with momentum, Nesterov momentum and weight decay
//! (tinygrad's LARS without the trust ratio).

use crate::Tensor;
use crate::error::Result;
use crate::optim::{Optimizer, ParamGroup};

/// Stochastic gradient descent. With gradient `g` (plus `weight_decay * p`), momentum
/// buffer `b <- momentum * b + g`, the step is `p <- p - lr * b` (`lr * (g + momentum * b)`
/// with Nesterov; `lr * g` without momentum).
#[derive(Debug)]
pub struct Sgd {
    group: ParamGroup,
    /// Weight of the old momentum buffer (0: plain SGD).
    pub momentum: f64,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    /// Whether the step looks ahead along the momentum (Nesterov).
    pub nesterov: bool,
    /// The momentum buffer of each parameter (empty without momentum).
    momentum_buffers: Vec<Tensor>,
}

impl Sgd {
    /// SGD over `tensors` (see [`ParamGroup::new`]) with learning rate `lr`.
    pub fn new(
        tensors: Vec<Tensor>,
        lr: f64,
        momentum: f64,
        weight_decay: f64,
        nesterov: bool,
    ) -> Result<Sgd> {
        let group = ParamGroup::new(tensors, lr)?;
        let momentum_buffers = if momentum != 0.0 { group.zeros_like_params()? } else { vec![] };
        Ok(Sgd { group, momentum, weight_decay, nesterov, momentum_buffers })
    }
}

impl Optimizer for Sgd {
    fn group(&self) -> &ParamGroup {
        &self.group
    }

    fn update(&mut self, grads: &[Tensor]) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
        let mut values = vec![];
        for (i, (p, g)) in self.group.params.iter().zip(grads).enumerate() {
            let mut g = g.clone();
            if self.weight_decay != 0.0 {
                g = g.add(p.mul(self.weight_decay)?)?;
            }
            if let Some(b) = self.momentum_buffers.get(i) {
                b.assign(&b.mul(self.momentum)?.add(&g)?)?;
                g = match self.nesterov {
                    true => g.add(b.mul(self.momentum)?)?,
                    false => b.clone(),
                };
            }
            values.push(p.sub(g.mul(&self.group.lr)?)?.cast(p.dtype()));
        }
        Ok((values, self.momentum_buffers.clone()))
    }
}
