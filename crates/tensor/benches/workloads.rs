//! Tensor-level benchmarks (plain `main`): the workloads of issue 16 through the Tensor API on
//! the default device. Each is timed two ways, side by side in one table at the end:
//! - wall time per call: building the graph, scheduling, launching and the device's work (the
//!   calls run back to back, then a one-element readback waits for the last);
//! - kernel time per call: the GPU timestamps of the call's kernels, summed;
//!
//! each as GB/s or TFLOP/s, and the kernel rate as a fraction of the device's roofline (known
//! devices by name, others from `--bandwidth GB/s --tflops TFLOP/s`). Bytes count each tensor
//! read or written once (softmax and `x*2+1`: 8 bytes an element); the MNIST step's flops are
//! the kernels' own count (`wgrad_engine::counters`).
//!
//! `cargo xtask bench`, or `cargo bench -p wgrad-tensor --bench workloads [-- FLAGS]`:
//! `--quick` (small sizes: a smoke run on lavapipe), `--kernels` (one MNIST step at DEBUG=2:
//! a line per kernel on stderr), `--bandwidth`, `--tflops`, `--gemm` (only the GEMMs: f32, and
//! f16 through `Tensor::matmul`, on tensor cores where the device has them, and f32 `x @ W.T`
//! as `nn::Linear` multiplies; then the f16
//! results' largest error against the f32 GEMM of the same halves, computed on the device).
#![allow(clippy::print_stdout, missing_docs)]

#[allow(dead_code)] // the benchmark trains and never evaluates
#[path = "../examples/mnist/model.rs"]
mod model;

use std::time::{Duration, Instant};

use wgrad_engine::{counters, flags};
use wgrad_tensor::{DType, Result, Tensor};

/// Peak memory bandwidth (GB/s), f32 throughput without tensor cores and dense f16 tensor-core
/// throughput (TFLOP/s) of devices known by a part of their adapter name.
const ROOFLINES: [(&str, f64, f64, f64); 3] =
    [("H200", 4800.0, 67.0, 989.0), ("H100", 3350.0, 67.0, 989.0), ("A100", 2039.0, 19.5, 312.0)];

/// What one call does, in the unit its rate is printed in.
#[derive(Clone, Copy)]
enum Work {
    /// Bytes moved.
    Bytes(f64),
    /// Floating-point operations.
    Flops(f64),
    /// Floating-point operations in f16 (against the tensor-core roofline).
    HalfFlops(f64),
    /// The flops the kernels count (the MNIST step).
    CountedFlops,
}

/// A workload: a name, its work, and one call through the Tensor API (realized).
struct Workload {
    name: String,
    work: Work,
    call: Box<dyn FnMut() -> Result<Tensor>>,
}

/// A measured workload.
struct Row {
    name: String,
    wall: Duration,
    kernel: Duration,
    kernels: f64,
    /// Work per call in bytes or flops, and whether it is flops.
    work: f64,
    flops: bool,
    /// Whether its roofline is the f16 tensor-core peak.
    half: bool,
}

/// Waits for `t` (a readback of its first element: the device runs in order).
fn sync(t: &Tensor) -> Result<()> {
    let first = t.flatten(0)?.shrink(&[(0, 1)])?;
    match first.dtype() == DType::F32 {
        true => first.to_vec::<f32>().map(|_| ()),
        false => first.cast(DType::F32).to_vec::<f32>().map(|_| ()),
    }
}

/// Runs `w` back to back `iters` times for the wall time, then `3` times with kernel timing on.
/// Each call's result is dropped before the next is built, so no call finds its result
/// computed already.
fn measure(w: &mut Workload, iters: usize) -> Result<Row> {
    for _ in 0..2 {
        sync(&(w.call)()?)?;
    }
    let start = Instant::now();
    let mut last = None;
    for _ in 0..iters {
        drop(last.take());
        last = Some((w.call)()?);
    }
    if let Some(t) = &last {
        sync(t)?;
    }
    let wall = start.elapsed() / iters as u32;
    drop(last);
    // timed kernels finish before realize returns: the readback is outside the counts
    const TIMED: u32 = 3;
    // at the clocks a busy GPU keeps: a host-bound loop (the eager MNIST step) leaves the GPU
    // idle between kernels, and an H200 then timed that step's kernels at 7.9-11.3 ms in some
    // runs against 3.0 in others
    wgrad_engine::device::open_device(&Tensor::default_device()?)?.raise_clocks()?;
    flags::set_timing(true);
    let (mut kernels, mut kernel, mut counted) = (0, Duration::ZERO, 0);
    for _ in 0..TIMED {
        let before = counters();
        let out = (w.call)()?;
        let after = counters();
        sync(&out)?;
        kernels += after.kernels - before.kernels;
        kernel += after.kernel_time - before.kernel_time;
        counted += after.flops - before.flops;
    }
    flags::set_timing(false);
    let (kernels, kernel) = (kernels as f64 / f64::from(TIMED), kernel / TIMED);
    let (work, flops) = match w.work {
        Work::Bytes(b) => (b, false),
        Work::Flops(f) | Work::HalfFlops(f) => (f, true),
        Work::CountedFlops => (counted as f64 / f64::from(TIMED), true),
    };
    let half = matches!(w.work, Work::HalfFlops(_));
    Ok(Row { name: w.name.clone(), wall, kernel, kernels, work, flops, half })
}

