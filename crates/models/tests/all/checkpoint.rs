//! Checkpoint directories: a tiny BERT written here loads and runs, and each broken variant
//! (a missing file, a missing or mis-shaped weight, an unknown or unsupported config field, a
//! token outside the vocabulary) is a typed error naming what is wrong.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wgrad_models::{BertModel, ModelError, SentenceConfig, TokenBatch};
use wgrad_tensor::nn::{IndexMap, safe_save};
use wgrad_tensor::{DType, Tensor};

const HIDDEN: usize = 8;
const FFN: usize = 16;
const VOCAB: usize = 20;
const POSITIONS: usize = 12;

fn config() -> Value {
    json!({
        "architectures": ["BertModel"], "model_type": "bert", "vocab_size": VOCAB, "hidden_size": HIDDEN,
        "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": FFN, "hidden_act": "gelu",
        "max_position_embeddings": POSITIONS, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
        "hidden_dropout_prob": 0.1, "transformers_version": "4.8.2"
    })
}

/// The weights of the tiny BERT, named as `transformers` names them, each with its shape.
fn weights() -> Vec<(String, Vec<usize>)> {
    let mut w: Vec<(String, Vec<usize>)> = vec![
        ("embeddings.word_embeddings.weight".into(), vec![VOCAB, HIDDEN]),
        ("embeddings.position_embeddings.weight".into(), vec![POSITIONS, HIDDEN]),
        ("embeddings.token_type_embeddings.weight".into(), vec![2, HIDDEN]),
    ];
    let norm =
        |name: &str| [(format!("{name}.weight"), vec![HIDDEN]), (format!("{name}.bias"), vec![HIDDEN])];
    let linear = |name: &str, out: usize, inp: usize| {
        [(format!("{name}.weight"), vec![out, inp]), (format!("{name}.bias"), vec![out])]
    };
    w.extend(norm("embeddings.LayerNorm"));
    for part in ["query", "key", "value"] {
        w.extend(linear(&format!("encoder.layer.0.attention.self.{part}"), HIDDEN, HIDDEN));
    }
    w.extend(linear("encoder.layer.0.attention.output.dense", HIDDEN, HIDDEN));
    w.extend(norm("encoder.layer.0.attention.output.LayerNorm"));
    w.extend(linear("encoder.layer.0.intermediate.dense", FFN, HIDDEN));
    w.extend(linear("encoder.layer.0.output.dense", HIDDEN, FFN));
    w.extend(norm("encoder.layer.0.output.LayerNorm"));
    w
}

/// A fresh directory holding a tiny BERT checkpoint: `config` as config.json, and `weights`
/// (random, seeded) as model.safetensors with `prefix` before each name.
fn checkpoint(name: &str, config: &Value, weights: &[(String, Vec<usize>)], prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgrad-checkpoint-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let state: IndexMap<String, Tensor> = weights
        .iter()
        .enumerate()
        .map(|(i, (n, shape))| {
            (format!("{prefix}{n}"), Tensor::randn(shape, i as u64).unwrap().mul(0.5).unwrap())
        })
        .collect();
    safe_save(dir.join("model.safetensors"), &state).unwrap();
    dir
}

fn load_error(name: &str, config: &Value, weights: &[(String, Vec<usize>)]) -> ModelError {
    let dir = checkpoint(name, config, weights, "");
    let err = BertModel::load(&dir, DType::F32).err().expect("a broken checkpoint loads");
    std::fs::remove_dir_all(dir).unwrap();
    err
}

fn batch(ids: &[u32]) -> TokenBatch {
    let n = ids.len();
    TokenBatch { ids: ids.to_vec(), type_ids: vec![0; n], mask: vec![1; n], batch: 1, seq_len: n }
}

