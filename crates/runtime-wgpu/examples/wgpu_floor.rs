//! `cargo run --release -p wgrad-runtime-wgpu --example wgpu_floor`: what wgpu itself costs
//! on this machine's best adapter, without wgrad: the floor under the host-time targets of
//! the engine (a one-op graph with a scalar readback, a cached realize). Each line is the
//! median of 2,000 calls, in microseconds:
//! - an empty submit, and a non-blocking poll;
//! - a one-thread kernel recorded and submitted (what a cached realize must do at least);
//! - the same then waiting for it (`poll` until the queue is empty);
//! - the same, spinning on non-blocking polls instead;
//! - the same with a 4-byte copy to a mappable buffer, mapped and read (a scalar readback),
//!   waiting and spinning.
#![allow(clippy::print_stdout, reason = "an example prints its numbers")]

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

const SHADER: &str = "@group(0) @binding(0) var<storage, read_write> d: array<f32>;
@compute @workgroup_size(1) fn main() { d[0] = d[0] * 2.0; }";

fn median_us(mut f: impl FnMut()) -> f64 {
    for _ in 0..50 {
        f();
    }
    let mut times: Vec<Duration> = (0..2000)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1e6
}

fn main() {
    let Some(adapter) = common::best_adapter() else {
        println!("no adapter");
        return;
    };
    println!("adapter: {} ({:?})", adapter.get_info().name, adapter.get_info().backend);
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default())).expect("device");
    let pipeline = common::pipeline(&device, SHADER);
    let data = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 4,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 4,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry { binding: 0, resource: data.as_entire_binding() }],
    });
    let launch = |copy: bool| {
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
        if copy {
            encoder.copy_buffer_to_buffer(&data, 0, &staging, 0, 4);
        }
        queue.submit([encoder.finish()]);
    };
    let wait = || {
        device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    };
    // polls without blocking until the queue is empty: no sleep and wake-up in the driver
    let spin = || while !device.poll(wgpu::PollType::Poll).expect("poll").is_queue_empty() {};
    let empty = median_us(|| {
        queue.submit([device.create_command_encoder(&Default::default()).finish()]);
    });
    wait();
    let poll = median_us(|| {
        let _ = device.poll(wgpu::PollType::Poll);
    });
    let submit = median_us(|| launch(false));
    wait();
    let waited = median_us(|| {
        launch(false);
        wait();
    });
    let spun = median_us(|| {
        launch(false);
        spin();
    });
    let readback = |wait_for_it: &dyn Fn()| {
        median_us(|| {
            launch(true);
            let slice = staging.slice(..);
            let (done, mapped) = mpsc::channel();
            slice.map_async(wgpu::MapMode::Read, move |r| {
                let _ = done.send(r);
            });
            wait_for_it();
            mapped.recv().expect("callback").expect("map");
            let value = f32::from_le_bytes(
                slice.get_mapped_range().expect("range")[..4].try_into().expect("4 bytes"),
            );
            std::hint::black_box(value);
            staging.unmap();
        })
    };
    let (read_waited, read_spun) = (readback(&wait), readback(&spin));
    println!("empty submit          {empty:8.1} us");
    println!("poll (no wait)        {poll:8.1} us");
    println!("kernel submit         {submit:8.1} us");
    println!("kernel submit + wait  {waited:8.1} us");
    println!("kernel submit + spin  {spun:8.1} us");
    println!("kernel + readback     {read_waited:8.1} us (blocking wait), {read_spun:.1} us (spinning)");
}