fn random(shape: &[usize], seed: u64) -> Result<Tensor> {
    let t = Tensor::rand(shape, seed)?;
    t.realize()?;
    Ok(t)
}

/// The GEMM sizes: 4096 and 1024 (256 and 128 with `quick`).
fn gemm_sizes(quick: bool) -> [usize; 2] {
    if quick { [256, 128] } else { [4096, 1024] }
}

/// Two random `s x s` matrices in `dtype`, realized.
fn factors(s: usize, dtype: DType) -> Result<(Tensor, Tensor)> {
    let (a, b) = (random(&[s, s], 3)?.cast(dtype), random(&[s, s], 4)?.cast(dtype));
    a.realize()?;
    b.realize()?;
    Ok((a, b))
}

/// `C = A @ B` of `s x s` matrices in f32 and in f16, each realized.
fn gemms(quick: bool) -> Result<Vec<Workload>> {
    let mut list = vec![];
    for (dtype, work) in [(DType::F32, Work::Flops as fn(f64) -> Work), (DType::F16, Work::HalfFlops)] {
        for s in gemm_sizes(quick) {
            let (a, b) = factors(s, dtype)?;
            list.push(Workload {
                name: format!("{} GEMM {s}", if dtype == DType::F32 { "f32" } else { "f16" }),
                work: work(2.0 * (s as f64).powi(3)),
                call: Box::new(move || a.matmul(&b)?.realize().cloned()),
            });
        }
    }
    // nn::Linear's form: the second factor is a row-major (n, k) weight, contiguous along k
    let s = gemm_sizes(quick)[0];
    let (x, w) = factors(s, DType::F32)?;
    list.push(Workload {
        name: format!("f32 GEMM {s}, x @ W.T"),
        work: Work::Flops(2.0 * (s as f64).powi(3)),
        call: Box::new(move || x.matmul(&w.t()?)?.realize().cloned()),
    });
    Ok(list)
}

/// The f16 GEMMs' largest absolute error against the f32 GEMM of the same halves, and the
/// largest `|C|`, computed on the device.
fn half_gemm_errors(quick: bool) -> Result<()> {
    for s in gemm_sizes(quick) {
        let (a, b) = factors(s, DType::F16)?;
        let half = a.matmul(&b)?.cast(DType::F32);
        let full = a.cast(DType::F32).matmul(&b.cast(DType::F32))?;
        let err = half.sub(&full)?.abs().max(&[0, 1], false)?.item::<f32>()?;
        let scale = full.abs().max(&[0, 1], false)?.item::<f32>()?;
        println!(
            "f16 GEMM {s}: max abs error {err:.3e} against f32 on the same halves (max |C| {scale:.3e})"
        );
    }
    Ok(())
}

/// The workloads at full size (or small ones with `quick`).
fn workloads(quick: bool) -> Result<Vec<Workload>> {
    let (rows, cols) = if quick { (256, 1024) } else { (4096, 8192) };
    let n = if quick { 1 << 20 } else { 32 << 20 };
    let x = random(&[rows, cols], 1)?;
    let flat = random(&[n], 2)?;
    let elems = (rows * cols) as f64;
    let mut list = vec![
        Workload {
            name: format!("row sum {rows}x{cols} f32"),
            work: Work::Bytes(4.0 * (elems + rows as f64)),
            call: Box::new({
                let x = x.clone();
                move || x.sum(&[1], false)?.realize().cloned()
            }),
        },
        Workload {
            name: format!("softmax {rows}x{cols} f32"),
            work: Work::Bytes(8.0 * elems),
            call: Box::new(move || x.softmax(-1)?.realize().cloned()),
        },
        Workload {
            name: format!("x*2+1 {}M f32", n >> 20),
            work: Work::Bytes(8.0 * n as f64),
            call: Box::new(move || flat.mul(2.0)?.add(1.0)?.realize().cloned()),
        },
    ];
    list.extend(gemms(quick)?);
    list.push(mnist_step(if quick { 16 } else { 512 })?);
    Ok(list)
}

