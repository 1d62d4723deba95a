//! [`Tensor`]: a handle on a lazy graph node with its shape and device; realize, readback
//! and device moves.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use wgrad_dtype::DType;
use wgrad_engine::{DeviceName, Schedule, lazy, numel};
use wgrad_ops::{GroupOp, Ops, UOp, UOpMap};

use crate::autograd::grad_enabled;
use crate::element::Element;
use crate::error::{Operand, Result, TensorError};

/// A lazy n-dimensional array: ops record a graph; nothing runs until a value is needed
/// (`realize`, `to_vec`, `item`).
///
/// Cloning is cheap and shares the tensor: realizing one clone realizes all of them, and
/// they share `requires_grad` and `grad`.
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<Inner>);

pub(crate) struct Inner {
    uop: RwLock<UOp>,
    shape: Vec<usize>,
    device: DeviceName,
    pub(crate) requires_grad: AtomicBool,
    pub(crate) grad: Mutex<Option<Tensor>>,
}

/// `u` with its movement ops (and detaches) peeled off: the node that gets a buffer.
pub(crate) fn base(u: &UOp) -> UOp {
    let mut u = u.clone();
    while GroupOp::MOVEMENT.contains(u.op()) || matches!(u.op(), Ops::Detach | Ops::ContiguousBackward) {
        u = u.src()[0].clone();
    }
    u
}

impl Tensor {
    /// A tensor over the lazy node `uop` of `shape` on `device` (detached inside `no_grad`).
    pub(crate) fn from_uop(uop: UOp, shape: Vec<usize>, device: DeviceName) -> Tensor {
        let uop = if grad_enabled() { uop } else { lazy::detach(&uop) };
        let inner = Inner {
            uop: RwLock::new(uop),
            shape,
            device,
            requires_grad: AtomicBool::new(false),
            grad: Mutex::new(None),
        };
        Tensor(Arc::new(inner))
    }

    /// A tensor on this one's device over `uop` of `shape`.
    pub(crate) fn with(&self, uop: UOp, shape: Vec<usize>) -> Tensor {
        Tensor::from_uop(uop, shape, self.device().clone())
    }

    /// The lazy graph node this tensor is now (a `RESHAPE(BUFFER)` once realized).
    pub fn uop(&self) -> UOp {
        self.0.uop.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn set_uop(&self, uop: UOp) {
        *self.0.uop.write().unwrap_or_else(PoisonError::into_inner) = uop;
    }

    /// The dims, outermost first.
    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }

