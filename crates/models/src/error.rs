//! The models crate's error type: every failure names the file, config field or weight
//! involved.

use std::path::PathBuf;

use thiserror::Error;
use wgrad_tensor::TensorError;

/// Everything that can go wrong loading a checkpoint directory or running a model.
#[derive(Debug, Error)]
pub enum ModelError {
    /// A file the model needs is not in its directory.
    #[error("{}: no such file (is this a Hugging Face checkpoint directory? `cargo xtask setup --models` fetches all-MiniLM-L6-v2)", .path.display())]
    MissingFile {
        /// The file looked for.
        path: PathBuf,
    },
    /// A file that exists but cannot be read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A JSON config that does not parse, or a field of the wrong type.
    #[error("{}: {source}", .path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What serde found.
        source: serde_json::Error,
    },
    /// A config field this crate does not know: refusing it beats silently ignoring a setting
    /// that changes the model.
    #[error("{}: unknown field `{field}`", .path.display())]
    UnknownField {
        /// The file.
        path: PathBuf,
        /// The field's name.
        field: String,
    },
    /// A config value this crate does not implement (another activation, a relative position
    /// embedding, a pooling mode).
    #[error("{}: `{field}` = {value} is not supported ({why})", .path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// The field's name.
        field: String,
        /// Its value, as JSON.
        value: String,
        /// What is supported.
        why: String,
    },
    /// A weight the model needs is not in the checkpoint.
    #[error("{}: no weight named `{name}`", .path.display())]
    MissingWeight {
        /// The checkpoint file.
        path: PathBuf,
        /// The weight's name in the checkpoint.
        name: String,
    },
    /// A weight whose shape differs from the one the config implies.
    #[error("{}: weight `{name}` is {found:?}, the config implies {expected:?}", .path.display())]
    WeightShape {
        /// The checkpoint file.
        path: PathBuf,
        /// The weight's name in the checkpoint.
        name: String,
        /// The shape the config implies.
        expected: Vec<usize>,
        /// The shape in the file.
        found: Vec<usize>,
    },
    /// `tokenizer.json` that the tokenizers library cannot load, or text it cannot encode.
    #[error("{}: {message}", .path.display())]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// What the tokenizers library said.
        message: String,
    },
    /// A model input that does not fit the model (a token id past the vocabulary, a batch
    /// longer than the position table, token lists of different lengths).
    #[error("{0}")]
    Input(String),
    /// A tensor operation failed (device, kernel, safetensors file).
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

/// Result alias of this crate.
pub type Result<T, E = ModelError> = std::result::Result<T, E>;
