//! Engine overhead, printed (not asserted): (a) realizing a one-op graph whose kernel is
//! compiled already, plus reading back one scalar; (b) scheduling a 1000-op graph.
//! The device is `WGRAD_DEVICE` (else the default device).
//!
//! `cargo bench -p wgrad-engine --bench overhead`
#![allow(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use wgrad_dtype::DType;
use wgrad_engine::device::{default_device, open_device};
use wgrad_engine::{DeviceName, download, lazy, prepare, schedule_with, upload};
use wgrad_ops::{Ops, UOp};

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

/// (a): a fresh `x * 2` over a one-element buffer each time (so nothing is cached but the
/// kernel), realized and read back.
fn realize_one_op(device: &DeviceName) -> Duration {
    let x = lazy::reshape(&upload(device, DType::F32, &1.5f32.to_le_bytes()).unwrap(), &[1]);
    let two = lazy::expand(&lazy::reshape(&lazy::constant(device, DType::F32, 2.0), &[1]), &[1]);
    let run = || {
        let y = &x * &two;
        let pending = prepare(&[y]).unwrap();
        let out: UOp = pending.results()[0].clone();
        pending.run().unwrap();
        let bytes = download(&out.src()[0]).unwrap();
        assert_eq!(f32::from_le_bytes(bytes[..4].try_into().unwrap()), 3.0);
    };
    run();
    median(2001, run)
}

/// (b): about 1000 lazy ops: an MLP of 64-wide layers, each `relu(y @ w + b) * s + y`
/// (a matmul as a broadcast multiply and a sum, then elementwise ops).
fn schedule_1000_ops(device: &DeviceName) -> (Duration, usize, usize) {
    let upload_f32 = |n: usize, shape: &[usize]| {
        let bytes: Vec<u8> = (0..n).flat_map(|i| ((i % 17) as f32 * 0.01).to_le_bytes()).collect();
        lazy::reshape(&upload(device, DType::F32, &bytes).unwrap(), shape)
    };
    let full = |v: f32, shape: &[usize]| {
        let c = lazy::constant(device, DType::F32, v);
        lazy::expand(&lazy::reshape(&c, &vec![1; shape.len()]), shape)
    };
    let (n, d) = (32, 64);
    let mut y = upload_f32(n * d, &[n, d]);
    let w = upload_f32(d * d, &[d, d]);
    let b = lazy::expand(&lazy::reshape(&upload_f32(d, &[d]), &[1, d]), &[n, d]);
    let mut ops = 0;
    while ops < 1000 {
        let xs = lazy::expand(&lazy::reshape(&y, &[n, d, 1]), &[n, d, d]);
        let ws = lazy::expand(&lazy::reshape(&w, &[1, d, d]), &[n, d, d]);
        let mm = lazy::reshape(&lazy::reduce(&(&xs * &ws), Ops::Add, &[1]), &[n, d]);
        let pre = &mm + &b;
        let relu = pre.cmp_lt(full(0.0, &[n, d])).where_(&full(0.0, &[n, d]), &pre);
        y = &(&relu * &full(0.5, &[n, d])) + &y;
        ops += 16;
    }
    let limits = open_device(device).unwrap().kernel_limits();
    let schedule = schedule_with(std::slice::from_ref(&y), limits).unwrap();
    let time = median(21, || {
        black_box(schedule_with(std::slice::from_ref(&y), limits).unwrap());
    });
    (time, ops, schedule.kernel_count())
}

fn main() {
    let device = default_device().unwrap();
    let name = open_device(&device).unwrap().name();
    let one = realize_one_op(&device);
    println!(
        "{name}: realize one-op graph (kernel cached) + read back one scalar: {:.1} us",
        one.as_secs_f64() * 1e6
    );
    let (time, ops, kernels) = schedule_1000_ops(&device);
    println!("{name}: schedule a {ops}-op graph ({kernels} kernels): {:.2} ms", time.as_secs_f64() * 1e3);
}
