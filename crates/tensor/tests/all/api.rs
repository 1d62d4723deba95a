//! The tensor API itself: typed errors naming both operands, dtype rules, creation, and
//! autograd's bookkeeping (no_grad, accumulation, detach).

use crate::common;

use wgrad_tensor::nn::Linear;
use wgrad_tensor::{DType, Tensor, TensorError, no_grad, with_default_device};

fn t(values: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(values, shape).unwrap()
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    assert!(got.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-5), "{got:?} != {want:?}");
}

#[test]
fn errors_name_both_operands_shapes_and_dtypes() {
    let (a, b) = (t(&[0.0; 6], &[2, 3]), t(&[0.0; 4], &[4]));
    let err = a.add(&b).unwrap_err();
    assert!(matches!(err, TensorError::Broadcast { .. }));
    assert_eq!(err.to_string(), "add: cannot broadcast (2, 3) float32 with (4,) float32");
    let err = a.bitwise_and(&a).unwrap_err().to_string();
    assert!(err.contains("and") && err.contains("(2, 3) float32"), "{err}");
    let i = Tensor::from_slice(&[1i32, 2], &[2]).unwrap();
    let err = a.matmul(&i).unwrap_err().to_string();
    assert_eq!(err, "matmul: cannot multiply (2, 3) float32 by (2,) int32");
    assert!(matches!(a.reshape(&[4, 2]), Err(TensorError::Movement { .. })));
    assert!(matches!(a.sum(&[2], false), Err(TensorError::Axis { axis: 2, .. })));
    assert!(matches!(a.permute(&[0, 0]), Err(TensorError::Movement { .. })));
    assert!(matches!(a.expand(&[4, 3]), Err(TensorError::Movement { .. })));
    assert!(matches!(Tensor::from_slice(&[1.0f32; 5], &[2, 3]), Err(TensorError::DataLength { len: 5, .. })));
    assert!(matches!(
        Tensor::from_bytes(&[0; 12], DType::F32, &[2, 2]),
        Err(TensorError::DataLength { len: 3, .. })
    ));
    assert!(matches!(a.to_vec::<i32>(), Err(TensorError::ElementType { asked: DType::I32, .. })));
    assert!(matches!(a.item::<f32>(), Err(TensorError::NotScalar { op: "item", .. })));
    assert!(matches!(a.backward(), Err(TensorError::NotScalar { op: "backward", .. })));
    assert!(matches!(a.assign(&b), Err(TensorError::Assign { .. })));
}

#[test]
#[should_panic(expected = "cannot broadcast (2,) float32 with (3,) float32")]
fn operators_panic_with_the_typed_message() {
    let _ = &t(&[1.0, 2.0], &[2]) + &t(&[1.0, 2.0, 3.0], &[3]);
}

#[test]
fn dtypes_follow_tinygrads_rules() {
    let i = Tensor::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    let b = Tensor::from_slice(&[true, false, true], &[3]).unwrap();
    assert_eq!(i.add(1).unwrap().dtype(), DType::I32);
    assert_eq!(i.add(1.5).unwrap().to_vec::<f32>().unwrap(), [2.5, 3.5, 4.5]);
    assert_eq!(b.add(1).unwrap().to_vec::<i32>().unwrap(), [2, 1, 2]);
    assert_eq!(i.div(&i).unwrap().dtype(), DType::F32);
    assert_eq!(b.sum(&[], false).unwrap().item::<i32>().unwrap(), 2);
    assert_eq!(i.mean(&[], false).unwrap().item::<f32>().unwrap(), 2.0);
    assert_eq!((&i * 2.0).dtype(), DType::F32);
    assert_eq!(i.floordiv(-2).unwrap().to_vec::<i32>().unwrap(), [-1, -1, -2]);
    assert_eq!(i.neg().modulo(2).unwrap().to_vec::<i32>().unwrap(), [1, 0, 1]);
}

