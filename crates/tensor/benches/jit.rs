//! Host overhead and TinyJit, through the Tensor API, as one table: a beautiful_mnist
//! training step (Adam) eager and jitted, replay host time per kernel, a one-op graph with a
//! scalar readback, realize of a cached one-op graph, an eager `x*2+1` loop, and the host's
//! share of the MNIST example's training loop at batch 64, eager and jitted. Wall times are
//! medians or means of whole loops; kernel times are the device's timestamps of the same work
//! run again with timing on; host time is the time spent in the loop's calls less the time
//! they blocked on the device (`Counters::device_wait`: readbacks, and the CPU device's
//! kernels), so it needs no timestamps.
//!
//! `cargo bench -p wgrad-tensor --bench jit [-- --small | --tiny | --host-share]` on
//! `WGRAD_DEVICE` (else the default device); `--small` shrinks the large sizes for lavapipe
//! (the batch-64 loops stay), `--tiny` shrinks everything for the CPU interpreter,
//! `--host-share` prints only the batch-64 training loops (`--steps N`, default 20).
#![allow(clippy::print_stdout, reason = "a benchmark prints its numbers")]

#[path = "../examples/mnist/model.rs"]
#[allow(dead_code, reason = "the benchmark trains, it does not test")]
mod model;

use std::cell::RefCell;
use std::time::{Duration, Instant};

use wgrad_engine::{counters, flags, reset_counters};
use wgrad_tensor::datasets::mnist::Mnist;
use wgrad_tensor::optim::Optimizer;
use wgrad_tensor::{DType, Result, Tensor, TinyJit};

/// The sizes of one run.
struct Sizes {
    mnist_batch: usize,
    small_batch: usize,
    steps: usize,
    elementwise: usize,
    noop_kernels: usize,
}

/// A loop's figures, per run.
struct PerRun {
    /// Wall time, the final wait for the device included.
    wall: Duration,
    /// Device time of its kernels (timestamps, from a second loop).
    kernel: Duration,
    /// Kernels launched.
    kernels: f64,
    /// Time in the calls less the time they blocked on the device.
    host: Duration,
    /// Submissions to the device's queue.
    submits: f64,
}

/// `f` run `runs` times after one warm-up, waiting for the device at the end with `sync`: the
/// wall time, host time and submits per run, and the device time and kernels per run from the
/// same loop run again with kernel timing on.
fn measure(runs: usize, mut f: impl FnMut() -> Result<()>, sync: impl Fn() -> Result<()>) -> Result<PerRun> {
    f()?;
    sync()?;
    reset_counters();
    let submits = counters().submits;
    let (mut busy, start) = (Duration::ZERO, Instant::now());
    for _ in 0..runs {
        let call = Instant::now();
        f()?;
        busy += call.elapsed();
    }
    let waited = counters().device_wait;
    sync()?;
    let wall = start.elapsed() / runs as u32;
    let submits = (counters().submits - submits) as f64 / runs as f64;
    let host = busy.saturating_sub(waited) / runs as u32;
    flags::set_timing(true);
    reset_counters();
    for _ in 0..runs {
        f()?;
    }
    let c = counters();
    flags::set_timing(false);
    Ok(PerRun {
        wall,
        kernel: c.kernel_time / runs as u32,
        kernels: c.kernels as f64 / runs as f64,
        host,
        submits,
    })
}

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut() -> Result<Duration>) -> Result<Duration> {
    let mut times = (0..runs).map(|_| f()).collect::<Result<Vec<_>>>()?;
    times.sort();
    Ok(times[runs / 2])
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.1} us", d.as_secs_f64() * 1e6)
}

fn row(what: &str, wall: &str, kernel: &str, kernels: &str, note: &str) {
    println!("| {what:<44} | {wall:>11} | {kernel:>11} | {kernels:>7} | {note:<26} |");
}

