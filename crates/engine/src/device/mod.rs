//! The device backend contract: what the engine needs from a place kernels run, and the
//! registry that opens devices by name.
//!
//! A [`Backend`] allocates [`DeviceBuffer`]s, moves bytes in and out of them, compiles a
//! codegen [`Program`] into a [`CompiledProgram`], runs batches of [`Launch`]es, and prepares
//! a batch once to run many times (a [`Graph`], what a captured JIT replays). The engine
//! never looks inside `raw`: each backend stores its own handles there and downcasts them.
//!
//! Invariants every backend keeps:
//! - bytes crossing `copy_in`/`copy_out` are the buffer's elements, host little-endian,
//!   `dtype.itemsize() * len` of them;
//! - `run` (and [`Graph::run`]) executes the launches in order, as if each finished before
//!   the next started, and returns one entry per launch (`Some` time only when `timed`);
//!   [`Backend::record`]ed launches run, in order, before anything asked of the device after
//!   them;
//! - the host's time blocked on the device (readbacks, timed runs; the CPU's kernels) is
//!   counted (`Counters::device_wait`);
//! - a failure is an [`EngineError`], never a panic: a buffer the device cannot hold is
//!   [`EngineError::OutOfMemory`] (the device stays usable), and after a loss (or
//!   [`Backend::destroy`]) every operation is [`EngineError::DeviceLost`].

mod cpu;
mod registry;
mod wgpu;

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wgrad_codegen::{Program, Target};
use wgrad_dtype::DType;

use crate::{EngineError, LONG_ROWS};

pub use cpu::CpuBackend;
pub use registry::{
    DEVICE_ENV, DeviceName, available_devices, created, default_device, held, memory_used, open_device,
};
pub use wgpu::WgpuBackend;

/// Device memory of one buffer: `dtype` elements, `len` of them; bytes are host little-endian.
#[derive(Clone)]
pub struct DeviceBuffer {
    /// Element dtype (a scalar dtype).
    pub dtype: DType,
    /// Number of elements.
    pub len: usize,
    /// The backend's handle; dropping the last clone frees the memory.
    pub raw: Arc<dyn Any + Send + Sync>,
}

/// A program compiled for one backend.
#[derive(Clone)]
pub struct CompiledProgram {
    /// The linear program it was compiled from.
    pub program: Arc<Program>,
    /// The backend's handle (a pipeline, an interpreter program).
    pub raw: Arc<dyn Any + Send + Sync>,
}

/// One kernel launch: buffers indexed by slot; var values in program.vars order.
#[derive(Clone)]
pub struct Launch<'a> {
    /// The compiled kernel.
    pub program: &'a CompiledProgram,
    /// `buffers[slot]` is bound to the program's buffer argument `slot`.
    pub buffers: Vec<&'a DeviceBuffer>,
    /// One value per variable of `program.program.vars`, in that order.
    pub vars: Vec<i64>,
}

/// A buffer of a [`Graph`] replaced for one run: launch `launch`, slot `slot`, now `buffer`.
#[derive(Clone, Copy)]
pub struct Swap<'a> {
    /// Index of the launch in the graph.
    pub launch: usize,
    /// The buffer slot of that launch.
    pub slot: usize,
    /// The buffer bound there for this run.
    pub buffer: &'a DeviceBuffer,
}

/// Launches prepared once (checked, and on wgpu with their bind groups made) to run many
/// times as one submission: a captured JIT's kernels on one device.
pub trait Graph: Send + Sync {
    /// Runs every launch in order with `swaps` applied (sorted by launch), handed to the
    /// device in one submission or, untimed, in parts so the device starts early; per-launch
    /// device times when `timed`.
    fn run(&self, swaps: &[Swap<'_>], timed: bool) -> Result<Vec<Option<Duration>>, EngineError>;
}

/// Device objects created so far: a loop that allocates nothing after its first step keeps
/// these flat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Created {
    /// Buffers created on the device (not counting those a pool handed out again).
    pub buffers: u64,
    /// Bind groups created (wgpu).
    pub bind_groups: u64,
    /// Submissions to the device's queue (wgpu; work handed over while the device is busy
    /// shares one). The CPU runs each batch as it comes and counts none.
    pub submits: u64,
}

/// Device objects held now: a loop that allocates nothing after its first steps keeps these
/// flat (a leak grows them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Buffers alive: in use, or pooled for reuse.
    pub buffers: u64,
    /// Bind groups in the device's cache (wgpu).
    pub bind_groups: u64,
    /// Compiled pipelines in the device's cache (wgpu).
    pub pipelines: u64,
}

