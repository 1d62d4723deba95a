//! State dicts and safetensors files: a model's state round trips through a file into a
//! fresh model, dtypes convert, and bad input is a typed error naming what is wrong.

use crate::common;

use std::path::PathBuf;

use indexmap::IndexMap;
use wgrad_tensor::nn::{BatchNorm, Linear, Module, safe_load, safe_save};
use wgrad_tensor::{DType, Tensor, TensorError, training, with_default_device};

/// A small model of two layers, its state named after its fields.
#[derive(Module)]
struct Model {
    fc: Linear,
    bn: BatchNorm,
}

impl Model {
    fn new(seed: u64) -> Model {
        Model { fc: Linear::new(3, 2, true, seed).unwrap(), bn: BatchNorm::new(2).unwrap() }
    }
}

/// A fresh path in the temp dir for `name`.
fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("wgrad-state-{}-{name}.safetensors", std::process::id()))
}

fn bytes_of(t: &Tensor) -> Vec<f32> {
    t.cast(DType::F32).to_vec::<f32>().unwrap()
}

#[test]
fn a_state_dict_round_trips_through_a_file() {
    for (i, device) in common::devices().into_iter().enumerate() {
        with_default_device(&device, || {
            let model = Model::new(1);
            let x = Tensor::randn(&[4, 3], 0).unwrap();
            let y = training(true, || {
                model.bn.forward(&model.fc.forward(&x).unwrap().reshape(&[4, 2, 1]).unwrap())
            });
            Tensor::realize_all(&[&y.unwrap(), &model.bn.running_mean, &model.bn.num_batches_tracked])
                .unwrap();
            let path = temp(&format!("round-trip-{i}"));
            safe_save(&path, &model.state_dict()).unwrap();
            let loaded = safe_load(&path).unwrap();
            let keys: Vec<&str> = loaded.keys().map(String::as_str).collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(
                sorted,
                [
                    "bn.bias",
                    "bn.num_batches_tracked",
                    "bn.running_mean",
                    "bn.running_var",
                    "bn.weight",
                    "fc.bias",
                    "fc.weight"
                ]
            );
            assert_eq!(loaded["bn.num_batches_tracked"].dtype(), DType::I32);
            let mut fresh = Model::new(2);
            let buffer = fresh.fc.weight.uop();
            fresh.load_state_dict(&loaded).unwrap();
            for ((name, a), (_, b)) in model.named_tensors().into_iter().zip(fresh.named_tensors()) {
                assert_eq!(bytes_of(&a), bytes_of(&b), "{name} on {device}");
            }
            assert_eq!(fresh.fc.weight.uop(), buffer, "loading writes into the parameter's buffer");
            std::fs::remove_file(&path).unwrap();
        });
    }
}

#[test]
fn loading_converts_to_the_parameters_dtype() {
    for (i, device) in common::devices().into_iter().enumerate() {
        with_default_device(&device, || {
            let weight = Tensor::from_slice(&[0.5f32, -1.25, 2.0, 0.125, 3.0, -0.75], &[2, 3]).unwrap();
            let state: IndexMap<String, Tensor> = [
                ("weight".to_string(), weight.cast(DType::F16)),
                ("bias".to_string(), Tensor::from_slice(&[1i32, -2], &[2]).unwrap()),
            ]
            .into_iter()
            .collect();
            let path = temp(&format!("f16-{i}"));
            safe_save(&path, &state).unwrap();
            let loaded = safe_load(&path).unwrap();
            assert_eq!(loaded["weight"].dtype(), DType::F16);
            let mut l = Linear::new(3, 2, true, 0).unwrap();
            l.load_state_dict(&loaded).unwrap();
            assert_eq!(l.weight.dtype(), DType::F32);
            assert_eq!(l.weight.to_vec::<f32>().unwrap(), [0.5, -1.25, 2.0, 0.125, 3.0, -0.75], "{device}");
            assert_eq!(l.bias.as_ref().unwrap().to_vec::<f32>().unwrap(), [1.0, -2.0]);
            std::fs::remove_file(&path).unwrap();
        });
    }
}

#[test]
fn integer_and_bool_tensors_round_trip() {
    let state: IndexMap<String, Tensor> = [
        ("u8".to_string(), Tensor::from_slice(&[0u8, 7, 255], &[3]).unwrap()),
        ("bool".to_string(), Tensor::from_slice(&[true, false], &[2]).unwrap()),
        ("i32".to_string(), Tensor::from_slice(&[-5i32], &[]).unwrap()),
    ]
    .into_iter()
    .collect();
    let path = temp("ints");
    safe_save(&path, &state).unwrap();
    let loaded = safe_load(&path).unwrap();
    assert_eq!(loaded["u8"].to_vec::<u8>().unwrap(), [0, 7, 255]);
    assert_eq!(loaded["bool"].to_vec::<bool>().unwrap(), [true, false]);
    assert_eq!(loaded["i32"].shape(), [] as [usize; 0]);
    assert_eq!(loaded["i32"].item::<i32>().unwrap(), -5);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_missing_or_misshapen_tensor_is_named() {
    let mut l = Linear::new(3, 2, true, 0).unwrap();
    let before = l.weight.to_vec::<f32>().unwrap();
    let mut state = IndexMap::new();
    state.insert("weight".to_string(), Tensor::zeros(&[2, 3], DType::F32).unwrap());
    let err = l.load_state_dict(&state).unwrap_err();
    assert!(matches!(&err, TensorError::MissingState { key } if key == "bias"), "{err}");
    assert_eq!(err.to_string(), "load_state_dict: no tensor named `bias` in the state dict");
    state.insert("bias".to_string(), Tensor::zeros(&[3], DType::F32).unwrap());
    let err = l.load_state_dict(&state).unwrap_err();
    assert_eq!(err.to_string(), "load_state_dict: `bias` is (2,) in the model but (3,) in the state dict");
    assert_eq!(l.weight.to_vec::<f32>().unwrap(), before, "a failed load writes nothing");
}

#[test]
fn bad_files_are_typed_errors() {
    let missing = temp("does-not-exist");
    assert!(matches!(safe_load(&missing), Err(TensorError::File { .. })));
    let garbage = temp("garbage");
    std::fs::write(&garbage, b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}").unwrap();
    let err = safe_load(&garbage).unwrap_err();
    assert!(matches!(err, TensorError::Safetensors { .. }), "{err}");
    assert!(err.to_string().contains("not a valid safetensors file"), "{err}");
    std::fs::write(&garbage, b"").unwrap();
    assert!(matches!(safe_load(&garbage), Err(TensorError::Safetensors { .. })));
    let fp8 = safetensors::tensor::TensorView::new(safetensors::Dtype::F8_E4M3, vec![2], &[0, 1]).unwrap();
    safetensors::serialize_to_file([("w", fp8)], None, &garbage).unwrap();
    let err = safe_load(&garbage).unwrap_err();
    assert!(matches!(&err, TensorError::FileDType { key, .. } if key == "w"), "{err}");
    std::fs::remove_file(&garbage).unwrap();
    let unwritable = std::env::temp_dir().join("wgrad-no-such-dir").join("x.safetensors");
    let state: IndexMap<String, Tensor> = IndexMap::new();
    assert!(matches!(safe_save(&unwritable, &state), Err(TensorError::File { .. })));
}
