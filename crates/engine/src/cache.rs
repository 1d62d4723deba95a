//! The method cache: each kernel AST is compiled once per device, opt mode (NOOPT, the BEAM
//! width) and grid order, printing the DEBUG=3..6 listings when it is.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use wgrad_codegen::{OptMode, Program, compile, lower};
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

/// A kernel AST on a device under an opt mode (NOOPT, the BEAM width).
type Key = (UOp, DeviceName, bool, usize);

/// Codegen's program of a kernel AST, and the AST's flops and bytes.
pub(crate) struct Generated {
    /// The program, before the backend compiles it.
    pub program: Program,
    /// Its flops and bytes.
    pub estimate: Estimate,
    /// Whether it multiplies on tensor cores.
    pub tensor_cores: bool,
}

/// A map behind a lock, made on first use.
type Cache<K, V> = LazyLock<Mutex<HashMap<K, Arc<V>>>>;

/// Codegen's programs, before the backend compiles them.
static PROGRAMS: Cache<Key, Generated> = LazyLock::new(Mutex::default);
/// The backend's programs, in each grid order.
static CACHE: Cache<(Key, bool), Compiled> = LazyLock::new(Mutex::default);

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

/// The opt mode and cache key of `ast` on `device` now.
fn key(ast: &UOp, device: &DeviceName) -> Key {
    (ast.clone(), device.clone(), flags::noopt(), flags::beam())
}

/// Codegen's program of `ast` for `backend` (printing the DEBUG=3, 5 and 6 listings when it
/// is made).
pub(crate) fn generated(
    ast: &UOp,
    device: &DeviceName,
    backend: &dyn Backend,
) -> Result<Arc<Generated>, EngineError> {
    let key = key(ast, device);
    if let Some(p) = PROGRAMS.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Ok(p.clone());
    }
    let (_, _, noopt, width) = key;
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
    let debug = flags::debug();
    if debug >= 3 {
        eprintln!(
            "{name}: {} {}\n{}",
            kernel.describe(),
            kernel.describe_opts(),
            print_uops(&ast.toposort())
        );
    }
    if debug >= 5 {
        let lowered = lower(&kernel).map_err(|e| codegen(e.into()))?;
        eprintln!("{}", print_uops(&lowered.toposort()));
    }
    if debug >= 6 {
        eprintln!("{program}");
    }
    let tensor_cores = uses_tensor_cores(&program);
    let generated = Arc::new(Generated { program, estimate: estimate(ast), tensor_cores });
    PROGRAMS.lock().unwrap_or_else(PoisonError::into_inner).insert(key, generated.clone());
    Ok(generated)
}

/// Whether `program` multiplies on tensor cores.
fn uses_tensor_cores(program: &Program) -> bool {
    program.uops.iter().any(|u| u.op() == Ops::Wmma)
}

/// The compiled kernel of `ast` on `device`, its grid taken last first when `reversed`
/// (printing its source at DEBUG=4 when it is compiled).
pub(crate) fn compiled(
    ast: &UOp,
    device: &DeviceName,
    backend: &dyn Backend,
    reversed: bool,
) -> Result<Arc<Compiled>, EngineError> {
    let key = (key(ast, device), reversed);
    if let Some(c) = CACHE.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Ok(c.clone());
    }
    let generated = generated(ast, device, backend)?;
    let program = backend.compile(&Program { reversed, ..generated.program.clone() }).inspect_err(|e| {
        if let (EngineError::KernelCompile { kernel, device, code, .. }, true) = (e, flags::debug() >= 1) {
            eprintln!("kernel {kernel} failed to compile on {device}; its source:\n{code}");
        }
    })?;
    if let Some(source) = backend.source(&program).filter(|_| flags::debug() >= 4) {
        eprintln!("{source}");
    }
    let name = generated.program.name.clone();
    let compiled = Arc::new(Compiled { program, name, estimate: generated.estimate.clone() });
    CACHE.lock().unwrap_or_else(PoisonError::into_inner).insert(key, compiled.clone());
    Ok(compiled)
}

/// Number of kernels compiled so far (entries of the method cache).
pub fn cached_kernels() -> usize {
    CACHE.lock().unwrap_or_else(PoisonError::into_inner).len()
}

#[cfg(test)]
mod tests {
    use wgrad_codegen::{Opt, OptMode, OptOps, Target, TensorCoreShape, compile};
    use wgrad_dtype::DType;
    use wgrad_ops::{Ops, UOp};
    use wgrad_shape::{ShapeTracker, Sint, View};

    use super::uses_tensor_cores;

    fn view(shape: &[i64], strides: &[i64]) -> UOp {
        let int = |v: &[i64]| v.iter().map(|&d| Sint::int(d)).collect::<Vec<_>>();
        UOp::view(ShapeTracker::from_view(View::new(&int(shape), &int(strides), Sint::int(0), None).unwrap()))
    }

    #[test]
    fn a_product_on_tensor_cores_is_told_apart() {
        // a half matmul (64, 32) @ (32, 32) with and without the TC opt
        let tc = TensorCoreShape { dims: (16, 16, 16), dtype_in: DType::F16, dtype_out: DType::F32 };
        let target = Target { tensor_cores: vec![tc], shared_max: 32768, ..Target::generic_gpu() };
        let load = |slot, strides: &[i64]| {
            UOp::load(DType::F16, [UOp::define_global(DType::F16, slot), view(&[64, 32, 32], strides)])
        };
        let sum =
            (&load(1, &[32, 0, 1]) * &load(2, &[0, 32, 1])).cast(DType::F32).reduce_axis(Ops::Add, &[2]);
        let ast = UOp::sink([UOp::store([
            UOp::define_global(DType::F32, 0),
            view(&[64, 32, 1], &[32, 1, 0]),
            sum,
        ])]);
        for (mode, expected) in
            [(OptMode::Given(vec![Opt::new(OptOps::Tc, 0, 0)]), true), (OptMode::NoOpt, false)]
        {
            let (_, program) = compile(&ast, &target, &mode, "k").unwrap();
            assert_eq!(uses_tensor_cores(&program), expected, "{mode:?}");
        }
    }
}
