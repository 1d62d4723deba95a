//! Autograd: which tensors want gradients, `backward`, and the no-grad scope.
//!
//! A tensor asks for gradients with `set_requires_grad(true)`, which gives it a buffer of
//! its own (so its graph node is unique). `backward` on a scalar finds every such tensor
//! still alive whose node the scalar's graph contains, builds their gradients lazily with
//! the rules of [`crate::gradient`], and adds them to `grad`.

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::{LazyLock, Mutex, PoisonError, Weak};

use wgrad_engine::lazy;
use wgrad_ops::UOp;

use crate::Tensor;
use crate::error::{Result, TensorError};
use crate::gradient::compute_gradient;
use crate::tensor::Inner;

thread_local! {
    /// How many `no_grad` scopes this thread is inside.
    static NO_GRAD: Cell<usize> = const { Cell::new(0) };
}

/// The tensors that asked for gradients (weakly: dropped tensors leave).
static WANT_GRAD: LazyLock<Mutex<Vec<Weak<Inner>>>> = LazyLock::new(Mutex::default);

/// Whether ops record gradients on this thread (outside every `no_grad` scope).
pub(crate) fn grad_enabled() -> bool {
    NO_GRAD.with(|n| n.get() == 0)
}

/// Leaves the no-grad scope it was made in when dropped (also on panic).
struct Scope;

impl Drop for Scope {
    fn drop(&mut self) {
        NO_GRAD.with(|n| n.set(n.get() - 1));
    }
}

/// Runs `f` with gradients off: tensors made inside are detached (no gradient flows back
/// through them), as in an optimizer step.
pub fn no_grad<T>(f: impl FnOnce() -> T) -> T {
    NO_GRAD.with(|n| n.set(n.get() + 1));
    let _scope = Scope;
    f()
}

impl Tensor {
    /// Whether `backward` computes a gradient for this tensor.
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad.load(Ordering::Relaxed)
    }

    /// Asks for (or stops asking for) this tensor's gradient. A tensor not in a buffer of
    /// its own is realized into one first, so that no other tensor shares its graph node.
    pub fn set_requires_grad(&self, on: bool) -> Result<&Tensor> {
        if on {
            self.own_buffer()?;
        }
        if on && !self.0.requires_grad.swap(true, Ordering::Relaxed) {
            let mut want = WANT_GRAD.lock().unwrap_or_else(PoisonError::into_inner);
            want.retain(|w| w.strong_count() > 0);
            want.push(std::sync::Arc::downgrade(&self.0));
        }
        if !on {
            self.0.requires_grad.store(false, Ordering::Relaxed);
        }
        Ok(self)
    }

    /// The same value, but its gradient is realized into a buffer of its own (tinygrad's
    /// `contiguous_backward`): a backward pass through a long chain of steps that each read
    /// their input twice stays one kernel per step instead of one kernel recomputing it all.
    pub fn contiguous_backward(&self) -> Tensor {
        self.with(lazy::contiguous_backward(&self.uop()), self.shape().to_vec())
    }

    /// The gradient `backward` accumulated, if any.
    pub fn grad(&self) -> Option<Tensor> {
        self.0.grad.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Forgets the accumulated gradient.
    pub fn zero_grad(&self) {
        *self.0.grad.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The gradients of this value with respect to `targets` (tinygrad's `gradient`),
    /// returned lazily without touching any tensor's `grad`; the targets need not require
    /// one. `seed` is the gradient of this value (`None`: ones, for a scalar). A target this
    /// value does not depend on (or only through a `detach`) gets zeros.
    pub fn gradient(&self, targets: &[&Tensor], seed: Option<&Tensor>) -> Result<Vec<Tensor>> {
        let seed = match seed {
            None if !self.shape().is_empty() => {
                return Err(TensorError::NotScalar { op: "gradient", operand: self.operand() });
            }
            None => self.ones_like(),
            Some(s) if s.shape() != self.shape() || s.device() != self.device() => {
                let why = "the seed gradient must have the value's shape and device".to_string();
                return Err(TensorError::Shapes {
                    op: "gradient",
                    lhs: self.operand(),
                    rhs: s.operand(),
                    why,
                });
            }
            Some(s) => s.cast(self.dtype()),
        };
        if let Some(t) = std::iter::once(self).chain(targets.iter().copied()).find(|t| !t.is_floating_point())
        {
            return Err(TensorError::DType { op: "gradient", lhs: self.operand(), rhs: t.operand() });
        }
        let uops: Vec<UOp> = targets.iter().map(|t| t.uop()).collect();
        let grads = compute_gradient(&self.uop(), &seed, &uops)?;
        Ok(targets
            .iter()
            .zip(&uops)
            .map(|(t, u)| match grads.get(u) {
                Some(g) => {
                    Tensor::from_uop(g.clone(), t.shape().to_vec(), t.device().clone()).cast(t.dtype())
                }
                None => t.zeros_like(),
            })
            .collect())
    }

    /// Computes the gradient of this scalar with respect to every live tensor that requires
    /// one and contributes to it, adding it to that tensor's `grad` (lazily: nothing runs).
    pub fn backward(&self) -> Result<()> {
        if !self.shape().is_empty() {
            return Err(TensorError::NotScalar { op: "backward", operand: self.operand() });
        }
        let wanting: Vec<Tensor> = {
            let want = WANT_GRAD.lock().unwrap_or_else(PoisonError::into_inner);
            want.iter().filter_map(Weak::upgrade).map(Tensor).filter(Tensor::requires_grad).collect()
        };
        let targets: Vec<UOp> = wanting.iter().map(Tensor::uop).collect();
        let grads = compute_gradient(&self.uop(), &self.ones_like(), &targets)?;
        let mut any = false;
        for (t, u) in wanting.iter().zip(&targets) {
            let Some(g) = grads.get(u) else { continue };
            any = true;
            let g = Tensor::from_uop(g.clone(), t.shape().to_vec(), t.device().clone()).cast(t.dtype());
            let mut slot = t.0.grad.lock().unwrap_or_else(PoisonError::into_inner);
            *slot = Some(match slot.take() {
                Some(old) => &old + &g,
                None => g,
            });
        }
        if any { Ok(()) } else { Err(TensorError::NothingRequiresGrad) }
    }
}
