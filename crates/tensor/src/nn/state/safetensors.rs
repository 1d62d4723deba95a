//! safetensors files: [`safe_save`] writes a state dict, [`safe_load`] maps a file into
//! memory and uploads its tensors, each in the dtype the file gives it.

use std::fs::File;
use std::path::Path;

use ::safetensors::{Dtype, SafeTensorError, SafeTensors, serialize_to_file, tensor::TensorView};
use indexmap::IndexMap;
use wgrad_dtype::DType;

use crate::Tensor;
use crate::error::{Result, TensorError};
use crate::nn::state::map_file;

/// wgrad's dtype and safetensors' for each dtype both have.
const DTYPES: [(DType, Dtype); 13] = [
    (DType::BOOL, Dtype::BOOL),
    (DType::I8, Dtype::I8),
    (DType::U8, Dtype::U8),
    (DType::I16, Dtype::I16),
    (DType::U16, Dtype::U16),
    (DType::I32, Dtype::I32),
    (DType::U32, Dtype::U32),
    (DType::I64, Dtype::I64),
    (DType::U64, Dtype::U64),
    (DType::F16, Dtype::F16),
    (DType::BF16, Dtype::BF16),
    (DType::F32, Dtype::F32),
    (DType::F64, Dtype::F64),
];

/// The error of a failed read or write of `path`: the OS's own or a malformed file.
fn file_error(path: &Path, e: SafeTensorError) -> TensorError {
    match e {
        SafeTensorError::IoError(source) => TensorError::File { path: path.to_path_buf(), source },
        source => TensorError::Safetensors { path: path.to_path_buf(), source },
    }
}

/// Writes `state` to `path` as a safetensors file, each tensor in its own dtype (all of
/// them realized in one schedule first, pending assigns such as running statistics included).
pub fn safe_save(path: impl AsRef<Path>, state: &IndexMap<String, Tensor>) -> Result<()> {
    let path = path.as_ref();
    Tensor::realize_all(&state.values().collect::<Vec<_>>())?;
    let mut data = Vec::with_capacity(state.len());
    for (key, t) in state {
        let Some(&(_, dtype)) = DTYPES.iter().find(|(d, _)| *d == t.dtype()) else {
            let dtype = t.dtype().name().to_string();
            return Err(TensorError::FileDType { path: path.to_path_buf(), key: key.clone(), dtype });
        };
        data.push((key, dtype, t.shape().to_vec(), t.bytes()?));
    }
    let views = data
        .iter()
        .map(|(key, dtype, shape, bytes)| Ok((key.as_str(), TensorView::new(*dtype, shape.clone(), bytes)?)))
        .collect::<Result<Vec<_>, SafeTensorError>>()
        .map_err(|e| file_error(path, e))?;
    serialize_to_file(views, None, path).map_err(|e| file_error(path, e))
}

/// The tensors of the safetensors file at `path`, in file order, on the default device,
/// each in the file's dtype. The file is memory-mapped: each tensor's bytes go from the
/// page cache to its device buffer without a copy of the whole file in memory.
pub fn safe_load(path: impl AsRef<Path>) -> Result<IndexMap<String, Tensor>> {
    let path = path.as_ref();
    let io_error = |source| TensorError::File { path: path.to_path_buf(), source };
    let map = map_file(&File::open(path).map_err(io_error)?).map_err(io_error)?;
    let file = SafeTensors::deserialize(&map).map_err(|e| file_error(path, e))?;
    let (_, metadata) = SafeTensors::read_metadata(&map).map_err(|e| file_error(path, e))?;
    let mut state = IndexMap::new();
    for key in metadata.offset_keys() {
        let view = file.tensor(&key).map_err(|e| file_error(path, e))?;
        let Some(&(dtype, _)) = DTYPES.iter().find(|(_, d)| *d == view.dtype()) else {
            let dtype = view.dtype().to_string();
            return Err(TensorError::FileDType { path: path.to_path_buf(), key, dtype });
        };
        let t = Tensor::from_bytes(view.data(), dtype, view.shape())?;
        state.insert(key, t);
    }
    Ok(state)
}
