//! The golden harness: the PyTorch reference cases of `tests/fixtures/golden` (format and
//! tolerances in its README), run forward and backward on every device.
//!
//! A test binary maps each case's `call` to tensor ops with an [`Apply`] function and hands
//! case names to [`run`], which checks the forward value (shape, dtype, values) and the
//! gradient of `out.sum()` for every float input, and reports every failure at once.

use std::collections::BTreeMap;
use std::path::PathBuf;

use safetensors::SafeTensors;
use serde_json::Value as Json;
use wgrad_tensor::{DType, Result, Tensor, TensorError, with_default_device};

use super::devices;

/// Maps a case's `call` and its inputs to the op's output.
pub type Apply = fn(&Json, &[Tensor]) -> Result<Tensor>;

/// The fixture folder at the repository root.
fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/golden")
}

/// Every case of the manifest, in order.
pub fn cases() -> Vec<Json> {
    let manifest: Json =
        serde_json::from_slice(&std::fs::read(fixtures().join("manifest.json")).unwrap()).unwrap();
    manifest["cases"].as_array().unwrap().clone()
}

/// A stored tensor as f64s (bools and ints exactly).
fn stored(st: &SafeTensors, key: &str) -> Vec<f64> {
    let view = st.tensor(key).unwrap();
    let bytes = view.data();
    match view.dtype() {
        safetensors::Dtype::F32 => {
            bytes.chunks(4).map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap()))).collect()
        }
        safetensors::Dtype::I32 => {
            bytes.chunks(4).map(|c| f64::from(i32::from_le_bytes(c.try_into().unwrap()))).collect()
        }
        safetensors::Dtype::U8 | safetensors::Dtype::BOOL => bytes.iter().map(|&b| f64::from(b)).collect(),
        d => panic!("unexpected stored dtype {d:?}"),
    }
}

/// The dims of a manifest entry (scalars are stored with shape `[1]`, listed as `[]`).
fn shape_of(spec: &Json) -> Vec<usize> {
    spec["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect()
}

fn input(st: &SafeTensors, spec: &Json) -> Tensor {
    let values = stored(st, spec["key"].as_str().unwrap());
    let shape = shape_of(spec);
    match spec["dtype"].as_str().unwrap() {
        "float32" => Tensor::from_vec(values.iter().map(|&v| v as f32).collect(), &shape),
        "int32" => Tensor::from_vec(values.iter().map(|&v| v as i32).collect(), &shape),
        "bool" => Tensor::from_vec(values.iter().map(|&v| v != 0.0).collect(), &shape),
        d => panic!("unexpected input dtype {d}"),
    }
    .unwrap()
}

/// The tensor's values as f64s, checked to have `dtype`.
fn values(t: &Tensor, dtype: &str) -> std::result::Result<Vec<f64>, String> {
    let want = dtype.parse::<DType>().unwrap();
    if t.dtype() != want {
        return Err(format!("dtype {} != {dtype}", t.dtype()));
    }
    let err = |e: TensorError| e.to_string();
    Ok(match dtype {
        "float32" => t.to_vec::<f32>().map_err(err)?.into_iter().map(f64::from).collect(),
        "int32" => t.to_vec::<i32>().map_err(err)?.into_iter().map(f64::from).collect(),
        "bool" => t.to_vec::<bool>().map_err(err)?.into_iter().map(|b| f64::from(u8::from(b))).collect(),
        d => panic!("unexpected output dtype {d}"),
    })
}

/// `got` against `want` with numpy's `isclose` (NaNs equal, infinities exact).
fn compare(what: &str, got: &[f64], want: &[f64], atol: f64, rtol: f64) -> std::result::Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, want {}", got.len(), want.len()));
    }
    let bad = got.iter().zip(want).enumerate().find(|(_, (g, w))| {
        let close = (g.is_nan() && w.is_nan()) || g == w || (*g - *w).abs() <= atol + rtol * w.abs();
        !close
    });
    match bad {
        None => Ok(()),
        Some((i, (g, w))) => Err(format!("{what}[{i}] = {g}, want {w} (atol {atol}, rtol {rtol})")),
    }
}

