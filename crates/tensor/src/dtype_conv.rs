//! dtype conveniences as tinygrad names them: casts to the common dtypes, the dtype's
//! properties, sizes, and a copy into a buffer of its own.

use wgrad_dtype::DType;
use wgrad_engine::lazy;

use crate::Tensor;
use crate::error::Result;

impl Tensor {
    /// The value as float16.
    pub fn half(&self) -> Tensor {
        self.cast(DType::F16)
    }

    /// The value as bfloat16.
    pub fn bfloat16(&self) -> Tensor {
        self.cast(DType::BF16)
    }

    /// The value as float32 (tinygrad's `float`: always float32, whatever the dtype was).
    pub fn float(&self) -> Tensor {
        self.cast(DType::F32)
    }

    /// The value as float64 (the CPU interpreter computes it; wgpu has no f64 and refuses
    /// kernels that use it).
    pub fn double(&self) -> Tensor {
        self.cast(DType::F64)
    }

    /// The value as int16 (floats truncate toward zero).
    pub fn short(&self) -> Tensor {
        self.cast(DType::I16)
    }

    /// The value as int32 (floats truncate toward zero).
    pub fn int(&self) -> Tensor {
        self.cast(DType::I32)
    }

    /// The value as int64 (floats truncate toward zero).
    pub fn long(&self) -> Tensor {
        self.cast(DType::I64)
    }

    /// The value as bool: whether each element is non-zero.
    pub fn bool(&self) -> Tensor {
        self.cast(DType::BOOL)
    }

    /// Whether the dtype is a float type.
    pub fn is_floating_point(&self) -> bool {
        self.dtype().is_float()
    }

    /// Bytes per element.
    pub fn element_size(&self) -> usize {
        self.dtype().itemsize()
    }

    /// Bytes of all the elements together.
    pub fn nbytes(&self) -> usize {
        self.numel() * self.element_size()
    }

    /// The size of dim `dim` (negative: from the end); [`Tensor::shape`] gives them all
    /// (tinygrad's `size()` without a dim).
    pub fn size(&self, dim: isize) -> Result<usize> {
        Ok(self.shape()[self.axis("size", dim, self.ndim())?])
    }

    /// A copy of this tensor in a buffer of its own (tinygrad's and PyTorch's `clone`; Rust's
    /// [`Clone`] shares the tensor instead). Gradients flow through it, and a gradient this
    /// tensor holds is copied along.
    pub fn duplicate(&self) -> Tensor {
        let copy = self.with(lazy::contiguous(&self.uop()), self.shape().to_vec());
        if let Some(g) = self.grad() {
            *copy.0.grad.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(g.duplicate());
        }
        copy
    }
}
