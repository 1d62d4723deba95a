//! What rendering takes and gives: the adapter's capabilities and the rendered kernel.

/// What the adapter offers that changes the generated WGSL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WgslCaps {
    /// `enable f16;` works: f16 buffers are `array<f16>` and f16 values are native `f16`.
    pub f16: bool,
    /// `i64`/`u64` work (naga's `SHADER_INT64`); without it 64-bit integers are refused.
    pub int64: bool,
    /// `enable wgpu_cooperative_matrix;` works (wgpu's `EXPERIMENTAL_COOPERATIVE_MATRIX`):
    /// tensor-core tiles render; without it they are refused.
    pub cooperative_matrix: bool,
    /// Subgroup builtins and operations work (wgpu's `SUBGROUP`); without it a kernel that
    /// combines values in subgroups is refused.
    pub subgroups: bool,
    /// `subgroupBarrier()` works (wgpu's `SUBGROUP_BARRIER`): a barrier among one subgroup's
    /// invocations renders as one; without it, as `workgroupBarrier()`.
    pub subgroup_barrier: bool,
    /// Where `f16(x)` of an f32 is known to round to the nearest even f16 on this device (WGSL
    /// lets it pick either neighbour; the runtime probes it): there f16 results convert
    /// natively instead of through the `round_f16` helper.
    pub f16_rounding: F16Rounding,
    /// The largest workgroup count per dispatch dimension; larger grids are flattened.
    pub max_workgroups_per_dim: u32,
}

/// Where a native `f16(x)` of an f32 rounds to the nearest even f16, as the host does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum F16Rounding {
    /// Nowhere known: every f16 result rounds through the `round_f16` helper.
    #[default]
    Software,
    /// In a value stored straight into a storage buffer. A compiler may fold `f32(f16(x))` to
    /// `x`, so a result used on in registers still rounds through the helper (an NVIDIA
    /// driver does this).
    Stores,
    /// Everywhere.
    Native,
}

/// A rendered kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wgsl {
    /// The whole shader.
    pub source: String,
    /// The entry point's name.
    pub entry: String,
    /// What the runtime passes to `Batch::dispatch`: the program's global size, or
    /// `[total, 1, 1]` when the grid was flattened (the shader recovers the ids).
    pub workgroups: [u32; 3],
    /// `@workgroup_size`: the program's local size.
    pub workgroup_size: [u32; 3],
    /// One binding per program buffer, in the program's order.
    pub bindings: Vec<Binding>,
    /// The binding of the `array<i32>` holding the `DefineVar` values in `program.vars` order,
    /// when the program has variables.
    pub vars_binding: Option<u32>,
}

/// Where one buffer argument of a program is bound (always `@group(0)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The buffer's slot in the program.
    pub slot: usize,
    /// Its `@binding` number.
    pub binding: u32,
    /// Whether the kernel writes it (`read_write`, atomics when packed).
    pub writable: bool,
}
