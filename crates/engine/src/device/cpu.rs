//! The CPU backend: the reference interpreter of `wgrad-runtime-cpu` behind the [`Backend`]
//! contract. Always available; the oracle the GPU backends are compared with.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use wgrad_codegen::{Program, Target};
use wgrad_dtype::DType;
use wgrad_runtime_cpu::{CpuBuffer, CpuProgram};

use super::{Backend, CompiledProgram, DeviceBuffer, Launch};
use crate::EngineError;

/// Host memory of one buffer; gives its bytes back to the backend's count when dropped.
struct CpuMem {
    buf: CpuBuffer,
    bytes: usize,
    used: Arc<AtomicUsize>,
}

impl Drop for CpuMem {
    fn drop(&mut self) {
        self.used.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// The CPU interpreter as a device.
pub struct CpuBackend {
    target: Target,
    used: Arc<AtomicUsize>,
    workers: usize,
    lost: AtomicBool,
}

impl CpuBackend {
    /// A CPU device using every core for the workgroups of a kernel.
    pub fn new() -> CpuBackend {
        let target = Target { name: "cpu".into(), ..Target::no_locals() };
        let workers = thread::available_parallelism().map_or(1, |n| n.get());
        CpuBackend { target, used: Arc::default(), workers, lost: AtomicBool::new(false) }
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

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "CPU".into()
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
        self.used.fetch_add(bytes, Ordering::Relaxed);
        let raw = CpuMem { buf, bytes, used: self.used.clone() };
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
        let mut times = Vec::with_capacity(launches.len());
        for launch in launches {
            let program = launch.program.raw.downcast_ref::<CpuProgram>();
            let program = program.ok_or_else(|| EngineError::Runtime("not a CPU program".into()))?;
            let buffers =
                launch.buffers.iter().map(|b| mem(b).map(|m| &m.buf)).collect::<Result<Vec<_>, _>>()?;
            let vars: Vec<_> =
                launch.program.program.vars.iter().cloned().zip(launch.vars.iter().copied()).collect();
            let start = Instant::now();
            program
                .run_shared(&buffers, &vars, self.workers)
                .map_err(|e| EngineError::Runtime(e.to_string()))?;
            times.push(timed.then(|| start.elapsed()));
        }
        Ok(times)
    }

    fn destroy(&self) {
        self.lost.store(true, Ordering::Relaxed);
    }

    fn memory_used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn source(&self, p: &CompiledProgram) -> Option<String> {
        Some(p.program.to_string())
    }

    fn max_buffers(&self) -> usize {
        32
    }
}