#[test]
fn a_tiny_checkpoint_loads_and_runs() {
    for prefix in ["", "bert."] {
        let dir = checkpoint(&format!("tiny{prefix}"), &config(), &weights(), prefix);
        let model = BertModel::load(&dir, DType::F32).unwrap();
        let out = model.forward(&batch(&[1, 5, 19, 2])).unwrap();
        assert_eq!(out.shape(), &[1, 4, HIDDEN]);
        let values = out.to_vec::<f32>().unwrap();
        // every position is layer-normed: mean 0 before the (random) affine is not visible,
        // but the values are finite and not all equal
        assert!(values.iter().all(|v| v.is_finite()) && values.iter().any(|&v| v != values[0]));
        let err = model.forward(&batch(&[1, VOCAB as u32])).err().unwrap();
        assert!(matches!(&err, ModelError::Input(m) if m.contains("token id 20")), "{err}");
        let too_long = model.forward(&batch(&[1; POSITIONS + 1])).err().unwrap();
        assert!(matches!(&too_long, ModelError::Input(m) if m.contains("13 tokens")), "{too_long}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn a_missing_file_is_named() {
    let err = BertModel::load(Path::new("/nonexistent/model"), DType::F32).err().unwrap();
    assert!(matches!(&err, ModelError::MissingFile { path } if path.ends_with("config.json")), "{err}");
    let dir = checkpoint("nosafetensors", &config(), &weights(), "");
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    let err = BertModel::load(&dir, DType::F32).err().unwrap();
    assert!(matches!(&err, ModelError::MissingFile { path } if path.ends_with("model.safetensors")), "{err}");
    let err = SentenceConfig::from_dir(&dir).err().unwrap();
    assert!(matches!(&err, ModelError::MissingFile { path } if path.ends_with("modules.json")), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_missing_weight_is_named() {
    let mut w = weights();
    w.retain(|(n, _)| n != "encoder.layer.0.output.dense.bias");
    let err = load_error("missing", &config(), &w);
    assert!(
        matches!(&err, ModelError::MissingWeight { name, .. } if name == "encoder.layer.0.output.dense.bias"),
        "{err}"
    );
}

#[test]
fn a_misshaped_weight_is_named() {
    let mut w = weights();
    w.iter_mut().find(|(n, _)| n == "encoder.layer.0.intermediate.dense.weight").unwrap().1 =
        vec![FFN, HIDDEN + 1];
    let err = load_error("misshaped", &config(), &w);
    let ModelError::WeightShape { name, expected, found, .. } = &err else { panic!("{err}") };
    assert_eq!(
        (name.as_str(), &expected[..], &found[..]),
        ("encoder.layer.0.intermediate.dense.weight", &[FFN, HIDDEN][..], &[FFN, HIDDEN + 1][..])
    );
}

#[test]
fn an_unknown_config_field_is_named() {
    let mut c = config();
    c["rotary_dim"] = json!(4);
    let err = load_error("unknown", &c, &weights());
    assert!(matches!(&err, ModelError::UnknownField { field, .. } if field == "rotary_dim"), "{err}");
    assert!(err.to_string().contains("unknown field `rotary_dim`"), "{err}");
}

#[test]
fn unsupported_config_values_are_named() {
    for (field, value) in [
        ("hidden_act", json!("swish")),
        ("position_embedding_type", json!("relative_key")),
        ("model_type", json!("roberta")),
        ("num_attention_heads", json!(3)),
    ] {
        let mut c = config();
        c[field] = value.clone();
        let err = load_error(field, &c, &weights());
        assert!(
            matches!(&err, ModelError::Unsupported { field: f, value: v, .. } if f == field && *v == value.to_string().as_str()),
            "{err}"
        );
    }
    let mut c = config();
    c.as_object_mut().unwrap().remove("hidden_size");
    let err = load_error("nohidden", &c, &weights());
    assert!(matches!(&err, ModelError::Json { .. }) && err.to_string().contains("hidden_size"), "{err}");
}

#[test]
fn sentence_transformers_configs_are_read_strictly() {
    let dir = std::env::temp_dir().join(format!("wgrad-st-config-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    let modules = json!([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
    ]);
    std::fs::write(dir.join("modules.json"), modules.to_string()).unwrap();
    std::fs::write(
        dir.join("sentence_bert_config.json"),
        r#"{"max_seq_length": 256, "do_lower_case": false}"#,
    )
    .unwrap();
    let pooling = json!({"word_embedding_dimension": 384, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true});
    std::fs::write(dir.join("1_Pooling/config.json"), pooling.to_string()).unwrap();
    let config = SentenceConfig::from_dir(&dir).unwrap();
    assert_eq!(
        (config.max_seq_length, config.normalize, config.pooling.mean, config.pooling.cls),
        (256, true, true, false)
    );
    let mut bad = pooling.clone();
    bad["pooling_mode_median"] = json!(true);
    std::fs::write(dir.join("1_Pooling/config.json"), bad.to_string()).unwrap();
    let err = SentenceConfig::from_dir(&dir).err().unwrap();
    assert!(
        matches!(&err, ModelError::UnknownField { field, .. } if field == "pooling_mode_median"),
        "{err}"
    );
    let mut bad = pooling.clone();
    bad["pooling_mode_lasttoken"] = json!(true);
    std::fs::write(dir.join("1_Pooling/config.json"), bad.to_string()).unwrap();
    let err = SentenceConfig::from_dir(&dir).err().unwrap();
    assert!(
        matches!(&err, ModelError::Unsupported { field, .. } if field == "pooling_mode_lasttoken"),
        "{err}"
    );
    let mut dense = modules.clone();
    dense[2]["type"] = json!("sentence_transformers.models.Dense");
    std::fs::write(dir.join("modules.json"), dense.to_string()).unwrap();
    let err = SentenceConfig::from_dir(&dir).err().unwrap();
    assert!(matches!(&err, ModelError::Unsupported { field, .. } if field == "type"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
