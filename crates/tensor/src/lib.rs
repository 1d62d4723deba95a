//! Tensor front end of wgrad: lazy tensors over the engine's UOp graph, named as tinygrad
//! names things, with autograd.
//!
//! ```
//! use wgrad_tensor::Tensor;
//! # fn main() -> Result<(), wgrad_tensor::TensorError> {
//! let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let b = (&a * &a).sum(&[1], false)?; // one fused kernel, run on demand
//! assert_eq!(b.to_vec::<f32>()?, vec![5.0, 25.0]);
//! # Ok(()) }
//! ```
//!
//! Ops only record a graph: movement ops are views, elementwise chains fuse with the
//! reduce they feed, and nothing runs until a value is asked for (`to_vec`, `item`) or
//! `realize` is called. Fallible ops return [`Result`] with a [`TensorError`] naming the
//! shapes and dtypes involved; the `std::ops` operators panic with that message instead.

// `#[derive(Module)]` names `::wgrad_tensor`, in this crate's own layers too.
extern crate self as wgrad_tensor;

mod attention;
mod autograd;
mod binary;
mod conv;
mod create;
mod custom_grad;
pub mod datasets;
mod dtype_conv;
mod einops;
mod einsum;
mod element;
mod error;
mod getitem;
mod gradient;
mod index;
mod interpolate;
mod jit;
mod linalg;
mod loss;
mod matmul;
mod mode;
mod movement;
mod newton_schulz;
pub mod nn;
mod norm;
pub mod optim;
mod pool;
mod random;
mod reduce;
mod scan;
mod scatter;
mod select;
mod sort;
mod tensor;
mod unary;
mod unpool;

pub use autograd::no_grad;
pub use binary::Value;
pub use conv::ConvOpts;
pub use create::with_default_device;
pub use element::Element;
pub use error::{Operand, Result, TensorError};
pub use index::Index;
pub use interpolate::Interpolation;
pub use jit::TinyJit;
pub use loss::Reduction;
pub use mode::{is_training, set_training, training};
pub use movement::Meshgrid;
pub use random::Seed;
pub use scatter::ScatterReduce;
pub use tensor::Tensor;
pub use wgrad_dtype::DType;
pub use wgrad_engine::{DeviceName, JitError, JitInput};
