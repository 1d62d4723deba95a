//! The bad-input catalogue: every case runs on every device (the CPU interpreter and wgpu) and
//! checks that bad input gets its typed error, whose message names the operand, shape or file,
//! and that edge cases with a defined answer (empty axes, NaN, division by zero) give it. No
//! case may panic, hang or come back with a wrong number.

use crate::common;

use indexmap::IndexMap;
use wgrad_engine::EngineError;
use wgrad_tensor::datasets::mnist::{MnistError, read_idx};
use wgrad_tensor::nn::{Linear, Module};
use wgrad_tensor::nn::{safe_load, safe_save};
use wgrad_tensor::optim::{Adam, Optimizer, Sgd};
use wgrad_tensor::{
    ConvOpts, DType, DeviceName, Index, JitError, Result, Tensor, TensorError, TinyJit, with_default_device,
};

/// Runs `case` with tensors created on each device in turn.
fn on_each_device(case: impl Fn()) {
    for device in common::devices() {
        with_default_device(&device, &case);
    }
}

/// A float32 tensor of `shape` holding 0, 1, 2, ...
fn t(shape: &[usize]) -> Tensor {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec((0..n).map(|i| i as f32).collect(), shape).unwrap()
}

/// Asserts that `result` is the error matched by `variant` and that its message contains
/// every one of `needles`.
macro_rules! refused {
    ($result:expr, $variant:pat, $($needle:expr),+) => {{
        let result: Result<_> = $result;
        let err = result.map(|_| ()).expect_err("bad input was accepted");
        assert!(matches!(err, $variant), "wrong error variant: {err:?}");
        let message = err.to_string();
        for needle in [$($needle),+] {
            assert!(message.contains(needle), "`{message}` does not name `{needle}`");
        }
    }};
}

/// One catalogue case as a test: `body` runs on each device.
macro_rules! case {
    ($name:ident, $body:block) => {
        #[test]
        fn $name() {
            on_each_device(|| $body);
        }
    };
}

// ---- empty tensors through the common ops: defined answers, no kernel loops over nothing

case!(sum_of_an_empty_axis_is_zero, {
    assert_eq!(t(&[2, 0]).sum(&[1], false).unwrap().to_vec::<f32>().unwrap(), [0.0, 0.0]);
    assert_eq!(t(&[2, 0]).sum(&[], false).unwrap().item::<f32>().unwrap(), 0.0);
    assert_eq!(t(&[2, 0]).sum(&[0], false).unwrap().to_vec::<f32>().unwrap(), [0.0; 0]);
    let ints = Tensor::from_slice(&[0i32; 0], &[0, 3]).unwrap();
    assert_eq!(ints.sum(&[0], false).unwrap().to_vec::<i32>().unwrap(), [0, 0, 0]);
});

case!(max_of_an_empty_axis_is_minus_infinity, {
    let m = t(&[3, 0]).max(&[1], true).unwrap();
    assert_eq!(m.shape(), [3, 1]);
    assert_eq!(m.to_vec::<f32>().unwrap(), [f32::NEG_INFINITY; 3]);
    let ints = Tensor::from_slice(&[0i32; 0], &[0]).unwrap();
    assert_eq!(ints.max(&[0], false).unwrap().item::<i32>().unwrap(), i32::MIN);
});

case!(mean_of_an_empty_axis_is_nan, {
    let m = t(&[2, 0]).mean(&[1], false).unwrap().to_vec::<f32>().unwrap();
    assert!(m.len() == 2 && m.iter().all(|x| x.is_nan()), "{m:?}");
});

case!(softmax_of_an_empty_tensor_is_empty, {
    let s = t(&[2, 0]).softmax(1).unwrap();
    assert_eq!(s.shape(), [2, 0]);
    assert_eq!(s.to_vec::<f32>().unwrap(), [0.0f32; 0]);
});

case!(matmul_with_k_zero_is_zeros, {
    let y = t(&[2, 0]).matmul(&t(&[0, 3])).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [0.0; 6]);
});

case!(gradient_through_an_expand_of_nothing_is_zero, {
    let p = t(&[1, 2]);
    p.set_requires_grad(true).unwrap();
    p.expand(&[0, 2]).unwrap().sum(&[], false).unwrap().backward().unwrap();
    assert_eq!(p.grad().unwrap().to_vec::<f32>().unwrap(), [0.0, 0.0]);
});

case!(argmax_of_an_empty_axis_is_refused, {
    refused!(
        t(&[2, 0]).argmax(1, false),
        TensorError::EmptyAxis { op: "argmax", .. },
        "axis 1",
        "(2, 0) float32"
    );
    refused!(t(&[0, 3]).argmin(0, false), TensorError::EmptyAxis { .. }, "(0, 3) float32");
});

// ---- NaN and infinities through max and argmax

fn with_nan() -> Tensor {
    Tensor::from_slice(&[1.0f32, f32::NAN, 3.0, 7.0, 2.0, f32::NAN], &[2, 3]).unwrap()
}

