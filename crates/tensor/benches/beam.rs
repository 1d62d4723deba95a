//! BEAM's targets (issue 11), printed as a table: an f32 GEMM with the default heuristics and
//! with BEAM (TFLOP/s from device timestamps, the search's wall time, a cache hit's time),
//! and the kernel time of a jitted beautiful_mnist training step with the default heuristics
//! and with BEAM (the first BEAM step's wall time is the searches'). The cache is a fresh file
//! in the temp dir, so every search really runs. Device: `WGRAD_DEVICE`, else the default.
//!
//! `cargo bench -p wgrad-tensor --bench beam [-- --n 4096 --batch 512 --width 2 --steps 3
//! --half 0]` (`--n 0` or `--batch 0` skips that part; `--half 1` makes the GEMM's inputs f16,
//! so the search starts from the tensor-core actions where the device has them).
#![allow(clippy::print_stdout, reason = "a benchmark prints its numbers")]

#[path = "../examples/mnist/model.rs"]
#[allow(dead_code, reason = "the bench runs training steps only")]
mod model;

use std::cell::RefCell;
use std::time::{Duration, Instant};

use wgrad_engine::beam::{BeamCache, OptMode, Origin, beam, set_cache_path, time_opts};
use wgrad_engine::device::open_device;
use wgrad_engine::{ItemKind, counters, flags, reset_counters};
use wgrad_tensor::datasets::mnist::Mnist;
use wgrad_tensor::optim::Adam;
use wgrad_tensor::{DType, Result, Tensor};

/// The command line: `--name value` pairs.
struct Args {
    n: usize,
    batch: usize,
    width: usize,
    steps: usize,
    half: usize,
}

fn args() -> Args {
    let mut a = Args { n: 4096, batch: 512, width: 2, steps: 3, half: 0 };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.windows(2) {
        let v = || pair[1].parse().unwrap_or_else(|_| panic!("{} takes a number", pair[0]));
        match pair[0].as_str() {
            "--n" => a.n = v(),
            "--batch" => a.batch = v(),
            "--width" => a.width = v(),
            "--steps" => a.steps = v(),
            "--half" => a.half = v(),
            _ => {}
        }
    }
    a
}

fn ms(t: Duration) -> f64 {
    t.as_secs_f64() * 1e3
}

/// The GEMM rows: default and BEAM TFLOP/s, search time, cache hit time.
fn gemm(n: usize, dtype: DType, width: usize, cache: &BeamCache) -> Result<()> {
    let (a, b) = (Tensor::rand(&[n, n], 1)?.cast(dtype), Tensor::rand(&[n, n], 2)?.cast(dtype));
    Tensor::realize_all(&[&a, &b])?;
    let c = a.matmul(&b)?;
    let backend = open_device(c.device())?;
    let schedule = c.schedule(backend.max_buffers())?;
    let ast = schedule
        .items
        .iter()
        .find_map(|i| match &i.kind {
            ItemKind::Kernel(ast) => Some(ast.clone()),
            ItemKind::Copy => None,
        })
        .expect("a matmul is a kernel");
    let flops = 2.0 * (n as f64).powi(3);
    let tflops = |t: Duration| flops / t.as_secs_f64() / 1e12;
    // a second of work first: an idle GPU's clocks are down
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs(1) {
        time_opts(&ast, backend.as_ref(), &OptMode::Heuristic, 20)?;
    }
    let default = time_opts(&ast, backend.as_ref(), &OptMode::Heuristic, 10)?;
    let start = Instant::now();
    let found = beam(&ast, backend.as_ref(), width, "gemm", Some(cache))?;
    let searched = start.elapsed();
    let Origin::Search(s) = &found.origin else { panic!("a fresh cache cannot hit") };
    let chosen = time_opts(&ast, backend.as_ref(), &OptMode::Given(found.opts.clone()), 10)?;
    let mut hits: Vec<Duration> = (0..21)
        .map(|_| {
            let start = Instant::now();
            let hit = beam(&ast, backend.as_ref(), width, "gemm", Some(cache)).expect("a hit");
            assert!(matches!(hit.origin, Origin::Cache { .. }), "the second ask hits the cache");
            start.elapsed()
        })
        .collect();
    hits.sort();
    println!("{dtype} GEMM {n}, device: {}", backend.name());
    println!("| setting | time | TFLOP/s |");
    println!("| --- | --- | --- |");
    println!("| default heuristics | {:.3} ms | {:.3} |", ms(default), tflops(default));
    println!("| BEAM={width} | {:.3} ms | {:.3} |", ms(chosen), tflops(chosen));
    println!(
        "BEAM={width} search: {:.1} s wall ({} rounds, {} candidates timed{}); cache hit: median {:.3} ms, max {:.3} ms",
        searched.as_secs_f64(),
        s.rounds,
        s.timed,
        s.mismatch.as_ref().map_or(String::new(), |m| format!("; winner dropped: {m}")),
        ms(hits[hits.len() / 2]),
        ms(hits[hits.len() - 1]),
    );
    println!("chosen opts: {}", found.summary("gemm"));
    Ok(())
}

