//! Target: what a device can do, as far as kernel optimisation and lowering care.

use wgrad_dtype::DType;

/// A tensor-core (cooperative matrix) shape a target offers: `D(m, n) += A(m, k) * B(k, n)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorCoreShape {
    /// `(m, n, k)`.
    pub dims: (usize, usize, usize),
    /// Element type of the A and B inputs.
    pub dtype_in: DType,
    /// Element type of the accumulator and output.
    pub dtype_out: DType,
}

/// The limits and features of a device that OptOps, heuristics and the lowerer respect.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// A short name for messages (`"gpu"`, `"tiny"`).
    pub name: String,
    /// How many global (workgroup-grid) dims a dispatch may have.
    pub max_global_dims: usize,
    /// The largest number of workgroups per global dim (one entry per dim).
    pub max_global_size: Vec<usize>,
    /// The largest workgroup size per local dim (one entry per dim).
    pub max_local_size: Vec<usize>,
    /// The largest number of invocations (threads) in one workgroup.
    pub max_local_invocations: usize,
    /// Bytes of workgroup (shared) memory one kernel may use.
    pub shared_max: usize,
    /// Whether kernels may use workgroup-local dims (LOCAL).
    pub has_local: bool,
    /// Whether kernels may use workgroup memory (GROUP, GROUPTOP).
    pub has_shared: bool,
    /// Vector widths loads and stores may use, e.g. `[1, 2, 4]`: the vectorizer folds
    /// neighbouring lanes of 32-bit (and, with `has_f16`, f16) elements into these.
    pub vector_widths: Vec<usize>,
    /// Whether `f16` arithmetic and storage are available.
    pub has_f16: bool,
    /// The subgroup (warp) size, when known: the largest, where the device's sizes vary.
    pub subgroup_size: Option<usize>,
    /// Whether every subgroup has exactly `subgroup_size` invocations, consecutive in
    /// `local_invocation_index` (the device's smallest and largest subgroups are the same): a
    /// row one subgroup wide ([`crate::Kernel::rows_in_subgroups`]) needs it.
    pub fixed_subgroup_size: bool,
    /// Whether kernels may use subgroup operations and builtins (`subgroupAdd`,
    /// `subgroup_id`): a grouped reduce then combines each subgroup's partials before they
    /// meet in workgroup memory, whatever the subgroups' size.
    pub subgroup_ops: bool,
    /// Tensor-core shapes; empty when the target has none.
    pub tensor_cores: Vec<TensorCoreShape>,
    /// Threads the device needs in flight to be busy (a big GPU: about 1 << 17; a CPU: a few
    /// hundred): a reduce with fewer outputs is grouped, and register tiles shrink to keep a
    /// quarter of it.
    pub parallelism: usize,
    /// Loop iterations one invocation may run in all before the driver silently stops its
    /// loops (Mesa llvmpipe's loop limiter: 65,535); `None` where there is no such limit.
    /// A kernel that could run more is refused rather than left to return a wrong value.
    pub max_loop_iterations: Option<u64>,
}

impl Target {
    /// Bytes one element of `dtype` takes in workgroup memory: a boolean is a 32-bit word (the
    /// WGSL renderer's `array<bool>` read wrong values on NVIDIA), and a half without `has_f16`
    /// is an f32.
    pub fn workgroup_itemsize(&self, dtype: DType) -> usize {
        match dtype {
            DType::BOOL => 4,
            DType::F16 | DType::BF16 if !self.has_f16 => 4,
            _ => dtype.itemsize(),
        }
    }

    /// A typical WebGPU-class GPU: 3 global dims of up to 65535 workgroups, 256 invocations
    /// per workgroup (256, 256, 64 per dim), 16 KiB of workgroup memory, vectors up to 4.
    pub fn generic_gpu() -> Target {
        Target {
            name: "gpu".into(),
            max_global_dims: 3,
            max_global_size: vec![65535; 3],
            max_local_size: vec![256, 256, 64],
            max_local_invocations: 256,
            shared_max: 16384,
            has_local: true,
            has_shared: true,
            vector_widths: vec![1, 2, 4],
            has_f16: true,
            subgroup_size: Some(32),
            fixed_subgroup_size: true,
            subgroup_ops: false,
            tensor_cores: vec![],
            parallelism: 1 << 17,
            max_loop_iterations: None,
        }
    }

    /// Deliberately tiny limits, so tests hit every split and refusal: 2 global dims of up
    /// to 16 workgroups, at most 8 invocations (4 per dim) and 64 bytes of workgroup memory.
    pub fn tiny() -> Target {
        Target {
            name: "tiny".into(),
            max_global_dims: 2,
            max_global_size: vec![16; 2],
            max_local_size: vec![4, 4],
            max_local_invocations: 8,
            shared_max: 64,
            has_local: true,
            has_shared: true,
            vector_widths: vec![1],
            has_f16: false,
            subgroup_size: None,
            fixed_subgroup_size: false,
            subgroup_ops: false,
            tensor_cores: vec![],
            parallelism: 64,
            max_loop_iterations: None,
        }
    }

    /// A target without workgroup dims or memory (a CPU-like one): every axis is global, and
    /// 256 threads keep it busy.
    pub fn no_locals() -> Target {
        Target {
            name: "nolocals".into(),
            parallelism: 1 << 8,
            max_local_size: vec![1; 3],
            max_local_invocations: 1,
            shared_max: 0,
            has_local: false,
            has_shared: false,
            subgroup_size: None,
            ..Target::generic_gpu()
        }
    }
}