/// A beautiful_mnist step at `batch`, eager or jitted, on a few batches uploaded up front.
fn mnist_step(data: &Mnist, batch: usize, steps: usize, jitted: bool) -> Result<PerRun> {
    let model = model::Model::new(0)?;
    let opt = RefCell::new(model::optimizer(&model, 1e-3)?);
    // a few batches uploaded up front and cycled: the step, not the host's sampling
    let batches = (0..4)
        .map(|b| {
            data.train.batch(&(0..batch).map(|i| (b * batch + i) % data.train.len()).collect::<Vec<_>>())
        })
        .collect::<Result<Vec<_>>>()?;
    let mut jit = model::jit_train_step(&model, &opt);
    let mut i = 0;
    let mut step = || -> Result<()> {
        let (x, y) = &batches[i % batches.len()];
        i += 1;
        let loss = match jitted {
            true => jit.call(&[x, y])?.remove(0),
            false => model::train_step(&model, &mut opt.borrow_mut(), x, y)?,
        };
        loss.item::<f32>()?;
        Ok(())
    };
    step()?; // the jit captures on its second call; `measure` warms up once more
    measure(steps, step, || Ok(())) // each step reads its loss back
}

/// The MNIST example's training loop at `batch`, eager or jitted: the training digits on the
/// device, each step sets the learning rate, uploads a freshly sampled batch's indices, runs
/// the step (which picks the digits) and reads its loss back.
fn mnist_training(data: &Mnist, batch: usize, steps: usize, jitted: bool) -> Result<PerRun> {
    let model = model::Model::new(0)?;
    let opt = RefCell::new(model::optimizer(&model, 2e-3)?);
    let (images, labels) = data.train.tensors()?;
    Tensor::realize_all(&[&images, &labels])?;
    let mut jit = model::jit_picking_train_step(&model, &opt, &images, &labels);
    let mut i = 0usize;
    let mut step = || -> Result<()> {
        i += 1;
        opt.borrow().set_lr(2e-3 / i as f64)?;
        let picks: Vec<i32> =
            (0..batch).map(|k| ((i * 7919 + k * 104_729) % data.train.len()) as i32).collect();
        let picks = Tensor::from_vec(picks, &[batch])?;
        let loss = match jitted {
            true => jit.call(&[&picks])?.remove(0),
            false => model::picking_train_step(&model, &mut opt.borrow_mut(), (&images, &labels), &picks)?,
        };
        loss.item::<f32>()?;
        Ok(())
    };
    step()?;
    measure(steps, step, || Ok(()))
}

/// The rows of the training loops at `batch`, eager and jitted.
fn host_share_rows(data: &Mnist, batch: usize, steps: usize) -> Result<()> {
    for jitted in [false, true] {
        let r = mnist_training(data, batch, steps, jitted)?;
        let what = format!("MNIST example loop, batch {batch}, {}", if jitted { "jitted" } else { "eager" });
        let share = 100.0 * r.host.as_secs_f64() / r.wall.as_secs_f64();
        let note = format!("host {} = {share:.1}%", ms(r.host));
        row(&what, &ms(r.wall), &ms(r.kernel), &format!("{:.0}", r.kernels), &note);
    }
    Ok(())
}

