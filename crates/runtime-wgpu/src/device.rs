//! `Device`: adapter selection, device creation, error bookkeeping, and the entry points
//! for allocation, compilation and submission.
//!
//! Invariants:
//! - The device is created with the adapter's own limits (not wgpu's defaults) and
//!   every feature in [`DeviceFeatures`] the adapter has; the one experimental feature,
//!   cooperative matrices, only where the adapter has it (and f16).
//! - wgpu never panics on our behalf: calls that can fail run in error scopes, an
//!   uncaptured-error handler records anything that escapes them, and a device-lost
//!   callback records loss. Both are reported as errors by the next call that submits,
//!   waits or compiles; after a loss every such call fails with
//!   [`RuntimeError::DeviceLost`].
//! - Work is only waited for in [`Device::sync`], readbacks and timed runs.
//! - Everything goes to the queue through one command stream in the order it was asked for
//!   (see `submit.rs`): uploads land before the work recorded after them, a schedule with its
//!   inputs is one submit, and work recorded while the device is busy is coalesced.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::batch::Batch;
use crate::bind::BindGroupCache;
use crate::buffer::Buffer;
use crate::clocks::Clocks;
use crate::error::{Result, RuntimeError, scoped};
use crate::exit::{ExitGuard, wait_at_exit};
use crate::info::{AdapterSummary, DeviceFeatures, DeviceKind, DeviceLimits, tensor_cores};
use crate::pipeline::{Pipeline, PipelineCache};
use crate::pool::{BufferPool, MemoryStats};
use crate::submit::Stream;
use crate::submitter::{Submitter, submit_spin};
use crate::transfer::BELT_CHUNK;
use crate::wait::default_spin_wait;
use wgrad_codegen::TensorCoreShape;
use wgrad_renderer_wgsl::F16Rounding;

/// Environment variable naming the adapter to use (case-insensitive name substring).
pub const ADAPTER_ENV: &str = "WGRAD_ADAPTER";

/// Set to `0` to open devices without cooperative matrices (tensor cores) even where the
/// adapter has them (to compare, or to work around a driver).
pub const COOP_ENV: &str = "WGRAD_COOPERATIVE_MATRIX";

/// Set to `1` to keep wgpu's runtime checks in every shader, which wgrad relaxes by default:
/// index clamping (its kernels gate their own accesses) and, in cooperative-matrix shaders,
/// loop bounding (its loops are bounded ranges). A debugging aid, like a sanitizer.
pub const SHADER_CHECKS_ENV: &str = "WGRAD_SHADER_CHECKS";

/// Errors recorded outside of error scopes.
#[derive(Default)]
struct Health {
    lost: Mutex<Option<String>>,
    uncaptured: Mutex<Vec<String>>,
    /// The first failure of the submit thread not reported yet.
    submit_thread: Mutex<Option<RuntimeError>>,
}

/// A wgpu device and queue with a buffer pool and a pipeline cache.
pub struct Device {
    /// The submit thread (see `submitter.rs`); first, so it is dropped first.
    pub(crate) submitter: Option<Submitter>,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    adapter: AdapterSummary,
    limits: DeviceLimits,
    features: DeviceFeatures,
    /// The tensor-core shapes the device's WGSL may use (empty without cooperative matrices).
    tensor_cores: Vec<TensorCoreShape>,
    storage: Arc<BufferPool>,
    pub(crate) staging: BufferPool,
    pipelines: PipelineCache,
    pub(crate) bind_groups: BindGroupCache,
    /// Buffers holding symbolic variable values, by value (see `program.rs`).
    pub(crate) var_buffers: Mutex<std::collections::HashMap<Vec<i32>, Buffer>>,
    /// The command stream not submitted yet, and the staging belt (see `submit.rs`).
    pub(crate) stream: Mutex<Stream>,
    health: Arc<Health>,
    /// Where `f16(x)` rounds to the nearest even f16, probed at open (see `probe.rs`).
    f16_rounding: F16Rounding,
    /// Whether shaders keep wgpu's runtime checks ([`SHADER_CHECKS_ENV`]).
    checked_shaders: bool,
    /// Where kernels' WGSL is written and edited copies are read ([`crate::WGSL_DIR_ENV`]).
    pub(crate) wgsl_dir: Mutex<Option<std::path::PathBuf>>,
    /// The fastest clock-raising spin (see `clocks.rs`).
    pub(crate) clocks: Clocks,
    /// How long a wait spins before it blocks, in nanoseconds (see `wait.rs`).
    pub(crate) spin_wait: AtomicU64,
    /// Lists the device for the exit handler's wait (see `exit.rs`).
    _exit: ExitGuard,
}