    /// Number of dims.
    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        numel(&self.0.shape)
    }

    /// The element dtype.
    pub fn dtype(&self) -> DType {
        self.uop().dtype()
    }

    /// The device the tensor lives on.
    pub fn device(&self) -> &DeviceName {
        &self.0.device
    }

    /// Shape and dtype, for error messages.
    pub(crate) fn operand(&self) -> Box<Operand> {
        Box::new(Operand { shape: self.shape().to_vec(), dtype: self.dtype() })
    }

    /// Computes the tensor now (if it is not computed yet).
    pub fn realize(&self) -> Result<&Tensor> {
        Tensor::realize_all(&[self])?;
        Ok(self)
    }

    /// Computes several tensors in one schedule: shared work is done once.
    pub fn realize_all(tensors: &[&Tensor]) -> Result<()> {
        Tensor::realize_with(tensors, false)
    }

    /// [`Tensor::realize_all`]; with `readback`, the kernels go to the device with the readback
    /// that follows (one submission for both).
    fn realize_with(tensors: &[&Tensor], readback: bool) -> Result<()> {
        let bases: Vec<UOp> = tensors.iter().map(|t| base(&t.uop())).collect();
        if bases.iter().all(|b| matches!(b.op(), Ops::Buffer | Ops::Const)) {
            return Ok(()); // nothing to compute (a readback of a realized tensor lands here)
        }
        let pending = wgrad_engine::prepare(&bases)?;
        for ((t, b), r) in tensors.iter().zip(&bases).zip(pending.results()) {
            if b != r {
                let map: UOpMap<UOp> = [(b.clone(), r.clone())].into_iter().collect();
                t.set_uop(t.uop().substitute(&map));
            }
        }
        drop(bases);
        match readback {
            true => pending.run_for_readback()?,
            false => pending.run()?,
        };
        Ok(())
    }

    /// The schedule that would realize this tensor, without running it (kernel counts,
    /// kernel ASTs), for its device were it binding up to `max_buffers` buffers per kernel.
    pub fn schedule(&self, max_buffers: usize) -> Result<Schedule> {
        let device = wgrad_engine::device::open_device(self.device())?.kernel_limits();
        let limits = wgrad_engine::KernelLimits { max_buffers, ..device };
        Ok(wgrad_engine::schedule_with(&[base(&self.uop())], limits)?)
    }

    /// The `BUFFER` holding exactly this tensor's elements, row-major, if there is one.
    pub(crate) fn buffer(&self) -> Option<UOp> {
        let u = self.uop();
        let buf = if u.op() == Ops::Reshape { u.src()[0].clone() } else { u };
        (buf.op() == Ops::Buffer
            && matches!(buf.arg(), wgrad_ops::Arg::Buffer { size, .. } if *size == self.numel()))
        .then_some(buf)
    }

    /// A tensor with the same elements in a buffer of its own, row-major (this tensor when
    /// it already is one).
    pub fn contiguous(&self) -> Tensor {
        match self.buffer() {
            Some(_) => self.clone(),
            None => self.with(lazy::contiguous(&self.uop()), self.shape().to_vec()),
        }
    }

    /// The elements, row-major, as `T` (which must be the tensor's dtype). The tensor
    /// itself stays as it is (a copy is computed, as tinygrad's `numpy()` does), so its
    /// graph still takes `backward`.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(TensorError::ElementType { operand: self.operand(), asked: T::DTYPE });
        }
        Ok(T::from_le_bytes(&self.bytes()?))
    }

    /// The elements, row-major, as little-endian bytes of the tensor's dtype (computed as
    /// `to_vec` computes them).
    pub(crate) fn bytes(&self) -> Result<Vec<u8>> {
        let dense = self.contiguous();
        Tensor::realize_with(&[&dense], true)?;
        let buf = dense.buffer().ok_or_else(|| {
            TensorError::Engine(wgrad_engine::EngineError::Unschedulable(
                "a realized tensor without a buffer".into(),
            ))
        })?;
        Ok(wgrad_engine::download(&buf)?)
    }

    /// The one element of a one-element tensor.
    pub fn item<T: Element>(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(TensorError::NotScalar { op: "item", operand: self.operand() });
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// This tensor on `device` (the same tensor when it is there already).
    pub fn to(&self, device: &DeviceName) -> Tensor {
        match device == self.device() {
            true => self.clone(),
            false => Tensor::from_uop(lazy::copy(&self.uop(), device), self.shape().to_vec(), device.clone()),
        }
    }

    /// Writes `value` (same shape, dtype and device) into this tensor's buffer; the tensor
    /// then holds it (realized with the next schedule). A tensor not in a buffer of its own
    /// (a lazy value, a view, or a buffer shared with tensors of an equal graph) is realized
    /// into one first.
    pub fn assign(&self, value: &Tensor) -> Result<&Tensor> {
        let same = value.shape() == self.shape() && value.dtype() == self.dtype();
        if !same || value.device() != self.device() {
            return Err(TensorError::Assign { target: self.operand(), value: value.operand() });
        }
        if self.uop().op() != Ops::Assign {
            self.own_buffer()?;
        }
        self.set_uop(lazy::assign(&self.uop(), &value.uop()));
        Ok(self)
    }

    /// Realizes this tensor into a buffer of its own unless it has one: a buffer no equal graph
    /// shares, so writing it in place (assign, training) changes no other tensor. A buffer
    /// realized for a graph that other tensors also held (on any thread) is shared with them
    /// ([`wgrad_engine::is_shared`]), and so is copied first.
    pub(crate) fn own_buffer(&self) -> Result<()> {
        if self.buffer().is_none_or(|b| wgrad_engine::is_shared(&b)) {
            let own = self.with(lazy::unique_contiguous(&self.uop()), self.shape().to_vec());
            own.realize()?;
            self.set_uop(own.uop());
        }
        Ok(())
    }

    /// The same values with no gradient flowing back through them.
    pub fn detach(&self) -> Tensor {
        self.with(lazy::detach(&self.uop()), self.shape().to_vec())
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<Tensor {} on {}>", self.operand(), self.device())
    }
}
