//! Generated-kernel benchmarks (plain `main`, no harness), each through the full codegen
//! (kernel AST -> opts -> lowerer -> linearizer -> WGSL -> pipeline):
//! 1. a fused elementwise kernel `out = (a + b) * c` over 32M f32 (3 reads, 1 write) -> GB/s;
//! 2. a 4096x4096x4096 f32 GEMM under the heuristics and a chosen register tile -> TFLOP/s;
//! 3. launch + submit + readback of a one-element kernel -> microseconds (median of 200).
//!
//! `cargo xtask bench` (or `cargo bench -p wgrad-runtime-wgpu --bench kernels`); optional
//! arguments: elementwise length, GEMM size, and `--search` to time a grid of 240 GEMM tiles
//! (how the chosen tile was found).
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use wgrad_codegen::{Opt, OptMode, OptOps, compile};
use wgrad_dtype::DType;
use wgrad_ops::{Arg, Ops, UOp};
use wgrad_runtime_wgpu::{Buffer, Device, GpuProgram, Result};
use wgrad_shape::{ShapeTracker, Sint, View};

fn sints(xs: &[i64]) -> Vec<Sint> {
    xs.iter().map(|&x| Sint::from(x)).collect()
}

/// A kernel-AST view of `shape` with `strides`.
fn view(shape: &[i64], strides: &[i64]) -> UOp {
    let view = View::new(&sints(shape), &sints(strides), Sint::from(0), None).expect("valid view");
    UOp::new(Ops::View, DType::VOID, [], Arg::View(Arc::new(ShapeTracker::from_view(view))))
}

fn load(slot: i64, shape: &[i64], strides: &[i64]) -> UOp {
    UOp::load(DType::F32, [UOp::define_global(DType::F32, slot), view(shape, strides)])
}

fn store(shape: &[i64], strides: &[i64], value: UOp) -> UOp {
    UOp::sink([UOp::store([UOp::define_global(DType::F32, 0), view(shape, strides), value])])
}

