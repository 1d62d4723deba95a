//! Compiled compute pipelines and their cache, keyed by (WGSL source, entry point).
//!
//! Invariants:
//! - A (source, entry) pair is compiled at most once per device while it compiles
//!   successfully (two threads racing on a new pair may both compile; one result is
//!   kept and returned to both). Failures are not cached.
//! - Pipelines use wgpu's automatic layout: the bind group layout of `@group(0)` is
//!   derived from the shader (empty when it binds nothing) and kept next to the
//!   pipeline, so a launch only creates its bind group.
//! - The buffers of a dispatch bind to `@group(0) @binding(i)` in order; other groups
//!   are not supported.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{RuntimeError, scoped};

/// A compiled compute pipeline: cheap to clone, shared with the cache.
#[derive(Clone)]
pub struct Pipeline {
    inner: Arc<Compiled>,
}

/// What compiling one entry point produced.
struct Compiled {
    /// Unique among the pipelines of the process (never reused, unlike an address).
    id: u64,
    entry: String,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

impl Pipeline {
    /// Entry point this pipeline runs.
    pub fn entry(&self) -> &str {
        &self.inner.entry
    }

    /// Whether two handles are the same compiled pipeline (cache hit).
    pub fn same(&self, other: &Pipeline) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// An identity for cache keys, never given to another pipeline (uncached pipelines come
    /// and go).
    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// The wgpu pipeline.
    pub(crate) fn raw(&self) -> &wgpu::ComputePipeline {
        &self.inner.pipeline
    }

    /// Layout of `@group(0)`.
    pub(crate) fn layout(&self) -> &wgpu::BindGroupLayout {
        &self.inner.layout
    }
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline").field("entry", &self.inner.entry).finish()
    }
}

/// Compiled pipelines by source, then entry point.
#[derive(Default)]
pub(crate) struct PipelineCache {
    by_source: Mutex<HashMap<String, Vec<Pipeline>>>,
}

impl PipelineCache {
    /// The cached pipeline for (`source`, `entry`), compiling it on a miss.
    pub(crate) fn get_or_compile(
        &self,
        device: &wgpu::Device,
        source: &str,
        entry: &str,
        checked: bool,
    ) -> Result<Pipeline, RuntimeError> {
        if let Some(hit) = self.lookup(source, entry) {
            return Ok(hit);
        }
        let compiled = compile(device, source, entry, checked)?;
        let mut map = self.lock();
        let list = map.entry(source.to_owned()).or_default();
        if let Some(raced) = list.iter().find(|p| p.entry() == entry) {
            return Ok(raced.clone());
        }
        list.push(compiled.clone());
        Ok(compiled)
    }

    /// Number of compiled pipelines held.
    pub(crate) fn len(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    fn lookup(&self, source: &str, entry: &str) -> Option<Pipeline> {
        let map = self.lock();
        map.get(source)?.iter().find(|p| p.entry() == entry).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Pipeline>>> {
        // Entries are inserted whole, so a poisoned map is still consistent.
        self.by_source.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}

/// Compiles one entry point of `source`, reporting WGSL errors with their line; `checked`
/// keeps wgpu's index clamping in the shader (see [`crate::device::SHADER_CHECKS_ENV`]).
#[allow(unsafe_code)]
pub(crate) fn compile(
    device: &wgpu::Device,
    source: &str,
    entry: &str,
    checked: bool,
) -> Result<Pipeline, RuntimeError> {
    let mut module = None;
    let compiled = scoped(device, || {
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(entry),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        };
        let shader = match checked {
            true => device.create_shader_module(desc),
            // SAFETY: wgrad generates every shader itself and gates every access it cannot prove
            // in range, so wgpu's clamping of indices (which slowed tensor-core kernels by a third,
            // docs/PERFORMANCE.md) adds nothing; buffers stay bounds-checked wherever the
            // platform checks them itself (Vulkan's robust buffer access). Every loop wgrad
            // writes ends (a bounded range), so loop bounding is off where it costs: in
            // cooperative-matrix kernels (13% of an H100's f16 GEMM); elsewhere it stays, as it
            // keeps the driver from unrolling a register tile's already unrolled loop (without
            // it the f32 GEMM lost 28%). The integer division guards stay on.
            false => unsafe {
                let mut checks = wgpu::ShaderRuntimeChecks::checked();
                checks.bounds_checks = false;
                checks.force_loop_bounding = !source.contains(wgrad_renderer_wgsl::COOPERATIVE_MATRIX_ENABLE);
                device.create_shader_module_trusted(desc, checks)
            },
        };
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module: &shader,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        module = Some(shader);
        let layout = pipeline.get_bind_group_layout(0);
        (pipeline, layout)
    });
    let (pipeline, layout) = match compiled {
        Ok(compiled) => compiled,
        Err(error) => return Err(compile_error(module.as_ref(), source, entry, error)),
    };
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    Ok(Pipeline { inner: Arc::new(Compiled { id, entry: entry.to_owned(), pipeline, layout }) })
}

/// Builds [`RuntimeError::Compile`] from the scope's error and the module's messages.
fn compile_error(
    module: Option<&wgpu::ShaderModule>,
    source: &str,
    entry: &str,
    error: wgpu::Error,
) -> RuntimeError {
    let message = match error {
        wgpu::Error::OutOfMemory { .. } => {
            return RuntimeError::from_wgpu(error, "pipeline compilation");
        }
        wgpu::Error::Validation { description, .. } | wgpu::Error::Internal { description, .. } => {
            description
        }
    };
    let located = module.map(|m| pollster::block_on(m.get_compilation_info())).and_then(|info| {
        info.messages
            .into_iter()
            .filter(|m| m.message_type == wgpu::CompilationMessageType::Error)
            .find_map(|m| m.location)
    });
    let line = located.map(|loc| loc.line_number);
    let line_text = line.and_then(|n| source.lines().nth(n as usize - 1).map(str::to_owned));
    RuntimeError::Compile { entry: entry.to_owned(), line, line_text, message }
}
