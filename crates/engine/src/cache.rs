//! The method cache: each kernel AST is compiled once per device and opt mode (NOOPT, the
//! BEAM width), printing the DEBUG=3..6 listings when it is.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use wgrad_codegen::{OptMode, compile, lower};
use wgrad_ops::{Estimate, Ops, UOp, estimate, print_uops};

use crate::{Backend, CompiledProgram, DeviceName, EngineError, beam, flags};

/// A kernel ready to launch.
pub(crate) struct Compiled {
    /// The backend's program.
    pub program: CompiledProgram,
    /// Its name (`E_45_65`, `r_16_64`).
    pub name: String,
    /// Its flops and bytes.
    pub estimate: Estimate,
}

type Key = (UOp, DeviceName, bool, usize);

static CACHE: LazyLock<Mutex<HashMap<Key, Arc<Compiled>>>> = LazyLock::new(Mutex::default);

/// tinygrad's kernel name: `r_` for a reduce, `E_` otherwise, then the dims of the full
/// shape (the reduce's input, or the output), ones left out.
fn kernel_name(ast: &UOp) -> String {
    let topo = ast.toposort();
    let reduce = topo.iter().find(|u| u.op() == Ops::ReduceAxis);
    let under = reduce.map_or(topo.clone(), |r| r.toposort());
    let st = under.iter().rev().find_map(|u| u.arg().as_view().filter(|_| u.op() == Ops::View));
    let dims: Vec<String> =
        st.map_or(vec![], |st| st.shape().iter().filter(|d| **d != 1).map(ToString::to_string).collect());
    let prefix = if reduce.is_some() { "r" } else { "E" };
    std::iter::once(prefix.to_string()).chain(dims).collect::<Vec<_>>().join("_")
}

/// The compiled kernel of `ast` on `device`.
pub(crate) fn compiled(
    ast: &UOp,
    device: &DeviceName,
    backend: &dyn Backend,
) -> Result<Arc<Compiled>, EngineError> {
    let (noopt, width) = (flags::noopt(), flags::beam());
    let key = (ast.clone(), device.clone(), noopt, width);
    if let Some(c) = CACHE.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Ok(c.clone());
    }
    let name = kernel_name(ast);
    let mode = match (noopt, width) {
        (true, _) => OptMode::NoOpt,
        (false, 0) => OptMode::Heuristic,
        (false, width) => OptMode::Given(beam::chosen_opts(ast, backend, width, &name)?),
    };
    let codegen = |source| EngineError::Codegen { name: name.clone(), source: Box::new(source) };
    let (kernel, program) = compile(ast, backend.target(), &mode, &name).map_err(|e| {
        if flags::debug() >= 3 {
            eprintln!("kernel {name} failed in codegen ({e}); its AST:\n{}", print_uops(&ast.toposort()));
        }
        codegen(e)
    })?;
    let program = backend.compile(&program).inspect_err(|e| {
        if let (EngineError::KernelCompile { kernel, device, code, .. }, true) = (e, flags::debug() >= 1) {
            eprintln!("kernel {kernel} failed to compile on {device}; its source:\n{code}");
        }
    })?;
    let debug = flags::debug();
    if debug >= 3 {
        eprintln!(
            "{name}: {} {}\n{}",
            kernel.describe(),
            kernel.describe_opts(),
            print_uops(&ast.toposort())
        );
    }
    if let Some(source) = backend.source(&program).filter(|_| debug >= 4) {
        eprintln!("{source}");
    }
    if debug >= 5 {
        let lowered = lower(&kernel).map_err(|e| codegen(e.into()))?;
        eprintln!("{}", print_uops(&lowered.toposort()));
    }
    if debug >= 6 {
        eprintln!("{}", program.program);
    }
    let compiled = Arc::new(Compiled { program, name, estimate: estimate(ast) });
    CACHE.lock().unwrap_or_else(PoisonError::into_inner).insert(key, compiled.clone());
    Ok(compiled)
}

/// Number of kernels compiled so far (entries of the method cache).
pub fn cached_kernels() -> usize {
    CACHE.lock().unwrap_or_else(PoisonError::into_inner).len()
}
