//! Per-dispatch GPU time from timestamp queries.
//!
//! Invariants:
//! - With `TIMESTAMP_QUERY`, each launch gets its own compute pass whose beginning and
//!   end write timestamps `2i` and `2i + 1` of a query set (4096 queries per set, so
//!   2048 launches per set); all sets resolve into one buffer read back once.
//! - Durations are `(end - start) * queue.get_timestamp_period()` nanoseconds,
//!   saturating at zero, so they are never negative.
//! - Without the feature the batch runs untimed and every duration is `None`.

use std::time::Duration;

use crate::batch::{Batch, record};
use crate::buffer::Buffer;
use crate::device::Device;
use crate::error::Result;
use crate::program::GpuProgram;

/// Launches per query set: two timestamps each.
const LAUNCHES_PER_SET: usize = (wgpu::QUERY_SET_MAX_QUERIES / 2) as usize;

/// Bytes one full query set resolves to (a multiple of the resolve alignment).
const SET_BYTES: u64 = wgpu::QUERY_SET_MAX_QUERIES as u64 * wgpu::QUERY_SIZE as u64;

impl Device {
    /// The median GPU time of `kernel` over `iters` launches recorded in one batch, after two
    /// warm-up launches (wall time per launch when the device has no timestamp queries):
    /// what benchmarks and opt searches compare kernels by.
    pub fn time_kernel(&self, kernel: &GpuProgram, buffers: &[&Buffer], iters: usize) -> Result<Duration> {
        let record = |n: usize| -> Result<Batch> {
            let mut batch = self.batch();
            for _ in 0..n {
                self.launch(&mut batch, kernel, buffers, &[])?;
            }
            Ok(batch)
        };
        self.run_timed(record(2)?)?;
        let start = std::time::Instant::now();
        let mut gpu: Vec<Duration> = self.run_timed(record(iters.max(1))?)?.into_iter().flatten().collect();
        if gpu.is_empty() {
            return Ok(start.elapsed() / iters.max(1) as u32);
        }
        gpu.sort();
        Ok(gpu[gpu.len() / 2])
    }

    /// Submits `batch`, waits for it, and returns each launch's GPU time in recording
    /// order (`None` for all when the device has no timestamp queries).
    pub fn run_timed(&self, batch: Batch) -> Result<Vec<Option<Duration>>> {
        if !self.features().timestamps {
            let count = batch.len();
            self.submit(batch)?;
            self.sync()?;
            return Ok(vec![None; count]);
        }
        self.check()?;
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let count = batch.len();
        let resolved_len = count.div_ceil(LAUNCHES_PER_SET) as u64 * SET_BYTES;
        let (staging, capacity) = self.staging.acquire(resolved_len)?;
        let ticks = self
            .submit_recorded("timed batch submit", |encoder| self.encode_timed(encoder, &batch, &staging))
            .and_then(|()| self.map_and_copy(&staging, resolved_len, 0, resolved_len));
        let ticks: Vec<u64> = match ticks {
            Ok(bytes) => {
                self.staging.release(staging, capacity);
                bytemuck::pod_collect_to_vec(&bytes)
            }
            Err(error) => {
                self.staging.discard(capacity);
                return Err(error);
            }
        };
        let period = f64::from(self.queue.get_timestamp_period());
        Ok((0..count)
            .map(|i| {
                let set = i / LAUNCHES_PER_SET;
                let base = set * wgpu::QUERY_SET_MAX_QUERIES as usize + 2 * (i % LAUNCHES_PER_SET);
                let elapsed = ticks[base + 1].saturating_sub(ticks[base]);
                Some(Duration::from_nanos((elapsed as f64 * period) as u64))
            })
            .collect())
    }

    /// Records a timestamped pass per launch, then the query resolves and the copy of the
    /// resolved ticks into `staging`.
    fn encode_timed(&self, encoder: &mut wgpu::CommandEncoder, batch: &Batch, staging: &wgpu::Buffer) {
        let dispatches = batch.dispatches();
        let chunks: Vec<_> = dispatches.chunks(LAUNCHES_PER_SET).collect();
        let resolve = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgrad timestamps"),
            size: chunks.len() as u64 * SET_BYTES,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        for (set_index, chunk) in chunks.iter().enumerate() {
            let queries = self.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("wgrad timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * chunk.len() as u32,
            });
            for (dispatch, slot) in chunk.iter().zip(0u32..) {
                let group = self.bind_group(dispatch);
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(dispatch.pipeline.entry()),
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: &queries,
                        beginning_of_pass_write_index: Some(2 * slot),
                        end_of_pass_write_index: Some(2 * slot + 1),
                    }),
                });
                record(&mut pass, dispatch, &group);
            }
            let offset = set_index as u64 * SET_BYTES;
            encoder.resolve_query_set(&queries, 0..2 * chunk.len() as u32, &resolve, offset);
        }
        encoder.copy_buffer_to_buffer(&resolve, 0, staging, 0, resolve.size());
    }
}
