//! The golden op cases (PyTorch references, `tests/fixtures/golden`) of everything but the
//! spatial and indexing ops (`golden_spatial.rs`): forward values and the gradients of
//! `out.sum()` on every device, with the tolerances of the fixtures' README.

use crate::common;

use common::golden::{arg_f64, axes, axis, cases, ints, keepdim, pairs, run};

use serde_json::Value as Json;
use wgrad_tensor::{Result, Tensor, training};

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
        "xor" => a.bitwise_xor(&x[1])?,
        "bitand" => a.bitwise_and(&x[1])?,
        "shl" => a.lshift(call["n"].as_u64().unwrap() as u32)?,
        "shr" => a.rshift(call["n"].as_u64().unwrap() as u32)?,
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
        "linear" => a.linear(&x[1].t()?, Some(&x[2]))?, // PyTorch's weight is (out, in)
        "layernorm" => {
            let y = a.layernorm(-1, arg_f64(call, "eps", 1e-5))?;
            match x.len() {
                3 => y.mul(&x[1])?.add(&x[2])?,
                _ => y,
            }
        }
        "batchnorm_eval" => {
            let invstd = x[4].add(arg_f64(call, "eps", 1e-5))?.rsqrt();
            a.batchnorm(Some(&x[1]), Some(&x[2]), &x[3], &invstd)?
        }
        "batchnorm_train" => {
            let mean = a.mean(&[0, 2, 3], false)?;
            let invstd = a.var(&[0, 2, 3], false, 0)?.add(arg_f64(call, "eps", 1e-5))?.rsqrt();
            a.batchnorm(Some(&x[1]), Some(&x[2]), &mean, &invstd)?
        }
        "dropout_eval" => training(false, || a.dropout(arg_f64(call, "p", 0.5), 0))?,
        "sparse_cross_entropy" => {
            a.sparse_categorical_crossentropy(&x[1], arg_f64(call, "label_smoothing", 0.0))?
        }
        "bce" => a.binary_crossentropy(&x[1])?,
        "bce_logits" => a.binary_crossentropy_logits(&x[1])?,
        "sdpa" => a.scaled_dot_product_attention(
            &x[1],
            &x[2],
            None,
            call.get("is_causal").and_then(Json::as_bool).unwrap_or(false),
        )?,
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

/// Unary math and activations.
const UNARY: &[&str] = &[
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
];

/// Binary ops with broadcasting, comparisons, integer and bitwise ops, casts.
const BINARY: &[&str] = &[
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
];

/// Reductions, softmaxes, argmax, cumsum.
const REDUCTIONS: &[&str] = &[
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
];

/// Movement ops.
const MOVEMENT: &[&str] = &[
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
];

/// Matrix products.
const MATMUL: &[&str] = &["matmul_vec", "matmul_big", "linear", "matmul_batched", "matmul_odd"];

/// Normalisations, losses, attention and the chained cases.
const COMPOSITES: &[&str] = &[
    "layernorm",
    "layernorm_noaffine",
    "batchnorm_eval",
    "batchnorm_train",
    "sdpa",
    "cross_entropy",
    "cross_entropy_smooth",
    "bce_logits",
    "bce",
    "chain_pad_exp",
    "chain_reshape_permute_sum",
    "chain_norm_gelu",
];

#[test]
fn unary_math() {
    run(UNARY, apply);
}

#[test]
fn binary_broadcasting() {
    run(BINARY, apply);
}

#[test]
fn reductions() {
    run(REDUCTIONS, apply);
}

#[test]
fn movement() {
    run(MOVEMENT, apply);
}

#[test]
fn matmul() {
    run(MATMUL, apply);
}

#[test]
fn composites() {
    run(COMPOSITES, apply);
}

/// The ops `golden_spatial.rs` checks (convolutions, pools, indexing, `one_hot`, `tril`, `einsum`).
const SPATIAL_OPS: &[&str] = &[
    "conv2d",
    "conv1d",
    "conv_transpose2d",
    "max_pool2d",
    "avg_pool2d",
    "gather",
    "index_select0",
    "embedding",
    "getitem",
    "one_hot",
    "tril",
    "einsum",
];

/// Every case is checked: those of the spatial ops by `golden_spatial.rs`, the rest here.
#[test]
fn every_case_is_checked() {
    let here: Vec<&str> = [UNARY, BINARY, REDUCTIONS, MOVEMENT, MATMUL, COMPOSITES].concat();
    for case in cases() {
        let (name, op) = (case["name"].as_str().unwrap(), case["call"]["op"].as_str().unwrap());
        let spatial = SPATIAL_OPS.contains(&op);
        assert_eq!(
            here.contains(&name),
            !spatial,
            "case {name} (op {op}) is checked {}",
            if spatial { "here and in golden_spatial.rs" } else { "nowhere" }
        );
    }
}
