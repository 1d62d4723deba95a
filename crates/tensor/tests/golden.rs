//! The golden op cases (PyTorch references, `tests/fixtures/golden`): forward values and
//! the gradients of `out.sum()` of every case the tensor core covers, on every device,
//! with the tolerances of the fixtures' README.

mod common;

use common::devices;

use std::collections::BTreeMap;
use std::path::PathBuf;

use safetensors::SafeTensors;
use serde_json::Value as Json;
use wgrad_tensor::{DType, Result, Tensor, with_default_device};

/// The fixture folder at the repository root.
fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/golden")
}

struct Golden {
    cases: Vec<Json>,
    data: Vec<u8>,
}

impl Golden {
    fn load() -> Golden {
        let manifest: Json =
            serde_json::from_slice(&std::fs::read(fixtures().join("manifest-core.json")).unwrap()).unwrap();
        let data = std::fs::read(fixtures().join("golden-core.safetensors")).unwrap();
        Golden { cases: manifest["cases"].as_array().unwrap().clone(), data }
    }

    fn case(&self, name: &str) -> &Json {
        self.cases.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no golden case {name}"))
    }
}

/// A stored tensor as f64s (bools and ints exactly) with its shape.
fn stored(st: &SafeTensors, key: &str) -> (Vec<f64>, Vec<usize>) {
    let view = st.tensor(key).unwrap();
    let bytes = view.data();
    let values = match view.dtype() {
        safetensors::Dtype::F32 => {
            bytes.chunks(4).map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap()))).collect()
        }
        safetensors::Dtype::I32 => {
            bytes.chunks(4).map(|c| f64::from(i32::from_le_bytes(c.try_into().unwrap()))).collect()
        }
        safetensors::Dtype::U8 | safetensors::Dtype::BOOL => bytes.iter().map(|&b| f64::from(b)).collect(),
        d => panic!("unexpected stored dtype {d:?}"),
    };
    (values, view.shape().to_vec())
}

/// The dims of a manifest entry (scalars are stored with shape `[1]`, listed as `[]`).
fn shape_of(spec: &Json) -> Vec<usize> {
    spec["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect()
}

fn input(st: &SafeTensors, spec: &Json) -> Tensor {
    let (values, _) = stored(st, spec["key"].as_str().unwrap());
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
    let err = |e: wgrad_tensor::TensorError| e.to_string();
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

fn arg_f64(call: &Json, key: &str, default: f64) -> f64 {
    call.get(key).and_then(Json::as_f64).unwrap_or(default)
}

fn axes(call: &Json) -> Vec<isize> {
    call.get("axis")
        .and_then(Json::as_array)
        .map_or(vec![], |a| a.iter().map(|x| x.as_i64().unwrap() as isize).collect())
}

fn axis(call: &Json) -> isize {
    call["axis"].as_i64().unwrap() as isize
}

fn keepdim(call: &Json) -> bool {
    call.get("keepdim").and_then(Json::as_bool).unwrap_or(false)
}

fn ints(v: &Json) -> Vec<isize> {
    v.as_array().unwrap().iter().map(|x| x.as_i64().unwrap() as isize).collect()
}

fn pairs(v: &Json) -> Vec<(usize, usize)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap() as usize, p[1].as_u64().unwrap() as usize))
        .collect()
}

/// `one_hot` of int labels as tinygrad writes it: labels compared with an arange.
fn one_hot(labels: &Tensor, classes: usize) -> Result<Tensor> {
    labels.unsqueeze(-1)?.eq(&Tensor::arange(classes)?)?.where_(1, 0)
}

/// Mean cross entropy of `logits` against int `labels`, with label smoothing.
fn cross_entropy(logits: &Tensor, labels: &Tensor, smoothing: f64) -> Result<Tensor> {
    let classes = logits.shape()[1];
    let y = one_hot(labels, classes)?.cast(DType::F32);
    let y = y.mul(1.0 - smoothing)?.add(smoothing / classes as f64)?;
    logits.log_softmax(-1)?.mul(&y)?.sum(&[-1], false)?.mean(&[], false)?.neg().add(0.0)
}

