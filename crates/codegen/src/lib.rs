//! Kernel optimisation and lowering of wgrad: OptOps, heuristics, lowerer, vectorizer and
//! linearizer.
//!
//! A kernel AST (see `wgrad_ops`) becomes a [`Kernel`] for a [`Target`]; [`Opt`]s from
//! [`hand_coded_optimizations`] (or a search) reshape its axes, and
//! [`Kernel::get_optimized_ast`] hands the result to the lowerer; [`vectorize`] folds
//! neighbouring lanes into vector loads and stores, and [`linearize`] orders the result into a
//! [`Program`]. [`ast_eval`] is an independent reference evaluator of kernel ASTs for tests.

pub mod ast_eval;
mod factor;
mod heuristic;
mod kernel;
mod opt;
mod target;
mod tensor_core;
mod tile_stage;

pub use heuristic::hand_coded_optimizations;
pub use kernel::{AxisKind, Kernel, ShapeFn, buffer_st, view_st};
pub use opt::{Opt, OptError, OptOps};
pub use target::{Target, TensorCoreShape};
mod lower_tc;
mod lowerer;
pub use lowerer::{LowerError, lower};
mod vectorize;
pub use vectorize::vectorize;
mod linearize;
mod program;
pub use linearize::{LinearizeError, linearize};
pub use program::{BufferArg, Program};
mod pipeline;
pub use pipeline::{CodegenError, OptMode, compile, compile_kernel};