/// Every adapter wgpu finds on this machine.
fn enumerate() -> Vec<wgpu::Adapter> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
}

/// Lists the adapters available here, best first (the one [`Device::new`] picks
/// without `WGRAD_ADAPTER` comes first).
pub fn adapters() -> Vec<AdapterSummary> {
    let mut found: Vec<AdapterSummary> =
        enumerate().iter().map(|a| AdapterSummary::from_wgpu(&a.get_info())).collect();
    found.sort_by_key(|a| a.kind);
    found
}

/// Picks the adapter whose name contains `wanted` (case-insensitive), or the best kind.
fn choose(adapters: Vec<wgpu::Adapter>, wanted: Option<&str>) -> Result<wgpu::Adapter> {
    let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
    let chosen = match wanted {
        Some(wanted) => {
            let wanted = wanted.to_lowercase();
            adapters.into_iter().find(|a| a.get_info().name.to_lowercase().contains(&wanted))
        }
        None => adapters.into_iter().min_by_key(|a| DeviceKind::from_wgpu(a.get_info().device_type)),
    };
    chosen.ok_or_else(|| {
        let available = if names.is_empty() {
            "none found (install a Vulkan, Metal or DX12 driver; Mesa lavapipe works on CPU)".to_owned()
        } else {
            format!("available: {}", names.join(", "))
        };
        match wanted {
            Some(wanted) => RuntimeError::NoAdapter(format!(
                "no adapter name contains `{wanted}` ({ADAPTER_ENV}); {available}"
            )),
            None => RuntimeError::NoAdapter(available),
        }
    })
}

impl Device {
    /// Opens the adapter named by `WGRAD_ADAPTER`, or the best one available.
    pub fn new() -> Result<Self> {
        let wanted = std::env::var(ADAPTER_ENV).ok().filter(|s| !s.is_empty());
        Self::with_adapter(wanted.as_deref())
    }