case!(max_propagates_nan, {
    let m = with_nan().max(&[1], false).unwrap().to_vec::<f32>().unwrap();
    assert!(m[0].is_nan() && m[1].is_nan(), "{m:?}");
    let m = with_nan().min(&[0], false).unwrap().to_vec::<f32>().unwrap();
    assert!(m[0] == 1.0 && m[1].is_nan() && m[2].is_nan(), "{m:?}");
});

case!(argmax_picks_the_first_nan, {
    assert_eq!(with_nan().argmax(1, false).unwrap().to_vec::<i32>().unwrap(), [1, 2]);
    assert_eq!(with_nan().argmin(1, false).unwrap().to_vec::<i32>().unwrap(), [1, 2]);
    let row = Tensor::from_slice(&[1.0f32, f32::NAN, 3.0], &[3]).unwrap();
    assert_eq!(row.argmax(0, false).unwrap().item::<i32>().unwrap(), 1);
});

case!(argmax_with_infinities, {
    let x = Tensor::from_slice(&[f32::NEG_INFINITY, f32::INFINITY, 0.0, f32::INFINITY], &[4]).unwrap();
    assert_eq!(x.argmax(0, false).unwrap().item::<i32>().unwrap(), 1);
    assert_eq!(x.argmin(0, false).unwrap().item::<i32>().unwrap(), 0);
    let all_neg_inf = Tensor::full(&[3], f32::NEG_INFINITY).unwrap();
    assert_eq!(all_neg_inf.argmax(0, false).unwrap().item::<i32>().unwrap(), 0);
});

// ---- bad axes

case!(reduce_axis_out_of_range, {
    refused!(
        t(&[2, 3]).sum(&[2], false),
        TensorError::Axis { axis: 2, .. },
        "sum",
        "axis 2",
        "(2, 3) float32"
    );
    refused!(t(&[2, 3]).max(&[-3], false), TensorError::Axis { axis: -3, .. }, "max", "(2, 3) float32");
    refused!(t(&[2, 3]).mean(&[5], true), TensorError::Axis { .. }, "axis 5", "(2, 3) float32");
});

case!(reduce_axis_repeated, {
    refused!(
        t(&[2, 3]).sum(&[1, 1], false),
        TensorError::RepeatedAxis { axis: 1, .. },
        "sum",
        "(2, 3) float32"
    );
    refused!(
        t(&[2, 3]).max(&[1, -1], false),
        TensorError::RepeatedAxis { axis: -1, .. },
        "axis -1",
        "(2, 3)"
    );
    refused!(t(&[2, 3, 4]).mean(&[0, 2, 0], false), TensorError::RepeatedAxis { .. }, "(2, 3, 4) float32");
});

// ---- resources: a buffer the device cannot hold is out of memory, and the device goes on

case!(an_allocation_too_large_is_out_of_memory, {
    // 2^40 floats fit no device and no host (the CPU device checks the host's physical
    // memory: with overcommit, as on the H200 machine, the allocator grants any size and the
    // OOM killer ended the process). 2^34 (64 GiB) is over wgpu's per-buffer limit (128 MiB
    // on lavapipe, 2 GiB on the H200) but a large host may hold it: asked of wgpu only.
    let cpu = matches!(Tensor::default_device().unwrap(), DeviceName::Cpu);
    let sizes: &[usize] = if cpu { &[1 << 40] } else { &[1 << 40, 1 << 34] };
    for &elements in sizes {
        let huge = Tensor::zeros(&[elements], DType::F32).unwrap().add(1.0).unwrap();
        let err = huge.realize().map(|_| ()).unwrap_err();
        assert!(matches!(err, TensorError::Engine(EngineError::OutOfMemory { .. })), "{err:?}");
        assert!(err.to_string().contains("out of memory"), "{err}");
    }
    let small = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    assert_eq!((&small * 3.0).to_vec::<f32>().unwrap(), [3.0, 6.0], "the device is still usable");
});

case!(a_loop_past_int32_is_refused, {
    // kernel indices are int32; 2^31 + 11 is prime, so the engine cannot split this sum into
    // shorter loops (it does for 2^31 + 7 = 131 * 16393005) and codegen refuses its bound
    let n = (1usize << 31) + 11;
    let err = Tensor::ones(&[n], DType::U8).unwrap().sum(&[], false).unwrap().item::<u32>().unwrap_err();
    assert!(matches!(err, TensorError::Engine(EngineError::Codegen { .. })), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("2147483659") && message.contains("int32"), "{message}");
    let small = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    assert_eq!((&small * 3.0).to_vec::<f32>().unwrap(), [3.0, 6.0], "the device is still usable");
});

case!(a_loop_a_driver_would_cut_short_is_exact_or_refused, {
    // 65,537 is prime: one thread loops over every element. Mesa llvmpipe stops a thread's
    // loops after 65,535 iterations without an error (the sum came back as 65535); there the
    // kernel is refused, everywhere else the sum is exact
    match Tensor::ones(&[65_537], DType::I32).unwrap().sum(&[], false).unwrap().item::<i32>() {
        Ok(v) => assert_eq!(v, 65_537),
        Err(err) => {
            assert!(matches!(err, TensorError::Engine(EngineError::Codegen { .. })), "{err:?}");
            assert!(err.to_string().contains("65537 loop iterations"), "{err}");
        }
    }
});