/// A place kernels run.
pub trait Backend: Send + Sync {
    /// The device's name for messages and DEBUG output: `"CPU"`, `"WGPU (NVIDIA H200)"`.
    fn name(&self) -> String;
    /// Whether its kernels run on the host's own cores (the CPU interpreter, a software
    /// adapter such as Mesa lavapipe).
    fn runs_on_host(&self) -> bool;
    /// The codegen target kernels for this device are optimised for.
    fn target(&self) -> &Target;
    /// A buffer of `len` elements of `dtype` (contents unspecified until written).
    fn alloc(&self, dtype: DType, len: usize) -> Result<DeviceBuffer, EngineError>;
    /// Writes `bytes` (exactly the buffer's size) into `buf`.
    fn copy_in(&self, buf: &DeviceBuffer, bytes: &[u8]) -> Result<(), EngineError>;
    /// Reads the whole of `buf`.
    fn copy_out(&self, buf: &DeviceBuffer) -> Result<Vec<u8>, EngineError>;
    /// Compiles `program` for this device.
    fn compile(&self, program: &Program) -> Result<CompiledProgram, EngineError>;
    /// Runs all launches in order as one submission; per-launch GPU times when `timed`.
    fn run(&self, launches: &[Launch<'_>], timed: bool) -> Result<Vec<Option<Duration>>, EngineError>;
    /// Records `launches` to run in order with the device's next submission instead of
    /// submitting them now, so the readback of their results that follows is one submission
    /// with them (work recorded and never read back runs with the next `run` or `copy_out`).
    /// The default runs them now.
    fn record(&self, launches: &[Launch<'_>]) -> Result<(), EngineError> {
        self.run(launches, false).map(drop)
    }
    /// Gives the device up now (wgpu: `Device::destroy`, which is also how a lost device
    /// looks): every later operation on it fails with [`EngineError::DeviceLost`].
    fn destroy(&self);
    /// Prepares `launches` to run many times ([`Graph`]); the graph keeps their programs and
    /// buffers alive.
    fn graph(&self, launches: &[Launch<'_>]) -> Result<Box<dyn Graph>, EngineError>;
    /// Whether a memory-bound kernel of a submission may take its grid opposite to the kernel
    /// before it ([`Program::reversed`]): it then starts on the part that kernel touched last,
    /// which a GPU's L2 cache still holds (an H200's MiniLM attention statistics 42.6 -> 39.0
    /// us, its layer norms 23.7 -> 22.6, docs/PERFORMANCE.md). The default keeps one order.
    fn alternates_grids(&self) -> bool {
        false
    }
    /// Bytes of device memory currently allocated through this backend.
    fn memory_used(&self) -> usize;
    /// Device objects created so far.
    fn created(&self) -> Created;
    /// Device objects held now.
    fn held(&self) -> Held;
    /// The source the device runs for `p`, printed at DEBUG=4 (WGSL for wgpu); `None` when
    /// the device runs the program as is.
    fn source(&self, _p: &CompiledProgram) -> Option<String> {
        None
    }
    /// The most buffers one kernel may bind (outputs and inputs); the scheduler splits
    /// kernels to stay within it. The default is WebGPU's guaranteed minimum of storage
    /// buffers per shader stage.
    fn max_buffers(&self) -> usize {
        8
    }
    /// What the scheduler may put in one of this device's kernels: [`Backend::max_buffers`],
    /// rows reduced in place where the target's workgroups share memory, and long ones where
    /// its subgroups also combine partials and a workgroup holds a long row's threads.
    fn kernel_limits(&self) -> crate::KernelLimits {
        let target = self.target();
        // a long row's threads (32 values each) fit one workgroup
        let threads = target.max_local_invocations.min(target.max_local_size.first().copied().unwrap_or(1));
        let subgroups = target.subgroup_ops && target.subgroup_size.is_some() && threads >= LONG_ROWS / 32;
        crate::KernelLimits::new(self.max_buffers(), target.has_local && target.has_shared, subgroups)
    }
    /// What identifies the device and its driver to caches that outlive the process (BEAM's
    /// on-disk cache): for wgpu the adapter, graphics API and driver version. Defaults to
    /// [`Backend::name`].
    fn fingerprint(&self) -> String {
        self.name()
    }
    /// Compiles `program` for one-off use (a search candidate): as [`Backend::compile`], but
    /// the backend keeps it in no cache. Called from many threads at once.
    fn compile_once(&self, program: &Program) -> Result<CompiledProgram, EngineError> {
        self.compile(program)
    }
    /// Brings the device's clocks up before a timing (a discrete GPU's driver lowers them
    /// while the process works on the host); the default does nothing.
    fn raise_clocks(&self) -> Result<(), EngineError> {
        Ok(())
    }
    /// When the device first went from idle to work (a submit that found everything before it
    /// finished) since the last call, which forgets it, where the backend knows: a caller that
    /// takes it before its work and again after sees how long the host took before the device
    /// started on that work. The default does not know.
    fn take_start(&self) -> Option<Instant> {
        None
    }
    /// The device time of each of `runs` runs of `launch`, recorded back to back in one
    /// submission, to compare kernels by. With `max_workgroups`, a backend may run only that
    /// many of the launch's workgroups and scale the times up to the whole grid (what a search
    /// does with slow candidates). The default runs the whole launches through
    /// [`Backend::run`] (their mean wall time each when the device reports none).
    fn time_launch(
        &self,
        launch: &Launch<'_>,
        _max_workgroups: Option<usize>,
        runs: usize,
    ) -> Result<Vec<Duration>, EngineError> {
        let launches: Vec<Launch<'_>> = (0..runs).map(|_| launch.clone()).collect();
        let start = Instant::now();
        let times = self.run(&launches, true)?;
        let mean = start.elapsed() / u32::try_from(runs.max(1)).unwrap_or(u32::MAX);
        Ok(times.into_iter().map(|t| t.unwrap_or(mean)).collect())
    }
}
