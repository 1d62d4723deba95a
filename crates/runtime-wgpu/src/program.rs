//! Generated kernels: a codegen [`Program`] rendered to WGSL for this device's capabilities,
//! compiled once (the pipeline cache is keyed by source), and launched into a [`Batch`].
//!
//! Launch contract (shared with `wgrad-renderer-wgsl`): buffers are passed by slot and bound
//! at the bindings the renderer chose; symbolic variable values go, in `program.vars` order,
//! into one `array<i32>` bound after them; the renderer's workgroup counts are dispatched
//! through [`Batch::dispatch`], which folds a flattened grid over 65535. A buffer of
//! variable values is made once per distinct set of values and reused (so is the bind
//! group that binds it).

use std::sync::{Arc, PoisonError};

use wgrad_codegen::{BufferArg, Program, Target};
use wgrad_dtype::DType;
use wgrad_renderer_wgsl::{Wgsl, WgslCaps, buffer_bytes, render};

use crate::batch::{Batch, Dispatch, Prepared, fold_workgroups};
use crate::buffer::Buffer;
use crate::device::Device;
use crate::error::{Result, RuntimeError, scoped};
use crate::info::DeviceKind;
use crate::pipeline::Pipeline;

/// A program rendered and compiled for one device: cheap to clone.
#[derive(Clone)]
pub struct GpuProgram {
    inner: Arc<Compiled>,
}

struct Compiled {
    name: String,
    global_size: [usize; 3],
    wgsl: Wgsl,
    pipeline: Pipeline,
    buffers: Vec<BufferArg>,
    vars: usize,
}

impl GpuProgram {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The WGSL it was compiled from (what DEBUG=4 prints).
    pub fn source(&self) -> &str {
        &self.inner.wgsl.source
    }

    /// The rendered shader with its bindings and launch grid.
    pub fn wgsl(&self) -> &Wgsl {
        &self.inner.wgsl
    }

    /// Whether two handles share one compiled pipeline.
    pub fn same_pipeline(&self, other: &GpuProgram) -> bool {
        self.inner.pipeline.same(&other.inner.pipeline)
    }
}

impl Device {
    /// What this device's WGSL may use.
    pub fn caps(&self) -> WgslCaps {
        WgslCaps {
            f16: self.features().f16,
            int64: self.features().int64,
            cooperative_matrix: self.features().cooperative_matrix,
            subgroups: self.features().subgroups,
            subgroup_barrier: self.features().subgroup_barrier,
            f16_rounding: self.f16_rounding(),
            max_workgroups_per_dim: self.limits().max_workgroups_per_dimension,
        }
    }

    /// The codegen target of this device: its workgroup limits and memory, and the parallelism
    /// its kind wants (a CPU adapter such as lavapipe needs few threads). Grids larger than
    /// a dispatch dimension are flattened by the renderer, so a global dim may be as large as
    /// an `i32` index allows.
    pub fn target(&self) -> Target {
        let limits = self.limits();
        Target {
            name: "wgpu".into(),
            max_global_dims: 3,
            max_global_size: vec![i32::MAX as usize; 3],
            max_local_size: limits.max_workgroup_size.iter().map(|&n| n as usize).collect(),
            max_local_invocations: limits.max_invocations_per_workgroup as usize,
            shared_max: limits.max_workgroup_storage_size as usize,
            has_local: true,
            has_shared: true,
            // 8- and 16-byte loads and stores (`array<vec4<f32>>`); lanes compute as scalars
            vector_widths: vec![1, 2, 4],
            has_f16: self.features().f16,
            subgroup_size: self.adapter().subgroup_size.map(|n| n as usize),
            fixed_subgroup_size: self.adapter().subgroup_size == self.adapter().subgroup_min_size,
            subgroup_ops: self.features().subgroups,
            tensor_cores: self.tensor_cores().to_vec(),
            parallelism: match self.adapter().kind {
                DeviceKind::Discrete => 1 << 17,
                DeviceKind::Cpu => 1 << 8,
                DeviceKind::Integrated | DeviceKind::Virtual | DeviceKind::Other => 1 << 15,
            },
            // llvmpipe's loop limiter ends every loop of an invocation after 65,535 iterations
            // in all, without an error (Mesa's loop limiter)
            max_loop_iterations: self.adapter().name.contains("llvmpipe").then_some(65_535),
        }
    }

