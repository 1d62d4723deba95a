//! The steady state of a training loop, from the engine's counters (one test: they are
//! process-wide): an eager loop reuses its schedules (schedule cache hits), kernels (a new
//! learning rate every step included) and pooled buffers, a realize read back is one
//! submission, and a jitted loop of 100 steps creates no buffers and no bind groups after its
//! first replay; with `JIT=0` a jitted function runs every call; a long replay reaches an idle
//! GPU in parts, a software adapter in one submit.

mod common;

use std::cell::RefCell;
use std::time::Duration;

use wgrad_engine::device::open_device;
use wgrad_engine::{counters, flags, reset_counters};
use wgrad_tensor::nn::{Linear, Module};
use wgrad_tensor::optim::{Adam, Optimizer};
use wgrad_tensor::{DeviceName, Result, Tensor, TinyJit, with_default_device};

/// A two-layer MLP and its Adam optimizer.
struct Mlp {
    layers: [Linear; 2],
    opt: RefCell<Adam>,
}

impl Mlp {
    fn new() -> Mlp {
        let layers = [Linear::new(8, 16, true, 0).unwrap(), Linear::new(16, 4, true, 1).unwrap()];
        let params = layers.iter().flat_map(Module::parameters).collect();
        Mlp { opt: RefCell::new(Adam::new(params, 1e-2).unwrap()), layers }
    }

    /// One step of mean squared error on `(x, y)`: the loss.
    fn step(&self, xy: &[Tensor]) -> Result<Vec<Tensor>> {
        let hidden = self.layers[0].forward(&xy[0])?.relu();
        let loss = self.layers[1].forward(&hidden)?.sub(&xy[1])?.square().mean(&[], false)?;
        loss.backward()?;
        let mut opt = self.opt.borrow_mut();
        opt.step()?;
        opt.zero_grad();
        Ok(vec![loss])
    }
}

/// A fresh batch for step `i`.
fn batch(i: usize) -> [Tensor; 2] {
    let x: Vec<f32> = (0..32 * 8).map(|k| ((k * 7 + i * 13) % 17) as f32 / 8.0 - 1.0).collect();
    let y: Vec<f32> = (0..32 * 4).map(|k| ((k * 5 + i * 3) % 11) as f32 / 5.0 - 1.0).collect();
    [Tensor::from_vec(x, &[32, 8]).unwrap(), Tensor::from_vec(y, &[32, 4]).unwrap()]
}

/// (buffers created, bind groups created).
fn created() -> (u64, u64) {
    let c = counters();
    (c.buffers_created, c.bind_groups_created)
}

