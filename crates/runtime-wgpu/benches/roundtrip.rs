//! Runtime benchmarks (plain `main`, no harness):
//! 1. a fused elementwise pass `out = a + b * c` over 32M f32 (3 reads, 1 write) -> GB/s;
//! 2. a tiny kernel's submit + readback round trip -> microseconds (median of 200).
//!
//! Run with `cargo bench -p wgrad-runtime-wgpu --bench roundtrip`; pass an element
//! count as the first argument to change the size of (1).
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use wgrad_runtime_wgpu::{Device, Result};

/// Workgroup size of the fused kernel.
const WG: u32 = 256;

/// `out = a + b * c`, launched folded (see `fold_workgroups`).
fn fused_source(workgroups: u32) -> String {
    format!(
        "
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> c: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size({WG})
fn fused(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {{
    let wg = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
    if (wg >= {workgroups}u) {{ return; }}
    let i = wg * {WG}u + lid;
    if (i < arrayLength(&out)) {{ out[i] = a[i] + b[i] * c[i]; }}
}}
"
    )
}

const TINY: &str = "
@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@compute @workgroup_size(1)
fn tiny() { x[0] = x[0] + 1u; }
";

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn bandwidth(device: &Device, n: u32) -> Result<()> {
    let bytes = 4 * u64::from(n);
    let a = device.upload(&vec![1.0f32; n as usize])?;
    let b = device.upload(&vec![2.0f32; n as usize])?;
    let c = device.upload(&vec![3.0f32; n as usize])?;
    let out = device.alloc(bytes)?;
    let workgroups = n.div_ceil(WG);
    let fused = device.pipeline(&fused_source(workgroups), "fused")?;
    let launch = |count: usize| -> Result<_> {
        let mut batch = device.batch();
        for _ in 0..count {
            batch.dispatch(&fused, &[&a, &b, &c, &out], [workgroups, 1, 1])?;
        }
        Ok(batch)
    };
    device.run_timed(launch(3)?)?;
    let check = device.read_range(&out, bytes - 4..bytes)?;
    assert_eq!(check, 7.0f32.to_le_bytes(), "fused kernel result");

    let iters = 20;
    let start = Instant::now();
    device.submit(launch(iters)?)?;
    device.sync()?;
    let wall = start.elapsed() / iters as u32;
    let moved = 4.0 * bytes as f64;
    println!(
        "fused a+b*c, {n} f32 ({} MiB per buffer): {:.1} GB/s wall ({:?} per launch, {iters} launches in one submit)",
        bytes >> 20,
        moved / wall.as_secs_f64() / 1e9,
        wall
    );
    let gpu: Vec<Duration> = device.run_timed(launch(iters)?)?.into_iter().flatten().collect();
    if gpu.is_empty() {
        println!("fused a+b*c: no timestamp queries on this adapter");
    } else {
        let t = median(gpu);
        println!(
            "fused a+b*c: {:.1} GB/s GPU time (median {t:?} per launch, timestamp queries)",
            moved / t.as_secs_f64() / 1e9
        );
    }
    Ok(())
}

fn round_trip(device: &Device) -> Result<()> {
    let x = device.upload(&[0u32])?;
    let tiny = device.pipeline(TINY, "tiny")?;
    let iters = 200;
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters + 10 {
        let start = Instant::now();
        let mut batch = device.batch();
        batch.dispatch(&tiny, &[&x], [1, 1, 1])?;
        device.submit(batch)?;
        let value = device.read_as::<u32>(&x)?;
        let elapsed = start.elapsed();
        assert_eq!(value, [i as u32 + 1]);
        if i >= 10 {
            samples.push(elapsed);
        }
    }
    let (min, med) = (*samples.iter().min().unwrap_or(&Duration::ZERO), median(samples));
    println!(
        "tiny kernel submit + readback: median {:.1} us, min {:.1} us ({iters} runs)",
        med.as_secs_f64() * 1e6,
        min.as_secs_f64() * 1e6
    );
    Ok(())
}

fn main() -> Result<()> {
    let device = Device::new()?;
    let adapter = device.adapter();
    println!("adapter: {} ({}, {:?})", adapter.name, adapter.backend, adapter.kind);
    let requested: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(32 << 20);
    let max_elems = u32::try_from(device.limits().max_allocation() / 4).unwrap_or(u32::MAX);
    let n = requested.min(max_elems);
    if n < requested {
        println!("note: {requested} elements exceed the binding limit; using {n}");
    }
    bandwidth(&device, n)?;
    round_trip(&device)
}