/// Kernel time of one training step: the fastest of `steps` measured steps, after a second of
/// steps (an idle GPU's clocks are down: measured cold, an H100's step took 2-5x longer).
fn step_kernel_time(step: &mut dyn FnMut() -> Result<f32>, steps: usize) -> Result<Duration> {
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs(1) {
        step()?;
    }
    let mut best = Duration::MAX;
    for _ in 0..steps {
        reset_counters();
        step()?;
        best = best.min(counters().kernel_time);
    }
    Ok(best)
}

/// A jitted training step at the current BEAM setting: the wall time of its first call (which
/// compiles, and searches with BEAM), its kernel count and its kernel time. Jitted, the step's
/// kernels run back to back in one submission, so the GPU stays busy and its clocks up (timed
/// eagerly, each kernel waits for its own timestamps and the clocks drop).
fn jitted_step(
    net: &model::Model,
    opt: &RefCell<Adam>,
    batch: [&Tensor; 2],
    steps: usize,
) -> Result<(Duration, u64, Duration)> {
    let mut jit = model::jit_train_step(net, opt);
    let mut step = || jit.call(&batch)?.remove(0).item::<f32>();
    let start = Instant::now();
    reset_counters();
    step()?;
    let (first, kernels) = (start.elapsed(), counters().kernels);
    step()?; // captured
    Ok((first, kernels, step_kernel_time(&mut step, steps)?))
}

/// The MNIST rows: kernel time per jitted step with the default heuristics and with BEAM.
fn mnist(batch: usize, width: usize, steps: usize) -> Result<()> {
    let data = Mnist::sample().expect("the shipped MNIST sample");
    let picks: Vec<usize> = (0..batch).map(|i| i % data.train.len()).collect();
    let (images, labels) = data.train.batch(&picks).expect("a batch");
    let net = model::Model::new(0)?;
    let opt = RefCell::new(model::optimizer(&net, 1e-3)?);
    flags::set_timing(true);
    flags::set_beam(0);
    let (_, kernels, default) = jitted_step(&net, &opt, [&images, &labels], steps)?;
    flags::set_beam(width);
    let (searched, _, beamed) = jitted_step(&net, &opt, [&images, &labels], steps)?;
    flags::set_beam(0);
    flags::set_timing(false);
    println!("beautiful_mnist training step, batch {batch} ({kernels} kernels), jitted");
    println!("| setting | kernel time per step |");
    println!("| --- | --- |");
    println!("| default heuristics | {:.3} ms |", ms(default));
    println!("| BEAM={width} | {:.3} ms ({:.2}x the default) |", ms(beamed), ms(beamed) / ms(default));
    println!("BEAM={width}: the first step (searching every kernel) took {:.1} s", searched.as_secs_f64());
    Ok(())
}

fn main() -> Result<()> {
    let a = args();
    let path = std::env::temp_dir().join(format!("wgrad-beam-bench-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let cache = BeamCache::open(&path)?;
    set_cache_path(Some(path.clone()));
    let start = Instant::now();
    if a.n > 0 {
        gemm(a.n, if a.half > 0 { DType::F16 } else { DType::F32 }, a.width, &cache)?;
    }
    if a.batch > 0 {
        mnist(a.batch, a.width, a.steps)?;
    }
    println!("total {:.1} s", start.elapsed().as_secs_f64());
    let _ = std::fs::remove_file(&path);
    Ok(())
}
