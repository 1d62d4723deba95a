//! Tensors across threads: `Tensor` is `Send` and `Sync`, and several threads training
//! separate models at once on one device get exactly what each gets alone.

use crate::common;

use wgrad_tensor::nn::{Linear, Module};
use wgrad_tensor::optim::{Optimizer, Sgd};
use wgrad_tensor::{DeviceName, Result, Tensor, with_default_device};

#[test]
fn tensors_are_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Tensor>();
    shareable::<Linear>();
    shareable::<Sgd>();
}

/// Trains a small two-layer model of `seed` for a few SGD steps on `device`; its final
/// weights and the losses along the way.
fn train(device: &DeviceName, seed: u64) -> Result<(Vec<f32>, Vec<f32>)> {
    with_default_device(device, || {
        let (l1, l2) = (Linear::new(6, 8, true, seed)?, Linear::new(8, 3, true, seed + 100)?);
        let params: Vec<Tensor> = l1.parameters().into_iter().chain(l2.parameters()).collect();
        let mut opt = Sgd::new(params, 0.05, 0.9, 0.0, false)?;
        let x = Tensor::randn(&[16, 6], seed + 7)?;
        let y = Tensor::randn(&[16, 3], seed + 8)?;
        let mut losses = vec![];
        for _ in 0..4 {
            opt.zero_grad();
            let loss = l2.forward(&l1.forward(&x)?.relu())?.mse(&y)?;
            loss.backward()?;
            opt.step()?;
            losses.push(loss.item::<f32>()?);
        }
        Ok((l2.weight_values()?, losses))
    })
}

trait Weights {
    fn weight_values(&self) -> Result<Vec<f32>>;
}

impl Weights for Linear {
    fn weight_values(&self) -> Result<Vec<f32>> {
        self.state_dict()["weight"].to_vec::<f32>()
    }
}

#[test]
fn threads_training_separate_models_match_training_alone() {
    for device in common::devices() {
        let seeds: Vec<u64> = (0..3).collect();
        let alone: Vec<_> = seeds.iter().map(|&s| train(&device, s).unwrap()).collect();
        let together: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = seeds
                .iter()
                .map(|&s| {
                    scope.spawn({
                        let device = device.clone();
                        move || train(&device, s)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a training thread panicked").unwrap()).collect()
        });
        for (s, (a, t)) in seeds.iter().zip(alone.iter().zip(&together)) {
            assert_eq!(a, t, "{device}: model {s} trained in a thread differs from training alone");
            assert!(a.1.last() < a.1.first(), "{device}: model {s} did not learn: {:?}", a.1);
        }
    }
}

#[test]
fn one_tensor_read_from_many_threads() {
    for device in common::devices() {
        let x = with_default_device(&device, || Tensor::arange(1000).unwrap().cast(wgrad_tensor::DType::F32));
        let x = &x;
        let sums: Vec<f32> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|k| scope.spawn(move || x.mul(k as f32).unwrap().sum(&[], false).unwrap().item::<f32>()))
                .collect();
            handles.into_iter().map(|h| h.join().expect("a reader panicked").unwrap()).collect()
        });
        assert_eq!(sums, [0.0, 499_500.0, 999_000.0, 1_498_500.0], "{device}");
    }
}

#[test]
fn an_optimizer_shares_no_state_with_an_equal_graph_on_another_thread() {
    for device in common::devices() {
        // the interleaving of the race: another thread holds graphs equal to the optimizer's
        // fresh state (zero momentum, the learning rate) while the optimizer realizes it, and
        // realizes them before the optimizer writes that state
        let turn = std::sync::Barrier::new(2);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                with_default_device(&device, || {
                    let zeros = Tensor::zeros(&[2], wgrad_tensor::DType::F32).unwrap().contiguous();
                    let lr = Tensor::full(&[], 0.5f32).unwrap().contiguous();
                    turn.wait(); // the optimizer is made
                    turn.wait();
                    Tensor::realize_all(&[&zeros, &lr]).unwrap();
                    turn.wait(); // it steps
                    turn.wait();
                    assert_eq!(zeros.to_vec::<f32>().unwrap(), [0.0, 0.0], "{device}: the momentum leaked");
                    assert_eq!(lr.item::<f32>().unwrap(), 0.5, "{device}: the learning rate leaked");
                })
            });
            with_default_device(&device, || {
                let p = Tensor::from_slice(&[1.0f32, -2.0], &[2]).unwrap();
                p.set_requires_grad(true).unwrap();
                turn.wait();
                let mut opt = Sgd::new(vec![p.clone()], 0.5, 0.9, 0.0, false).unwrap();
                turn.wait();
                turn.wait();
                for _ in 0..2 {
                    opt.zero_grad();
                    p.square().sum(&[], false).unwrap().backward().unwrap();
                    opt.step().unwrap();
                }
                opt.set_lr(0.25).unwrap();
                turn.wait();
                // g = 2p = b, p -= 0.5 b gives 0; then g = 0, b = 0.9 b, p -= 0.5 b
                assert_eq!(p.to_vec::<f32>().unwrap(), [-0.9, 1.8], "{device}");
            });
        });
    }
}

#[test]
fn tensors_of_one_graph_realized_apart_are_written_apart() {
    for device in common::devices() {
        with_default_device(&device, || {
            // both hold one graph node; realizing the first hands its buffer to the second
            let zeros = || Tensor::zeros(&[3], wgrad_tensor::DType::F32).unwrap().contiguous();
            let (a, b) = (zeros(), zeros());
            a.realize().unwrap();
            b.realize().unwrap();
            a.assign(&a.add(1.0).unwrap()).unwrap().realize().unwrap();
            assert_eq!(a.to_vec::<f32>().unwrap(), [1.0; 3], "{device}");
            assert_eq!(b.to_vec::<f32>().unwrap(), [0.0; 3], "{device}: writing one changed the other");
            // and autograd tells two such tensors apart
            let (c, d) = (zeros(), zeros());
            Tensor::realize_all(&[&c, &d]).unwrap();
            c.set_requires_grad(true).unwrap();
            d.set_requires_grad(true).unwrap();
            c.mul(2.0)
                .unwrap()
                .add(d.mul(3.0).unwrap())
                .unwrap()
                .sum(&[], false)
                .unwrap()
                .backward()
                .unwrap();
            assert_eq!(c.grad().unwrap().to_vec::<f32>().unwrap(), [2.0; 3], "{device}");
            assert_eq!(d.grad().unwrap().to_vec::<f32>().unwrap(), [3.0; 3], "{device}");
        });
    }
}

#[test]
fn an_assign_equal_to_one_run_before_runs_again() {
    for device in common::devices() {
        with_default_device(&device, || {
            let x = Tensor::from_slice(&[1.0f32], &[1]).unwrap();
            x.assign(&x.add(1.0).unwrap()).unwrap();
            // a graph built on the pending assign keeps its node alive (as another thread's
            // backward pass does, walking every tensor that requires grad)
            let reader = x.mul(2.0).unwrap();
            x.realize().unwrap();
            // the same graph as the first assign: a second write all the same
            x.assign(&x.add(1.0).unwrap()).unwrap().realize().unwrap();
            assert_eq!(x.to_vec::<f32>().unwrap(), [3.0], "{device}: the second assign was skipped");
            // the reader reads the buffer the assign wrote, as it is now; the first write never
            // runs again
            assert_eq!(reader.to_vec::<f32>().unwrap(), [6.0], "{device}");
            assert_eq!(x.to_vec::<f32>().unwrap(), [3.0], "{device}: the first assign ran twice");
        });
    }
}