    /// Renders `program` for this device and compiles it (once per distinct source); a shader
    /// the device rejects is a [`RuntimeError::Kernel`] with the kernel's name and source.
    pub fn compile(&self, program: &Program) -> Result<GpuProgram> {
        self.compile_with(program, true)
    }

    /// Renders and compiles `program` without keeping the pipeline in the device's cache:
    /// for one-off kernels such as a search's candidates, which would otherwise stay
    /// compiled for the device's lifetime. May be called from many threads at once.
    pub fn compile_uncached(&self, program: &Program) -> Result<GpuProgram> {
        self.compile_with(program, false)
    }

    fn compile_with(&self, program: &Program, cached: bool) -> Result<GpuProgram> {
        let mut wgsl = render(program, &self.caps())?;
        // a search's one-off candidates stay out of the folder
        let dir = self.wgsl_dir.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(dir) = dir.filter(|_| cached) {
            wgsl.source = crate::wgsl_dir::exchange(&dir, &program.name, &wgsl.source)?;
        }
        let pipeline = match cached {
            true => self.pipeline(&wgsl.source, &wgsl.entry),
            false => self.pipeline_uncached(&wgsl.source, &wgsl.entry),
        };
        let pipeline = pipeline.map_err(|error| match error {
            RuntimeError::DeviceLost(_) => error,
            _ => RuntimeError::Kernel {
                kernel: program.name.clone(),
                wgsl: wgsl.source.clone(),
                error: Box::new(error),
            },
        })?;
        Ok(GpuProgram {
            inner: Arc::new(Compiled {
                name: program.name.clone(),
                global_size: program.global_size,
                pipeline,
                buffers: program.buffers.clone(),
                vars: program.vars.len(),
                wgsl,
            }),
        })
    }

    /// A buffer for `len` elements of `dtype`, laid out as kernels and the host expect
    /// (little-endian elements, padded to 4 bytes).
    pub fn alloc_elements(&self, dtype: DType, len: usize) -> Result<Buffer> {
        self.alloc(buffer_bytes(dtype, len) as u64)
    }

    /// Sets the folder of kernels' WGSL ([`crate::WGSL_DIR_ENV`], which sets it when the
    /// device opens), or clears it: kernels compiled from now on are written there, or read
    /// from an edited copy there.
    pub fn set_wgsl_dir(&self, dir: Option<std::path::PathBuf>) {
        *self.wgsl_dir.lock().unwrap_or_else(PoisonError::into_inner) = dir;
    }

    /// Records a launch of `program` into `batch`: `buffers[slot]` for each buffer argument,
    /// `vars` in `program.vars` order. Its bind group is found (or made) at submit.
    pub fn launch(
        &self,
        batch: &mut Batch,
        program: &GpuProgram,
        buffers: &[&Buffer],
        vars: &[i64],
    ) -> Result<()> {
        self.launch_workgroups(batch, program, buffers, vars, program.inner.wgsl.workgroups)
    }

    /// Records a launch of part of `program`'s grid: the first `grid[d]` workgroups of each
    /// dimension `d` of its `global_size` (as many linear workgroups when the renderer
    /// flattened the grid). Timing runs use it to measure large kernels on a sample of
    /// their workgroups; the rest of the output is left unwritten.
    pub fn launch_part(
        &self,
        batch: &mut Batch,
        program: &GpuProgram,
        buffers: &[&Buffer],
        vars: &[i64],
        grid: [usize; 3],
    ) -> Result<()> {
        let p = &program.inner;
        if grid.iter().zip(&p.global_size).any(|(g, full)| g > full || *g == 0) {
            let message = format!("part {grid:?} of the grid {:?}", p.global_size);
            return Err(RuntimeError::BadLaunch { kernel: p.name.clone(), message });
        }
        let flattened = p.wgsl.workgroups.iter().zip(&p.global_size).any(|(&w, &g)| w as usize != g);
        let counts = match flattened {
            true => [grid.iter().product(), 1, 1],
            false => grid,
        };
        // within the full grid's counts, which the renderer sized to fit u32
        let workgroups = counts.map(|c| c as u32);
        self.launch_workgroups(batch, program, buffers, vars, workgroups)
    }

