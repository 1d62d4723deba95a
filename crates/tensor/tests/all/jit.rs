//! TinyJit on every device: replays follow new input values, in-place updates advance,
//! outputs fed back as inputs stay correct, and stream draws advance while fixed keys are
//! refused. (Wrong inputs: the bad-input catalogue, `tests/all/bad_input.rs`; jitted MNIST steps
//! against eager ones: `tests/all/mnist.rs`.)

use crate::common;

use wgrad_tensor::{DType, JitError, Seed, Tensor, TensorError, TinyJit, with_default_device};

/// `x * w + y.sum()` with `w` a tensor the closure holds: a reduce and an elementwise kernel.
fn affine(w: &Tensor) -> impl FnMut(&[Tensor]) -> wgrad_tensor::Result<Vec<Tensor>> + '_ {
    move |xy: &[Tensor]| Ok(vec![xy[0].mul(w)?.add(xy[1].sum(&[], false)?)?])
}

#[test]
fn replays_compute_with_the_new_input_values() {
    for device in common::devices() {
        with_default_device(&device, || {
            let w = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
            let mut jit = TinyJit::new(affine(&w));
            let (mut outputs, mut inputs) = (vec![], vec![]);
            for i in 0..6 {
                let x = Tensor::from_vec(vec![i as f32, 1.0, -1.0], &[3]).unwrap();
                let y = Tensor::from_vec(vec![0.5f32 * i as f32; 4], &[4]).unwrap();
                let out = jit.call(&[&x, &y]).unwrap();
                let want: Vec<f32> = [i as f32, 2.0, -3.0].iter().map(|v| v + 2.0 * i as f32).collect();
                assert_eq!(out[0].to_vec::<f32>().unwrap(), want, "{device}: call {i}");
                outputs.push(out[0].clone());
                // kept, so every call's inputs are memory of their own
                inputs.push((x, y));
            }
            assert_eq!(jit.captured_kernels(), Some(2), "{device}");
            // replays write the captured output buffer: every replayed output is the last value
            assert_eq!(outputs[1].to_vec::<f32>().unwrap(), outputs[5].to_vec::<f32>().unwrap());
        });
    }
}

#[test]
fn assigns_advance_and_outputs_may_be_inputs() {
    for device in common::devices() {
        with_default_device(&device, || {
            let total = Tensor::zeros(&[2], DType::F32).unwrap().contiguous();
            total.realize().unwrap();
            // adds x into the state `total` and into the input `acc`; returns both and `acc`'s view
            let mut jit = TinyJit::new(|xs: &[Tensor]| {
                total.assign(&total.add(&xs[0])?)?;
                xs[1].assign(&xs[1].add(&xs[0])?.mul(2.0)?)?;
                Ok(vec![total.clone(), xs[1].clone(), xs[1].reshape(&[2, 1])?])
            });
            let mut eager_total = [0.0f32; 2];
            for i in 0..5 {
                let x = Tensor::from_vec(vec![i as f32, 1.0], &[2]).unwrap();
                let acc = Tensor::from_vec(vec![1.0f32, i as f32], &[2]).unwrap();
                let out = jit.call(&[&x, &acc]).unwrap();
                eager_total = [eager_total[0] + i as f32, eager_total[1] + 1.0];
                let want_acc = vec![2.0 * (1.0 + i as f32), 2.0 * (i as f32 + 1.0)];
                assert_eq!(out[0].to_vec::<f32>().unwrap(), eager_total, "{device}: call {i}");
                assert_eq!(acc.to_vec::<f32>().unwrap(), want_acc, "{device}: the input was assigned");
                assert_eq!(out[1].to_vec::<f32>().unwrap(), want_acc, "{device}: the output is the input");
                assert_eq!((out[2].shape(), out[2].to_vec::<f32>().unwrap()), (&[2, 1][..], want_acc));
            }
            assert_eq!(total.to_vec::<f32>().unwrap(), eager_total);
        });
    }
}

#[test]
fn an_output_fed_back_as_the_next_input_is_read_before_it_is_written() {
    for device in common::devices() {
        with_default_device(&device, || {
            // h <- reverse(h) + 1: every element reads another one, so reading and writing one
            // buffer in place would race
            let mut jit = TinyJit::new(|h: &[Tensor]| Ok(vec![h[0].flip(&[0])?.add(1.0)?]));
            let mut h = Tensor::from_slice(&[0.0f32, 10.0, 20.0, 30.0], &[4]).unwrap();
            let mut want = vec![0.0f32, 10.0, 20.0, 30.0];
            for _ in 0..6 {
                h = jit.call(&[&h]).unwrap().remove(0);
                want = want.iter().rev().map(|v| v + 1.0).collect();
                assert_eq!(h.to_vec::<f32>().unwrap(), want, "{device}");
            }
        });
    }
}

#[test]
fn stream_draws_advance_in_replays_and_fixed_keys_are_refused() {
    for device in common::devices() {
        with_default_device(&device, || {
            let x = Tensor::zeros(&[8], DType::F32).unwrap().contiguous();
            let mut seeded = TinyJit::new(|x: &[Tensor]| Ok(vec![x[0].add(Tensor::rand(&[8], 7)?)?]));
            seeded.call(&[&x]).unwrap();
            let err = seeded.call(&[&x]).err();
            assert!(matches!(err, Some(TensorError::Jit(JitError::HostRandom { .. }))), "{device}: {err:?}");

            // the stream's position lives on the device: replays advance it as eager draws do
            Tensor::manual_seed(11);
            let mut streamed =
                TinyJit::new(|x: &[Tensor]| Ok(vec![x[0].add(Tensor::rand(&[8], Seed::Stream)?)?]));
            let got: Vec<Vec<f32>> =
                (0..4).map(|_| streamed.call(&[&x]).unwrap()[0].to_vec::<f32>().unwrap()).collect();
            let jit_off = std::env::var("JIT").is_ok_and(|v| v == "0");
            assert!(jit_off || streamed.captured_kernels().is_some(), "{device}: calls 3 and 4 replay");
            Tensor::manual_seed(11);
            let want: Vec<Vec<f32>> =
                (0..4).map(|_| Tensor::rand(&[8], Seed::Stream).unwrap().to_vec::<f32>().unwrap()).collect();
            assert_eq!(got, want, "{device}");
            for (i, draw) in got.iter().enumerate() {
                assert!(!got[..i].contains(draw), "{device}: call {i} repeats an earlier draw");
            }
        });
    }
}