#[test]
fn creation() {
    assert_eq!(Tensor::zeros(&[2], DType::I32).unwrap().to_vec::<i32>().unwrap(), [0, 0]);
    assert_eq!(Tensor::ones(&[2, 1], DType::F32).unwrap().to_vec::<f32>().unwrap(), [1.0, 1.0]);
    assert_eq!(Tensor::full(&[3], 7u8).unwrap().to_vec::<u8>().unwrap(), [7, 7, 7]);
    assert_eq!(Tensor::scalar(2.5f32).unwrap().item::<f32>().unwrap(), 2.5);
    let halves = Tensor::from_bytes(&[0x00, 0x3c, 0x00, 0xc0], DType::F16, &[2]).unwrap();
    assert_eq!(halves.cast(DType::F32).to_vec::<f32>().unwrap(), [1.0, -2.0], "little-endian float16 bytes");
    close(
        &Tensor::arange_with(1.0, -1.0, -0.5, DType::F32).unwrap().to_vec::<f32>().unwrap(),
        &[1.0, 0.5, 0.0, -0.5],
    );
    let eye = Tensor::eye(2, DType::I32).unwrap();
    assert_eq!(eye.to_vec::<i32>().unwrap(), [1, 0, 0, 1]);
    let r = Tensor::rand(&[4096], 7).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(
        r,
        Tensor::rand(&[4096], 7).unwrap().to_vec::<f32>().unwrap(),
        "a seed gives the same numbers"
    );
    assert_ne!(r, Tensor::rand(&[4096], 8).unwrap().to_vec::<f32>().unwrap());
    assert!(r.iter().all(|x| (0.0..1.0).contains(x)));
    let n = Tensor::randn(&[64, 64], 3).unwrap();
    let mean = n.mean(&[], false).unwrap().item::<f32>().unwrap();
    let std = n.std(&[], false, 0).unwrap().item::<f32>().unwrap();
    assert!(mean.abs() < 0.05 && (std - 1.0).abs() < 0.05, "mean {mean}, std {std}");
}

#[test]
fn movement_is_views_until_read() {
    let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    assert_eq!(a.flip(&[1]).unwrap().to_vec::<f32>().unwrap(), [3., 2., 1., 6., 5., 4.]);
    assert_eq!(a.shrink(&[(0, 2), (1, 3)]).unwrap().to_vec::<f32>().unwrap(), [2., 3., 5., 6.]);
    assert_eq!(a.pad(&[(0, 0), (1, 0)]).unwrap().to_vec::<f32>().unwrap(), [0., 1., 2., 3., 0., 4., 5., 6.]);
    assert_eq!(a.unsqueeze(0).unwrap().shape(), [1, 2, 3]);
    assert_eq!(a.reshape(&[3, -1]).unwrap().shape(), [3, 2]);
    // nothing ran: the views are graph nodes over the one buffer
    assert_eq!(a.t().unwrap().schedule(32).unwrap().kernel_count(), 0);
}

#[test]
fn gradients_accumulate_and_reset() {
    let w = t(&[1.0, -2.0, 3.0], &[3]);
    w.set_requires_grad(true).unwrap();
    for _ in 0..2 {
        w.mul(&w).unwrap().sum(&[], false).unwrap().backward().unwrap();
    }
    close(&w.grad().unwrap().to_vec::<f32>().unwrap(), &[4.0, -8.0, 12.0]);
    w.zero_grad();
    assert!(w.grad().is_none());
}

#[test]
fn reading_a_value_keeps_its_graph_for_backward() {
    let w = t(&[0.5, 1.5], &[2]);
    w.set_requires_grad(true).unwrap();
    let loss = w.exp().sum(&[], false).unwrap();
    let value = loss.item::<f32>().unwrap();
    assert!((value - (0.5f32.exp() + 1.5f32.exp())).abs() < 1e-5);
    loss.backward().unwrap();
    close(&w.grad().unwrap().to_vec::<f32>().unwrap(), &[0.5f32.exp(), 1.5f32.exp()]);
}

#[test]
fn no_grad_and_detach_stop_gradients() {
    let w = t(&[1.0, 2.0], &[2]);
    w.set_requires_grad(true).unwrap();
    let frozen = no_grad(|| w.mul(2.0).unwrap());
    let loss = frozen.sum(&[], false).unwrap();
    assert!(matches!(loss.backward(), Err(TensorError::NothingRequiresGrad)));
    let mixed = w.mul(w.detach()).unwrap().sum(&[], false).unwrap();
    mixed.backward().unwrap();
    close(&w.grad().unwrap().to_vec::<f32>().unwrap(), &[1.0, 2.0]);
}

