//! The JSON configs of a checkpoint directory: Hugging Face's `config.json` for BERT, and
//! sentence-transformers' `modules.json`, `sentence_bert_config.json` and pooling config.
//!
//! Every config is read strictly: a field this crate does not know is a
//! [`ModelError::UnknownField`] (a setting silently ignored could change the model), except the
//! informational ones listed beside each config (dropout rates, versions, label names), which
//! change nothing at inference.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{ModelError, Result};

/// The path of `name` in `dir`, which must exist.
pub(crate) fn existing(dir: &Path, name: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    match path.is_file() {
        true => Ok(path),
        false => Err(ModelError::MissingFile { path }),
    }
}

/// A config struct `T` read from `path`, with the fields `T` does not declare (gathered in its
/// flattened `rest`) checked against `ignored`.
fn read_strict<T: DeserializeOwned>(
    path: &Path,
    ignored: &[&str],
    rest: impl Fn(&T) -> &Map<String, Value>,
) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ModelError::Io { path: path.to_path_buf(), source })?;
    let config: T = serde_json::from_str(&text)
        .map_err(|source| ModelError::Json { path: path.to_path_buf(), source })?;
    known_fields(path, rest(&config), ignored)?;
    Ok(config)
}

/// Ok when every field in `rest` (those a config struct does not declare) is in `ignored`.
fn known_fields(path: &Path, rest: &Map<String, Value>, ignored: &[&str]) -> Result<()> {
    match rest.keys().find(|k| !ignored.contains(&k.as_str())) {
        Some(field) => Err(ModelError::UnknownField { path: path.to_path_buf(), field: field.clone() }),
        None => Ok(()),
    }
}

/// An [`ModelError::Unsupported`] for `field` of `path`.
fn unsupported(path: &Path, field: &str, value: impl serde::Serialize, why: &str) -> ModelError {
    let value = serde_json::to_string(&value).unwrap_or_default();
    ModelError::Unsupported { path: path.to_path_buf(), field: field.into(), value, why: why.into() }
}

/// The non-linearity of BERT's feed-forward block (`hidden_act`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `gelu`: the exact GELU, `x * Φ(x)` through erf.
    Gelu,
    /// `gelu_new`, `gelu_pytorch_tanh`: GELU's tanh approximation.
    GeluTanh,
    /// `relu`.
    Relu,
}

/// Fields of `config.json` that change nothing at inference.
const BERT_IGNORED: [&str; 19] = [
    "_name_or_path",
    "architectures",
    "attention_probs_dropout_prob",
    "hidden_dropout_prob",
    "classifier_dropout",
    "initializer_range",
    "gradient_checkpointing",
    "transformers_version",
    "torch_dtype",
    "use_cache",
    "pad_token_id",
    "bos_token_id",
    "eos_token_id",
    "id2label",
    "label2id",
    "problem_type",
    "tokenizer_class",
    "output_past",
    "chunk_size_feed_forward",
];

/// `config.json` of a BERT checkpoint, as `transformers`' `BertConfig` writes it.
#[derive(Clone, Debug, Deserialize)]
struct BertConfigFile {
    model_type: String,
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    hidden_act: String,
    max_position_embeddings: usize,
    type_vocab_size: usize,
    #[serde(default = "default_layer_norm_eps")]
    layer_norm_eps: f64,
    #[serde(default = "default_position_embedding_type")]
    position_embedding_type: String,
    #[serde(default)]
    is_decoder: bool,
    #[serde(default)]
    add_cross_attention: bool,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

fn default_layer_norm_eps() -> f64 {
    1e-12
}

fn default_position_embedding_type() -> String {
    "absolute".into()
}

/// The shape of a BERT encoder, from `config.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct BertConfig {
    /// Rows of the word embedding table.
    pub vocab_size: usize,
    /// Width of every hidden state.
    pub hidden_size: usize,
    /// Number of encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer (dividing `hidden_size`).
    pub num_attention_heads: usize,
    /// Width of the feed-forward block.
    pub intermediate_size: usize,
    /// The feed-forward block's non-linearity.
    pub hidden_act: Activation,
    /// Rows of the position embedding table: the longest sequence the model takes.
    pub max_position_embeddings: usize,
    /// Rows of the token type (segment) embedding table.
    pub type_vocab_size: usize,
    /// The epsilon of every layer norm.
    pub layer_norm_eps: f64,
}

impl BertConfig {
    /// Reads and checks `path` (a `config.json`).
    pub fn from_file(path: &Path) -> Result<BertConfig> {
        let file: BertConfigFile = read_strict(path, &BERT_IGNORED, |c: &BertConfigFile| &c.rest)?;
        if file.model_type != "bert" {
            return Err(unsupported(path, "model_type", &file.model_type, "this is a BERT encoder"));
        }
        if file.position_embedding_type != "absolute" {
            let why = "only absolute position embeddings";
            return Err(unsupported(path, "position_embedding_type", &file.position_embedding_type, why));
        }
        if file.is_decoder || file.add_cross_attention {
            let field = if file.is_decoder { "is_decoder" } else { "add_cross_attention" };
            return Err(unsupported(path, field, true, "an encoder without cross-attention"));
        }
        let hidden_act = match file.hidden_act.as_str() {
            "gelu" => Activation::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" => Activation::GeluTanh,
            "relu" => Activation::Relu,
            other => {
                return Err(unsupported(
                    path,
                    "hidden_act",
                    other,
                    "gelu, gelu_new, gelu_pytorch_tanh or relu",
                ));
            }
        };
        if file.num_attention_heads == 0 || !file.hidden_size.is_multiple_of(file.num_attention_heads) {
            let why = format!("a divisor of hidden_size {}", file.hidden_size);
            return Err(unsupported(path, "num_attention_heads", file.num_attention_heads, &why));
        }
        Ok(BertConfig {
            vocab_size: file.vocab_size,
            hidden_size: file.hidden_size,
            num_hidden_layers: file.num_hidden_layers,
            num_attention_heads: file.num_attention_heads,
            intermediate_size: file.intermediate_size,
            hidden_act,
            max_position_embeddings: file.max_position_embeddings,
            type_vocab_size: file.type_vocab_size,
            layer_norm_eps: file.layer_norm_eps,
        })
    }
}

