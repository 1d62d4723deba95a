//! Kernel-AST builders and the render-and-validate helper shared by the renderer tests.
#![allow(dead_code, reason = "each test file uses a subset")]

// the kernel-AST builders are codegen's test helpers, shared rather than copied
#[path = "../../../codegen/tests/common/mod.rs"]
pub mod ast;

pub use ast::{load, load_dt, matmul_ast, padded, sints, st, store_ast, strided};
use wgrad_codegen::{OptMode, Program, Target, compile};
use wgrad_ops::UOp;
use wgrad_renderer_wgsl::{F16Rounding, Wgsl, WgslCaps, render, validate};

/// An adapter with f16, int64 and subgroups (lavapipe's features).
pub const FULL: WgslCaps = WgslCaps {
    f16: true,
    int64: true,
    cooperative_matrix: false,
    subgroups: true,
    subgroup_barrier: true,
    f16_rounding: F16Rounding::Software,
    max_workgroups_per_dim: 65535,
};
/// [`FULL`] with cooperative matrices (an NVIDIA GPU's features).
pub const COOP: WgslCaps = WgslCaps { cooperative_matrix: true, ..FULL };
/// An adapter without f16, int64 or subgroups.
pub const BARE: WgslCaps = WgslCaps {
    f16: false,
    int64: false,
    cooperative_matrix: false,
    subgroups: false,
    subgroup_barrier: false,
    f16_rounding: F16Rounding::Software,
    max_workgroups_per_dim: 65535,
};

/// The program of `ast` on a generic GPU under `mode`.
pub fn program(ast: &UOp, mode: OptMode) -> Program {
    compile(ast, &Target::generic_gpu(), &mode, "kernel").expect("compiles").1
}

/// Renders `program` and validates the result with naga, panicking with the source if invalid.
pub fn render_valid(program: &Program, caps: &WgslCaps) -> Wgsl {
    let wgsl = render(program, caps).unwrap_or_else(|e| panic!("render: {e}\n{program}"));
    if let Err(e) = validate(&wgsl.source, caps) {
        panic!("{e}\n{}\n{program}", wgsl.source);
    }
    wgsl
}
