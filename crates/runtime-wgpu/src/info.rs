//! Plain descriptions of an adapter: what it is, its limits, and the features we use.
//!
//! These are copies taken when the device is created; they never change afterwards.
//! Code generation reads them to size workgroups, choose dtypes and decide how to split
//! large dispatches, so they hold only numbers and flags, no wgpu handles.

use wgrad_codegen::TensorCoreShape;
use wgrad_dtype::DType;

/// Kind of adapter, in the order the runtime prefers them (best first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeviceKind {
    /// A discrete GPU.
    Discrete,
    /// A GPU sharing memory with the CPU.
    Integrated,
    /// A virtualised GPU.
    Virtual,
    /// A software rasteriser such as Mesa lavapipe ("llvmpipe").
    Cpu,
    /// Anything else.
    Other,
}

impl DeviceKind {
    /// Converts wgpu's device type.
    pub(crate) fn from_wgpu(ty: wgpu::DeviceType) -> Self {
        match ty {
            wgpu::DeviceType::DiscreteGpu => Self::Discrete,
            wgpu::DeviceType::IntegratedGpu => Self::Integrated,
            wgpu::DeviceType::VirtualGpu => Self::Virtual,
            wgpu::DeviceType::Cpu => Self::Cpu,
            wgpu::DeviceType::Other => Self::Other,
        }
    }
}

/// Who the adapter is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Adapter name as the driver reports it (e.g. "NVIDIA H100 80GB HBM3", "llvmpipe ...").
    pub name: String,
    /// Graphics API wgpu uses for it ("vulkan", "metal", "dx12").
    pub backend: String,
    /// Kind of device.
    pub kind: DeviceKind,
    /// Driver name and version, as reported (may be empty).
    pub driver: String,
    /// The largest subgroup the adapter may run (`None` when it does not say).
    pub subgroup_size: Option<u32>,
    /// The smallest subgroup the adapter may run (`None` when it does not say): equal to
    /// `subgroup_size` where every subgroup has that size (NVIDIA's 32, llvmpipe's 8).
    pub subgroup_min_size: Option<u32>,
}

impl AdapterSummary {
    /// Summarises wgpu's adapter info.
    pub(crate) fn from_wgpu(info: &wgpu::AdapterInfo) -> Self {
        let driver = [info.driver.as_str(), info.driver_info.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            name: info.name.clone(),
            backend: info.backend.to_str().to_owned(),
            kind: DeviceKind::from_wgpu(info.device_type),
            driver,
            subgroup_size: Some(info.subgroup_max_size).filter(|&n| n > 0),
            subgroup_min_size: Some(info.subgroup_min_size).filter(|&n| n > 0),
        }
    }
}

/// The device limits that matter to kernels (the adapter's own, which the device
/// requests in full).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Largest buffer range bindable as one storage buffer, in bytes.
    pub max_storage_buffer_binding_size: u64,
    /// Largest buffer that can be created, in bytes.
    pub max_buffer_size: u64,
    /// Largest `@workgroup_size` per dimension (x, y, z).
    pub max_workgroup_size: [u32; 3],
    /// Largest product of the three `@workgroup_size` dimensions.
    pub max_invocations_per_workgroup: u32,
    /// Largest workgroup count per dispatch dimension (65535 on most devices).
    pub max_workgroups_per_dimension: u32,
    /// Bytes of `var<workgroup>` memory per workgroup.
    pub max_workgroup_storage_size: u32,
    /// Storage buffers one compute shader may bind.
    pub max_storage_buffers_per_stage: u32,
}

impl DeviceLimits {
    /// Picks the limits we care about out of wgpu's.
    pub(crate) fn from_wgpu(limits: &wgpu::Limits) -> Self {
        Self {
            max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
            max_buffer_size: limits.max_buffer_size,
            max_workgroup_size: [
                limits.max_compute_workgroup_size_x,
                limits.max_compute_workgroup_size_y,
                limits.max_compute_workgroup_size_z,
            ],
            max_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            max_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            max_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
            max_storage_buffers_per_stage: limits.max_storage_buffers_per_shader_stage,
        }
    }

    /// Largest buffer this runtime hands out: it must be both creatable and bindable.
    pub fn max_allocation(&self) -> u64 {
        self.max_buffer_size.min(self.max_storage_buffer_binding_size)
    }
}

/// Optional features the device was created with (each enabled when the adapter has it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DeviceFeatures {
    /// `enable f16;` works in WGSL (`SHADER_F16`).
    pub f16: bool,
    /// `i64`/`u64` work in WGSL (`SHADER_INT64`, a native extension).
    pub int64: bool,
    /// Subgroup built-ins and operations work in WGSL (`SUBGROUP`).
    pub subgroups: bool,
    /// `subgroupBarrier()` works in WGSL (`SUBGROUP_BARRIER`).
    pub subgroup_barrier: bool,
    /// Compute passes can write timestamps, so per-dispatch GPU times are available
    /// (`TIMESTAMP_QUERY`).
    pub timestamps: bool,
    /// `enable wgpu_cooperative_matrix;` works (`EXPERIMENTAL_COOPERATIVE_MATRIX`, requested
    /// only with f16, and not when `WGRAD_COOPERATIVE_MATRIX=0`): tensor cores from WGSL.
    pub cooperative_matrix: bool,
}

impl DeviceFeatures {
    /// Every wgpu feature the runtime uses when present.
    pub(crate) const WANTED: wgpu::Features = wgpu::Features::SHADER_F16
        .union(wgpu::Features::SHADER_INT64)
        .union(wgpu::Features::SUBGROUP)
        .union(wgpu::Features::SUBGROUP_BARRIER)
        .union(wgpu::Features::TIMESTAMP_QUERY);

    /// Reads the flags back from a device's feature set.
    pub(crate) fn from_wgpu(features: wgpu::Features) -> Self {
        Self {
            f16: features.contains(wgpu::Features::SHADER_F16),
            int64: features.contains(wgpu::Features::SHADER_INT64),
            subgroups: features.contains(wgpu::Features::SUBGROUP),
            subgroup_barrier: features.contains(wgpu::Features::SUBGROUP_BARRIER),
            timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            cooperative_matrix: features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
        }
    }
}

/// The tensor-core shapes WGSL can use among an adapter's cooperative-matrix configurations:
/// the square ones (WGSL has only `coop_mat8x8` and `coop_mat16x16`) with f16 inputs and f16
/// or f32 accumulators; f32 accumulation first, then the larger tile.
pub(crate) fn tensor_cores(props: &[wgpu::CooperativeMatrixProperties]) -> Vec<TensorCoreShape> {
    let dtype = |t: wgpu::CooperativeScalarType| match t {
        wgpu::CooperativeScalarType::F16 => Some(DType::F16),
        wgpu::CooperativeScalarType::F32 => Some(DType::F32),
        _ => None,
    };
    let mut out: Vec<TensorCoreShape> = props
        .iter()
        .filter(|p| p.m_size == p.n_size && p.n_size == p.k_size && matches!(p.m_size, 8 | 16))
        .filter_map(|p| {
            let (dtype_in, dtype_out) = (dtype(p.ab_type)?, dtype(p.cr_type)?);
            let n = p.m_size as usize;
            (dtype_in == DType::F16).then_some(TensorCoreShape { dims: (n, n, n), dtype_in, dtype_out })
        })
        .collect();
    out.sort_by_key(|t| (t.dtype_out != DType::F32, std::cmp::Reverse(t.dims.0)));
    out.dedup();
    out
}
