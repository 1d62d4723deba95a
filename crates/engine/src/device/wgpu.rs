//! The wgpu backend: kernels rendered to WGSL and run on a GPU (or Mesa lavapipe) through
//! `wgrad-runtime-wgpu`. The launches of one `run` are recorded into one batch and handed to
//! the device's command stream, which submits it at once when the GPU is idle and coalesces
//! it with later work while the GPU is busy; `record` leaves it for the readback that
//! follows. Nothing waits for the GPU until bytes are read back (or times are asked for). A
//! [`Graph`] holds its launches prepared (bind groups made): a run records them in batches of
//! growing size ([`FIRST_SUBMIT`] first), re-binding only the launches whose buffers were
//! swapped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wgrad_codegen::{Program, Target};
use wgrad_dtype::DType;
use wgrad_runtime_wgpu::{Batch, Buffer, Device, GpuProgram, Prepared, RuntimeError, adapters};

use super::{Backend, CompiledProgram, Created, DeviceBuffer, Graph, Held, Launch, Swap};
use crate::EngineError;
use crate::counters::count_wait;

/// The longest [`Backend::raise_clocks`] spins the device before a timing.
const CLOCK_BUDGET: Duration = Duration::from_millis(500);

/// Launches a graph's untimed run hands a GPU first; each later part takes twice as many (as
/// tinygrad's JIT batches), so an idle GPU starts on the first while the host records the
/// rest. The first part is on the critical path: wgpu encodes its launches when it is
/// submitted (3-6 us each on an H200's host). An H200's MiniLM f32 batch (60 launches, synced
/// each call, the first parts' sizes alternated within each of three processes, medians of
/// 100 calls): 2 first left the device idle behind its first two short kernels (10.25-10.39
/// ms), 3 first gave 10.17-10.33, 4 10.17-10.36, 6 10.18-10.36, 8 10.19-10.38; in one part
/// it had been 0.06-0.09 ms slower than 8. A software adapter runs on the host's cores, so
/// there is nothing to overlap: lavapipe's jitted MNIST step took 925 ms with parts against
/// 853-890 in one.
const FIRST_SUBMIT: usize = 3;

/// A wgpu adapter as a device.
pub struct WgpuBackend {
    device: Arc<Device>,
    target: Target,
}

impl WgpuBackend {
    /// `e` as an engine error: memory, loss and rejected kernels keep their kind.
    fn runtime(&self, e: RuntimeError) -> EngineError {
        runtime(self.name(), e)
    }

    /// `launches` recorded into a batch.
    fn batch(&self, launches: &[Launch<'_>]) -> Result<Batch, EngineError> {
        let mut batch = self.device.batch();
        for launch in launches {
            let program = gpu_program(launch)?;
            let buffers = launch.buffers.iter().map(|b| buffer(b)).collect::<Result<Vec<_>, _>>()?;
            self.device.launch(&mut batch, program, &buffers, &launch.vars).map_err(|e| self.runtime(e))?;
        }
        Ok(batch)
    }
}

/// `e` on the device named `device` as an engine error: memory, loss and rejected kernels
/// keep their kind.
fn runtime(device: String, e: RuntimeError) -> EngineError {
    match e {
        RuntimeError::BufferTooLarge { requested, limit } => EngineError::OutOfMemory {
            device,
            what: format!("a buffer of {requested} bytes is over its limit of {limit} bytes per buffer"),
        },
        RuntimeError::OutOfMemory { context } => {
            EngineError::OutOfMemory { device, what: format!("no device memory left in {context}") }
        }
        RuntimeError::DeviceLost(reason) => EngineError::DeviceLost { device, reason },
        RuntimeError::Kernel { kernel, wgsl, error } => {
            EngineError::KernelCompile { kernel, device, message: error.to_string(), code: wgsl }
        }
        e => EngineError::Runtime(e.to_string()),
    }
}

fn buffer(buf: &DeviceBuffer) -> Result<&Buffer, EngineError> {
    buf.raw.downcast_ref::<Buffer>().ok_or_else(|| EngineError::Runtime("not a wgpu buffer".into()))
}

/// A part of `grid` with at most `max` workgroups, and how many times larger the whole grid
/// is: the last dimension over 16 is halved until the part fits (tinygrad's test size).
fn sample_grid(grid: [usize; 3], max: usize) -> ([usize; 3], f64) {
    let mut part = grid;
    while part.iter().product::<usize>() > max {
        let Some(d) = (0..3).rev().find(|&d| part[d] > 16) else { break };
        part[d] /= 2;
    }
    let count = |g: [usize; 3]| g.iter().product::<usize>() as f64;
    (part, count(grid) / count(part))
}

fn gpu_program<'a>(launch: &Launch<'a>) -> Result<&'a GpuProgram, EngineError> {
    launch
        .program
        .raw
        .downcast_ref::<GpuProgram>()
        .ok_or_else(|| EngineError::Runtime("not a wgpu program".into()))
}

/// One captured launch: what it binds, and the launch prepared with those buffers.
struct GraphLaunch {
    program: GpuProgram,
    buffers: Vec<Buffer>,
    vars: Vec<i64>,
    prepared: Prepared,
}

