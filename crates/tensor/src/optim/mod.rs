//! Optimizers as tinygrad's `nn/optim.py`: the [`Sgd`] family (SGD with momentum, Nesterov
//! and weight decay; LARS; Muon) and the [`Adam`] family (Adam, AdamW, LAMB).
//!
//! An optimizer holds the tensors it was given: those requiring grad are its parameters,
//! the rest (a model's running statistics) are buffers it realizes with every step.
//! [`Optimizer::step`] builds every parameter's new value and the optimizer's new state
//! lazily, assigns them in place (parameters keep their buffers) and realizes all of it in
//! one schedule, so the whole update is a few fused kernels. The learning rate is a tensor
//! whose new values are uploaded, so changing it ([`Optimizer::set_lr`]) compiles nothing.

mod adam;
mod sgd;

use wgrad_dtype::{ConstValue, DType};
use wgrad_engine::DeviceName;
use wgrad_ops::UOp;

use crate::error::{Result, TensorError};
use crate::{Tensor, no_grad, with_default_device};

pub use adam::Adam;
pub use sgd::{Sgd, SgdOpts};

/// The tensors an optimizer updates and realizes, and its learning rate.
#[derive(Debug)]
pub struct ParamGroup {
    /// The tensors updated each step (those given that require grad), without duplicates.
    pub params: Vec<Tensor>,
    /// The tensors only realized each step (those given that do not require grad).
    pub buffers: Vec<Tensor>,
    /// The learning rate, a float32 scalar.
    pub lr: Tensor,
}

impl ParamGroup {
    /// `tensors` split into parameters and buffers, with the learning rate `lr` (at least
    /// 0). At least one tensor must require grad, and all must be on one device.
    pub fn new(tensors: Vec<Tensor>, lr: f64) -> Result<ParamGroup> {
        if lr.is_nan() || lr < 0.0 {
            return Err(TensorError::Argument {
                op: "optimizer",
                why: format!("the learning rate must be at least 0, got {lr}"),
            });
        }
        let mut seen: Vec<UOp> = vec![];
        let (mut params, mut buffers) = (vec![], vec![]);
        for t in tensors {
            if seen.contains(&t.uop()) {
                continue;
            }
            seen.push(t.uop());
            match t.requires_grad() {
                true => params.push(t),
                false => buffers.push(t),
            }
        }
        if params.is_empty() {
            return Err(TensorError::NoTensors("an optimizer (of tensors that require grad)"));
        }
        if let Some(other) = params.iter().chain(&buffers).find(|t| t.device() != params[0].device()) {
            let (lhs, rhs) = (params[0].device().clone(), other.device().clone());
            return Err(TensorError::Device { op: "optimizer", lhs, rhs });
        }
        let lr = state(scalar(lr, params[0].device()))?;
        Ok(ParamGroup { params, buffers, lr })
    }

    /// Each parameter's gradient; an error names the first parameter without one.
    fn grads(&self) -> Result<Vec<Tensor>> {
        let missing = |(i, p): (usize, &Tensor)| {
            let why = format!("parameter {i}, {}, has no gradient: call backward first", p.operand());
            TensorError::Argument { op: "step", why }
        };
        self.params.iter().enumerate().map(|(i, p)| p.grad().ok_or_else(|| missing((i, p)))).collect()
    }

    /// A float32 zero tensor shaped like each parameter, on its device, in a buffer of its
    /// own: per-parameter optimizer state (float32 whatever the parameters' dtype, as
    /// tinygrad keeps it).
    fn zeros_like_params(&self) -> Result<Vec<Tensor>> {
        self.params
            .iter()
            .map(|p| state(Tensor::constant(p.shape(), 0.into(), DType::F32, p.device())))
            .collect()
    }
}

/// The float32 scalar `value` on `device` (a constant).
fn scalar(value: f64, device: &DeviceName) -> Tensor {
    Tensor::constant(&[], ConstValue::Float(value), DType::F32, device)
}

/// `t` realized in a buffer of its own: optimizer state, written with `assign` (an equal
/// graph realized at the same time, such as another optimizer's state on another thread,
/// gets a buffer of its own too).
fn state(t: Tensor) -> Result<Tensor> {
    t.own_buffer()?;
    Ok(t)
}

/// An optimizer: [`Optimizer::step`] after `backward`, then [`Optimizer::zero_grad`].
pub trait Optimizer {
    /// The tensors it updates and realizes, and the learning rate.
    fn group(&self) -> &ParamGroup;

    /// One step's new value of each parameter (in order) from its gradient in `grads`,
    /// having assigned the optimizer's new state lazily; returns the new values and the
    /// state tensors to realize with them. [`Optimizer::step`] calls this (gradients off).
    fn update(&mut self, grads: &[Tensor]) -> Result<(Vec<Tensor>, Vec<Tensor>)>;

    /// Updates every parameter in place from its gradient and realizes the parameters, the
    /// optimizer state and the buffers together, in one schedule.
    fn step(&mut self) -> Result<()> {
        let grads = self.group().grads()?;
        let (values, state) = no_grad(|| self.update(&grads))?;
        let group = self.group();
        for (p, v) in group.params.iter().zip(&values) {
            p.assign(v)?;
        }
        let all: Vec<&Tensor> = state.iter().chain(&group.params).chain(&group.buffers).collect();
        Tensor::realize_all(&all)
    }

    /// Forgets every parameter's gradient.
    fn zero_grad(&self) {
        self.group().params.iter().for_each(Tensor::zero_grad);
    }

    /// Sets the learning rate (from the next step on). The value is uploaded, not written
    /// into a kernel, so a schedule that changes it every step compiles nothing new (and a
    /// jitted step reads it from the same buffer).
    fn set_lr(&self, lr: f64) -> Result<()> {
        let group = self.group();
        let value = with_default_device(group.lr.device(), || Tensor::from_slice(&[lr as f32], &[]))?;
        group.lr.assign(&value)?.realize()?;
        Ok(())
    }
}