/// The case's op applied to its inputs.
fn apply(call: &Json, x: &[Tensor]) -> Result<Tensor> {
    let op = call["op"].as_str().unwrap();
    let a = &x[0];
    Ok(match op {
        "neg" => a.neg(),
        "exp" => a.exp(),
        "exp2" => a.exp2(),
        "log" => a.log(),
        "log10" => a.log10(),
        "sqrt" => a.sqrt(),
        "rsqrt" => a.rsqrt(),
        "cos" => a.cos(),
        "tan" => a.tan(),
        "sigmoid" => a.sigmoid(),
        "tanh" => a.tanh(),
        "sinh" => a.sinh(),
        "cosh" => a.cosh(),
        "atanh" => a.atanh(),
        "acosh" => a.acosh(),
        "acos" => a.acos(),
        "atan" => a.atan(),
        "erf" => a.erf(),
        "abs" => a.abs(),
        "sign" => a.sign(),
        "square" => a.square(),
        "ceil" => a.ceil(),
        "round" => a.round(),
        "isnan" => a.isnan(),
        "quick_gelu" => a.quick_gelu(),
        "celu" => a.celu(arg_f64(call, "alpha", 1.0)),
        "elu" => a.elu(arg_f64(call, "alpha", 1.0)),
        "selu" => a.selu(),
        "silu" => a.silu(),
        "mish" => a.mish(),
        "softplus" => a.softplus(),
        "hardswish" => a.hardswish(),
        "hardtanh" => a.hardtanh(-1.0, 1.0),
        "leaky_relu" => a.leaky_relu(arg_f64(call, "neg_slope", 0.01)),
        "logical_not" => a.logical_not(),
        "dropout_eval" => a.clone(),
        "add" => a.add(&x[1])?,
        "sub" => a.sub(&x[1])?,
        "mul" => a.mul(&x[1])?,
        "div" => a.div(&x[1])?,
        "pow" => a.pow(&x[1])?,
        "maximum" => a.maximum(&x[1])?,
        "minimum" => a.minimum(&x[1])?,
        "add_const" => a.add(arg_f64(call, "c", 0.0))?,
        "mul_const" => a.mul(arg_f64(call, "c", 1.0))?,
        "pow_const" => a.pow(arg_f64(call, "exponent", 1.0))?,
        "where" => a.where_(&x[1], &x[2])?,
        "ne" => a.ne(&x[1])?,
        "lt" => a.lt(&x[1])?,
        "gt" => a.gt(&x[1])?,
        "floordiv" => a.floordiv(&x[1])?,
        "mod" => a.modulo(&x[1])?,
        "xor" => a.bitxor(&x[1])?,
        "bitand" => a.bitand(&x[1])?,
        "shl" => a.shl(call["n"].as_u64().unwrap() as u32)?,
        "shr" => a.shr(call["n"].as_u64().unwrap() as u32)?,
        "cast" => a.cast(call["dtype"].as_str().unwrap().parse().unwrap()),
        "sum" => a.sum(&axes(call), keepdim(call))?,
        "max" => a.max(&axes(call), keepdim(call))?,
        "mean" => a.mean(&axes(call), keepdim(call))?,
        "any" => a.any(&axes(call), keepdim(call))?,
        "all" => a.all(&axes(call), keepdim(call))?,
        "var" => a.var(&axes(call), keepdim(call), call["correction"].as_u64().unwrap_or(1) as usize)?,
        "std" => a.std(
            &axes(call),
            keepdim(call),
            call.get("correction").and_then(Json::as_u64).unwrap_or(1) as usize,
        )?,
        "softmax" => a.softmax(axis(call))?,
        "logsumexp" => a.logsumexp(axis(call), false)?,
        "argmax" => a.argmax(axis(call), false)?,
        "cumsum" => a.cumsum(axis(call))?,
        "reshape" => a.reshape(&ints(&call["shape"]))?,
        "transpose" => {
            a.transpose(call["dim0"].as_i64().unwrap() as isize, call["dim1"].as_i64().unwrap() as isize)?
        }
        "pad" => a.pad_value(&pairs(&call["pad"]), arg_f64(call, "value", 0.0))?,
        "flatten" => a.flatten(call["start"].as_i64().unwrap() as isize)?,
        "stack" => Tensor::stack(&x.iter().collect::<Vec<_>>(), axis(call))?,
        "expand" => a.expand(&ints(&call["shape"]).iter().map(|&d| d as usize).collect::<Vec<_>>())?,
        "shrink" => a.shrink(&pairs(&call["arg"]))?,
        "squeeze_unsqueeze" => a
            .squeeze(call["squeeze"].as_i64().unwrap() as isize)?
            .unsqueeze(call["unsqueeze"].as_i64().unwrap() as isize)?,
        "repeat" => a.repeat(&ints(&call["repeats"]).iter().map(|&d| d as usize).collect::<Vec<_>>())?,
        "roll" => a.roll(call["shifts"].as_i64().unwrap() as isize, axis(call))?,
        "matmul" => a.matmul(&x[1])?,
        "einsum" => a.matmul(&x[1])?,
        "linear" => a.matmul(&x[1].t()?)?.add(&x[2])?,
        "layernorm" => {
            let y = a.layernorm(-1, arg_f64(call, "eps", 1e-5))?;
            match x.len() {
                3 => y.mul(&x[1])?.add(&x[2])?,
                _ => y,
            }
        }
        "tril" => {
            let (r, c) = (a.shape()[0], a.shape()[1]);
            let rows = Tensor::arange(r)?.unsqueeze(1)?;
            let keep = Tensor::arange(c)?.le(&rows)?;
            keep.where_(a, 0.0)?
        }
        "one_hot" => one_hot(a, call["classes"].as_u64().unwrap() as usize)?,
        "sparse_cross_entropy" => cross_entropy(a, &x[1], arg_f64(call, "label_smoothing", 0.0))?,
        "bce_logits" => {
            let y = &x[1];
            a.relu().sub(&a.mul(y)?)?.add(a.abs().neg().exp().add(1.0)?.log())?.mean(&[], false)?
        }
        "bce" => {
            let y = &x[1];
            let l = y
                .mul(a.log().maximum(-100.0)?)?
                .add(y.rsub(1.0)?.mul(a.rsub(1.0)?.log().maximum(-100.0)?)?)?;
            l.mean(&[], false)?.neg()
        }
        "chain_pad_exp" => {
            let n = a.ndim();
            let mut p = vec![(0, 0); n];
            p[n - 1] = (1, 1);
            a.pad(&p)?.exp().sum(&[1], false)?
        }
        "chain_reshape_permute_sum" => a.reshape(&[6, 10, 6])?.permute(&[1, 0, 2])?.sum(&[1, 2], false)?,
        "chain_norm_gelu" => a.sub(&a.mean(&[-1], true)?)?.div(&a.std(&[-1], true, 1)?)?.gelu(),
        other => panic!("golden op {other} is not mapped"),
    })
}