// ---- shape mismatches

fn ints(values: &[i32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(values, shape).unwrap()
}

case!(binary_ops_that_do_not_broadcast, {
    refused!(
        t(&[2, 3]).add(t(&[4])),
        TensorError::Broadcast { op: "add", .. },
        "(2, 3) float32",
        "(4,) float32"
    );
    refused!(t(&[2, 3]).mul(t(&[3, 3])), TensorError::Broadcast { .. }, "(2, 3)", "(3, 3)");
    refused!(t(&[5]).sub(ints(&[1, 2], &[2])), TensorError::Broadcast { .. }, "(5,) float32", "(2,) int32");
    refused!(t(&[2, 1, 3]).maximum(t(&[2, 4, 2])), TensorError::Broadcast { .. }, "(2, 1, 3)", "(2, 4, 2)");
    refused!(t(&[3]).lt(t(&[2])), TensorError::Broadcast { .. }, "(3,)", "(2,)");
});

case!(where_with_mismatched_branches, {
    let cond = t(&[2, 3]).gt(1.0).unwrap();
    refused!(cond.where_(t(&[2, 3]), t(&[4])), TensorError::Broadcast { .. }, "(4,)");
    refused!(cond.where_(t(&[3, 2]), 0.0), TensorError::Broadcast { .. }, "(3, 2)");
});

case!(matmul_inner_dims_differ, {
    refused!(t(&[2, 3]).matmul(&t(&[4, 5])), TensorError::Matmul { .. }, "(2, 3) float32", "(4, 5) float32");
    refused!(t(&[3]).matmul(&t(&[4])), TensorError::Matmul { .. }, "(3,)", "(4,)");
    refused!(t(&[2, 2, 3]).matmul(&t(&[3, 3, 2])), TensorError::Matmul { .. }, "(2, 2, 3)", "(3, 3, 2)");
});

case!(matmul_of_a_scalar, {
    let s = Tensor::scalar(2.0f32).unwrap();
    refused!(s.matmul(&t(&[1, 3])), TensorError::Matmul { .. }, "() float32", "(1, 3) float32");
    refused!(t(&[3]).matmul(&s), TensorError::Matmul { .. }, "(3,) float32");
});

case!(cat_and_stack_of_mismatched_shapes, {
    refused!(
        Tensor::cat(&[&t(&[2, 3]), &t(&[2, 4])], 0),
        TensorError::Broadcast { op: "cat", .. },
        "(2, 3)",
        "(2, 4)"
    );
    refused!(
        Tensor::stack(&[&t(&[2]), &t(&[3])], 0),
        TensorError::Broadcast { op: "stack", .. },
        "(2,)",
        "(3,)"
    );
    refused!(Tensor::cat(&[&t(&[2, 3]), &t(&[2, 3])], 2), TensorError::Axis { axis: 2, .. }, "cat", "(2, 3)");
    refused!(Tensor::cat(&[], 0), TensorError::NoTensors(_), "at least one tensor");
});

case!(conv_channels_and_groups, {
    let x = t(&[1, 4, 5, 5]);
    let conv = |w: &Tensor, groups| x.conv2d(w, None, &ConvOpts { groups, ..ConvOpts::default() });
    refused!(
        conv(&t(&[2, 3, 3, 3]), 1),
        TensorError::Shapes { .. },
        "(1, 4, 5, 5) float32",
        "(2, 3, 3, 3) float32"
    );
    refused!(conv(&t(&[3, 2, 3, 3]), 2), TensorError::Shapes { .. }, "2 groups", "(3, 2, 3, 3)");
    refused!(conv(&t(&[2, 4, 3, 3]), 0), TensorError::Shapes { .. }, "0 groups");
    refused!(x.conv2d(&t(&[4, 3, 3]), None, &ConvOpts::default()), TensorError::Shapes { .. }, "(4, 3, 3)");
    let bias = t(&[3]);
    refused!(
        x.conv2d(&t(&[2, 4, 3, 3]), Some(&bias), &ConvOpts::default()),
        TensorError::Shapes { .. },
        "(3,)"
    );
});

case!(assign_of_another_shape_or_dtype, {
    let w = t(&[2, 2]);
    refused!(w.assign(&t(&[4])), TensorError::Assign { .. }, "(4,) float32", "(2, 2) float32");
    refused!(w.assign(&ints(&[1, 2, 3, 4], &[2, 2])), TensorError::Assign { .. }, "(2, 2) int32");
});

// ---- bad axes on other ops

case!(softmax_argmax_cumsum_axis_out_of_range, {
    refused!(t(&[2, 3]).softmax(2), TensorError::Axis { axis: 2, .. }, "(2, 3) float32");
    refused!(t(&[2, 3]).log_softmax(-3), TensorError::Axis { .. }, "(2, 3)");
    refused!(t(&[2, 3]).argmax(5, false), TensorError::Axis { op: "argmax", .. }, "axis 5");
    refused!(t(&[4]).cumsum(1), TensorError::Axis { op: "cumsum", .. }, "(4,) float32");
    refused!(t(&[2, 3]).logsumexp(3, false), TensorError::Axis { .. }, "axis 3");
});

case!(permute_with_a_repeated_or_missing_axis, {
    refused!(t(&[2, 3]).permute(&[0, 0]), TensorError::Movement { op: "permute", .. }, "(2, 3) float32");
    refused!(t(&[2, 3, 4]).permute(&[0, 1]), TensorError::Movement { .. }, "(2, 3, 4)");
    refused!(t(&[2, 3]).permute(&[0, 2]), TensorError::Axis { axis: 2, .. }, "(2, 3) float32");
});

case!(transpose_squeeze_unsqueeze_flip_axes, {
    refused!(t(&[2, 3]).transpose(0, 2), TensorError::Axis { .. }, "(2, 3) float32");
    refused!(t(&[2, 3]).squeeze(0), TensorError::Movement { op: "squeeze", .. }, "(2, 3)");
    refused!(t(&[2, 3]).squeeze(4), TensorError::Axis { .. }, "axis 4");
    refused!(t(&[2, 3]).unsqueeze(4), TensorError::Axis { .. }, "(2, 3)");
    refused!(t(&[2, 3]).flip(&[2]), TensorError::Axis { .. }, "(2, 3) float32");
});

// ---- movement arguments that do not fit

case!(reshape_to_a_wrong_size, {
    refused!(
        t(&[2, 3]).reshape(&[4, 2]),
        TensorError::Movement { op: "reshape", .. },
        "[4, 2]",
        "(2, 3) float32"
    );
    refused!(t(&[6]).reshape(&[7]), TensorError::Movement { .. }, "(6,)");
});

case!(reshape_with_two_inferred_dims, {
    refused!(t(&[2, 3]).reshape(&[-1, -1]), TensorError::Movement { .. }, "[-1, -1]", "(2, 3)");
    refused!(t(&[2, 3]).reshape(&[-1, 4]), TensorError::Movement { .. }, "[-1, 4]");
    refused!(t(&[2, 3]).reshape(&[-2, -3]), TensorError::Movement { .. }, "(2, 3)");
});

case!(expand_to_an_incompatible_shape, {
    refused!(
        t(&[2, 3]).expand(&[4, 3]),
        TensorError::Movement { op: "expand", .. },
        "[4, 3]",
        "(2, 3) float32"
    );
    refused!(t(&[2, 3]).expand(&[3]), TensorError::Movement { .. }, "(2, 3)");
    refused!(t(&[3, 1]).expand(&[3, 0, 2]), TensorError::Movement { .. }, "(3, 1)");
});

case!(pad_and_shrink_out_of_range, {
    refused!(
        t(&[2, 3]).shrink(&[(0, 2), (1, 4)]),
        TensorError::Movement { op: "shrink", .. },
        "(2, 3) float32"
    );
    refused!(t(&[2, 3]).shrink(&[(2, 1), (0, 3)]), TensorError::Movement { .. }, "(2, 1)");
    refused!(t(&[2, 3]).shrink(&[(0, 1)]), TensorError::Movement { .. }, "(2, 3)");
    refused!(t(&[2, 3]).pad(&[(1, 1)]), TensorError::Movement { op: "pad", .. }, "(2, 3) float32");
});

// ---- indices out of range

case!(int_indices_out_of_range, {
    refused!(
        t(&[2, 3]).get(&[Index::Int(2)]),
        TensorError::Movement { op: "get", .. },
        "index 2",
        "(2, 3) float32"
    );
    refused!(
        t(&[2, 3]).get(&[Index::Int(0), Index::Int(-4)]),
        TensorError::Movement { .. },
        "index -4",
        "(2, 3)"
    );
    refused!(
        t(&[2, 3]).get(&[Index::Int(0), Index::Int(0), Index::Int(0)]),
        TensorError::Movement { .. },
        "(2, 3)"
    );
});

case!(slices_with_a_zero_step, {
    let zero_step = Index::Slice { start: None, stop: None, step: Some(0) };
    refused!(t(&[4]).get(&[zero_step]), TensorError::Movement { .. }, "step of 0", "(4,) float32");
    refused!(Index::parse("[1:2:3:4]"), TensorError::Parse { .. }, "1:2:3:4");
});

case!(slices_past_the_end_are_clamped_as_in_python, {
    let x = t(&[5]);
    let tail = x.get(&Index::parse("[3:100]").unwrap()).unwrap();
    assert_eq!(tail.to_vec::<f32>().unwrap(), [3.0, 4.0]);
    let none = x.get(&Index::parse("[7:9]").unwrap()).unwrap();
    assert_eq!(none.shape(), [0]);
});

case!(float_tensor_indices_are_refused, {
    refused!(
        t(&[4]).get(&[Index::Tensor(t(&[2]))]),
        TensorError::DType { .. },
        "(4,) float32",
        "(2,) float32"
    );
});

case!(tensor_indices_out_of_range_pick_zeros, {
    // as tinygrad: a tensor index is a one-hot mask, so a position outside the dim matches none
    let picked = t(&[4]).add(1.0).unwrap().get(&[Index::Tensor(ints(&[1, 4, -1, -9], &[4]))]).unwrap();
    assert_eq!(picked.to_vec::<f32>().unwrap(), [2.0, 0.0, 4.0, 0.0]);
});

case!(gather_with_a_bad_index, {
    let idx = ints(&[0, 1, 0, 1, 0, 1], &[2, 3]);
    refused!(
        t(&[2]).gather(0, &idx),
        TensorError::Shapes { op: "gather", .. },
        "(2,) float32",
        "(2, 3) int32"
    );
    refused!(t(&[2, 2]).gather(0, &idx), TensorError::Shapes { .. }, "(2, 2)", "(2, 3)");
    refused!(t(&[2, 3]).gather(2, &idx), TensorError::Axis { op: "gather", .. }, "(2, 3) float32");
    refused!(t(&[2, 3]).gather(1, &t(&[2, 3])), TensorError::DType { .. }, "(2, 3) float32");
});

case!(embedding_with_float_or_mismatched_indices, {
    let weight = t(&[10, 4]);
    refused!(t(&[3]).embedding(&weight), TensorError::DType { .. }, "(3,) float32");
    refused!(ints(&[1, 2], &[2]).embedding(&t(&[10])), TensorError::Shapes { .. }, "(10,) float32");
});

case!(one_hot_of_floats, {
    refused!(t(&[3]).one_hot(4), TensorError::DType { .. }, "(3,) float32");
});

case!(x_minus_x_of_infinities_and_nan_is_nan, {
    // IEEE: inf - inf is NaN; a device compiler allowed to assume finite values folds x - x to 0
    let x = Tensor::from_slice(&[1.5f32, f32::INFINITY, f32::NEG_INFINITY, f32::NAN], &[4]).unwrap();
    let d = x.sub(&x).unwrap().to_vec::<f32>().unwrap();
    assert!(d[0] == 0.0 && d[1..].iter().all(|v| v.is_nan()), "{d:?}");
    let h = x.cast(DType::F16);
    let d = h.sub(&h).unwrap().cast(DType::F32).to_vec::<f32>().unwrap();
    assert!(d[0] == 0.0 && d[1..].iter().all(|v| v.is_nan()), "float16: {d:?}");
});

// ---- integers at their limits: min is the max of the values in reverse order (`!x`), which
// cannot overflow as `-max(-x)` does at i32::MIN

case!(min_and_max_of_ints_at_their_limits, {
    let x = ints(&[i32::MAX, 0, i32::MIN, -1, 1], &[5]);
    assert_eq!(x.min(&[0], false).unwrap().item::<i32>().unwrap(), i32::MIN);
    assert_eq!(x.max(&[0], false).unwrap().item::<i32>().unwrap(), i32::MAX);
    let y = ints(&[i32::MIN, i32::MIN, i32::MAX, 5, -5], &[5]);
    assert_eq!(x.minimum(&y).unwrap().to_vec::<i32>().unwrap(), [i32::MIN, i32::MIN, i32::MIN, -1, -5]);
    assert_eq!(x.maximum(&y).unwrap().to_vec::<i32>().unwrap(), [i32::MAX, 0, i32::MAX, 5, 1]);
    assert_eq!(x.argmin(0, false).unwrap().item::<i32>().unwrap(), 2);
    let rows = ints(&[i32::MIN, i32::MAX, 7, i32::MIN], &[2, 2]);
    assert_eq!(rows.min(&[1], false).unwrap().to_vec::<i32>().unwrap(), [i32::MIN, i32::MIN]);
    assert_eq!(rows.min(&[0], false).unwrap().to_vec::<i32>().unwrap(), [i32::MIN, i32::MIN]);
    let empty = Tensor::from_slice(&[0i32; 0], &[0]).unwrap();
    assert_eq!(empty.min(&[0], false).unwrap().item::<i32>().unwrap(), i32::MAX, "min's identity");
});

case!(max_of_negated_ints_counts_every_element, {
    // NVIDIA's Vulkan driver (580.159.04, H100) drops the first element of an unrolled max of
    // negated int32 values (fuzz seed 6329): this gives 7 there, 0 for [-8, 0, 1, ...]
    let ramp: Vec<i32> = (-8..16).collect();
    let x = ints(&ramp, &[2, 3, 4]);
    assert_eq!(x.neg().max(&[], false).unwrap().item::<i32>().unwrap(), 8);
    assert_eq!(x.mul(-1i32).unwrap().max(&[], true).unwrap().to_vec::<i32>().unwrap(), [8]);
});

case!(min_of_unsigned_and_bools, {
    // unsigned `-x` wraps (-5 is 251 in uint8), so -max(-x) was 5 here, not 0
    let u = Tensor::from_slice(&[0u8, 5, 255], &[3]).unwrap();
    assert_eq!(u.min(&[0], false).unwrap().item::<u8>().unwrap(), 0);
    assert_eq!(u.max(&[0], false).unwrap().item::<u8>().unwrap(), 255);
    let v = Tensor::from_slice(&[3u8, 0, 200], &[3]).unwrap();
    assert_eq!(u.minimum(&v).unwrap().to_vec::<u8>().unwrap(), [0, 0, 200]);
    let empty = Tensor::from_slice(&[0u8; 0], &[0]).unwrap();
    assert_eq!(empty.min(&[0], false).unwrap().item::<u8>().unwrap(), 255, "min's identity");
    let b = Tensor::from_slice(&[true, false, true, true], &[2, 2]).unwrap();
    assert_eq!(b.min(&[1], false).unwrap().to_vec::<bool>().unwrap(), [false, true]);
    assert_eq!(b.max(&[1], false).unwrap().to_vec::<bool>().unwrap(), [true, true]);
});

// ---- integer division by zero: defined results, as WGSL and the interpreter define them

case!(integer_division_by_zero_is_defined, {
    let a = ints(&[7, -7, 0, i32::MIN], &[4]);
    let zero = ints(&[0, 0, 0, 0], &[4]);
    assert_eq!(a.idiv(&zero).unwrap().to_vec::<i32>().unwrap(), [7, -7, 0, i32::MIN], "x / 0 == x");
    let minus_one = ints(&[-1; 4], &[4]);
    assert_eq!(a.idiv(&minus_one).unwrap().to_vec::<i32>().unwrap(), [-7, 7, 0, i32::MIN], "MIN / -1 wraps");
});

case!(float_division_by_zero_is_ieee, {
    let q = t(&[3]).sub(1.0).unwrap().div(Tensor::zeros(&[3], DType::F32).unwrap()).unwrap();
    let q = q.to_vec::<f32>().unwrap();
    assert!(q[0] == f32::NEG_INFINITY && q[1].is_nan() && q[2] == f32::INFINITY, "{q:?}");
});

// ---- host data in and out

case!(from_slice_with_the_wrong_length, {
    refused!(
        Tensor::from_slice(&[1.0f32; 5], &[2, 3]),
        TensorError::DataLength { len: 5, .. },
        "5 values",
        "(2, 3)"
    );
    refused!(Tensor::from_vec(vec![1i32], &[0]), TensorError::DataLength { .. }, "(0,)");
    refused!(Tensor::from_slice(&[1u8; 2], &[]), TensorError::DataLength { .. }, "2 values", "()");
});

case!(item_of_a_non_scalar, {
    refused!(t(&[2, 3]).item::<f32>(), TensorError::NotScalar { op: "item", .. }, "(2, 3) float32");
    refused!(t(&[0]).item::<f32>(), TensorError::NotScalar { .. }, "(0,) float32");
});

case!(reading_the_wrong_element_type, {
    refused!(t(&[2]).to_vec::<i32>(), TensorError::ElementType { .. }, "(2,) float32", "int");
    refused!(ints(&[1], &[1]).item::<f32>(), TensorError::ElementType { .. }, "(1,) int32");
    refused!(t(&[2]).cast(DType::F16).to_vec::<f32>(), TensorError::ElementType { .. }, "(2,) float16");
});

// ---- autograd

case!(backward_of_a_non_scalar, {
    let w = t(&[3]);
    w.set_requires_grad(true).unwrap();
    refused!(w.mul(2.0).unwrap().backward(), TensorError::NotScalar { op: "backward", .. }, "(3,) float32");
});

case!(backward_with_nothing_requiring_grad, {
    refused!(t(&[3]).sum(&[], false).unwrap().backward(), TensorError::NothingRequiresGrad, "requires grad");
});

case!(backward_twice_accumulates, {
    // the graph stays (tinygrad); a second backward adds the same gradient again
    let w = t(&[3]);
    w.set_requires_grad(true).unwrap();
    let loss = w.square().sum(&[], false).unwrap();
    loss.backward().unwrap();
    loss.backward().unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f32>().unwrap(), [0.0, 4.0, 8.0]);
});