fn kernel(ast: &UOp, device: &Device, mode: &OptMode, name: &str) -> GpuProgram {
    let (_, program) = compile(ast, &device.target(), mode, name).expect("codegen");
    device.compile(&program).expect("WGSL compile")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn elementwise(device: &Device, n: i64) -> Result<()> {
    let ast = store(&[n], &[1], (load(1, &[n], &[1]) + load(2, &[n], &[1])) * load(3, &[n], &[1]));
    let inputs: Vec<Buffer> =
        [1.0f32, 2.0, 3.0].iter().map(|&v| device.upload(&vec![v; n as usize])).collect::<Result<_>>()?;
    let out = device.alloc_elements(DType::F32, n as usize)?;
    let buffers = [&out, &inputs[0], &inputs[1], &inputs[2]];
    let moved = 16.0 * n as f64;
    let modes = [
        ("heuristic", OptMode::Heuristic),
        ("local 256", OptMode::Given(vec![Opt::new(OptOps::Local, 0, 256)])),
        (
            "upcast 4, local 256",
            OptMode::Given(vec![Opt::new(OptOps::Upcast, 0, 4), Opt::new(OptOps::Local, 0, 256)]),
        ),
    ];
    for (label, mode) in modes {
        let t = device.time_kernel(&kernel(&ast, device, &mode, "elementwise"), &buffers, 20)?;
        println!("elementwise (a+b)*c, {n} f32, {label}: {:.0} GB/s ({t:?})", moved / t.as_secs_f64() / 1e9);
    }
    let last = device.read_range(&out, 4 * (n as u64 - 1)..4 * n as u64)?;
    assert_eq!(last, 9.0f32.to_le_bytes(), "elementwise result");
    Ok(())
}

fn gemm(device: &Device, s: i64, search: bool) -> Result<()> {
    // C[m, n] = sum_k A[m, k] * B[k, n] over the full shape (m, n, k)
    let a = load(1, &[s, s, s], &[s, 0, 1]);
    let b = load(2, &[s, s, s], &[0, 1, s]);
    let ast = store(&[s, s, 1], &[s, 1, 0], (a * b).reduce_axis(Ops::Add, &[2]));
    let (n, su) = ((s * s) as usize, s as usize);
    let (ha, hb): (Vec<f32>, Vec<f32>) =
        (0..n).map(|i| (((i % 7) as f32 - 3.0) / 4.0, ((i % 5) as f32 - 2.0) / 4.0)).unzip();
    let (da, db) = (device.upload(&ha)?, device.upload(&hb)?);
    let out = device.alloc_elements(DType::F32, n)?;
    let flops = 2.0 * (s as f64).powi(3);
    // C[1, 2] on the host
    let want: f32 = (0..su).map(|k| ha[su + k] * hb[k * su + 2]).sum();
    let mut results = vec![];
    for (label, mode) in gemm_modes(search) {
        let (_, program) = match compile(&ast, &device.target(), &mode, "gemm") {
            Ok(done) => done,
            Err(_) => continue, // a tile the kernel refuses (too many threads, size mismatch)
        };
        let t = device.time_kernel(&device.compile(&program)?, &[&out, &da, &db], 5)?;
        let got = device.read_range(&out, 4 * (su as u64 + 2)..4 * (su as u64 + 3))?;
        let got = f32::from_le_bytes([got[0], got[1], got[2], got[3]]);
        assert!((got - want).abs() <= 1e-3 * want.abs() + 1e-3, "GEMM {label}: C[1,2] = {got}, want {want}");
        results.push((flops / t.as_secs_f64() / 1e12, label, t));
    }
    results.sort_by(|a, b| b.0.total_cmp(&a.0));
    let named = results.iter().filter(|r| !r.1.starts_with("upcast"));
    for (tflops, label, t) in results.iter().filter(|r| r.1.starts_with("upcast")).take(5).chain(named) {
        println!("GEMM {s}^3 f32, {label}: {tflops:.2} TFLOP/s ({t:?})");
    }
    println!("GEMM: {} opt lists timed", results.len());
    Ok(())
}

/// The register tile chosen by the search below on an H200 (21.4 TFLOP/s): UPCAST 8 on m and n,
/// a 16x16 workgroup with n as the fastest thread index, k unrolled by 8.
fn chosen_gemm_tile() -> OptMode {
    tile((8, 8), (16, 16), true, 8)
}

fn tile((u0, u1): (usize, usize), (l0, l1): (usize, usize), n_first: bool, unroll: usize) -> OptMode {
    let (m, n) = (Opt::new(OptOps::Local, 0, l0), Opt::new(OptOps::Local, 1, l1));
    let locals = if n_first { [n, m] } else { [m, n] };
    let mut opts = vec![Opt::new(OptOps::Upcast, 0, u0), Opt::new(OptOps::Upcast, 1, u1)];
    opts.extend(locals);
    opts.push(Opt::new(OptOps::Unroll, 0, unroll));
    OptMode::Given(opts)
}

/// The heuristics and the chosen tile; with `search`, also a grid of register tiles (UPCAST
/// on m and n), workgroup shapes (LOCAL on m and n, in both orders: the first local is the
/// fastest-varying thread index) and k unrolls.
fn gemm_modes(search: bool) -> Vec<(String, OptMode)> {
    let mut modes =
        vec![("heuristic".to_owned(), OptMode::Heuristic), ("chosen tile".to_owned(), chosen_gemm_tile())];
    if !search {
        return modes;
    }
    let locals = [(8, 8), (8, 16), (16, 8), (16, 16), (4, 16), (16, 4), (4, 32), (2, 32), (4, 8), (2, 16)];
    for up in [(4, 4), (4, 8), (8, 4), (8, 8)] {
        for local in locals {
            for n_first in [false, true] {
                for unroll in [2, 4, 8] {
                    let order = if n_first { "n-first" } else { "m-first" };
                    let label = format!(
                        "upcast {}x{}, local {}x{} {order}, unroll {unroll}",
                        up.0, up.1, local.0, local.1
                    );
                    modes.push((label, tile(up, local, n_first, unroll)));
                }
            }
        }
    }
    modes
}

fn round_trip(device: &Device) -> Result<()> {
    let ast = store(&[1], &[1], load(0, &[1], &[1]) + UOp::constant(DType::F32, 1.0));
    let tiny = kernel(&ast, device, &OptMode::Heuristic, "tiny");
    let x = device.upload(&[0.0f32])?;
    let iters = 200;
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters + 10 {
        let start = Instant::now();
        let mut batch = device.batch();
        device.launch(&mut batch, &tiny, &[&x], &[])?;
        device.submit(batch)?;
        let value = device.read_as::<f32>(&x)?;
        let elapsed = start.elapsed();
        assert_eq!(value, [i as f32 + 1.0]);
        if i >= 10 {
            samples.push(elapsed);
        }
    }
    let min = *samples.iter().min().unwrap_or(&Duration::ZERO);
    let med = median(samples);
    println!(
        "tiny generated kernel, launch + submit + readback: median {:.1} us, min {:.1} us ({iters} runs)",
        med.as_secs_f64() * 1e6,
        min.as_secs_f64() * 1e6
    );
    Ok(())
}

fn main() -> Result<()> {
    let device = Device::new()?;
    let adapter = device.adapter();
    println!("adapter: {} ({}, {:?})", adapter.name, adapter.backend, adapter.kind);
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a.as_str() != "--bench").collect();
    let search = args.iter().any(|a| a == "--search");
    let sizes: Vec<i64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let max_elems = (device.limits().max_allocation() / 4) as i64;
    elementwise(&device, sizes.first().copied().unwrap_or(32 << 20).min(max_elems))?;
    gemm(&device, sizes.get(1).copied().unwrap_or(4096), search)?;
    round_trip(&device)
}