/// Captured launches on one wgpu device.
struct WgpuGraph {
    device: Arc<Device>,
    /// The backend's name, for errors.
    name: String,
    launches: Vec<GraphLaunch>,
}

impl Graph for WgpuGraph {
    fn run(&self, swaps: &[Swap<'_>], timed: bool) -> Result<Vec<Option<Duration>>, EngineError> {
        let mut batch = self.device.batch();
        let mut swaps = swaps.iter().peekable();
        let mut part = if self.device.runs_on_host() { usize::MAX } else { FIRST_SUBMIT };
        for (i, launch) in self.launches.iter().enumerate() {
            if swaps.peek().is_none_or(|s| s.launch != i) {
                batch.push(&launch.prepared);
            } else {
                let mut bound: Vec<&Buffer> = launch.buffers.iter().collect();
                while let Some(s) = swaps.next_if(|s| s.launch == i) {
                    bound[s.slot] = buffer(s.buffer)?;
                }
                self.device
                    .launch(&mut batch, &launch.program, &bound, &launch.vars)
                    .map_err(|e| runtime(self.name.clone(), e))?;
            }
            if !timed && batch.len() == part {
                let first = std::mem::replace(&mut batch, self.device.batch());
                self.device.submit(first).map_err(|e| runtime(self.name.clone(), e))?;
                part *= 2;
            }
        }
        if timed {
            return timed_run(&self.device, batch).map_err(|e| runtime(self.name.clone(), e));
        }
        self.device.submit(batch).map_err(|e| runtime(self.name.clone(), e))?;
        Ok(vec![None; self.launches.len()])
    }
}

/// Runs `batch` timed, counting the wait.
fn timed_run(device: &Device, batch: Batch) -> Result<Vec<Option<Duration>>, RuntimeError> {
    let start = Instant::now();
    let times = device.run_timed(batch);
    count_wait(start.elapsed());
    times
}

impl WgpuBackend {
    /// Opens adapter `index` of [`adapters`] (best first), or the best one (`WGRAD_ADAPTER`
    /// may name it) when `None`.
    pub fn open(index: Option<usize>) -> Result<WgpuBackend, EngineError> {
        let device = match index {
            None => Device::new(),
            Some(i) => {
                let all = adapters();
                let chosen = all.get(i).ok_or_else(|| EngineError::DeviceUnavailable {
                    name: format!("WGPU:{i}"),
                    reason: format!("there are {} adapters", all.len()),
                })?;
                Device::with_adapter(Some(&chosen.name))
            }
        }
        .map_err(|e| EngineError::Runtime(e.to_string()))?;
        let target = device.target();
        Ok(WgpuBackend { device: Arc::new(device), target })
    }
}

impl Backend for WgpuBackend {
    fn name(&self) -> String {
        format!("WGPU ({})", self.device.adapter().name)
    }

    fn runs_on_host(&self) -> bool {
        self.device.runs_on_host()
    }

    fn target(&self) -> &Target {
        &self.target
    }