// ---- optimizers and state

case!(optimizer_without_trainable_parameters, {
    refused!(Sgd::new(vec![t(&[2])], 0.1, 0.0, 0.0, false), TensorError::NoTensors(_), "require grad");
    refused!(Adam::new(vec![], 0.1), TensorError::NoTensors(_), "optimizer");
});

case!(optimizer_step_before_backward, {
    let w = t(&[2, 2]);
    w.set_requires_grad(true).unwrap();
    let mut opt = Sgd::new(vec![w], 0.1, 0.0, 0.0, false).unwrap();
    refused!(
        opt.step(),
        TensorError::Argument { op: "step", .. },
        "parameter 0",
        "(2, 2) float32",
        "backward"
    );
});

case!(state_dict_with_a_missing_key_or_wrong_shape, {
    let mut layer = Linear::new(3, 2, true, 0).unwrap();
    let mut state = layer.state_dict();
    state.shift_remove("bias");
    refused!(layer.load_state_dict(&state), TensorError::MissingState { .. }, "`bias`");
    let mut state = layer.state_dict();
    state.insert("weight".into(), t(&[3, 2]));
    refused!(layer.load_state_dict(&state), TensorError::StateShape { .. }, "`weight`", "(2, 3)", "(3, 2)");
});

// ---- TinyJit called with the wrong inputs: every call (eager, capturing or replaying) is
// checked against the first call's count, shapes, dtypes and devices before anything runs

