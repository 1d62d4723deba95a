//! The weights of a Hugging Face checkpoint (`model.safetensors`, memory-mapped by
//! [`safe_load`]), taken by their checkpoint names with the shapes the config implies.

use std::path::{Path, PathBuf};

use wgrad_tensor::nn::{IndexMap, safe_load};
use wgrad_tensor::{DType, Tensor};

use crate::config::existing;
use crate::error::{ModelError, Result};

/// The tensors of a checkpoint file by name, on the default device in the file's dtypes.
pub struct Weights {
    path: PathBuf,
    tensors: IndexMap<String, Tensor>,
    prefix: String,
}

impl Weights {
    /// Loads `model.safetensors` of `dir`. Names are looked up as the bare model writes them
    /// (`embeddings.word_embeddings.weight`); a checkpoint of the model inside a task head, whose
    /// names start with `bert.`, is read the same way.
    pub fn load(dir: &Path) -> Result<Weights> {
        let path = existing(dir, "model.safetensors")?;
        let tensors = safe_load(&path)?;
        let prefix = match tensors.keys().any(|k| k.starts_with("embeddings.")) {
            true => "",
            false if tensors.keys().any(|k| k.starts_with("bert.embeddings.")) => "bert.",
            false => "",
        };
        Ok(Weights { path, tensors, prefix: prefix.into() })
    }

    /// The file the weights come from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tensor `name` (a checkpoint name without a task head's prefix), which must have
    /// `shape`, cast to `dtype` and realized into a buffer of its own.
    pub fn take(&self, name: &str, shape: &[usize], dtype: DType) -> Result<Tensor> {
        let full = format!("{}{name}", self.prefix);
        let t = self
            .tensors
            .get(&full)
            .ok_or_else(|| ModelError::MissingWeight { path: self.path.clone(), name: full.clone() })?;
        if t.shape() != shape {
            let (expected, found) = (shape.to_vec(), t.shape().to_vec());
            return Err(ModelError::WeightShape { path: self.path.clone(), name: full, expected, found });
        }
        let t = t.cast(dtype).contiguous();
        t.realize()?;
        Ok(t)
    }

    /// The `(out, in)` weight and `(out,)` bias of a linear layer `name`.
    pub fn linear(
        &self,
        name: &str,
        out_features: usize,
        in_features: usize,
        dtype: DType,
    ) -> Result<(Tensor, Tensor)> {
        let weight = self.take(&format!("{name}.weight"), &[out_features, in_features], dtype)?;
        let bias = self.take(&format!("{name}.bias"), &[out_features], dtype)?;
        Ok((weight, bias))
    }
}
