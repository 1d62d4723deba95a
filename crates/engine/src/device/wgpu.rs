//! The wgpu backend: kernels rendered to WGSL and run on a GPU (or Mesa lavapipe) through
//! `wgrad-runtime-wgpu`. The launches of one `run` are recorded into one batch and submitted
//! once; nothing waits for the GPU until bytes are read back (or times are asked for).

use std::sync::Arc;
use std::time::Duration;

use wgrad_codegen::{Program, Target};
use wgrad_dtype::DType;
use wgrad_runtime_wgpu::{Buffer, Device, GpuProgram, RuntimeError, adapters};

use super::{Backend, CompiledProgram, DeviceBuffer, Launch};
use crate::EngineError;

/// A wgpu adapter as a device.
pub struct WgpuBackend {
    device: Device,
    target: Target,
}

fn runtime(e: RuntimeError) -> EngineError {
    EngineError::Runtime(e.to_string())
}

fn buffer(buf: &DeviceBuffer) -> Result<&Buffer, EngineError> {
    buf.raw.downcast_ref::<Buffer>().ok_or_else(|| EngineError::Runtime("not a wgpu buffer".into()))
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
        .map_err(runtime)?;
        let target = device.target();
        Ok(WgpuBackend { device, target })
    }
}

impl Backend for WgpuBackend {
    fn name(&self) -> String {
        format!("WGPU ({})", self.device.adapter().name)
    }

    fn target(&self) -> &Target {
        &self.target
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<DeviceBuffer, EngineError> {
        let raw = self.device.alloc_elements(dtype, len).map_err(runtime)?;
        Ok(DeviceBuffer { dtype, len, raw: Arc::new(raw) })
    }

    fn copy_in(&self, buf: &DeviceBuffer, bytes: &[u8]) -> Result<(), EngineError> {
        let expected = buf.dtype.itemsize() * buf.len;
        if bytes.len() != expected {
            return Err(EngineError::DataSize { got: bytes.len(), expected, len: buf.len, dtype: buf.dtype });
        }
        // queue writes move whole 4-byte words: pad the tail of 1- and 2-byte element arrays
        let mut padded = bytes.to_vec();
        padded.resize(bytes.len().next_multiple_of(4), 0);
        self.device.write(buffer(buf)?, 0, &padded).map_err(runtime)
    }

    fn copy_out(&self, buf: &DeviceBuffer) -> Result<Vec<u8>, EngineError> {
        let mut bytes = self.device.read(buffer(buf)?).map_err(runtime)?;
        bytes.truncate(buf.dtype.itemsize() * buf.len);
        Ok(bytes)
    }

    fn compile(&self, program: &Program) -> Result<CompiledProgram, EngineError> {
        let gpu = self.device.compile(program).map_err(runtime)?;
        Ok(CompiledProgram { program: Arc::new(program.clone()), raw: Arc::new(gpu) })
    }

    fn run(&self, launches: &[Launch<'_>], timed: bool) -> Result<Vec<Option<Duration>>, EngineError> {
        let mut batch = self.device.batch();
        for launch in launches {
            let program = launch.program.raw.downcast_ref::<GpuProgram>();
            let program = program.ok_or_else(|| EngineError::Runtime("not a wgpu program".into()))?;
            let buffers = launch.buffers.iter().map(|b| buffer(b)).collect::<Result<Vec<_>, _>>()?;
            self.device.launch(&mut batch, program, &buffers, &launch.vars).map_err(runtime)?;
        }
        if timed {
            return self.device.run_timed(batch).map_err(runtime);
        }
        self.device.submit(batch).map_err(runtime)?;
        Ok(vec![None; launches.len()])
    }

    fn memory_used(&self) -> usize {
        self.device.memory().in_use as usize
    }

    fn source(&self, p: &CompiledProgram) -> Option<String> {
        p.raw.downcast_ref::<GpuProgram>().map(|g| g.source().to_owned())
    }

    fn max_buffers(&self) -> usize {
        // one binding is kept for the symbolic variables' values
        (self.device.limits().max_storage_buffers_per_stage as usize).saturating_sub(1)
    }
}