/// `x * 2 + y.sum()` jitted and called `calls` times with a `(3)` and a `(4)` float32 input:
/// once (the next call captures) or three times (the next call replays).
fn jitted(calls: usize) -> TinyJit<impl FnMut(&[Tensor]) -> Result<Vec<Tensor>>> {
    let mut jit = TinyJit::new(|xy: &[Tensor]| Ok(vec![xy[0].mul(2.0)?.add(xy[1].sum(&[], false)?)?]));
    for _ in 0..calls {
        jit.call(&[&t(&[3]), &t(&[4])]).unwrap();
    }
    jit
}

/// The other device than the default one, where it opens.
fn other_device() -> Option<DeviceName> {
    let here = Tensor::default_device().unwrap();
    common::devices().into_iter().find(|d| *d != here)
}

case!(jit_called_with_another_number_of_inputs, {
    for calls in [1, 3] {
        let mut jit = jitted(calls);
        refused!(
            jit.call(&[&t(&[3])]),
            TensorError::Jit(JitError::InputCount { expected: 2, got: 1 }),
            "2 input tensors",
            "now with 1"
        );
        refused!(
            jit.call(&[&t(&[3]), &t(&[4]), &t(&[1])]),
            TensorError::Jit(JitError::InputCount { expected: 2, got: 3 }),
            "now with 3"
        );
    }
});

