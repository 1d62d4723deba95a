//! `Sgd`: the SGD family as tinygrad's LARS has it: stochastic gradient descent with
//! momentum, Nesterov momentum and weight decay; LARS (a layer-wise trust ratio); and Muon
//! (Newton-Schulz orthogonalized momentum).

use crate::Tensor;
use crate::error::{Result, TensorError};
use crate::optim::{Optimizer, ParamGroup};

/// The settings of the SGD family (tinygrad's `LARS` arguments). `Default` is plain SGD.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SgdOpts {
    /// Weight of the old momentum buffer (0: no momentum).
    pub momentum: f64,
    /// Weight decay (an L2 penalty added to the gradient, or decoupled: see
    /// [`SgdOpts::decoupled_weight_decay`]).
    pub weight_decay: f64,
    /// Whether the step looks ahead along the momentum (Nesterov).
    pub nesterov: bool,
    /// Classic momentum (LARS): the learning rate and trust ratio scale the gradient before
    /// it enters the momentum buffer, instead of scaling the step after it.
    pub classic: bool,
    /// Muon's weight decay: the parameter is multiplied by `1 - lr * weight_decay` after the
    /// momentum, instead of `weight_decay * p` being added to the gradient before it.
    pub decoupled_weight_decay: bool,
    /// LARS's trust coefficient `η` (0: no trust ratio): each parameter's step is scaled by
    /// `η |p| / (|g| + weight_decay |p|)` (1 when either norm is 0).
    pub trust_coefficient: f64,
    /// Newton-Schulz steps on each update (Muon), when [`SgdOpts::ns_coefficients`] is not
    /// empty.
    pub ns_steps: usize,
    /// The coefficients of the Newton-Schulz polynomial (see [`Tensor::newton_schulz`]);
    /// empty for none.
    pub ns_coefficients: Vec<f64>,
}

impl SgdOpts {
    /// tinygrad's `LARS` defaults: classic momentum 0.9, weight decay 1e-4, trust
    /// coefficient 0.001.
    pub fn lars() -> SgdOpts {
        SgdOpts {
            momentum: 0.9,
            weight_decay: 1e-4,
            classic: true,
            trust_coefficient: 0.001,
            ..SgdOpts::default()
        }
    }

    /// tinygrad's `Muon` defaults: Nesterov momentum 0.95, decoupled weight decay 0.1, and
    /// 5 Newton-Schulz steps of `(3.4445, -4.775, 2.0315)`.
    pub fn muon() -> SgdOpts {
        SgdOpts {
            momentum: 0.95,
            weight_decay: 0.1,
            nesterov: true,
            decoupled_weight_decay: true,
            ns_steps: 5,
            ns_coefficients: vec![3.4445, -4.775, 2.0315],
            ..SgdOpts::default()
        }
    }
}