/// Host time per replayed kernel: a jitted chain of `n` one-element kernels, the time
/// `call` takes to return (it does not wait for the device); and the kernels replayed.
fn replay_per_kernel(n: usize) -> Result<(Duration, usize)> {
    let mut jit = TinyJit::new(|x: &[Tensor]| {
        let mut y = x[0].clone();
        for _ in 0..n {
            y = y.add(1.0)?.contiguous();
        }
        Ok(vec![y])
    });
    let x = Tensor::from_slice(&[0.0f32], &[1])?;
    for _ in 0..3 {
        jit.call(&[&x])?[0].item::<f32>()?;
    }
    let host = median(21, || {
        let start = Instant::now();
        let out = jit.call(&[&x])?;
        let host = start.elapsed();
        out[0].item::<f32>()?;
        Ok(host)
    })?;
    let kernels = jit.captured_kernels().unwrap_or(0);
    Ok((host / kernels.max(1) as u32, kernels))
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = args.iter().find(|a| ["--small", "--tiny", "--host-share"].contains(&a.as_str()));
    let flag = flag.cloned().unwrap_or_default();
    let sizes = match flag.as_str() {
        "--small" => {
            Sizes { mnist_batch: 32, small_batch: 64, steps: 5, elementwise: 1 << 20, noop_kernels: 200 }
        }
        "--tiny" => {
            Sizes { mnist_batch: 4, small_batch: 2, steps: 2, elementwise: 1 << 16, noop_kernels: 50 }
        }
        _ => Sizes { mnist_batch: 512, small_batch: 64, steps: 20, elementwise: 1 << 25, noop_kernels: 1000 },
    };
    let device = Tensor::default_device()?;
    let name = wgrad_engine::device::open_device(&device)?.name();
    println!("wgrad host overhead and TinyJit on {name} {flag}");
    row("measurement", "wall", "kernel", "kernels", "note");
    println!("|{:-<46}|{:-<13}|{:-<13}|{:-<9}|{:-<28}|", "", "", "", "", "");
    let data = Mnist::sample()?;
    if flag == "--host-share" {
        let steps = args.iter().position(|a| a == "--steps").and_then(|i| args.get(i + 1)?.parse().ok());
        return Ok(host_share_rows(&data, sizes.small_batch, steps.unwrap_or(20))?);
    }

    let b = sizes.mnist_batch;
    for jitted in [false, true] {
        let r = mnist_step(&data, b, sizes.steps, jitted)?;
        let what =
            format!("beautiful_mnist step, batch {b}, Adam, {}", if jitted { "jitted" } else { "eager" });
        let note = format!("host {}", ms(r.host));
        row(&what, &ms(r.wall), &ms(r.kernel), &format!("{:.0}", r.kernels), &note);
    }

    let (per_kernel, kernels) = replay_per_kernel(sizes.noop_kernels)?;
    row(
        "replay host time per kernel (one-element kernels)",
        &us(per_kernel),
        "",
        &kernels.to_string(),
        "host only, no wait",
    );

    let x = Tensor::from_slice(&[1.5f32], &[1])?;
    let submits = counters().submits;
    let readback = median(201, || {
        let start = Instant::now();
        x.mul(2.0)?.item::<f32>()?;
        Ok(start.elapsed())
    })?;
    let submits = (counters().submits - submits) as f64 / 201.0;
    row("one-op graph + scalar readback", &us(readback), "", "1", &format!("median, {submits:.1} submits"));

    let realize = median(201, || {
        let y = x.mul(2.0)?;
        let start = Instant::now();
        y.realize()?;
        Ok(start.elapsed())
    })?;
    x.mul(2.0)?.item::<f32>()?;
    row("realize of a cached one-op graph", &us(realize), "", "1", "host only, median");

    let n = sizes.elementwise;
    let big = Tensor::ones(&[n], DType::F32)?.contiguous();
    big.realize()?;
    // reading a one-element buffer back waits for everything submitted before; 100 calls, so
    // the loop's steady state outweighs its first submits (the device coalesces calls made
    // while it is busy into growing submits)
    let sync = || x.item::<f32>().map(drop);
    let r = measure(
        100,
        || {
            big.mul(2.0)?.add(1.0)?.realize()?;
            Ok(())
        },
        sync,
    )?;
    let what = format!("eager x*2+1 over {}K f32, in a loop", n >> 10);
    let ratio = r.wall.as_secs_f64() / r.kernel.as_secs_f64().max(1e-12);
    let note = format!("x{ratio:.2}, host {}, {:.2} submits", us(r.host), r.submits);
    row(&what, &ms(r.wall), &ms(r.kernel), &format!("{:.0}", r.kernels), &note);

    host_share_rows(&data, sizes.small_batch, sizes.steps)?;
    Ok(())
}