case!(jit_input_of_another_shape, {
    for calls in [1, 3] {
        let mut jit = jitted(calls);
        refused!(
            jit.call(&[&t(&[3]), &t(&[5])]),
            TensorError::Jit(JitError::InputMismatch { index: 1, .. }),
            "jit input 1",
            "expected (4) float32",
            "got (5) float32"
        );
        refused!(
            jit.call(&[&t(&[3, 1]), &t(&[4])]),
            TensorError::Jit(JitError::InputMismatch { index: 0, .. }),
            "jit input 0",
            "got (3, 1) float32"
        );
    }
});

case!(jit_input_of_another_dtype, {
    for calls in [1, 3] {
        let mut jit = jitted(calls);
        refused!(
            jit.call(&[&ints(&[1, 2, 3], &[3]), &t(&[4])]),
            TensorError::Jit(JitError::InputMismatch { index: 0, .. }),
            "jit input 0",
            "expected (3) float32",
            "got (3) int32"
        );
        refused!(
            jit.call(&[&t(&[3]), &t(&[4]).cast(DType::F16)]),
            TensorError::Jit(JitError::InputMismatch { index: 1, .. }),
            "got (4) float16"
        );
    }
});

case!(jit_input_on_another_device, {
    let Some(other) = other_device() else { return };
    let here = Tensor::default_device().unwrap().to_string();
    for calls in [1, 3] {
        let mut jit = jitted(calls);
        let there = with_default_device(&other, || t(&[4]));
        refused!(
            jit.call(&[&t(&[3]), &there]),
            TensorError::Jit(JitError::InputMismatch { index: 1, .. }),
            "jit input 1",
            &format!("float32 on {here}, got"),
            &format!("float32 on {other}")
        );
    }
});