/// Runs one case on the current default device: forward, then the gradients of
/// `out.sum()` for its float inputs.
fn check(st: &SafeTensors, case: &Json) -> std::result::Result<(), String> {
    let e = |err: wgrad_tensor::TensorError| err.to_string();
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
    let (want, _) = stored(st, spec["key"].as_str().unwrap());
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
        let (want, _) = stored(st, g["key"].as_str().unwrap());
        compare(&format!("grad{i}"), &values(&got, "float32")?, &want, gatol, grtol)?;
    }
    Ok(())
}

/// Checks the named cases on every available device, reporting every failure.
fn run(names: &[&str]) {
    let golden = Golden::load();
    let st = SafeTensors::deserialize(&golden.data).unwrap();
    let mut failures = BTreeMap::new();
    for device in devices() {
        with_default_device(&device, || {
            for name in names {
                if let Err(msg) = check(&st, golden.case(name)) {
                    failures.insert(format!("{device} {name}"), msg);
                }
            }
        });
    }
    let report: Vec<String> = failures.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    assert!(report.is_empty(), "{} failing:\n{}", report.len(), report.join("\n"));
}

#[test]
fn unary_math() {
    run(&[
        "neg",
        "exp2",
        "sqrt",
        "cos",
        "sigmoid",
        "quick_gelu",
        "celu",
        "leaky_relu",
        "hardtanh",
        "mish",
        "square",
        "ceil",
        "sinh",
        "acosh",
        "acos",
        "log10",
        "leaky_relu_0.2",
        "sqrt_scalar",
        "log_tiny",
        "abs",
        "log",
        "rsqrt",
        "tan",
        "tanh",
        "silu",
        "selu",
        "hardswish",
        "softplus",
        "erf",
        "sign",
        "round",
        "cosh",
        "atanh",
        "atan",
        "isnan",
        "elu_alpha",
        "exp_large",
        "bool_not",
        "dropout_eval",
    ]);
}

