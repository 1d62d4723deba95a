//! The CPU backend: the reference interpreter of `wgrad-runtime-cpu` behind the [`Backend`]
//! contract. Always available; the oracle the GPU backends are compared with.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use wgrad_codegen::{Program, Target};
use wgrad_dtype::DType;
use wgrad_runtime_cpu::{CpuBuffer, CpuProgram};

use super::{Backend, CompiledProgram, Created, DeviceBuffer, Graph, Held, Launch, Swap};
use crate::EngineError;
use crate::counters::count_wait;

/// What the backend's live buffers hold: bytes and buffers.
#[derive(Default)]
struct Usage {
    bytes: AtomicUsize,
    buffers: AtomicU64,
}

/// Host memory of one buffer; gives itself back to the backend's [`Usage`] when dropped.
struct CpuMem {
    buf: CpuBuffer,
    bytes: usize,
    usage: Arc<Usage>,
}

impl Drop for CpuMem {
    fn drop(&mut self) {
        self.usage.bytes.fetch_sub(self.bytes, Ordering::Relaxed);
        self.usage.buffers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The CPU interpreter as a device.
pub struct CpuBackend {
    target: Target,
    usage: Arc<Usage>,
    allocated: AtomicU64,
    workers: usize,
    /// Set by `destroy`; shared with the graphs, which then refuse to run too.
    lost: Arc<AtomicBool>,
}

impl CpuBackend {
    /// A CPU device using every core for the workgroups of a kernel.
    pub fn new() -> CpuBackend {
        let target = Target { name: "cpu".into(), ..Target::no_locals() };
        let workers = thread::available_parallelism().map_or(1, |n| n.get());
        CpuBackend {
            target,
            usage: Arc::default(),
            allocated: AtomicU64::new(0),
            workers,
            lost: Arc::default(),
        }
    }
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

impl CpuBackend {
    /// Fails once the device was destroyed.
    fn check(&self) -> Result<(), EngineError> {
        match self.lost.load(Ordering::Relaxed) {
            true => Err(EngineError::DeviceLost { device: self.name(), reason: "destroyed".into() }),
            false => Ok(()),
        }
    }
}

fn mem(buf: &DeviceBuffer) -> Result<&CpuMem, EngineError> {
    buf.raw.downcast_ref::<CpuMem>().ok_or_else(|| EngineError::Runtime("not a CPU buffer".into()))
}

fn program(p: &CompiledProgram) -> Result<&CpuProgram, EngineError> {
    p.raw.downcast_ref::<CpuProgram>().ok_or_else(|| EngineError::Runtime("not a CPU program".into()))
}

/// Runs one launch on `workers` threads (device time: the host waits for it); its time when
/// `timed`.
fn run_one(
    compiled: &CompiledProgram,
    buffers: &[&DeviceBuffer],
    vars: &[i64],
    workers: usize,
    timed: bool,
) -> Result<Option<Duration>, EngineError> {
    let buffers = buffers.iter().map(|b| mem(b).map(|m| &m.buf)).collect::<Result<Vec<_>, _>>()?;
    let vars: Vec<_> = compiled.program.vars.iter().cloned().zip(vars.iter().copied()).collect();
    let start = Instant::now();
    program(compiled)?
        .run_shared(&buffers, &vars, workers)
        .map_err(|e| EngineError::Runtime(e.to_string()))?;
    let elapsed = start.elapsed();
    count_wait(elapsed);
    Ok(timed.then_some(elapsed))
}

/// Captured launches on the CPU: the interpreter has nothing to prepare, so a run is the
/// launches again.
struct CpuGraph {
    launches: Vec<(CompiledProgram, Vec<DeviceBuffer>, Vec<i64>)>,
    workers: usize,
    lost: Arc<AtomicBool>,
}

impl Graph for CpuGraph {
    fn run(&self, swaps: &[Swap<'_>], timed: bool) -> Result<Vec<Option<Duration>>, EngineError> {
        if self.lost.load(Ordering::Relaxed) {
            return Err(EngineError::DeviceLost { device: "CPU".into(), reason: "destroyed".into() });
        }
        let mut swaps = swaps.iter().peekable();
        let mut times = Vec::with_capacity(self.launches.len());
        for (i, (program, buffers, vars)) in self.launches.iter().enumerate() {
            let mut bound: Vec<&DeviceBuffer> = buffers.iter().collect();
            while let Some(s) = swaps.next_if(|s| s.launch == i) {
                bound[s.slot] = s.buffer;
            }
            times.push(run_one(program, &bound, vars, self.workers, timed)?);
        }
        Ok(times)
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "CPU".into()
    }

    fn runs_on_host(&self) -> bool {
        true
    }

    fn target(&self) -> &Target {
        &self.target
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<DeviceBuffer, EngineError> {
        self.check()?;
        let oom = || EngineError::OutOfMemory {
            device: self.name(),
            what: format!("{len} elements of {} cannot be allocated on the host", dtype.scalar().long_name()),
        };
        let bytes = dtype.itemsize().checked_mul(len).ok_or_else(oom)?;
        let buf = CpuBuffer::try_zeros(dtype, len).ok_or_else(oom)?;
        self.usage.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.usage.buffers.fetch_add(1, Ordering::Relaxed);
        self.allocated.fetch_add(1, Ordering::Relaxed);
        let raw = CpuMem { buf, bytes, usage: self.usage.clone() };
        Ok(DeviceBuffer { dtype, len, raw: Arc::new(raw) })
    }

    fn copy_in(&self, buf: &DeviceBuffer, bytes: &[u8]) -> Result<(), EngineError> {
        self.check()?;
        let expected = buf.dtype.itemsize() * buf.len;
        match mem(buf)?.buf.write_bytes(bytes) {
            true => Ok(()),
            false => {
                Err(EngineError::DataSize { got: bytes.len(), expected, len: buf.len, dtype: buf.dtype })
            }
        }
    }

    fn copy_out(&self, buf: &DeviceBuffer) -> Result<Vec<u8>, EngineError> {
        self.check()?;
        Ok(mem(buf)?.buf.to_bytes())
    }

    fn compile(&self, program: &Program) -> Result<CompiledProgram, EngineError> {
        self.check()?;
        let cpu = CpuProgram::new(program).map_err(|e| EngineError::Runtime(e.to_string()))?;
        Ok(CompiledProgram { program: Arc::new(program.clone()), raw: Arc::new(cpu) })
    }

    fn run(&self, launches: &[Launch<'_>], timed: bool) -> Result<Vec<Option<Duration>>, EngineError> {
        self.check()?;
        launches.iter().map(|l| run_one(l.program, &l.buffers, &l.vars, self.workers, timed)).collect()
    }

    fn graph(&self, launches: &[Launch<'_>]) -> Result<Box<dyn Graph>, EngineError> {
        let launches = launches
            .iter()
            .map(|l| {
                program(l.program)?;
                Ok((l.program.clone(), l.buffers.iter().map(|&b| b.clone()).collect(), l.vars.clone()))
            })
            .collect::<Result<_, EngineError>>()?;
        Ok(Box::new(CpuGraph { launches, workers: self.workers, lost: self.lost.clone() }))
    }

    fn destroy(&self) {
        self.lost.store(true, Ordering::Relaxed);
    }

    fn memory_used(&self) -> usize {
        self.usage.bytes.load(Ordering::Relaxed)
    }

    fn created(&self) -> Created {
        Created { buffers: self.allocated.load(Ordering::Relaxed), bind_groups: 0, submits: 0 }
    }

    fn held(&self) -> Held {
        Held { buffers: self.usage.buffers.load(Ordering::Relaxed), ..Held::default() }
    }

    fn source(&self, p: &CompiledProgram) -> Option<String> {
        Some(p.program.to_string())
    }

    fn max_buffers(&self) -> usize {
        32
    }
}