case!(jit_input_given_twice, {
    let mut jit = TinyJit::new(|xs: &[Tensor]| Ok(vec![xs[0].add(&xs[1])?]));
    let x = t(&[3]);
    refused!(
        jit.call(&[&x, &x]),
        TensorError::Jit(JitError::DuplicateInput { first: 0, second: 1 }),
        "jit inputs 0 and 1",
        "same buffer"
    );
    // a clone is a handle on the same buffer
    refused!(jit.call(&[&x, &x.clone()]), TensorError::Jit(JitError::DuplicateInput { .. }), "same buffer");
});

case!(jit_that_runs_nothing, {
    let mut jit = TinyJit::new(|xs: &[Tensor]| Ok(vec![xs[0].clone()]));
    jit.call(&[&t(&[3])]).unwrap();
    refused!(jit.call(&[&t(&[3])]), TensorError::Jit(JitError::NothingCaptured), "nothing to capture");
});

case!(jit_after_wrong_inputs_still_computes, {
    for calls in [1, 3] {
        let mut jit = jitted(calls);
        let bad = [jit.call(&[&t(&[3])]).is_err(), jit.call(&[&t(&[3]), &t(&[5])]).is_err()];
        assert_eq!(bad, [true, true]);
        for _ in 0..3 {
            let y = jit.call(&[&t(&[3]), &t(&[4])]).unwrap();
            assert_eq!(y[0].to_vec::<f32>().unwrap(), [6.0, 8.0, 10.0]);
        }
        assert_eq!(jit.calls(), calls + 3, "bad calls are not counted");
    }
});

// ---- devices

case!(operands_on_different_devices, {
    let here = t(&[2]);
    let other = if *here.device() == DeviceName::Cpu { DeviceName::Wgpu(None) } else { DeviceName::Cpu };
    let Ok(there) = with_default_device(&other, || Tensor::from_slice(&[1.0f32, 2.0], &[2])) else { return };
    refused!(here.add(&there), TensorError::Device { .. }, "CPU", "WGPU", "`to`");
    refused!(here.matmul(&there), TensorError::Device { .. }, "WGPU");
});