/// One beautiful_mnist training step (forward, backward, Adam) on random digits.
fn mnist_step(batch: usize) -> Result<Workload> {
    let net = model::Model::new(0)?;
    let mut opt = model::optimizer(&net, 1e-3)?;
    let images = random(&[batch, 1, 28, 28], 5)?;
    let labels = Tensor::randint(&[batch], 0, 10, 6)?;
    labels.realize()?;
    Ok(Workload {
        name: format!("beautiful_mnist step, batch {batch}, Adam"),
        work: Work::CountedFlops,
        call: Box::new(move || model::train_step(&net, &mut opt, &images, &labels)),
    })
}

/// `x` per second in units of 1e9 (GB/s) or 1e12 (TFLOP/s).
fn rate(work: f64, flops: bool, t: Duration) -> String {
    match (t.is_zero(), flops) {
        (true, _) => "-".into(),
        (false, true) => format!("{:.3} TFLOP/s", work / t.as_secs_f64() / 1e12),
        (false, false) => format!("{:.1} GB/s", work / t.as_secs_f64() / 1e9),
    }
}

fn ms(t: Duration) -> String {
    format!("{:.3} ms", t.as_secs_f64() * 1e3)
}

/// The value of `--flag` in `args`.
fn flag(args: &[String], name: &str) -> Option<f64> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let only_gemm = args.iter().any(|a| a == "--gemm");
    let device = Tensor::default_device()?;
    let backend = wgrad_engine::device::open_device(&device)?;
    let name = backend.name();
    let known = ROOFLINES.iter().find(|(part, ..)| name.contains(part)).map(|&(_, b, f, h)| (b, f, h));
    let roof = match (flag(&args, "--bandwidth"), flag(&args, "--tflops")) {
        (Some(b), Some(f)) => Some((b, f, known.map_or(f, |k| k.2))),
        _ => known,
    };
    let tensor_cores: Vec<String> = backend
        .target()
        .tensor_cores
        .iter()
        .map(|t| format!("{}x{}x{} {}->{}", t.dims.0, t.dims.1, t.dims.2, t.dtype_in, t.dtype_out))
        .collect();
    println!(
        "device: {name}; tensor cores: {}",
        if tensor_cores.is_empty() { "none".into() } else { tensor_cores.join(", ") }
    );
    let mut rows = vec![];
    let list = if only_gemm { gemms(quick)? } else { workloads(quick)? };
    for mut w in list {
        let iters = if quick { 3 } else { 10 };
        let row = measure(&mut w, iters)?;
        println!("  {}: {} a call, {} of kernels", row.name, ms(row.wall), ms(row.kernel));
        rows.push(row);
    }
    let header =
        ["workload", "wall / call", "wall rate", "kernels", "kernel time", "kernel rate", "roofline"];
    println!("\n| {} |", header.join(" | "));
    println!("|{}", " --- |".repeat(header.len()));
    for r in &rows {
        let fraction = match (roof, r.kernel.is_zero()) {
            (Some((bw, tf, tf16)), false) => {
                let peak = match (r.flops, r.half) {
                    (true, true) => tf16 * 1e12,
                    (true, false) => tf * 1e12,
                    (false, _) => bw * 1e9,
                };
                format!("{:.1}%", 100.0 * r.work / r.kernel.as_secs_f64() / peak)
            }
            _ => "-".into(),
        };
        println!(
            "| {} | {} | {} | {:.0} | {} | {} | {fraction} |",
            r.name,
            ms(r.wall),
            rate(r.work, r.flops, r.wall),
            r.kernels,
            ms(r.kernel),
            rate(r.work, r.flops, r.kernel),
        );
    }
    match roof {
        Some((bw, tf, tf16)) => {
            println!("roofline: {bw:.0} GB/s, {tf:.1} TFLOP/s f32, {tf16:.0} TFLOP/s f16 tensor cores")
        }
        None => println!("roofline: unknown device; give --bandwidth GB/s --tflops TFLOP/s"),
    }
    half_gemm_errors(quick)?;
    if args.iter().any(|a| a == "--kernels") {
        println!("\none MNIST step, a line per kernel (DEBUG=2) on stderr:");
        let mut step = mnist_step(if quick { 16 } else { 512 })?;
        sync(&(step.call)()?)?;
        flags::set_debug(2);
        sync(&(step.call)()?)?;
        flags::set_debug(0);
    }
    Ok(())
}
