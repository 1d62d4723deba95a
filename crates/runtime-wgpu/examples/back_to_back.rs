//! `cargo run --release -p wgrad-runtime-wgpu --example back_to_back`: what launching a large
//! memory-bound kernel again and again costs the device through wgpu, without wgrad: the floor
//! under an eager loop's wall time. The kernel is `y = x * 2 + 1` over 32M floats (128 MB read,
//! 128 MB written, 16-byte loads). Each line is in microseconds a kernel, from the device's
//! timestamps unless it says wall:
//! - the kernel alone: one timestamped pass a submit, waited for (median of 50);
//! - 100 timestamped passes in one submit: each pass's own time (median) and the time from one
//!   pass's end to the next one's beginning (median, and the largest);
//! - 100 untimed passes of one dispatch in one submit, but for the first one's beginning and the
//!   last one's end: the time between over 100;
//! - 100 dispatches in one pass, the pass timestamped: its time over 100; the same alternating
//!   two outputs (no two neighbouring dispatches write the same buffer);
//! - 100 submits of one untimed pass each, then one wait: wall time over 100.
#![allow(clippy::print_stdout, reason = "an example prints its numbers")]

mod common;

use std::sync::mpsc;
use std::time::Instant;

const SHADER: &str = "@group(0) @binding(0) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  y[g.x] = x[g.x] * 2.0 + 1.0;
}";

/// Floats the kernel reads and writes.
const N: u64 = 1 << 25;
/// Invocations a workgroup.
const WORKGROUP: u64 = 256;
/// Kernels a back-to-back measurement launches.
const RUNS: usize = 100;

struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipeline: wgpu::ComputePipeline,
    groups: [wgpu::BindGroup; 2],
    period_ns: f64,
}

impl Gpu {
    fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, group: usize) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.groups[group], &[]);
        pass.dispatch_workgroups((N / 4 / WORKGROUP) as u32, 1, 1);
    }

    fn wait(&self) {
        self.device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
    }

    /// Records `work` (given the query set) into one submit, resolves `queries` timestamps and
    /// returns them in microseconds from the first.
    fn timed(&self, queries: u32, work: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::QuerySet)) -> Vec<f64> {
        let set = self.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: None,
            ty: wgpu::QueryType::Timestamp,
            count: queries,
        });
        let size = 8 * u64::from(queries);
        let resolve = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&Default::default());
        work(&mut encoder, &set);
        encoder.resolve_query_set(&set, 0..queries, &resolve, 0);
        encoder.copy_buffer_to_buffer(&resolve, 0, &staging, 0, size);
        self.queue.submit([encoder.finish()]);
        let (done, mapped) = mpsc::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = done.send(r);
        });
        self.wait();
        mapped.recv().expect("callback").expect("map");
        let ticks: Vec<u64> =
            bytemuck::pod_collect_to_vec(&staging.slice(..).get_mapped_range().expect("range"));
        ticks.iter().map(|&t| t.wrapping_sub(ticks[0]) as f64 * self.period_ns / 1e3).collect()
    }

    /// A pass timestamped at `begin` and `begin + 1` in `set`.
    fn pass<'e>(
        encoder: &'e mut wgpu::CommandEncoder,
        set: &'e wgpu::QuerySet,
        begin: u32,
    ) -> wgpu::ComputePass<'e> {
        encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: None,
            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                query_set: set,
                beginning_of_pass_write_index: Some(begin),
                end_of_pass_write_index: Some(begin + 1),
            }),
        })
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let Some(adapter) = common::best_adapter() else {
        println!("no adapter");
        return;
    };
    if !adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
        println!("{}: no timestamp queries", adapter.get_info().name);
        return;
    }
    println!("adapter: {} ({:?})", adapter.get_info().name, adapter.get_info().backend);
    let descriptor = wgpu::DeviceDescriptor {
        required_features: wgpu::Features::TIMESTAMP_QUERY,
        required_limits: adapter.limits(),
        ..Default::default()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&descriptor)).expect("device");
    let pipeline = common::pipeline(&device, SHADER);
    let buffer = || {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 4 * N,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let (x, outputs) = (buffer(), [buffer(), buffer()]);
    let groups = outputs.each_ref().map(|y| {
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: y.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: x.as_entire_binding() },
            ],
        })
    });
    let period_ns = f64::from(queue.get_timestamp_period());
    let gpu = Gpu { device, queue, pipeline, groups, period_ns };

    // warm-up: the clocks up, both outputs written once (wgpu clears new buffers on first use)
    let passes = |gpu: &Gpu, runs: usize, alternate: bool| {
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for i in 0..runs {
                gpu.dispatch(&mut pass, if alternate { i % 2 } else { 0 });
            }
        }
        gpu.queue.submit([encoder.finish()]);
    };
    let warm = Instant::now();
    while warm.elapsed().as_millis() < 300 {
        passes(&gpu, 20, true);
        gpu.wait();
    }

    let alone = median(
        (0..50)
            .map(|_| {
                let t = gpu.timed(2, |e, set| gpu.dispatch(&mut Gpu::pass(e, set, 0), 0));
                t[1]
            })
            .collect(),
    );
    let t = gpu.timed(2 * RUNS as u32, |e, set| {
        for i in 0..RUNS as u32 {
            gpu.dispatch(&mut Gpu::pass(e, set, 2 * i), 0);
        }
    });
    let own: Vec<f64> = (0..RUNS).map(|i| t[2 * i + 1] - t[2 * i]).collect();
    let gaps: Vec<f64> = (1..RUNS).map(|i| t[2 * i] - t[2 * i - 1]).collect();
    let largest_gap = gaps.iter().copied().fold(0.0, f64::max);
    let spread = gpu.timed(2, |e, set| {
        for i in 0..RUNS {
            let (first, last) = (i == 0, i + 1 == RUNS);
            let writes = wgpu::ComputePassTimestampWrites {
                query_set: set,
                beginning_of_pass_write_index: first.then_some(0),
                end_of_pass_write_index: last.then_some(1),
            };
            let descriptor = wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: (first || last).then_some(writes),
            };
            gpu.dispatch(&mut e.begin_compute_pass(&descriptor), 0);
        }
    });
    let spread = spread[1] / RUNS as f64;
    let one_pass = |alternate: bool| {
        let t = gpu.timed(2, |e, set| {
            let mut pass = Gpu::pass(e, set, 0);
            for i in 0..RUNS {
                gpu.dispatch(&mut pass, if alternate { i % 2 } else { 0 });
            }
        });
        t[1] / RUNS as f64
    };
    let (same, alternating) = (one_pass(false), one_pass(true));
    let start = Instant::now();
    for _ in 0..RUNS {
        passes(&gpu, 1, false);
    }
    gpu.wait();
    let submits = start.elapsed().as_secs_f64() * 1e6 / RUNS as f64;
    println!("alone, one pass a submit                  {alone:8.1} us");
    println!(
        "{RUNS} timestamped passes, one submit        {:8.1} us a pass; gap {:.1} us (largest {largest_gap:.1})",
        median(own),
        median(gaps)
    );
    println!("{RUNS} untimed passes, one submit           {spread:8.1} us");
    println!(
        "{RUNS} dispatches in one pass                {same:8.1} us; alternating two outputs {alternating:.1} us"
    );
    println!("{RUNS} submits of one pass each, wall        {submits:8.1} us");
}