case!(optimizer_parameters_on_different_devices, {
    let here = t(&[2]);
    let other = if *here.device() == DeviceName::Cpu { DeviceName::Wgpu(None) } else { DeviceName::Cpu };
    let Ok(there) = with_default_device(&other, || Tensor::from_slice(&[1.0f32, 2.0], &[2])) else { return };
    for p in [&here, &there] {
        p.set_requires_grad(true).unwrap();
    }
    refused!(
        Sgd::new(vec![here, there], 0.1, 0.0, 0.0, false),
        TensorError::Device { op: "optimizer", .. },
        "CPU",
        "WGPU"
    );
});

case!(unknown_device_names, {
    let err = "tpu:0".parse::<DeviceName>().unwrap_err();
    assert!(matches!(err, EngineError::UnknownDevice(_)), "{err:?}");
    assert!(err.to_string().contains("tpu:0"), "{err}");
});

// ---- files: safetensors and IDX

/// A fresh path under the system's temp dir for this test and device.
fn temp_path(name: &str) -> std::path::PathBuf {
    let device = Tensor::default_device().unwrap().to_string().replace(':', "_");
    std::env::temp_dir().join(format!("wgrad-bad-input-{}-{device}-{name}", std::process::id()))
}

fn saved(name: &str) -> (std::path::PathBuf, Vec<u8>) {
    let path = temp_path(name);
    let state: IndexMap<String, Tensor> = [("w".to_string(), t(&[2, 3]))].into_iter().collect();
    safe_save(&path, &state).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

case!(safetensors_missing_file, {
    let path = temp_path("missing.safetensors");
    refused!(safe_load(&path), TensorError::File { .. }, "missing.safetensors");
});

case!(safetensors_truncated, {
    let (path, bytes) = saved("truncated.safetensors");
    std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
    refused!(
        safe_load(&path),
        TensorError::Safetensors { .. },
        "truncated.safetensors",
        "not a valid safetensors"
    );
    std::fs::write(&path, &bytes[..4]).unwrap();
    refused!(safe_load(&path), TensorError::Safetensors { .. }, "truncated.safetensors");
    let _ = std::fs::remove_file(path);
});

case!(safetensors_corrupt_header, {
    let (path, mut bytes) = saved("corrupt.safetensors");
    bytes[8] = b'#';
    std::fs::write(&path, &bytes).unwrap();
    refused!(safe_load(&path), TensorError::Safetensors { .. }, "corrupt.safetensors");
    std::fs::write(&path, u64::MAX.to_le_bytes()).unwrap();
    refused!(safe_load(&path), TensorError::Safetensors { .. }, "corrupt.safetensors");
    let _ = std::fs::remove_file(path);
});

case!(safetensors_dtype_wgrad_cannot_hold, {
    let path = temp_path("fp8.safetensors");
    let header = br#"{"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[1, 2]);
    std::fs::write(&path, &bytes).unwrap();
    refused!(safe_load(&path), TensorError::FileDType { .. }, "fp8.safetensors", "`w`", "F8_E4M3");
    let _ = std::fs::remove_file(path);
});

case!(safetensors_sizes_that_disagree, {
    let path = temp_path("sizes.safetensors");
    let header = br#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[0; 8]);
    std::fs::write(&path, &bytes).unwrap();
    refused!(safe_load(&path), TensorError::Safetensors { .. }, "sizes.safetensors");
    let _ = std::fs::remove_file(path);
});

fn idx_error(name: &str, bytes: &[u8]) -> MnistError {
    let path = temp_path(name);
    std::fs::write(&path, bytes).unwrap();
    let err = read_idx(&path, 0x0000_0801, 1).unwrap_err();
    let _ = std::fs::remove_file(path);
    err
}

case!(idx_files_truncated_corrupt_or_missing, {
    let err = idx_error("short.idx", &[0, 0, 8, 1, 0]);
    assert!(matches!(err, MnistError::Truncated { .. }) && err.to_string().contains("short.idx"), "{err}");
    let err = idx_error("body.idx", &[0, 0, 8, 1, 0, 0, 0, 9, 1, 2, 3]);
    assert!(matches!(err, MnistError::Truncated { expected: 17, .. }), "{err}");
    assert!(err.to_string().contains("body.idx"), "{err}");
    let err = idx_error("magic.idx", &[0, 0, 8, 3, 0, 0, 0, 1, 7]);
    assert!(matches!(err, MnistError::Magic { .. }) && err.to_string().contains("magic.idx"), "{err}");
    let err = idx_error("gzip.idx", &[0x1f, 0x8b, 8, 0, 1, 2, 3]);
    assert!(matches!(err, MnistError::Io { .. }) && err.to_string().contains("gzip.idx"), "{err}");
    let err = read_idx(&temp_path("absent.idx"), 0x0000_0801, 1).unwrap_err();
    assert!(matches!(err, MnistError::Io { .. }) && err.to_string().contains("absent.idx"), "{err}");
});