/// The SGD family. For parameter `p` with gradient `g` and learning rate `lr`, one step:
/// the trust ratio `r` (1 without a trust coefficient); `g += weight_decay * p` (unless
/// decoupled); `g *= r * lr` if classic; momentum `b <- momentum * b + g`, `g = b` (or
/// `g + momentum * b` with Nesterov); `g` orthogonalized by Newton-Schulz over its first dim
/// against the rest (Muon); `p *= 1 - lr * weight_decay` if decoupled; `g *= r * lr` unless
/// classic; `p -= g`.
///
/// Muon's decoupled weight decay is applied, as PyTorch's `Muon` and tinygrad's documentation
/// have it (tinygrad's code computes it and drops it). Unlike PyTorch's `Muon`, the learning
/// rate is not scaled by `sqrt(max(1, rows / cols))`, as in tinygrad.
#[derive(Debug)]
pub struct Sgd {
    group: ParamGroup,
    opts: SgdOpts,
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
        Sgd::with(tensors, lr, SgdOpts { momentum, weight_decay, nesterov, ..SgdOpts::default() })
    }

    /// LARS (tinygrad's defaults, [`SgdOpts::lars`]) over `tensors` with learning rate `lr`.
    pub fn lars(tensors: Vec<Tensor>, lr: f64) -> Result<Sgd> {
        Sgd::with(tensors, lr, SgdOpts::lars())
    }

    /// Muon (tinygrad's defaults, [`SgdOpts::muon`]) over `tensors` with learning rate `lr`.
    /// Every parameter needs at least one dim.
    pub fn muon(tensors: Vec<Tensor>, lr: f64) -> Result<Sgd> {
        Sgd::with(tensors, lr, SgdOpts::muon())
    }

    /// A member of the SGD family with every setting given.
    pub fn with(tensors: Vec<Tensor>, lr: f64, opts: SgdOpts) -> Result<Sgd> {
        let op = "Sgd";
        if opts.momentum.is_nan() || opts.momentum < 0.0 {
            let why = format!("momentum must be at least 0, got {}", opts.momentum);
            return Err(TensorError::Argument { op, why });
        }
        let group = ParamGroup::new(tensors, lr)?;
        if !opts.ns_coefficients.is_empty()
            && let Some((i, p)) = group.params.iter().enumerate().find(|(_, p)| p.ndim() == 0)
        {
            let why = format!("Newton-Schulz needs parameters with dims; parameter {i} is {}", p.operand());
            return Err(TensorError::Argument { op, why });
        }
        let momentum_buffers = if opts.momentum != 0.0 { group.zeros_like_params()? } else { vec![] };
        Ok(Sgd { group, opts, momentum_buffers })
    }

    /// The settings.
    pub fn opts(&self) -> &SgdOpts {
        &self.opts
    }

    /// The trust ratio of parameter `p` and gradient `g` as a float32 scalar.
    fn trust_ratio(&self, p: &Tensor, g: &Tensor) -> Result<Tensor> {
        let norm = |t: &Tensor| t.square().sum(&[], false).map(|s| s.sqrt());
        let (r1, r2) = (norm(p)?, norm(g)?);
        let ratio = r1.mul(self.opts.trust_coefficient)?.div(r2.add(r1.mul(self.opts.weight_decay)?)?)?;
        r1.gt(0.0)?.where_(r2.gt(0.0)?.where_(ratio, 1.0)?, 1.0)
    }

    /// `g` orthogonalized by Newton-Schulz as a matrix of its first dim by the rest.
    fn orthogonalize(&self, g: &Tensor) -> Result<Tensor> {
        let shape: Vec<isize> = g.shape().iter().map(|&d| d as isize).collect();
        g.reshape(&[shape[0], -1])?
            .newton_schulz(self.opts.ns_steps, &self.opts.ns_coefficients, 1e-7)?
            .reshape(&shape)
    }
}

impl Optimizer for Sgd {
    fn group(&self) -> &ParamGroup {
        &self.group
    }

    fn update(&mut self, grads: &[Tensor]) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
        let (o, lr) = (&self.opts, &self.group.lr);
        let mut values = vec![];
        for (i, (p, g)) in self.group.params.iter().zip(grads).enumerate() {
            let dtype = p.dtype();
            let r = match o.trust_coefficient != 0.0 {
                true => lr.mul(self.trust_ratio(p, g)?)?,
                false => lr.clone(),
            };
            let mut g = g.clone();
            if !o.decoupled_weight_decay && o.weight_decay != 0.0 {
                g = g.add(p.mul(o.weight_decay)?)?;
            }
            if o.classic {
                g = g.mul(&r)?;
            }
            if let Some(b) = self.momentum_buffers.get(i) {
                b.assign(&b.mul(o.momentum)?.add(&g)?.cast(b.dtype()))?;
                g = match o.nesterov {
                    true => g.add(b.mul(o.momentum)?)?,
                    false => b.clone(),
                };
            }
            if !o.ns_coefficients.is_empty() {
                g = self.orthogonalize(&g)?;
            }
            let p = match o.decoupled_weight_decay && o.weight_decay != 0.0 {
                true => p.mul(lr.mul(o.weight_decay)?.rsub(1.0)?)?,
                false => p.clone(),
            };
            if !o.classic {
                g = g.mul(&r)?;
            }
            values.push(p.sub(g)?.cast(dtype));
        }
        Ok((values, self.momentum_buffers.clone()))
    }
}