#[test]
fn a_lazy_tensor_asking_for_gradients_gets_its_own_buffer() {
    let (a, b) = (Tensor::zeros(&[2], DType::F32).unwrap(), Tensor::zeros(&[2], DType::F32).unwrap());
    a.set_requires_grad(true).unwrap();
    b.set_requires_grad(true).unwrap();
    assert_ne!(a.uop(), b.uop(), "equal constants must not share a gradient");
    a.add(b.mul(3.0).unwrap()).unwrap().sum(&[], false).unwrap().backward().unwrap();
    close(&a.grad().unwrap().to_vec::<f32>().unwrap(), &[1.0, 1.0]);
    close(&b.grad().unwrap().to_vec::<f32>().unwrap(), &[3.0, 3.0]);
}

#[test]
fn equal_graphs_written_in_place_do_not_share_a_buffer() {
    for device in common::devices() {
        with_default_device(&device, || {
            // two layers drawn from one seed are equal graphs: assigning one must not change the other
            let (a, b) = (Linear::new(2, 2, false, 7).unwrap(), Linear::new(2, 2, false, 7).unwrap());
            let before = b.weight.to_vec::<f32>().unwrap();
            a.weight.assign(&a.weight.zeros_like()).unwrap();
            assert_eq!(a.weight.to_vec::<f32>().unwrap(), [0.0; 4], "{device}");
            assert_eq!(b.weight.to_vec::<f32>().unwrap(), before, "{device}");
            // a result held in a buffer an assign overwrote is not handed to the same graph again
            let x = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
            let doubled = x.mul(2.0).unwrap().contiguous();
            doubled.realize().unwrap();
            doubled.assign(&doubled.zeros_like()).unwrap().realize().unwrap();
            assert_eq!(x.mul(2.0).unwrap().contiguous().to_vec::<f32>().unwrap(), [2.0, 4.0], "{device}");
        });
    }
}

#[test]
fn an_assign_runs_once_when_part_of_its_value_was_realized_first() {
    // realizing `m` changes the graph `s` holds under resolve; the assign's result must still
    // be found for the node `s` holds, not applied a second time
    let s = Tensor::from_slice(&[1.0f32], &[1]).unwrap();
    let x = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let m = x.mul(3.0).unwrap().sum(&[], false).unwrap();
    s.assign(&s.add(m.reshape(&[1]).unwrap()).unwrap()).unwrap();
    m.realize().unwrap();
    assert_eq!(s.contiguous().to_vec::<f32>().unwrap(), [10.0]);
    assert_eq!(s.to_vec::<f32>().unwrap(), [10.0]);
    assert_eq!(s.to_vec::<f32>().unwrap(), [10.0]);
}

#[test]
fn half_precision_casts_round_to_nearest_even_on_every_device() {
    // f32 -> f16 / bf16 -> f32 must equal the `half` crate's rounding (overflow to inf, tiny
    // values to zero or subnormals), on the interpreter and on wgpu (packed or native f16)
    let xs = [1.0f32, 0.1, -3.3333, 65504.0, 70000.0, 1e-8, 6e-5, 3.4e38, -0.0, 1.0 + 1.0 / 1024.0];
    for device in common::devices() {
        wgrad_tensor::with_default_device(&device, || {
            let x = t(&xs, &[xs.len()]);
            let f16 = x.cast(DType::F16).cast(DType::F32).to_vec::<f32>().unwrap();
            let bf16 = x.cast(DType::BF16).cast(DType::F32).to_vec::<f32>().unwrap();
            for (i, &v) in xs.iter().enumerate() {
                assert_eq!(f16[i].to_bits(), half::f16::from_f32(v).to_f32().to_bits(), "{device} f16({v})");
                assert_eq!(
                    bf16[i].to_bits(),
                    half::bf16::from_f32(v).to_f32().to_bits(),
                    "{device} bf16({v})"
                );
            }
        });
    }
}