    fn launch_workgroups(
        &self,
        batch: &mut Batch,
        program: &GpuProgram,
        buffers: &[&Buffer],
        vars: &[i64],
        workgroups: [u32; 3],
    ) -> Result<()> {
        batch.dispatches_mut().push(self.dispatch_of(program, buffers, vars, workgroups)?);
        Ok(())
    }

    /// A launch of `program` (arguments as [`Device::launch`] takes them) checked, folded and
    /// with its bind group made, to push into batches many times.
    pub fn prepare(&self, program: &GpuProgram, buffers: &[&Buffer], vars: &[i64]) -> Result<Prepared> {
        let mut dispatch = self.dispatch_of(program, buffers, vars, program.inner.wgsl.workgroups)?;
        let group = scoped(&self.device, || self.bind_group(&dispatch))
            .map_err(|e| RuntimeError::from_wgpu(e, "bind group"))?;
        dispatch.bind_group = Some(group);
        Ok(Prepared { dispatch })
    }

    /// The checked launch of `program` on `buffers` with `vars` over `workgroups`, its bind
    /// group not made yet.
    fn dispatch_of(
        &self,
        program: &GpuProgram,
        buffers: &[&Buffer],
        vars: &[i64],
        workgroups: [u32; 3],
    ) -> Result<Dispatch> {
        let p = &program.inner;
        let bad = |message: String| RuntimeError::BadLaunch { kernel: p.name.clone(), message };
        if vars.len() != p.vars {
            return Err(bad(format!("{} variable values for {} variables", vars.len(), p.vars)));
        }
        let mut bound: Vec<Buffer> = Vec::with_capacity(p.buffers.len() + 1);
        for (arg, binding) in p.buffers.iter().zip(&p.wgsl.bindings) {
            debug_assert_eq!(binding.binding as usize, bound.len(), "bindings are numbered in order");
            let buffer = *buffers
                .get(arg.slot)
                .ok_or_else(|| bad(format!("no buffer for slot {} ({} given)", arg.slot, buffers.len())))?;
            if let Some(len) = arg.size {
                let need = buffer_bytes(arg.dtype, len) as u64;
                if buffer.size() < need {
                    return Err(bad(format!(
                        "buffer for slot {} holds {} bytes, the kernel reads {need}",
                        arg.slot,
                        buffer.size()
                    )));
                }
            }
            bound.push(buffer.clone());
        }
        let values: Vec<i32> = vars
            .iter()
            .map(|&v| i32::try_from(v).map_err(|_| bad(format!("variable value {v} does not fit in i32"))))
            .collect::<Result<_>>()?;
        if !values.is_empty() {
            bound.push(self.var_buffer(values)?);
        }
        let workgroups = fold_workgroups(workgroups, self.limits().max_workgroups_per_dimension)?;
        Ok(Dispatch { pipeline: p.pipeline.clone(), buffers: bound, workgroups, bind_group: None })
    }

    /// The buffer holding `values` (made once per distinct values; at most a few thousand
    /// are kept).
    fn var_buffer(&self, values: Vec<i32>) -> Result<Buffer> {
        if let Some(buffer) = self.var_buffers.lock().unwrap_or_else(|p| p.into_inner()).get(&values) {
            return Ok(buffer.clone());
        }
        let buffer = self.upload(&values)?;
        let mut cached = self.var_buffers.lock().unwrap_or_else(|p| p.into_inner());
        if cached.len() >= 4096 {
            cached.clear();
        }
        cached.insert(values, buffer.clone());
        Ok(buffer)
    }
}
