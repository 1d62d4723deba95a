//! The bad-input catalogue: every case runs on every device (the CPU interpreter and wgpu) and
//! checks that bad input gets its typed error, whose message names the operand, shape or file,
//! and that edge cases with a defined answer (empty axes, NaN, division by zero) give it. No
//! case may panic, hang or come back with a wrong number.

mod common;

use wgrad_engine::EngineError;
use wgrad_tensor::{DType, Result, Tensor, TensorError, with_default_device};

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
    for elements in [1usize << 40, 1 << 34] {
        let huge = Tensor::zeros(&[elements], DType::F32).unwrap().add(1.0).unwrap();
        let err = huge.realize().map(|_| ()).unwrap_err();
        assert!(matches!(err, TensorError::Engine(EngineError::OutOfMemory { .. })), "{err:?}");
        assert!(err.to_string().contains("out of memory"), "{err}");
    }
    let small = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    assert_eq!((&small * 3.0).to_vec::<f32>().unwrap(), [3.0, 6.0], "the device is still usable");
});
