//! The golden cases of convolutions, pools, gathers, indexing, one-hot, triangles, einsum
//! and argmax, forward and backward on every device.

use crate::common;

use common::golden::{arg_i64, axis, keepdim, run};
use serde_json::Value as Json;
use wgrad_tensor::{ConvOpts, Index, Result, Tensor};

fn opts(call: &Json) -> ConvOpts {
    let get = |k: &str, d: i64| arg_i64(call, k, d) as usize;
    ConvOpts {
        stride: get("stride", 1),
        padding: get("padding", 0),
        dilation: get("dilation", 1),
        groups: get("groups", 1),
    }
}

/// The case's op applied to its inputs.
fn apply(call: &Json, x: &[Tensor]) -> Result<Tensor> {
    let (a, bias) = (&x[0], x.get(2));
    let stride = call.get("stride").and_then(Json::as_u64).map(|s| s as usize);
    let kernel = arg_i64(call, "kernel", 2) as usize;
    let padding = arg_i64(call, "padding", 0) as usize;
    match call["op"].as_str().unwrap() {
        "conv2d" => a.conv2d(&x[1], bias, &opts(call)),
        "conv1d" => a.conv1d(&x[1], bias, &opts(call)),
        "conv_transpose2d" => {
            a.conv_transpose2d(&x[1], bias, &opts(call), arg_i64(call, "output_padding", 0) as usize)
        }
        "max_pool2d" => a.max_pool2d(kernel, stride, padding),
        "avg_pool2d" => a.avg_pool2d(kernel, stride, padding),
        "gather" => a.gather(axis(call), &x[1]),
        "index_select0" => a.get(&[Index::Tensor(x[1].clone())]),
        "embedding" => a.embedding(&x[1]),
        "getitem" => a.get(&Index::parse(call["index"].as_str().unwrap())?),
        "one_hot" => a.one_hot(arg_i64(call, "classes", -1) as usize),
        "tril" => a.tril(arg_i64(call, "diagonal", 0) as isize),
        "einsum" => Tensor::einsum(call["formula"].as_str().unwrap(), &x.iter().collect::<Vec<_>>()),
        "argmax" => a.argmax(axis(call), keepdim(call)),
        other => panic!("golden op {other} is not mapped here"),
    }
}

#[test]
fn convolutions() {
    run(&["conv2d", "conv2d_groups", "conv2d_stride_pad", "conv2d_1x1", "conv1d", "conv_transpose2d"], apply);
}

#[test]
fn pools() {
    run(&["max_pool2d_k3s2p1", "avg_pool2d"], apply);
}

#[test]
fn selection() {
    run(&["gather", "getitem_tensor_idx", "embedding", "one_hot", "tril", "argmax_ax1"], apply);
}

#[test]
fn indexing() {
    run(&["getitem_neg_step", "getitem_int"], apply);
}

#[test]
fn einsum() {
    run(&["einsum_ij_jk"], apply);
}