    fn alternates_grids(&self) -> bool {
        true
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<DeviceBuffer, EngineError> {
        if len.checked_mul(dtype.itemsize()).is_none_or(|bytes| bytes > usize::MAX - 4) {
            let what = format!("{len} elements of {} do not fit in a byte count", dtype.scalar().long_name());
            return Err(EngineError::OutOfMemory { device: self.name(), what });
        }
        let raw = self.device.alloc_elements(dtype, len).map_err(|e| self.runtime(e))?;
        Ok(DeviceBuffer { dtype, len, raw: Arc::new(raw) })
    }

    fn copy_in(&self, buf: &DeviceBuffer, bytes: &[u8]) -> Result<(), EngineError> {
        let expected = buf.dtype.itemsize() * buf.len;
        if bytes.len() != expected {
            return Err(EngineError::DataSize { got: bytes.len(), expected, len: buf.len, dtype: buf.dtype });
        }
        // queue writes move whole 4-byte words: pad the tail of 1- and 2-byte element arrays
        // (a copy only for those)
        let padded = match bytes.len() % 4 {
            0 => std::borrow::Cow::Borrowed(bytes),
            _ => {
                let mut padded = bytes.to_vec();
                padded.resize(bytes.len().next_multiple_of(4), 0);
                std::borrow::Cow::Owned(padded)
            }
        };
        self.device.write(buffer(buf)?, 0, &padded).map_err(|e| self.runtime(e))
    }

    fn copy_out(&self, buf: &DeviceBuffer) -> Result<Vec<u8>, EngineError> {
        let start = Instant::now();
        let read = self.device.read(buffer(buf)?);
        count_wait(start.elapsed());
        let mut bytes = read.map_err(|e| self.runtime(e))?;
        bytes.truncate(buf.dtype.itemsize() * buf.len);
        Ok(bytes)
    }

    fn compile(&self, program: &Program) -> Result<CompiledProgram, EngineError> {
        let gpu = self.device.compile(program).map_err(|e| self.runtime(e))?;
        Ok(CompiledProgram { program: Arc::new(program.clone()), raw: Arc::new(gpu) })
    }

    fn run(&self, launches: &[Launch<'_>], timed: bool) -> Result<Vec<Option<Duration>>, EngineError> {
        let batch = self.batch(launches)?;
        if timed {
            return timed_run(&self.device, batch).map_err(|e| self.runtime(e));
        }
        self.device.submit(batch).map_err(|e| self.runtime(e))?;
        Ok(vec![None; launches.len()])
    }

    fn record(&self, launches: &[Launch<'_>]) -> Result<(), EngineError> {
        let batch = self.batch(launches)?;
        self.device.record(batch).map_err(|e| self.runtime(e))
    }

    fn destroy(&self) {
        self.device.destroy();
    }

    fn graph(&self, launches: &[Launch<'_>]) -> Result<Box<dyn Graph>, EngineError> {
        let launches = launches
            .iter()
            .map(|l| {
                let program = gpu_program(l)?.clone();
                let buffers = l.buffers.iter().map(|b| buffer(b).cloned()).collect::<Result<Vec<_>, _>>()?;
                let bound: Vec<&Buffer> = buffers.iter().collect();
                let prepared = self.device.prepare(&program, &bound, &l.vars).map_err(|e| self.runtime(e))?;
                Ok(GraphLaunch { program, buffers, vars: l.vars.clone(), prepared })
            })
            .collect::<Result<_, EngineError>>()?;
        Ok(Box::new(WgpuGraph { device: self.device.clone(), name: self.name(), launches }))
    }

    fn memory_used(&self) -> usize {
        self.device.memory().in_use as usize
    }

    fn created(&self) -> Created {
        Created {
            buffers: self.device.memory().created,
            bind_groups: self.device.bind_groups_created(),
            submits: self.device.submits(),
        }
    }

    fn held(&self) -> Held {
        Held {
            buffers: self.device.live_buffers(),
            bind_groups: self.device.bind_groups_cached() as u64,
            pipelines: self.device.pipeline_count() as u64,
        }
    }

    fn source(&self, p: &CompiledProgram) -> Option<String> {
        p.raw.downcast_ref::<GpuProgram>().map(|g| g.source().to_owned())
    }

    fn max_buffers(&self) -> usize {
        // one binding is kept for the symbolic variables' values
        (self.device.limits().max_storage_buffers_per_stage as usize).saturating_sub(1)
    }

    fn fingerprint(&self) -> String {
        let a = self.device.adapter();
        format!("wgpu {} ({}, {:?}) driver {}", a.name, a.backend, a.kind, a.driver)
    }

    fn compile_once(&self, program: &Program) -> Result<CompiledProgram, EngineError> {
        let gpu = self.device.compile_uncached(program).map_err(|e| self.runtime(e))?;
        Ok(CompiledProgram { program: Arc::new(program.clone()), raw: Arc::new(gpu) })
    }

    fn raise_clocks(&self) -> Result<(), EngineError> {
        self.device.raise_clocks(CLOCK_BUDGET).map(drop).map_err(|e| self.runtime(e))
    }

    fn take_start(&self) -> Option<Instant> {
        self.device.take_start()
    }

    fn time_launch(
        &self,
        launch: &Launch<'_>,
        max_workgroups: Option<usize>,
        runs: usize,
    ) -> Result<Vec<Duration>, EngineError> {
        let grid = launch.program.program.global_size;
        let (part, scale) = max_workgroups.map_or((grid, 1.0), |max| sample_grid(grid, max));
        let buffers = launch.buffers.iter().map(|b| buffer(b)).collect::<Result<Vec<_>, _>>()?;
        let mut batch = self.device.batch();
        for _ in 0..runs {
            self.device
                .launch_part(&mut batch, gpu_program(launch)?, &buffers, &launch.vars, part)
                .map_err(|e| self.runtime(e))?;
        }
        let start = Instant::now();
        let times = self.device.run_timed(batch).map_err(|e| self.runtime(e))?;
        let mean = start.elapsed() / u32::try_from(runs.max(1)).unwrap_or(u32::MAX);
        Ok(times.into_iter().map(|t| t.unwrap_or(mean).mul_f64(scale)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::sample_grid;

    #[test]
    fn sample_grids_halve_the_last_large_dimension_first() {
        assert_eq!(sample_grid([64, 32, 1], 65536), ([64, 32, 1], 1.0));
        assert_eq!(sample_grid([1 << 20, 1, 1], 65536), ([65536, 1, 1], 16.0));
        assert_eq!(sample_grid([4096, 4096, 1], 65536), ([4096, 16, 1], 256.0));
        assert_eq!(sample_grid([4096, 64, 3], 1024), ([16, 16, 3], 1024.0));
        // nothing over 16 is left to halve
        assert_eq!(sample_grid([16, 16, 16], 100), ([16, 16, 16], 1.0));
        let (part, scale) = sample_grid([100_001, 1, 1], 65536);
        assert_eq!(part, [50_000, 1, 1]);
        assert!((scale - 100_001.0 / 50_000.0).abs() < 1e-12);
    }
}
