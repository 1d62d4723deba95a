//! WGSL renderer of wgrad: prints a linear [`Program`](wgrad_codegen::Program) as a WGSL
//! compute shader ([`render`]), and checks WGSL with naga ([`validate`]).
//!
//! The output follows three contracts:
//! - **Bindings**: every buffer of the program in slot order at `@group(0) @binding(0..)`, then
//!   (when the program has variables) an `array<i32>` of their values in `program.vars` order.
//! - **Storage**: a device buffer holds exactly the host little-endian bytes of its elements,
//!   padded to 4 bytes ([`buffer_bytes`]); 8- and 16-bit elements are packed into `u32` words
//!   (see `types.rs`). i64/u64 need [`WgslCaps::int64`]; f64 is refused.
//! - **Semantics**: values equal `wgrad_ops::exec_alu`'s exactly for integers and bools, and
//!   within a few ULP for floats (narrow floats are rounded after every op, as the CPU
//!   interpreter does); precise `log2`/`sin` helpers replace the loose device builtins (`exp2` is the
//!   builtin: about 3 ulp, and a hardware instruction).
//!
//! Grids with a dimension over [`WgslCaps::max_workgroups_per_dim`] are flattened: the kernel
//! is dispatched as `[total, 1, 1]` workgroups (which `wgrad_runtime_wgpu::fold_workgroups` may
//! fold further) and recovers `gidx0..2` from its linear workgroup id.

mod alu;
mod cast;
mod coop;
mod error;
mod helpers;
mod literal;
mod math;
mod memory;
mod names;
mod shader;
mod sign;
mod types;
mod validate;
mod writer;

pub use coop::COOPERATIVE_MATRIX_ENABLE;
pub use error::RenderError;
pub use shader::{Binding, F16Rounding, Wgsl, WgslCaps};
pub use types::buffer_bytes;
pub use validate::validate;
pub use writer::render;
