//! The codegen pipeline as one list of named steps: kernel AST -> [`Kernel`] -> opts ->
//! lowered graph -> vector loads and stores -> linear [`Program`].

use thiserror::Error;
use wgrad_ops::{OpsError, UOp, verify};

use crate::{
    Kernel, LinearizeError, LowerError, Opt, OptError, Program, Target, hand_coded_optimizations, linearize,
    lower, vectorize,
};

/// Which optimisations a kernel gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptMode {
    /// tinygrad's hand-coded heuristics (the default).
    Heuristic,
    /// None at all (`NOOPT=1`).
    NoOpt,
    /// Exactly these, in order (from BEAM search or a cache).
    Given(Vec<Opt>),
}

/// Why a kernel AST could not be compiled.
#[derive(Debug, Error)]
pub enum CodegenError {
    /// The AST breaks the IR's type rules; the error names the offending node.
    #[error("malformed kernel AST: {0}")]
    Spec(#[from] OpsError),
    /// The AST is not a kernel, or an opt does not apply.
    #[error(transparent)]
    Opt(#[from] OptError),
    /// The kernel cannot be indexed for the target.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// The lowered graph cannot be ordered.
    #[error(transparent)]
    Linearize(#[from] LinearizeError),
}

/// Compiles a kernel AST for `target`: the optimised kernel (for DEBUG=3 printing) and its
/// program.
pub fn compile(
    ast: &UOp,
    target: &Target,
    mode: &OptMode,
    name: &str,
) -> Result<(Kernel, Program), CodegenError> {
    verify(ast)?;
    let mut k = Kernel::new(ast, target.clone())?;
    match mode {
        OptMode::Heuristic => hand_coded_optimizations(&mut k),
        OptMode::NoOpt => {}
        OptMode::Given(opts) => opts.iter().try_for_each(|o| k.apply_opt(*o))?,
    }
    let program = compile_kernel(&k, name)?;
    Ok((k, program))
}

/// The program of a kernel whose opts are applied already: the steps of [`compile`] after
/// the opts (what a search runs for each candidate it builds).
pub fn compile_kernel(k: &Kernel, name: &str) -> Result<Program, CodegenError> {
    let sink = lower(k)?;
    let sink = vectorize(&sink.simplify(), k.target());
    let target = k.target();
    let subgroup_size = target.subgroup_size.filter(|_| target.fixed_subgroup_size);
    Ok(Program { subgroup_size, ..linearize(&sink, name)? })
}
