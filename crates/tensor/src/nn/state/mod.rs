//! State files and state dicts, as tinygrad's `nn.state`: [`safe_save`]/[`safe_load`]
//! (safetensors), [`torch_load`] (PyTorch checkpoints, read without running code),
//! [`gguf_load`] (llama.cpp files, quantized tensors dequantized), and
//! [`get_state_dict`]/[`get_parameters`] over a [`Module`].
//!
//! Every loader memory-maps its file and uploads each tensor to the default device from
//! the mapped bytes; a damaged file is a [`TensorError`](crate::TensorError) naming the file and what is wrong.

mod ggml;
mod gguf;
mod pickle;
mod safetensors;
mod torch;

use std::fs::File;

use indexmap::IndexMap;
use memmap2::Mmap;

use crate::Tensor;
use crate::nn::Module;

pub use ggml::GgmlType;
pub use gguf::{GgufError, GgufValue, gguf_load};
pub use safetensors::{safe_load, safe_save};
pub use torch::{TorchError, TorchValue, torch_load, torch_load_object};

/// `model`'s state tensors by name, as tinygrad's `get_state_dict` (the same as
/// [`Module::state_dict`]).
pub fn get_state_dict(model: &(impl Module + ?Sized)) -> IndexMap<String, Tensor> {
    model.state_dict()
}

/// `model`'s state tensors, as tinygrad's `get_parameters` (the same as
/// [`Module::parameters`]): trainable ones and buffers such as running statistics.
pub fn get_parameters(model: &(impl Module + ?Sized)) -> Vec<Tensor> {
    model.parameters()
}

/// `file`'s contents, memory-mapped read-only.
#[allow(unsafe_code)]
fn map_file(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: the map is only read, and only while a loader runs: it is dropped once the
    // tensors are uploaded. Another process truncating the file meanwhile could fault the
    // read, the one hazard every memory-mapped reader (safetensors' own included) accepts.
    unsafe { Mmap::map(file) }
}