    /// Opens the adapter whose name contains `name` (case-insensitive), or the best
    /// one (discrete > integrated > virtual > CPU) when `name` is `None`.
    pub fn with_adapter(name: Option<&str>) -> Result<Self> {
        let adapter = choose(enumerate(), name)?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let mut required_features = adapter.features() & DeviceFeatures::WANTED;
        let coop = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SHADER_F16;
        let use_coop =
            adapter.features().contains(coop) && std::env::var(COOP_ENV).map_or(true, |v| v != "0");
        let experimental_features = if use_coop {
            required_features |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
            #[allow(unsafe_code)]
            // SAFETY: the opt-in only acknowledges that wgpu's experimental cooperative-matrix
            // API may have bugs; we use it only through WGSL that naga validated first.
            let enabled = unsafe { wgpu::ExperimentalFeatures::enabled() };
            enabled
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let tensor_cores =
            if use_coop { tensor_cores(&adapter.cooperative_matrix_properties()) } else { vec![] };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("wgrad"),
            required_features,
            required_limits: limits.clone(),
            experimental_features,
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| RuntimeError::RequestDevice { adapter: info.name.clone(), message: e.to_string() })?;
        let health = Arc::new(Health::default());
        let lost = Arc::clone(&health);
        device.set_device_lost_callback(move |reason, message| {
            let mut slot = lost.lost.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| format!("{reason:?}: {message}"));
        });
        let uncaptured = Arc::clone(&health);
        device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
            let mut list = uncaptured.uncaptured.lock().unwrap_or_else(|p| p.into_inner());
            list.push(error.to_string());
        }));
        let storage_usage =
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        let staging_usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        let adapter = AdapterSummary::from_wgpu(&info);
        let stream = Stream::new(&device, BELT_CHUNK);
        let failed = Arc::clone(&health);
        let submitter = Submitter::start(
            device.clone(),
            queue.clone(),
            submit_spin(adapter.kind),
            Arc::clone(&stream.finished),
            Arc::clone(&stream.started),
            move |e| {
                failed.submit_thread.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
            },
        )
        .ok();
        let exit = wait_at_exit(&device, submitter.as_ref().map(Submitter::handoff));
        let mut opened = Self {
            submitter,
            storage: Arc::new(BufferPool::new(
                device.clone(),
                storage_usage,
                limits.max_buffer_size,
                "wgrad storage",
            )),
            staging: BufferPool::new(device.clone(), staging_usage, limits.max_buffer_size, "wgrad staging"),
            spin_wait: AtomicU64::new(default_spin_wait(adapter.kind)),
            adapter,
            limits: DeviceLimits::from_wgpu(&limits),
            features: DeviceFeatures::from_wgpu(device.features()),
            tensor_cores,
            pipelines: PipelineCache::default(),
            bind_groups: BindGroupCache::default(),
            var_buffers: Mutex::default(),
            stream: Mutex::new(stream),
            health,
            f16_rounding: F16Rounding::Software,
            checked_shaders: std::env::var(SHADER_CHECKS_ENV).is_ok_and(|v| v == "1"),
            wgsl_dir: Mutex::new(crate::wgsl_dir::from_env()),
            clocks: Clocks::default(),
            _exit: exit,
            device,
            queue,
        };
        if opened.features().f16 {
            opened.f16_rounding = opened.probe_f16_rounding().unwrap_or_default();
        }
        Ok(opened)
    }

    /// Where `f16(x)` rounds every value of the f16 probe (`probe.rs`) to the nearest even
    /// f16, as the host does; probed when the device opened. No f16, or a failed probe, is
    /// nowhere ([`F16Rounding::Software`]).
    pub fn f16_rounding(&self) -> F16Rounding {
        self.f16_rounding
    }

    /// Who the adapter is.
    pub fn adapter(&self) -> &AdapterSummary {
        &self.adapter
    }

    /// Whether the adapter runs its work on the host's own cores (a software adapter such as
    /// Mesa lavapipe).
    pub fn runs_on_host(&self) -> bool {
        self.adapter.kind == DeviceKind::Cpu
    }

    /// The limits the device was created with.
    pub fn limits(&self) -> &DeviceLimits {
        &self.limits
    }

    /// The tensor-core (cooperative-matrix) shapes kernels may use: empty unless the device
    /// has [`DeviceFeatures::cooperative_matrix`].
    pub fn tensor_cores(&self) -> &[TensorCoreShape] {
        &self.tensor_cores
    }

    /// The optional features the device has.
    pub fn features(&self) -> &DeviceFeatures {
        &self.features
    }

    /// The wgpu device and queue (for callers that encode their own commands).
    pub fn raw(&self) -> (&wgpu::Device, &wgpu::Queue) {
        (&self.device, &self.queue)
    }

    /// A storage buffer of `bytes` bytes (contents undefined), reusing pooled memory.
    ///
    /// Zero-byte requests get a 4-byte binding. Requests over
    /// [`DeviceLimits::max_allocation`] fail with [`RuntimeError::BufferTooLarge`].
    pub fn alloc(&self, bytes: u64) -> Result<Buffer> {
        self.check()?;
        let limit = self.limits.max_allocation();
        if bytes > limit || bytes.max(4).next_multiple_of(4) > limit {
            return Err(RuntimeError::BufferTooLarge { requested: bytes, limit });
        }
        let (raw, capacity) = self.storage.acquire(bytes)?;
        Ok(Buffer::new(raw, bytes, capacity, Arc::clone(&self.storage)))
    }

    /// Counters of the storage-buffer pool.
    pub fn memory(&self) -> MemoryStats {
        self.storage.stats()
    }

    /// Frees all pooled (unused) buffers (and the cached bind groups and variable buffers
    /// that would keep some of them alive).
    pub fn trim_pool(&self) {
        self.bind_groups.clear();
        self.var_buffers.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.storage.trim();
        self.staging.trim();
    }

    /// The pipeline for `entry` in `wgsl`, compiled on first use and cached by
    /// (source, entry point).
    pub fn pipeline(&self, wgsl: &str, entry: &str) -> Result<Pipeline> {
        self.check()?;
        self.pipelines.get_or_compile(&self.device, wgsl, entry, self.checked_shaders)
    }

    /// The pipeline for `entry` in `wgsl`, compiled now and not kept in the cache.
    pub(crate) fn pipeline_uncached(&self, wgsl: &str, entry: &str) -> Result<Pipeline> {
        self.check()?;
        crate::pipeline::compile(&self.device, wgsl, entry, self.checked_shaders)
    }

    /// Number of distinct pipelines compiled so far.
    pub fn pipeline_count(&self) -> usize {
        self.pipelines.len()
    }

    /// Bind groups created so far (launches of a loop over the same buffers reuse theirs).
    pub fn bind_groups_created(&self) -> u64 {
        self.bind_groups.created()
    }

    /// Bind groups in the cache now.
    pub fn bind_groups_cached(&self) -> usize {
        self.bind_groups.len()
    }

    /// Buffers alive now, storage and staging: handed out or pooled for reuse.
    pub fn live_buffers(&self) -> u64 {
        self.storage.stats().live + self.staging.stats().live
    }

    /// An empty batch of launches for this device.
    pub fn batch(&self) -> Batch {
        Batch::new(self.limits.max_workgroups_per_dimension)
    }

    /// The bind group of a recorded launch: made when it was prepared, else from the cache.
    pub(crate) fn bind_group(&self, dispatch: &crate::batch::Dispatch) -> wgpu::BindGroup {
        match &dispatch.bind_group {
            Some(group) => group.clone(),
            None => self.bind_groups.get(&self.device, &dispatch.pipeline, &dispatch.buffers),
        }
    }

    /// Submits encoded commands, reporting validation errors instead of panicking.
    pub(crate) fn submit_commands(
        &self,
        commands: impl IntoIterator<Item = wgpu::CommandBuffer>,
        context: &'static str,
    ) -> Result<()> {
        scoped(&self.device, || self.queue.submit(commands))
            .map_err(|e| RuntimeError::from_wgpu(e, context))?;
        Ok(())
    }

    /// Submits everything recorded and waits until it has finished, then reports any error
    /// recorded outside of scopes (including device loss).
    pub fn sync(&self) -> Result<()> {
        self.check()?;
        self.flush_stream()?;
        self.wait_until(wgpu::PollStatus::is_queue_empty)?;
        self.check()
    }

    /// Destroys the device now (wgpu's `Device::destroy`, which is also how a lost device
    /// looks): its memory is freed and every later call fails with
    /// [`RuntimeError::DeviceLost`].
    pub fn destroy(&self) {
        self.health.lost.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(|| "destroyed".into());
        self.device.destroy();
    }

    /// Fails if the device was lost or an error escaped the error scopes.
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(reason) = self.health.lost.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            return Err(RuntimeError::DeviceLost(reason.clone()));
        }
        if let Some(error) = self.health.submit_thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(error);
        }
        let mut errors = self.health.uncaptured.lock().unwrap_or_else(|p| p.into_inner());
        if errors.is_empty() {
            return Ok(());
        }
        let message = errors.join("\n");
        errors.clear();
        Err(RuntimeError::Internal { context: "an earlier call (uncaptured)", message })
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("adapter", &self.adapter)
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}