/// The float argument `key` of a call, or `default`.
pub fn arg_f64(call: &Json, key: &str, default: f64) -> f64 {
    call.get(key).and_then(Json::as_f64).unwrap_or(default)
}

/// The integer argument `key` of a call, or `default`.
pub fn arg_i64(call: &Json, key: &str, default: i64) -> i64 {
    call.get(key).and_then(Json::as_i64).unwrap_or(default)
}

/// The call's `axis` list (empty: all axes).
pub fn axes(call: &Json) -> Vec<isize> {
    call.get("axis").map_or(vec![], ints)
}

/// The call's single `axis`.
pub fn axis(call: &Json) -> isize {
    call["axis"].as_i64().unwrap() as isize
}

/// The call's `keepdim` (default false).
pub fn keepdim(call: &Json) -> bool {
    call.get("keepdim").and_then(Json::as_bool).unwrap_or(false)
}

/// A JSON list of integers.
pub fn ints(v: &Json) -> Vec<isize> {
    v.as_array().unwrap().iter().map(|x| x.as_i64().unwrap() as isize).collect()
}

/// A JSON list of `[a, b]` pairs.
pub fn pairs(v: &Json) -> Vec<(usize, usize)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap() as usize, p[1].as_u64().unwrap() as usize))
        .collect()
}

/// Runs one case on the current default device: forward, then the gradients of
/// `out.sum()` for its float inputs.
fn check(st: &SafeTensors, case: &Json, apply: Apply) -> std::result::Result<(), String> {
    let e = |err: TensorError| err.to_string();
    let tol = case.get("tol");
    let (atol, rtol) =
        tol.map_or((1e-6, 1e-3), |t| (t["atol"].as_f64().unwrap(), t["rtol"].as_f64().unwrap()));
    let inputs: Vec<Tensor> = case["inputs"].as_array().unwrap().iter().map(|i| input(st, i)).collect();
    let grads = case.get("grads").and_then(Json::as_array).cloned().unwrap_or_default();
    for g in &grads {
        inputs[g["input"].as_u64().unwrap() as usize].set_requires_grad(true).map_err(e)?;
    }
    let out = apply(&case["call"], &inputs).map_err(e)?;
    let spec = &case["out"];
    let want = stored(st, spec["key"].as_str().unwrap());
    let shape = shape_of(spec);
    if out.shape() != shape.as_slice() {
        return Err(format!("shape {:?}, want {shape:?}", out.shape()));
    }
    compare("out", &values(&out, spec["dtype"].as_str().unwrap())?, &want, atol, rtol)?;
    if grads.is_empty() {
        return Ok(());
    }
    out.sum(&[], false).map_err(e)?.backward().map_err(e)?;
    let (gatol, grtol) = tol.map_or((1e-4, 1e-3), |_| (atol.max(1e-4), rtol));
    for g in &grads {
        let i = g["input"].as_u64().unwrap() as usize;
        let got = inputs[i].grad().ok_or(format!("no gradient for input {i}"))?;
        let want = stored(st, g["key"].as_str().unwrap());
        compare(&format!("grad{i}"), &values(&got, "float32")?, &want, gatol, grtol)?;
    }
    Ok(())
}

/// Checks the named cases with `apply` on every available device, reporting every failure.
pub fn run(names: &[&str], apply: Apply) {
    let cases = cases();
    let data = std::fs::read(fixtures().join("golden.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&data).unwrap();
    let mut failures = BTreeMap::new();
    for device in devices() {
        with_default_device(&device, || {
            for name in names {
                let case = cases
                    .iter()
                    .find(|c| c["name"] == *name)
                    .unwrap_or_else(|| panic!("no golden case {name}"));
                if let Err(msg) = check(&st, case, apply) {
                    failures.insert(format!("{device} {name}"), msg);
                }
            }
        });
    }
    let report: Vec<String> = failures.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    assert!(report.is_empty(), "{} failing:\n{}", report.len(), report.join("\n"));
}