#[test]
fn loops_reuse_schedules_kernels_buffers_and_bind_groups() {
    for device in common::devices() {
        with_default_device(&device, || {
            let mlp = Mlp::new();
            reset_counters();
            let mut hits = vec![];
            let mut compiled = vec![];
            // a new learning rate every step is data, not a new kernel
            let eager_step = |i: usize| {
                mlp.opt.borrow().set_lr(1e-2 / (i + 1) as f64).unwrap();
                let [x, y] = batch(i);
                mlp.step(&[x, y]).unwrap()[0].item::<f32>().unwrap();
            };
            for i in 0..6 {
                eager_step(i);
                hits.push(counters().schedule_cache_hits);
                compiled.push(wgrad_engine::cached_kernels());
            }
            // after the first step all three schedules of a step hit: the learning rate's
            // assign, the update (whose assigns are new nodes every step) and the loss's readback
            let per_step: Vec<u64> = hits.windows(2).map(|w| w[1] - w[0]).collect();
            assert!(per_step[1..].iter().all(|&n| n == 3), "{device}: hits {hits:?}");
            assert!(compiled.windows(2).skip(1).all(|w| w[0] == w[1]), "{device}: no kernel compiled again");
            let buffers = created().0;
            (6..16).for_each(eager_step);
            if device != DeviceName::Cpu {
                // (bind groups settle too, but an eager step's memory comes from the pool in an
                // order that varies, so a new combination now and then is allowed)
                assert_eq!(created().0, buffers, "{device}: the pool serves every eager step's memory");
                // a realize read back goes to the device with its readback: one submission
                let x = Tensor::from_slice(&[1.5f32, 2.0], &[2]).unwrap();
                let submits = counters().submits;
                assert_eq!(x.mul(2.0).unwrap().to_vec::<f32>().unwrap(), [3.0, 4.0]);
                assert_eq!(counters().submits, submits + 1, "{device}: kernel and readback in one submit");
            }
            assert!(counters().device_wait > Duration::ZERO, "{device}: readbacks wait for the device");

            let mut jit = TinyJit::new(|xy: &[Tensor]| mlp.step(xy));
            let mut after_capture = (0, 0);
            let mut losses = vec![];
            for i in 0..100 {
                let [x, y] = batch(i % 4);
                let loss = jit.call(&[&x, &y]).unwrap().remove(0);
                if i % 10 == 9 {
                    losses.push(loss.item::<f32>().unwrap());
                }
                // the first replay binds its inputs' memory; later inputs get that memory again
                if i == 2 {
                    reset_counters();
                    after_capture = created();
                }
            }
            assert_eq!(counters().jit_replays, 97, "{device}");
            let (buffers, bind_groups) = created();
            assert_eq!(bind_groups, after_capture.1, "{device}: replays create no bind groups");
            // the CPU device has no pool: there each step's two uploaded inputs are new memory
            let uploads = if device == DeviceName::Cpu { 2 * 97 } else { 0 };
            assert_eq!(buffers, after_capture.0 + uploads, "{device}: replays allocate nothing");
            assert!(losses.last() < losses.first(), "{device}: the jitted loop trains: {losses:?}");

            // JIT=0: every call runs the function (no replays), inputs still checked
            flags::set_jit(false);
            let mut eager = TinyJit::new(|x: &[Tensor]| Ok(vec![x[0].mul(3.0)?]));
            for i in 0..4 {
                let x = Tensor::from_vec(vec![i as f32; 2], &[2]).unwrap();
                assert_eq!(eager.call(&[&x]).unwrap()[0].to_vec::<f32>().unwrap(), [3.0 * i as f32; 2]);
            }
            assert!(eager.call(&[]).is_err());
            assert_eq!((counters().jit_replays, eager.captured_kernels()), (97, None), "{device}");
            flags::set_jit(true);

            // a replay of more launches than a graph's first part reaches an idle GPU in parts
            // (it starts while the host records the rest); a device on the host's cores gets
            // it in one submit
            let w: Vec<f32> = (0..64).map(|i| (i % 7) as f32 / 8.0 - 0.4).collect();
            let w = Tensor::from_vec(w, &[8, 8]).unwrap();
            let chain = |x: &Tensor| (0..12).try_fold(x.clone(), |y, _| y.matmul(&w).map(|y| y.relu()));
            let mut long = TinyJit::new(|x: &[Tensor]| Ok(vec![chain(&x[0])?]));
            let on_host = open_device(&device).unwrap().runs_on_host();
            for i in 0..4 {
                let x = Tensor::from_vec((0..32).map(|j| (i * 32 + j) as f32 / 64.0).collect(), &[4, 8]);
                let x = x.unwrap();
                let want = chain(&x).unwrap().to_vec::<f32>().unwrap();
                let submits = counters().submits;
                let out = long.call(&[&x]).unwrap();
                let parts = counters().submits - submits;
                assert_eq!(out[0].to_vec::<f32>().unwrap(), want, "{device}: call {i}");
                // (the CPU device counts no submits)
                if i >= 2 && device != DeviceName::Cpu {
                    match on_host {
                        true => assert_eq!(parts, 1, "{device}: replay {i} on the host's cores"),
                        false => assert!(parts >= 2, "{device}: replay {i} in {parts} submit(s)"),
                    }
                }
            }
            assert_eq!(long.captured_kernels(), Some(12), "{device}");
        });
    }
}
