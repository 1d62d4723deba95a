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
