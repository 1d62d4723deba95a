//! `cargo run --release -p wgrad-tensor --example soak -- [--steps N] [--every N] [--jit]`: a long
//! MNIST training run (an MLP on the shipped 10,000-digit sample, batch 64, Adam; eager steps,
//! or with `--jit` every step through `TinyJit`, which replays the second step's kernels) that
//! prints a curve: every `--every` steps (500), the device memory in use, the process's resident
//! host memory, the kernels compiled, the device's pipelines, live buffers and cached bind
//! groups, the kernels launched per step and the time per step. Then one line saying whether
//! the counts stayed flat from the second row on; flat columns mean nothing leaks.
#![allow(clippy::print_stdout)] // an example's job is to print

use std::time::Instant;

use wgrad_engine::{cached_kernels, counters};
use wgrad_tensor::datasets::mnist::Mnist;
use wgrad_tensor::nn::{Linear, Module};
use wgrad_tensor::optim::{Adam, Optimizer};
use wgrad_tensor::{Result, Tensor, TensorError, TinyJit};

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

/// One row of the curve: what a leak would grow.
#[derive(Clone, Copy, PartialEq)]
struct Row {
    device_bytes: usize,
    kernels: usize,
    pipelines: u64,
    buffers: u64,
    bind_groups: u64,
}

/// A row of the curve: its step, counts and host memory.
struct Mark {
    step: usize,
    row: Row,
    host: f64,
}

/// A training step: images and labels in, the loss out.
type Step<'a> = Box<dyn FnMut(&Tensor, &Tensor) -> Result<Tensor> + 'a>;

impl Row {
    fn now() -> Row {
        let c = counters();
        Row {
            device_bytes: c.memory_used,
            kernels: cached_kernels(),
            pipelines: c.pipelines,
            buffers: c.live_buffers,
            bind_groups: c.cached_bind_groups,
        }
    }
}

fn main() -> Result<()> {
    let (steps, every, batch) = (flag("--steps", 10_000), flag("--every", 500).max(1), 64);
    let jit = std::env::args().any(|a| a == "--jit");
    let data = Mnist::sample().map_err(|e| TensorError::Argument { op: "soak", why: e.to_string() })?;
    let (l1, l2) = (Linear::new(784, 128, true, 0)?, Linear::new(128, 10, true, 1)?);
    let params: Vec<Tensor> = l1.parameters().into_iter().chain(l2.parameters()).collect();
    let mut opt = Adam::new(params, 1e-3)?;
    let train = move |xy: &[Tensor]| -> Result<Vec<Tensor>> {
        let x = xy[0].reshape(&[batch as isize, 784])?;
        let loss = l2.forward(&l1.forward(&x)?.relu())?.sparse_categorical_crossentropy(&xy[1], 0.0)?;
        loss.backward()?;
        loss.realize()?; // before the update, which overwrites the weights the loss reads
        opt.step()?;
        opt.zero_grad();
        Ok(vec![loss])
    };
    let mut step_fn: Step<'_> = if jit {
        let mut jitted = TinyJit::new(train);
        Box::new(move |x, y| Ok(jitted.call(&[x, y])?.remove(0)))
    } else {
        let mut eager = train;
        Box::new(move |x, y| Ok(eager(&[x.clone(), y.clone()])?.remove(0)))
    };
    println!(
        "device {}, {} steps, batch {batch}",
        Tensor::default_device()?,
        if jit { "jitted" } else { "eager" }
    );
    println!(
        "{:>6} {:>7} {:>8} {:>8} {:>7} {:>9} {:>7} {:>11} {:>11} {:>7}",
        "step",
        "loss",
        "dev MiB",
        "host MiB",
        "kernels",
        "pipelines",
        "buffers",
        "bind groups",
        "launch/step",
        "ms/step"
    );
    let (mut last_kernels, mut last_time) = (counters().kernels, Instant::now());
    let (mut second, mut last): (Option<Mark>, Option<Mark>) = (None, None);
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
        let loss = step_fn(&x, &y)?;
        if step % every == 0 || step == 1 {
            let loss = loss.item::<f32>()?;
            let (held, host, launched) = (Row::now(), rss_mib(), counters().kernels);
            let n = if step == 1 { 1 } else { every };
            println!(
                "{step:>6} {loss:>7.4} {:>8.2} {host:>8.1} {:>7} {:>9} {:>7} {:>11} {:>11.1} {:>7.2}",
                held.device_bytes as f64 / (1 << 20) as f64,
                held.kernels,
                held.pipelines,
                held.buffers,
                held.bind_groups,
                (launched - last_kernels) as f64 / n as f64,
                last_time.elapsed().as_secs_f64() * 1e3 / n as f64,
            );
            if step != 1 && second.is_none() {
                second = Some(Mark { step, row: held, host });
            }
            last = Some(Mark { step, row: held, host });
            (last_kernels, last_time) = (launched, Instant::now());
        }
    }
    match (second, last) {
        (Some(from), Some(end)) => {
            let flat = from.row == end.row;
            println!(
                "{} from step {} to {}: device memory, kernels, pipelines, buffers and bind groups {}; \
                 host memory {:+.1} MiB",
                if flat { "FLAT" } else { "GROWING" },
                from.step,
                end.step,
                if flat { "unchanged" } else { "changed" },
                end.host - from.host
            )
        }
        _ => println!("too few rows to judge (--steps must exceed --every)"),
    }
    Ok(())
}