/// One entry of sentence-transformers' `modules.json`.
#[derive(Clone, Debug, Deserialize)]
struct ModuleEntry {
    path: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// Fields of a `modules.json` entry that change nothing: the list's order is the pipeline's
/// (`idx` repeats it) and `name` is a label.
const MODULE_IGNORED: [&str; 2] = ["idx", "name"];

/// `sentence_bert_config.json`: how the Transformer module tokenizes.
#[derive(Clone, Debug, Deserialize)]
struct SentenceBertConfigFile {
    max_seq_length: usize,
    #[serde(default)]
    do_lower_case: bool,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// The pooling config (`1_Pooling/config.json`).
#[derive(Clone, Debug, Default, Deserialize)]
struct PoolingConfigFile {
    word_embedding_dimension: usize,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// Fields of the pooling config that change nothing here: `include_prompt` says whether prompt
/// tokens are pooled, and no prompt is ever prepended.
const POOLING_IGNORED: [&str; 1] = ["include_prompt"];

/// How token states become one sentence vector: sentence-transformers' pooling modes, whose
/// results are concatenated in this order when several are on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pooling {
    /// The first token's state (`[CLS]`).
    pub cls: bool,
    /// The maximum over the real tokens.
    pub max: bool,
    /// The mean over the real tokens.
    pub mean: bool,
    /// The sum over the real tokens divided by the square root of their count.
    pub mean_sqrt_len: bool,
}

/// A sentence-transformers model directory's pipeline: the Transformer module's tokenization,
/// the pooling, and whether the result is L2-normalized.
#[derive(Clone, Debug, PartialEq)]
pub struct SentenceConfig {
    /// Longest token sequence (special tokens included); longer inputs are truncated.
    pub max_seq_length: usize,
    /// Whether text is lowercased before tokenizing (sentence-transformers' own switch, apart
    /// from the tokenizer's normalizer).
    pub do_lower_case: bool,
    /// The pooling modes.
    pub pooling: Pooling,
    /// Width of the pooled vector per mode (the encoder's hidden size).
    pub word_embedding_dimension: usize,
    /// Whether the pooled vector is divided by its L2 norm.
    pub normalize: bool,
}

const TRANSFORMER: &str = "sentence_transformers.models.Transformer";
const POOLING: &str = "sentence_transformers.models.Pooling";
const NORMALIZE: &str = "sentence_transformers.models.Normalize";

impl SentenceConfig {
    /// Reads `modules.json` in `dir` and the configs it points to: a Transformer, a Pooling and
    /// optionally a Normalize module, in that order.
    pub fn from_dir(dir: &Path) -> Result<SentenceConfig> {
        let modules_path = existing(dir, "modules.json")?;
        let text = std::fs::read_to_string(&modules_path)
            .map_err(|source| ModelError::Io { path: modules_path.clone(), source })?;
        let modules: Vec<ModuleEntry> = serde_json::from_str(&text)
            .map_err(|source| ModelError::Json { path: modules_path.clone(), source })?;
        for module in &modules {
            known_fields(&modules_path, &module.rest, &MODULE_IGNORED)?;
        }
        let kinds: Vec<&str> = modules.iter().map(|m| m.kind.as_str()).collect();
        let normalize = match kinds[..] {
            [TRANSFORMER, POOLING] => false,
            [TRANSFORMER, POOLING, NORMALIZE] => true,
            _ => {
                let why = "a Transformer, a Pooling and optionally a Normalize module";
                return Err(unsupported(&modules_path, "type", &kinds, why));
            }
        };
        let st_path = existing(dir, "sentence_bert_config.json")?;
        let st: SentenceBertConfigFile = read_strict(&st_path, &[], |c: &SentenceBertConfigFile| &c.rest)?;
        let pool_path = existing(&dir.join(&modules[1].path), "config.json")?;
        let pool: PoolingConfigFile =
            read_strict(&pool_path, &POOLING_IGNORED, |c: &PoolingConfigFile| &c.rest)?;
        for (field, on) in [
            ("pooling_mode_weightedmean_tokens", pool.pooling_mode_weightedmean_tokens),
            ("pooling_mode_lasttoken", pool.pooling_mode_lasttoken),
        ] {
            if on {
                return Err(unsupported(
                    &pool_path,
                    field,
                    true,
                    "the modes cls, max, mean and mean_sqrt_len",
                ));
            }
        }
        let pooling = Pooling {
            cls: pool.pooling_mode_cls_token,
            max: pool.pooling_mode_max_tokens,
            mean: pool.pooling_mode_mean_tokens,
            mean_sqrt_len: pool.pooling_mode_mean_sqrt_len_tokens,
        };
        if pooling == Pooling::default() {
            return Err(unsupported(
                &pool_path,
                "pooling_mode_mean_tokens",
                false,
                "at least one pooling mode",
            ));
        }
        Ok(SentenceConfig {
            max_seq_length: st.max_seq_length,
            do_lower_case: st.do_lower_case,
            pooling,
            word_embedding_dimension: pool.word_embedding_dimension,
            normalize,
        })
    }
}
