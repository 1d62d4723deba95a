//! `cargo run --release -p wgrad-tensor --example soak -- [--steps N] [--every N]`: a long MNIST
//! training run (an MLP on the shipped 10,000-digit sample, batch 64, Adam, eager steps; a jitted
//! soak is not written yet) that prints, every `--every` steps (500), the device memory in
//! use, the process's resident host memory, the kernels compiled so far and the kernels
//! launched per step. Flat columns after the first report mean nothing leaks.
#![allow(clippy::print_stdout)] // an example's job is to print

use std::time::Instant;

use wgrad_tensor::datasets::mnist::Mnist;
use wgrad_tensor::nn::{Linear, Module};
use wgrad_tensor::optim::{Adam, Optimizer};
use wgrad_tensor::{Result, Tensor};

/// Resident host memory in MiB (Linux; 0 elsewhere).
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0.0);
    pages * 4096.0 / (1 << 20) as f64
}

fn flag(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<()> {
    let (steps, every, batch) = (flag("--steps", 10_000), flag("--every", 500), 64);
    let data = Mnist::sample()
        .map_err(|e| wgrad_tensor::TensorError::Argument { op: "soak", why: e.to_string() })?;
    let (l1, l2) = (Linear::new(784, 128, true, 0)?, Linear::new(128, 10, true, 1)?);
    let params: Vec<Tensor> = l1.parameters().into_iter().chain(l2.parameters()).collect();
    let mut opt = Adam::new(params, 1e-3)?;
    println!("device {}", Tensor::default_device()?);
    println!(
        "{:>6} {:>8} {:>12} {:>10} {:>9} {:>13} {:>9}",
        "step", "loss", "device MiB", "host MiB", "compiled", "kernels/step", "ms/step"
    );
    let (mut last_kernels, mut last_time) = (wgrad_engine::counters().kernels, Instant::now());
    let mut rng = 0x9E37_79B9u64;
    for step in 1..=steps {
        let picks: Vec<usize> = (0..batch)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng % data.train.len() as u64) as usize
            })
            .collect();
        let (x, y) = data.train.batch(&picks)?;
        opt.zero_grad();
        let logits = l2.forward(&l1.forward(&x.reshape(&[batch as isize, 784])?)?.relu())?;
        let loss = logits.sparse_categorical_crossentropy(&y, 0.0)?;
        loss.backward()?;
        opt.step()?;
        if step % every == 0 || step == 1 {
            let loss = loss.item::<f32>()?;
            let c = wgrad_engine::counters();
            let n = if step == 1 { 1 } else { every };
            println!(
                "{step:>6} {loss:>8.4} {:>12.2} {:>10.1} {:>9} {:>13.1} {:>9.2}",
                c.memory_used as f64 / (1 << 20) as f64,
                rss_mib(),
                wgrad_engine::cached_kernels(),
                (c.kernels - last_kernels) as f64 / n as f64,
                last_time.elapsed().as_secs_f64() * 1e3 / n as f64,
            );
            (last_kernels, last_time) = (c.kernels, Instant::now());
        }
    }
    Ok(())
}