#[test]
fn binary_broadcasting() {
    run(&[
        "add_bcast_row",
        "sub",
        "sub_bcast_3d",
        "mul_bcast_col",
        "mul_scalar",
        "div_bcast_row",
        "maximum",
        "maximum_bcast_3d",
        "minimum_bcast_col",
        "minimum_scalar",
        "pow_const_half",
        "add_const",
        "where_bcast",
        "cmpne",
        "int_add",
        "int_div_floor",
        "int_xor",
        "int_shl",
        "cast_f2bool",
        "add",
        "add_bcast_3d",
        "sub_bcast_col",
        "sub_scalar",
        "mul_bcast_row",
        "div",
        "div_bcast_3d",
        "maximum_bcast_col",
        "maximum_scalar",
        "minimum_bcast_row",
        "pow",
        "pow_const_neg",
        "mul_const",
        "cmplt",
        "cmpgt_bcast",
        "int_mul",
        "int_mod_floor",
        "int_and",
        "int_shr",
        "cast_f2i",
        "cast_bool2f",
    ]);
}

#[test]
fn reductions() {
    run(&[
        "sum_all",
        "sum_ax12_keep",
        "max_ax1",
        "mean_all",
        "var_all_c0",
        "softmax",
        "logsumexp",
        "sum_big_row",
        "max_big",
        "any_ax1",
        "sum_ax0",
        "sum_neg_ax",
        "max_ax3_keep",
        "mean_ax13",
        "std_ax3",
        "softmax_ax1",
        "cumsum_ax1",
        "sum_big_all",
        "argmax_ax1",
        "all_ax0",
    ]);
}

#[test]
fn movement() {
    run(&[
        "reshape",
        "transpose",
        "pad_value",
        "flatten",
        "stack",
        "reshape_infer",
        "expand",
        "shrink",
        "squeeze_unsqueeze",
        "repeat",
        "roll",
    ]);
}

#[test]
fn matmul() {
    run(&["matmul_vec", "matmul_big", "linear", "matmul_batched", "matmul_odd", "einsum_ij_jk"]);
}

#[test]
fn composites() {
    run(&[
        "layernorm",
        "layernorm_noaffine",
        "tril",
        "one_hot",
        "cross_entropy",
        "cross_entropy_smooth",
        "bce_logits",
        "bce",
        "chain_pad_exp",
        "chain_reshape_permute_sum",
        "chain_norm_gelu",
    ]);
}
