//! Shared fixtures of wgrad's cross-crate conformance tests: a seeded generator of random kernel
//! ASTs with their input data ([`random_ast`]), the graph fuzzer of random Tensor programs
//! ([`graph_fuzz`]), kernels of the shapes the heuristics plan for ([`shapes`]), kernels whose
//! lanes fold into vector accesses or must not ([`vectors`]), half-precision matmuls for tensor
//! cores ([`tensor_cores`]), one-hot reduces that collapse into indexed loads ([`one_hot`]), the
//! comparison the tests judge
//! results by, and the policy for tests that need a GPU ([`wgpu_device`]).

pub mod graph_fuzz;
pub mod one_hot;
pub mod random_ast;
mod rng;
pub mod shapes;
pub mod tensor_cores;
pub mod vectors;

pub use rng::Rng;

use wgrad_dtype::ConstValue;
use wgrad_runtime_wgpu::{Device, RuntimeError};

/// The wgpu device for tests, or `None` (with the reason on stderr) when this machine has no
/// adapter. With `CI=true` a missing adapter fails instead: CI must run kernels for real (on
/// Mesa lavapipe at least).
pub fn wgpu_device() -> Option<Device> {
    match Device::new() {
        Ok(device) => Some(device),
        Err(RuntimeError::NoAdapter(reason)) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but no wgpu adapter is available: {reason}"
            );
            eprintln!("skipping: no wgpu adapter ({reason})");
            None
        }
        Err(error) => panic!("creating the wgpu device failed: {error}"),
    }
}

/// Whether `got` matches `want` under tinygrad's forward tolerance (atol 1e-6, rtol 1e-3):
/// integers and bools exactly, floats within tolerance, NaN only against NaN, infinities exactly.
pub fn close(got: ConstValue, want: ConstValue) -> bool {
    match (got, want) {
        (ConstValue::Float(x), ConstValue::Float(y)) => {
            (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-6 + 1e-3 * y.abs()
        }
        _ => got == want,
    }
}
