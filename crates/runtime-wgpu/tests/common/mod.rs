//! Shared test helper: the adapter policy.

use wgrad_runtime_wgpu::{Device, RuntimeError};

/// The test device, or `None` (with the reason on stderr) when this machine has no
/// adapter. With `CI=true` a missing adapter fails the test instead: CI must run the
/// kernels for real (on Mesa lavapipe at least).
pub fn device() -> Option<Device> {
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

/// `y = 2y + x` over the elements of `y`: the kernel the loop tests launch again and again.
pub const AXPY: &str = "
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;

@compute @workgroup_size(64)
fn axpy(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&y)) {
        y[i] = y[i] * 2.0 + x[i];
    }
}
";
