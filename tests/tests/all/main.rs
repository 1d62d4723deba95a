//! The crate's integration tests in one binary: one link and one process, so the suite builds
//! and runs in less time and disk. Tests that change process-wide state (flags, counters,
//! the interned-node table) or re-run their own binary keep binaries of their own.

mod cpu_vs_ast_eval;
mod graph_fuzz;
mod one_hot;
mod tensor_cores;
mod wgpu_vs_cpu;
mod wgsl_math;
